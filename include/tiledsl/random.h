// Counter-based random numbers: Triton's random module (triton.language
// randint, randint4x, rand, rand4x, randn, randn4x, philox, philox_impl,
// uint_to_uniform_float, pair_uniform_to_normal) in tiledsl's ops. Philox
// 4x32 and 4x64 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): each element's four words are a function of a 64-bit seed
// (the key) and its offset (the counter), so a kernel draws the same numbers
// on every device and launch configuration, and a backward pass can draw
// again what its forward pass drew (dropout's mask) from the seed alone.
//
//   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
//   auto keep = tl::rand(seed, offs) > p;                           // [BLOCK] f32 in [0, 1)
//   auto [r0, r1, r2, r3] = tl::randint4x(seed, offs);             // 4 x [BLOCK] u32
//
// The words are Triton's for the same seed, offsets and rounds (integers
// bit for bit; the Random123 reference answers are in the tests), and so
// are rand's floats. randn's Box-Muller transform runs tiledsl's log, sqrt,
// sin and cos, which agree with Triton's to a few ulp, not bit for bit.
//
// Offsets are tiles (or scalars) of i32 or u32, whose words are u32
// (Philox 4x32), or of i64 or u64, whose words are u64 (Philox 4x64, as
// Triton 3.6 draws for 64-bit offsets). The seed is an integer scalar of
// any width (a kernel parameter) or a C++ integer, taken as u64 (a signed
// seed sign-extends, as Triton's .to(tl.uint64) does; an unsigned one
// zero-extends): with 32-bit words its low half is the key's first word and
// its high half the second; with 64-bit words it is the first, and zero the
// second. n_rounds is a trace-time constant (Triton's constexpr; 10 by
// default, what Random123 calls philox4x32_10 and philox4x64_10).
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <array>
#include <cstdint>
#include <source_location>
#include <type_traits>
#include <utility>
#include <vector>

#include "tiledsl/creation.h"
#include "tiledsl/math.h"
#include "tiledsl/tile.h"

