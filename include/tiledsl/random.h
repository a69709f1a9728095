// Counter-based random numbers: Triton's random module (triton.language
// randint, randint4x, rand, rand4x, randn, randn4x, philox, philox_impl,
// uint_to_uniform_float, pair_uniform_to_normal) in tiledsl's ops. Philox
// 4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC
// 2011): each element's four 32-bit words are a function of a 64-bit seed
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
// Offsets are 32-bit (i32 or u32 tiles, or scalars); Triton 3.6's 64-bit
// variant (Philox 4x64 for i64 offsets) is not here: an i64 offset is a
// compile error. The seed is an integer scalar of any width (a kernel
// parameter) or a C++ integer, taken as u64 (a signed seed sign-extends, as
// Triton's .to(tl.uint64) does; an unsigned one zero-extends): its low word
// is the key's first word, its high word the second. n_rounds is a trace-time constant (Triton's
// constexpr; 10 by default, what Random123 calls philox4x32_10).
#pragma once

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

inline constexpr uint32_t kPhiloxKeyA = 0x9E3779B9u, kPhiloxKeyB = 0xBB67AE85u;
inline constexpr uint32_t kPhiloxRoundA = 0xD2511F53u, kPhiloxRoundB = 0xCD9E8D57u;

template <class E>
inline constexpr bool is_word32_v = std::is_same_v<E, int32_t> || std::is_same_v<E, uint32_t>;

// A 32-bit counter word as u32.
template <class E>
tile<uint32_t> philox_word(const tile<E>& x, std::source_location w) {
  static_assert(is_word32_v<E>,
                "tl random: offsets and counters are 32-bit integers (i32 or u32); Triton's 64-bit Philox for "
                "i64 offsets is not supported");
  if constexpr (std::is_same_v<E, uint32_t>) return x;
  else return tl::bitcast<uint32_t>(x, w);
}

// The seed as its two 32-bit key words (low, high).
template <class S>
std::pair<tile<uint32_t>, tile<uint32_t>> philox_key(const S& seed, std::source_location w) {
  if constexpr (std::is_integral_v<S>) {
    static_assert(!std::is_same_v<S, bool>, "tl random: the seed is an integer");
    const auto s = static_cast<uint64_t>(seed);  // a signed seed sign-extends, an unsigned one zero-extends
    return {tl::full<uint32_t>(std::vector<int64_t>{}, uint32_t(s), w),
            tl::full<uint32_t>(std::vector<int64_t>{}, uint32_t(s >> 32), w)};
  } else {
    using E = typename S::element_type;
    static_assert(std::is_integral_v<E> && !std::is_same_v<E, bool>, "tl random: the seed is an integer");
    tile<uint64_t> s = tl::cast<uint64_t>(seed, w);
    return {tl::cast<uint32_t>(s, w), tl::cast<uint32_t>(s >> uint64_t(32), w)};
  }
}

}  // namespace detail

// Philox's rounds on the counter (c0, c1, c2, c3) under the key (k0, k1):
// Triton's philox_impl. The words broadcast against each other.
inline std::array<tile<uint32_t>, 4> philox_impl(tile<uint32_t> c0, tile<uint32_t> c1, tile<uint32_t> c2,
                                                 tile<uint32_t> c3, tile<uint32_t> k0, tile<uint32_t> k1,
                                                 int n_rounds = kPhiloxRounds,
                                                 std::source_location w = std::source_location::current()) {
  if (n_rounds < 1)
    detail::fail(detail::to_loc(w), "philox", "expected at least one round, found " + std::to_string(n_rounds));
  for (int r = 0; r < n_rounds; ++r) {
    tile<uint32_t> a = c0, b = c2;
    c0 = umulhi(b, detail::kPhiloxRoundB, w) ^ c1 ^ k0;
    c2 = umulhi(a, detail::kPhiloxRoundA, w) ^ c3 ^ k1;
    c1 = b * detail::kPhiloxRoundB;
    c3 = a * detail::kPhiloxRoundA;
    k0 = k0 + detail::kPhiloxKeyA;
    k1 = k1 + detail::kPhiloxKeyB;
  }
  return {c0, c1, c2, c3};
}

// Philox keyed by `seed` (an integer scalar or a C++ integer) on the
// counter (c0, c1, c2, c3) of 32-bit tiles: Triton's philox.
template <class S, class E0, class E1, class E2, class E3>
std::array<tile<uint32_t>, 4> philox(const S& seed, const tile<E0>& c0, const tile<E1>& c1, const tile<E2>& c2,
                                     const tile<E3>& c3, int n_rounds = kPhiloxRounds,
                                     std::source_location w = std::source_location::current()) {
  auto [k0, k1] = detail::philox_key(seed, w);
  return philox_impl(detail::philox_word(c0, w), detail::philox_word(c1, w), detail::philox_word(c2, w),
                     detail::philox_word(c3, w), k0, k1, n_rounds, w);
}

// Four words of random bits per offset (the counter (offset, 0, 0, 0)).
template <class S, class E>
std::array<tile<uint32_t>, 4> randint4x(const S& seed, const tile<E>& offset, int n_rounds = kPhiloxRounds,
                                        std::source_location w = std::source_location::current()) {
  tile<uint32_t> c = detail::philox_word(offset, w);
  tile<uint32_t> zero = zeros_like(c, w);
  return philox(seed, c, zero, zero, zero, n_rounds, w);
}

// One word per offset: randint4x's first.
template <class S, class E>
tile<uint32_t> randint(const S& seed, const tile<E>& offset, int n_rounds = kPhiloxRounds,
                       std::source_location w = std::source_location::current()) {
  return randint4x(seed, offset, n_rounds, w)[0];
}

// Random bits (u32 or i32) as an f32 uniform in [0, 1): the bits as a
// signed integer folded onto [0, 2^31 - 1] (x < 0 -> -x - 1) times the
// largest scale that keeps 2^31 - 1 below 1 in f32, as Triton does.
template <class E>
tile<float> uint_to_uniform_float(const tile<E>& x, std::source_location w = std::source_location::current()) {
  tile<int32_t> i = bitcast<int32_t>(detail::philox_word(x, w), w);
  i = where(i < 0, ~i, i);  // -i - 1 without the overflow of -INT_MIN
  return cast<float>(i, w) * 4.6566127342e-10f;
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
