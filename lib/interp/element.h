// Element-level semantics of the interpreter: dispatch from a run-time DType
// to a compile-time one (so each op picks its loop once, never per element),
// integer wrap-around at the dtype's width and signedness, rounding of float
// results to their dtype, and the in-memory encoding of every dtype.
//
// Value representation (see program.h): integers, i1 and pointers live in
// int64 storage, normalized to their dtype (signed dtypes sign-extended,
// unsigned ones zero-extended, u64 as its bit pattern, i1 as 0/1); floats
// live in double storage, already rounded to their dtype.
#pragma once

#include <bit>
#include <cmath>
#include <limits>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tiledsl/dtype.h"

namespace tl::interp {

template <DType D>
using DTypeTag = std::integral_constant<DType, D>;

// Calls f(DTypeTag<D>{}) for the run-time dtype t.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::i1: return f(DTypeTag<DType::i1>{});
    case DType::i8: return f(DTypeTag<DType::i8>{});
    case DType::i16: return f(DTypeTag<DType::i16>{});
    case DType::i32: return f(DTypeTag<DType::i32>{});
    case DType::i64: return f(DTypeTag<DType::i64>{});
    case DType::u8: return f(DTypeTag<DType::u8>{});
    case DType::u16: return f(DTypeTag<DType::u16>{});
    case DType::u32: return f(DTypeTag<DType::u32>{});
    case DType::u64: return f(DTypeTag<DType::u64>{});
    case DType::f8e4m3: return f(DTypeTag<DType::f8e4m3>{});
    case DType::f8e5m2: return f(DTypeTag<DType::f8e5m2>{});
    case DType::f16: return f(DTypeTag<DType::f16>{});
    case DType::bf16: return f(DTypeTag<DType::bf16>{});
    case DType::f32: return f(DTypeTag<DType::f32>{});
    case DType::f64: return f(DTypeTag<DType::f64>{});
  }
  return f(DTypeTag<DType::i64>{});
}

// The host C++ type of an element in memory.
template <DType D> struct HostType;
template <> struct HostType<DType::i1> { using type = uint8_t; };  // a byte
template <> struct HostType<DType::i8> { using type = int8_t; };
template <> struct HostType<DType::i16> { using type = int16_t; };
template <> struct HostType<DType::i32> { using type = int32_t; };
template <> struct HostType<DType::i64> { using type = int64_t; };
template <> struct HostType<DType::u8> { using type = uint8_t; };
template <> struct HostType<DType::u16> { using type = uint16_t; };
template <> struct HostType<DType::u32> { using type = uint32_t; };
template <> struct HostType<DType::u64> { using type = uint64_t; };
template <> struct HostType<DType::f8e4m3> { using type = tl::f8e4m3; };
template <> struct HostType<DType::f8e5m2> { using type = tl::f8e5m2; };
template <> struct HostType<DType::f16> { using type = tl::f16; };
template <> struct HostType<DType::bf16> { using type = tl::bf16; };
template <> struct HostType<DType::f32> { using type = float; };
template <> struct HostType<DType::f64> { using type = double; };

// Wraps an integer computed modulo 2^64 to dtype D's width and signedness.
template <DType D>
inline int64_t wrap_int(uint64_t v) {
  static_assert(is_int(D));
  if constexpr (D == DType::i1) return int64_t(v & 1);
  else return int64_t(static_cast<typename HostType<D>::type>(v));
}

// Rounds an exactly (or double-) computed value to float dtype D.
template <DType D>
inline double round_float(double v) {
  static_assert(is_float(D));
  if constexpr (D == DType::f64) return v;
  else if constexpr (D == DType::f32) return double(float(v));
  else return double(float(typename HostType<D>::type(tl::detail::to_float_odd(v))));  // rounded once (dtype.h)
}

