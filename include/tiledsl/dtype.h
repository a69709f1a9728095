// Element types: the C++ types a kernel author names (tl::bf16, tl::f32, …),
// their run-time tag (tl::DType), and the host encodings of the narrow float
// formats. The conversions here are the single definition of rounding used by
// the host, the interpreter and the tests: round to nearest even, as the GPU's
// cvt.rn does.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace tl {

enum class DType : uint8_t {
  i1, i8, i16, i32, i64, u8, u16, u32, u64,
  f8e4m3, f8e5m2, f16, bf16, f32, f64,
};

constexpr bool is_float(DType t) { return t >= DType::f8e4m3; }
constexpr bool is_int(DType t) { return t <= DType::u64; }
constexpr bool is_signed(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64 || is_float(t);
}
constexpr bool is_unsigned(DType t) {
  return t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64;
}

constexpr int bit_width(DType t) {
  switch (t) {
    case DType::i1: return 1;
    case DType::i8: case DType::u8: case DType::f8e4m3: case DType::f8e5m2: return 8;
    case DType::i16: case DType::u16: case DType::f16: case DType::bf16: return 16;
    case DType::i32: case DType::u32: case DType::f32: return 32;
    case DType::i64: case DType::u64: case DType::f64: return 64;
  }
  return 0;
}
// Bytes one element occupies in memory (i1 is stored as a byte).
constexpr int byte_size(DType t) { return t == DType::i1 ? 1 : bit_width(t) / 8; }

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::i1: return "i1"; case DType::i8: return "i8"; case DType::i16: return "i16";
    case DType::i32: return "i32"; case DType::i64: return "i64"; case DType::u8: return "u8";
    case DType::u16: return "u16"; case DType::u32: return "u32"; case DType::u64: return "u64";
    case DType::f8e4m3: return "f8e4m3"; case DType::f8e5m2: return "f8e5m2";
    case DType::f16: return "f16"; case DType::bf16: return "bf16";
    case DType::f32: return "f32"; case DType::f64: return "f64";
  }
  return "?";
}

// Parses a name printed by dtype_name; returns false when it is not one.
inline bool dtype_from_name(std::string_view s, DType& out) {
  for (int i = 0; i <= int(DType::f64); ++i)
    if (dtype_name(DType(i)) == s) { out = DType(i); return true; }
  return false;
}

// ---------------------------------------------------------------------------
// Narrow float formats: encode/decode through float, round to nearest even.

namespace detail {
// Encoder for a float format with E exponent and M mantissa bits. With
// `ieee_inf` the all-ones exponent encodes inf/NaN (e5m2, f16); without it
// (e4m3fn) that binade holds ordinary values and NaN is S.1111.111.
template <int E, int M, bool ieee_inf>
inline uint32_t encode_float(float f) {
  constexpr int bias = (1 << (E - 1)) - 1;
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 31) << (E + M);
  uint32_t ax = x & 0x7fffffffu;
  constexpr uint32_t nan_code = ieee_inf ? ((((1u << E) - 1) << M) | (1u << (M - 1)))
                                         : ((1u << (E + M)) - 1);
  if (ax > 0x7f800000u) return sign | nan_code;  // NaN
  // Largest finite magnitude of the target format.
  constexpr int max_exp = ieee_inf ? ((1 << E) - 2) - bias : ((1 << E) - 1) - bias;
  constexpr uint32_t max_mant = ieee_inf ? ((1u << M) - 1) : ((1u << M) - 2);
  if (ax == 0x7f800000u) return ieee_inf ? (sign | (((1u << E) - 1) << M)) : (sign | nan_code);
  // Work in double for exact rounding: value = ax as float.
  double v = std::fabs(double(f));
  if (v == 0) return sign;
  int e;
  std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  int exp = e - 1;    // v = 1.xxx * 2^exp
  constexpr int min_exp = 1 - bias;
  if (exp < min_exp) exp = min_exp;  // subnormal range: fixed quantum
  double quantum = std::ldexp(1.0, exp - M);
  double q = v / quantum;  // exact (power-of-two scaling)
  double r = std::nearbyint(q);  // default rounding mode: nearest even
  // r is the significand in units of quantum; may round up to 2^(M+1).
  uint64_t sig = uint64_t(r);
  if (sig >= (uint64_t(1) << (M + 1))) { sig >>= 1; exp += 1; }
  bool normal = sig >= (uint64_t(1) << M);
  if (normal && (exp > max_exp || (exp == max_exp && (sig & ((1u << M) - 1)) > max_mant)))
    return ieee_inf ? (sign | (((1u << E) - 1) << M)) : (sign | nan_code);
  if (sig < (uint64_t(1) << M)) return sign | uint32_t(sig);  // subnormal (exp == min_exp)
  uint32_t biased = uint32_t(exp + bias);
  return sign | (biased << M) | uint32_t(sig & ((1u << M) - 1));
}

template <int E, int M, bool ieee_inf>
inline float decode_float(uint32_t bits) {
  constexpr int bias = (1 << (E - 1)) - 1;
  bool neg = (bits >> (E + M)) & 1;
  uint32_t exp = (bits >> M) & ((1u << E) - 1);
  uint32_t mant = bits & ((1u << M) - 1);
  float r;
  if (ieee_inf && exp == (1u << E) - 1) {
    r = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else if (!ieee_inf && exp == (1u << E) - 1 && mant == (1u << M) - 1) {
    r = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    r = float(std::ldexp(double(mant), 1 - bias - M));
  } else {
    r = float(std::ldexp(double(mant | (1u << M)), int(exp) - bias - M));
  }
  return neg ? -r : r;
}
}  // namespace detail