namespace tl {

inline constexpr int kPhiloxRounds = 10;

namespace detail {

// Philox's multipliers and key increments: 4x32 and 4x64.
template <class W>
struct PhiloxConstants;
template <>
struct PhiloxConstants<uint32_t> {
  static constexpr uint32_t key_a = 0x9E3779B9u, key_b = 0xBB67AE85u;
  static constexpr uint32_t round_a = 0xD2511F53u, round_b = 0xCD9E8D57u;
};
template <>
struct PhiloxConstants<uint64_t> {
  static constexpr uint64_t key_a = 0x9E3779B97F4A7C15ull, key_b = 0xBB67AE8584CAA73Bull;
  static constexpr uint64_t round_a = 0xD2E7470EE14C6C93ull, round_b = 0xCA5A826395121157ull;
};

// The unsigned word of a counter element type: u32 for i32 and u32, u64
// for i64 and u64.
template <class E>
struct philox_word_of {
  static_assert(std::is_same_v<E, int32_t> || std::is_same_v<E, uint32_t> || std::is_same_v<E, int64_t> ||
                    std::is_same_v<E, uint64_t>,
                "tl random: offsets and counters are 32- or 64-bit integers");
  using type = std::conditional_t<sizeof(E) == 4, uint32_t, uint64_t>;
};
template <class E>
using philox_word_t = typename philox_word_of<E>::type;

// A counter word as its unsigned type.
template <class E>
tile<philox_word_t<E>> philox_word(const tile<E>& x, std::source_location w) {
  if constexpr (std::is_same_v<E, philox_word_t<E>>) return x;
  else return tl::bitcast<philox_word_t<E>>(x, w);
}

// The seed as the key's two words: for 32-bit counters its low and high
// halves; for 64-bit ones the seed and zero (as Triton keys its 4x64).
template <class W, class S>
std::pair<tile<W>, tile<W>> philox_key(const S& seed, std::source_location w) {
  tile<uint64_t> s = [&] {
    if constexpr (std::is_integral_v<S>) {
      static_assert(!std::is_same_v<S, bool>, "tl random: the seed is an integer");
      // A signed seed sign-extends, an unsigned one zero-extends.
      return tl::full<uint64_t>(std::vector<int64_t>{}, static_cast<uint64_t>(seed), w);
    } else {
      using E = typename S::element_type;
      static_assert(std::is_integral_v<E> && !std::is_same_v<E, bool>, "tl random: the seed is an integer");
      return tl::cast<uint64_t>(seed, w);
    }
  }();
  if constexpr (std::is_same_v<W, uint32_t>) return {tl::cast<uint32_t>(s, w), tl::cast<uint32_t>(s >> uint64_t(32), w)};
  else return {s, tl::zeros_like(s, w)};
}

}  // namespace detail

// Philox's rounds on the counter (c0, c1, c2, c3) under the key (k0, k1),
// in 32-bit words (Philox 4x32) or 64-bit ones (4x64): Triton's
// philox_impl. The words broadcast against each other.
template <class W>
  requires(std::is_same_v<W, uint32_t> || std::is_same_v<W, uint64_t>)
std::array<tile<W>, 4> philox_impl(tile<W> c0, tile<W> c1, tile<W> c2, tile<W> c3, tile<W> k0, tile<W> k1,
                                   int n_rounds = kPhiloxRounds,
                                   std::source_location w = std::source_location::current()) {
  using C = detail::PhiloxConstants<W>;
  if (n_rounds < 1)
    detail::fail(detail::to_loc(w), "philox", "expected at least one round, found " + std::to_string(n_rounds));
  for (int r = 0; r < n_rounds; ++r) {
    tile<W> a = c0, b = c2;
    c0 = umulhi(b, C::round_b, w) ^ c1 ^ k0;
    c2 = umulhi(a, C::round_a, w) ^ c3 ^ k1;
    c1 = b * C::round_b;
    c3 = a * C::round_a;
    k0 = k0 + C::key_a;
    k1 = k1 + C::key_b;
  }
  return {c0, c1, c2, c3};
}

// Philox keyed by `seed` (an integer scalar or a C++ integer) on the
// counter (c0, c1, c2, c3), four tiles of one width: Triton's philox.
template <class S, class E0, class E1, class E2, class E3>
std::array<tile<detail::philox_word_t<E0>>, 4> philox(const S& seed, const tile<E0>& c0, const tile<E1>& c1,
                                                      const tile<E2>& c2, const tile<E3>& c3,
                                                      int n_rounds = kPhiloxRounds,
                                                      std::source_location w = std::source_location::current()) {
  using W = detail::philox_word_t<E0>;
  static_assert(sizeof(E0) == sizeof(E1) && sizeof(E0) == sizeof(E2) && sizeof(E0) == sizeof(E3),
                "tl random: philox's four counter words have one width");
  auto [k0, k1] = detail::philox_key<W>(seed, w);
  return philox_impl<W>(detail::philox_word(c0, w), detail::philox_word(c1, w), detail::philox_word(c2, w),
                        detail::philox_word(c3, w), k0, k1, n_rounds, w);
}

// Four words of random bits per offset (the counter (offset, 0, 0, 0)).
template <class S, class E>
std::array<tile<detail::philox_word_t<E>>, 4> randint4x(const S& seed, const tile<E>& offset,
                                                        int n_rounds = kPhiloxRounds,
                                                        std::source_location w = std::source_location::current()) {
  auto c = detail::philox_word(offset, w);
  auto zero = zeros_like(c, w);
  return philox(seed, c, zero, zero, zero, n_rounds, w);
}

// One word per offset: randint4x's first.
template <class S, class E>
tile<detail::philox_word_t<E>> randint(const S& seed, const tile<E>& offset, int n_rounds = kPhiloxRounds,
                       std::source_location w = std::source_location::current()) {
  return randint4x(seed, offset, n_rounds, w)[0];
}

// Random bits (32 or 64 of them) as an f32 uniform in [0, 1): the bits as
// a signed integer folded onto [0, 2^(n-1) - 1] (x < 0 -> -x - 1) times
// the largest scale that keeps 2^(n-1) - 1 below 1 in f32, as Triton does.
template <class E>
tile<float> uint_to_uniform_float(const tile<E>& x, std::source_location w = std::source_location::current()) {
  using I = std::make_signed_t<detail::philox_word_t<E>>;
  tile<I> i = bitcast<I>(detail::philox_word(x, w), w);
  i = where(i < 0, ~i, i);  // -i - 1 without the overflow of -MIN
  return cast<float>(i, w) * (sizeof(I) == 4 ? 4.6566127342e-10f : 1.0842020432385337e-19f);
}

// f32 uniforms in [0, 1), one per offset.
template <class S, class E>
tile<float> rand(const S& seed, const tile<E>& offset, int n_rounds = kPhiloxRounds,
                 std::source_location w = std::source_location::current()) {
  return uint_to_uniform_float(randint(seed, offset, n_rounds, w), w);
}

// Four f32 uniforms per offset.
template <class S, class E>
std::array<tile<float>, 4> rand4x(const S& seed, const tile<E>& offset, int n_rounds = kPhiloxRounds,
                                  std::source_location w = std::source_location::current()) {
  auto r = randint4x(seed, offset, n_rounds, w);
  return {uint_to_uniform_float(r[0], w), uint_to_uniform_float(r[1], w), uint_to_uniform_float(r[2], w),
          uint_to_uniform_float(r[3], w)};
}

// Two independent standard normals from two uniforms (Box-Muller; u1 is
// clamped to at least 1e-7 so that its log is finite).
inline std::pair<tile<float>, tile<float>> pair_uniform_to_normal(
    const tile<float>& u1, const tile<float>& u2, std::source_location w = std::source_location::current()) {
  tile<float> th = u2 * 6.283185307179586f;
  tile<float> r = sqrt(log(maximum(u1, 1.0e-7f, w), w) * -2.0f, w);
  return {r * cos(th, w), r * sin(th, w)};
}

// f32 standard normals, one per offset.
template <class S, class E>
tile<float> randn(const S& seed, const tile<E>& offset, int n_rounds = kPhiloxRounds,
                  std::source_location w = std::source_location::current()) {
  auto r = randint4x(seed, offset, n_rounds, w);
  return pair_uniform_to_normal(uint_to_uniform_float(r[0], w), uint_to_uniform_float(r[1], w), w).first;
}

// Four f32 standard normals per offset.
template <class S, class E>
std::array<tile<float>, 4> randn4x(const S& seed, const tile<E>& offset, int n_rounds = kPhiloxRounds,
                                   std::source_location w = std::source_location::current()) {
  auto u = rand4x(seed, offset, n_rounds, w);
  auto [n0, n1] = pair_uniform_to_normal(u[0], u[1], w);
  auto [n2, n3] = pair_uniform_to_normal(u[2], u[3], w);
  return {n0, n1, n2, n3};
}

}  // namespace tl

#pragma GCC visibility pop