// Largest and smallest values of an integer dtype, as doubles (for the
// saturating float->int cast) and as normalized int64.
template <DType D>
constexpr int64_t int_max() {
  if constexpr (D == DType::i1) return 1;
  else return int64_t(std::numeric_limits<typename HostType<D>::type>::max());
}
template <DType D>
constexpr int64_t int_min() {
  if constexpr (D == DType::i1) return 0;
  else return int64_t(std::numeric_limits<typename HostType<D>::type>::min());
}

// Float -> integer: truncate toward zero, saturate, NaN -> 0 (ops.def cast).
template <DType D>
inline int64_t float_to_int(double v) {
  if constexpr (D == DType::i1) {
    return v != 0;  // ->i1 is != 0 (NaN != 0 is true)
  } else {
    if (std::isnan(v)) return 0;
    double t = std::trunc(v);
    using H = typename HostType<D>::type;
    // Bounds as doubles: max+1 is a power of two and exact.
    constexpr int value_bits = int(sizeof(H) * 8) - (std::is_signed_v<H> ? 1 : 0);
    constexpr double hi_excl = 2.0 * double(uint64_t(1) << (value_bits - 1));
    constexpr double lo_incl = std::is_signed_v<H> ? -hi_excl : 0.0;
    if (t >= hi_excl) return int64_t(std::numeric_limits<H>::max());
    if (t < lo_incl) return int64_t(std::numeric_limits<H>::min());
    if constexpr (std::is_signed_v<H>) return int64_t(t);
    else return int64_t(uint64_t(t));
  }
}

// Integer (normalized by its dtype S) -> float dtype D, nearest even.
template <DType S, DType D>
inline double int_to_float(int64_t v) {
  // u64 values above 2^63 are stored as negative int64.
  if constexpr (D == DType::f32) {
    if constexpr (S == DType::u64) return double(float(uint64_t(v)));
    else return double(float(v));
  } else if constexpr (D == DType::f64) {
    return S == DType::u64 ? double(uint64_t(v)) : double(v);
  } else {
    // Narrow: through a round-to-odd float, so the integer is rounded once.
    bool neg = S != DType::u64 && v < 0;
    uint64_t mag = neg ? 0 - uint64_t(v) : uint64_t(v);
    return double(float(typename HostType<D>::type(tl::detail::int_to_float_odd(mag, neg))));
  }
}

// Memory encoding. read_elem/write_elem move one element between memory
// (little-endian host order) and its storage value.
template <DType D>
inline auto read_elem(const unsigned char* p) {
  using H = typename HostType<D>::type;
  H h;
  std::memcpy(&h, p, sizeof(H));
  if constexpr (D == DType::i1) return int64_t(h != 0);
  else if constexpr (is_int(D)) return int64_t(h);  // u64 keeps its bit pattern
  else return double(h);
}
template <DType D, class V>
inline void write_elem(unsigned char* p, V v) {
  using H = typename HostType<D>::type;
  H h;
  if constexpr (D == DType::i1) h = H(v != 0);
  else if constexpr (is_int(D)) h = H(uint64_t(v));
  else if constexpr (D == DType::f64) h = v;
  else h = H(float(v));  // exact: v is already rounded to D
  std::memcpy(p, &h, sizeof(H));
}

// Storage value type of dtype D: int64_t for integers, double for floats.
template <DType D>
using StorageOf = std::conditional_t<is_float(D), double, int64_t>;

// Float minimum/maximum: when exactly one operand is NaN the other wins
// (PTX min/max); -0 is below +0.
inline double fmin_nan(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
inline double fmax_nan(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// Rounds an f32 value to tf32 (10 mantissa bits), nearest even; inf and NaN
// pass through. Used by dot with input_precision = "tf32".
inline double round_tf32(double v) {
  uint32_t x = std::bit_cast<uint32_t>(float(v));
  if ((x & 0x7f800000u) == 0x7f800000u) return v;
  x += 0xfffu + ((x >> 13) & 1u);
  x &= ~0x1fffu;
  return double(std::bit_cast<float>(x));
}

}  // namespace tl::interp