// Host storage types. Each holds the raw bits and converts through float.
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  bf16(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) { bits = uint16_t((x >> 16) | 0x40); return; }
    x += 0x7fffu + ((x >> 16) & 1);  // round to nearest even
    bits = uint16_t(x >> 16);
  }
  operator float() const { return std::bit_cast<float>(uint32_t(bits) << 16); }
  static bf16 from_bits(uint16_t b) { bf16 r; r.bits = b; return r; }
};

struct f16 {
  uint16_t bits = 0;
  f16() = default;
  f16(float f) : bits(uint16_t(detail::encode_float<5, 10, true>(f))) {}
  operator float() const { return detail::decode_float<5, 10, true>(bits); }
  static f16 from_bits(uint16_t b) { f16 r; r.bits = b; return r; }
};

// e4m3 "fn" (finite, NaN only as S.1111.111; max 448). A finite value that
// rounds past 448 becomes NaN (as cvt.rn.e4m3 without .satfinite does).
struct f8e4m3 {
  uint8_t bits = 0;
  f8e4m3() = default;
  f8e4m3(float f) : bits(uint8_t(detail::encode_float<4, 3, false>(f))) {}
  operator float() const { return detail::decode_float<4, 3, false>(bits); }
  static f8e4m3 from_bits(uint8_t b) { f8e4m3 r; r.bits = b; return r; }
};

// e5m2 (IEEE-like: inf and NaN; max 57344).
struct f8e5m2 {
  uint8_t bits = 0;
  f8e5m2() = default;
  f8e5m2(float f) : bits(uint8_t(detail::encode_float<5, 2, true>(f))) {}
  operator float() const { return detail::decode_float<5, 2, true>(bits); }
  static f8e5m2 from_bits(uint8_t b) { f8e5m2 r; r.bits = b; return r; }
};

using f32 = float;
using f64 = double;
using i1 = bool;
using i8 = int8_t;
using i16 = int16_t;
using i32 = int32_t;
using i64 = int64_t;
using u8 = uint8_t;
using u16 = uint16_t;
using u32 = uint32_t;
using u64 = uint64_t;

// Maps a C++ element type to its tag. Unsupported types fail to compile.
template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::i1; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_of<uint32_t> { static constexpr DType value = DType::u32; };
template <> struct dtype_of<uint64_t> { static constexpr DType value = DType::u64; };
template <> struct dtype_of<f8e4m3> { static constexpr DType value = DType::f8e4m3; };
template <> struct dtype_of<f8e5m2> { static constexpr DType value = DType::f8e5m2; };
template <> struct dtype_of<f16> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
// Every other C++ integer (long long where int64_t is long, char,
// char16_t, ...): the fixed-width type of its size and signedness.
template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
struct dtype_of<T> {
  static_assert(sizeof(T) <= 8, "tiledsl has integers of up to 64 bits");
  static constexpr DType value = sizeof(T) == 1   ? (std::is_signed_v<T> ? DType::i8 : DType::u8)
                                 : sizeof(T) == 2 ? (std::is_signed_v<T> ? DType::i16 : DType::u16)
                                 : sizeof(T) == 4 ? (std::is_signed_v<T> ? DType::i32 : DType::u32)
                                                  : (std::is_signed_v<T> ? DType::i64 : DType::u64);
};
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

// tiledsl's narrow floats as host values (f16, bf16, f8: `tl::bf16(2.0f)`),
// whose float is exact: typed scalars in kernels (tile.h) and kernel
// arguments (runtime.h's Arg).
template <class V>
concept narrow_float = std::is_class_v<V> && requires { dtype_of<V>::value; } && std::is_convertible_v<V, float>;

namespace detail {
// v rounded to float with round-to-odd: truncated toward zero, the last bit
// set when anything was dropped. Rounding that float to a format of at
// most 22 significant bits (every narrow one) then gives v rounded once.
inline float to_float_odd(double v) {
  float f = float(v);
  if (double(f) == v || std::isnan(v)) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::fabs(double(f)) > std::fabs(v)) bits -= 1;  // one step toward zero (inf -> max)
  return std::bit_cast<float>(bits | 1u);
}
// The integer `mag` (a magnitude), negated when `neg`, as a float with
// round-to-odd (for the same double-rounding-free narrow conversions).
inline float int_to_float_odd(uint64_t mag, bool neg) {
  int top = 63 - std::countl_zero(mag | 1);
  int shift = top > 23 ? top - 23 : 0;
  uint64_t kept = mag >> shift;
  if (shift && (mag & ((uint64_t(1) << shift) - 1))) kept |= 1;
  float f = std::ldexp(float(kept), shift);  // kept < 2^24: exact
  return neg ? -f : f;
}
}  // namespace detail

// Rounds a double to the nearest value representable in a float dtype
// (the value the GPU would hold after an operation producing that dtype).
// Narrow formats go through float with round-to-odd, so v is rounded once.
inline double round_to(DType t, double v) {
  switch (t) {
    case DType::f64: return v;
    case DType::f32: return double(float(v));
    case DType::bf16: return float(bf16(detail::to_float_odd(v)));
    case DType::f16: return float(f16(detail::to_float_odd(v)));
    case DType::f8e4m3: return float(f8e4m3(detail::to_float_odd(v)));
    case DType::f8e5m2: return float(f8e5m2(detail::to_float_odd(v)));
    default: return v;
  }
}

}  // namespace tl

#pragma GCC visibility pop
