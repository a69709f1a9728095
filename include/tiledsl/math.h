// Elementwise ops beyond the operators: casts, select, min/max, math
// functions, fma. Two-operand forms accept C++ numbers (weakly typed, as in
// the operators) and broadcast numpy-style.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tiledsl/tile.h"

namespace tl {

// Value conversion (rounds to nearest even; float->int truncates, saturating).
template <class T, class E>
tile<T> cast(const tile<E>& x, std::source_location w = std::source_location::current()) {
  static_assert(!detail::elem_info<E>::is_ptr && !detail::elem_info<T>::is_ptr, "tl::cast converts numbers, not pointers");
  return tile<T>(detail::cast(x.value(), detail::elem_info<T>::dtype, detail::to_loc(w)));
}
// A C++ number converted to a scalar of type T the same way (Triton's
// tl.cast of a constant): `cast<f16>(1.0f)`.
template <class T, detail::number N>
tile<T> cast(N x, std::source_location w = std::source_location::current()) {
  static_assert(!detail::elem_info<T>::is_ptr, "tl::cast converts numbers, not pointers");
  // N as the element type of its size and kind (char, long long, ... have none of their own).
  using S = std::conditional_t<sizeof(N) == 1, int8_t,
                               std::conditional_t<sizeof(N) == 2, int16_t,
                                                  std::conditional_t<sizeof(N) == 4, int32_t, int64_t>>>;
  using E = std::conditional_t<std::is_same_v<N, bool>, bool,
                               std::conditional_t<std::is_floating_point_v<N>,
                                                  std::conditional_t<sizeof(N) == 4, float, double>,
                                                  std::conditional_t<std::is_signed_v<N>, S, std::make_unsigned_t<S>>>>;
  auto v = detail::full(dtype_v<E>, detail::Shape{}, detail::Operand::number(E(x)), detail::to_loc(w), "cast");
  return tile<T>(detail::cast(v, detail::elem_info<T>::dtype, detail::to_loc(w)));
}
// Reinterprets the bits (same bit width; pointer to pointer allowed).
template <class T, class E>
tile<T> bitcast(const tile<E>& x, std::source_location w = std::source_location::current()) {
  return tile<T>(detail::bitcast(x.value(), detail::elem_info<T>::dtype, detail::elem_info<T>::is_ptr,
                                 detail::to_loc(w)));
}

// Promises about an integer or pointer tile's values that let the compiler
// vectorize accesses (and use tensor copies) it cannot prove safe alone,
// as Triton's tl.multiple_of / tl.max_contiguous. Along each dimension the
// values come in runs (of the length max_contiguous gives, or that the
// compiler finds, such as pid * BLOCK + arange(0, BLOCK)); multiple_of(x, n):
// each run's first value is a multiple of n (for pointers: its address, in
// bytes, of n); max_contiguous(x, c): runs of c values stepping by +1, each
// starting at an index that is a multiple of c. One value for every
// dimension, or a list with one per dimension; powers of two. The
// interpreter checks the promise (a broken one is an error naming the
// line); on a GPU a broken one is undefined. Triton's idiom for gathered
// row offsets: max_contiguous(multiple_of(offs, BLOCK), BLOCK).
template <class E>
tile<E> multiple_of(const tile<E>& x, std::vector<int64_t> n, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::hint(x.value(), std::move(n), {}, detail::to_loc(w), "multiple_of"));
}
template <class E>
tile<E> multiple_of(const tile<E>& x, int64_t n, std::source_location w = std::source_location::current()) {
  return multiple_of(x, std::vector<int64_t>{n}, w);
}
template <class E>
tile<E> max_contiguous(const tile<E>& x, std::vector<int64_t> c, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::hint(x.value(), {}, std::move(c), detail::to_loc(w), "max_contiguous"));
}
template <class E>
tile<E> max_contiguous(const tile<E>& x, int64_t c, std::source_location w = std::source_location::current()) {
  return max_contiguous(x, std::vector<int64_t>{c}, w);
}

// Triton's inline_asm_elementwise: assembly run on every element of the
// arguments (broadcast to one shape), giving a tile of R (or several:
// below). The text is the target's: `ptx` for NVIDIA, `amdgcn` for AMD,
// each with its LLVM constraints, outputs first (PTX "=r,r,r": one 32-bit
// result, two 32-bit operands; "f" an f32, "l" 64 bits, "h" 16; AMD
// "=v,v"). A kernel compiled for a GPU whose text is missing is an error
// naming the line; the interpreter cannot run either. With pack 1 each
// operand is one element (f16 and bf16 as 16-bit integers); with pack
// p > 1, p consecutive elements of a thread are packed into one integer of
// p times their width, and the results are unpacked likewise (four i8 in
// one "r"). `is_pure = false` marks text with effects (it is never removed
// or merged either way).
//   auto y = tl::inline_asm_elementwise<float>({.ptx = {"ex2.approx.f32 $0, $1;", "=f,f"}}, x);
struct AsmText {
  std::string text{}, constraints{};
};
struct InlineAsm {
  AsmText ptx{}, amdgcn{};
  bool is_pure = true;
  int pack = 1;
  std::source_location where = std::source_location::current();  // the call's line (left out by callers)
};
namespace detail {
template <class R>
struct asm_results {  // one result: tile<R>
  static std::vector<DType> dtypes() { return {elem_info<R>::dtype}; }
  static tile<R> wrap(const std::vector<Value*>& v) { return tile<R>(v[0]); }
};
template <class... R>
struct asm_results<std::tuple<R...>> {  // several: std::tuple<tile<R>...>
  static_assert(sizeof...(R) > 0, "tl::inline_asm_elementwise: at least one result type");
  static std::vector<DType> dtypes() { return {elem_info<R>::dtype...}; }
  static std::tuple<tile<R>...> wrap(const std::vector<Value*>& v) {
    return wrap_each(v, std::index_sequence_for<R...>{});
  }
  template <size_t... I>
  static std::tuple<tile<R>...> wrap_each(const std::vector<Value*>& v, std::index_sequence<I...>) {
    return {tile<R>(v[I])...};
  }
};
}  // namespace detail
// R is one element type, or a std::tuple of them for text with several
// outputs (Triton's tuple `dtype`): the call then returns a std::tuple of
// tiles, outputs numbered first in the constraints ("=r,=r,r").
//   auto [lo, hi] = tl::inline_asm_elementwise<std::tuple<uint32_t, uint32_t>>(
//       {.ptx = {"mov.b64 {$0, $1}, $2;", "=r,=r,l"}}, x);
template <class R, class... A>
auto inline_asm_elementwise(const InlineAsm& a, const tile<A>&... args) {
  static_assert(sizeof...(A) > 0, "tl::inline_asm_elementwise: at least one tile argument");
  using Results = detail::asm_results<R>;
  return Results::wrap(detail::inline_asm({{"ptx", a.ptx.text}, {"ptx_constraints", a.ptx.constraints},
                                           {"amdgcn", a.amdgcn.text}, {"amdgcn_constraints", a.amdgcn.constraints}},
                                          a.is_pure, a.pack, {args.value()...}, Results::dtypes(),
                                          detail::to_loc(a.where)));
}

// A promise that `cond` holds for every element (Triton's tl.assume), for
// the compiler's benefit: LLVM may use it, and `x % c == 0` or
// `(x & (c - 1)) == 0` (c a power of two) tells the compiler x is a
// multiple of c, as multiple_of(x, c) does. The interpreter checks it (a
// broken one is an error naming the line); on a GPU a broken one is
// undefined.
inline void assume(const tile<bool>& cond, std::source_location w = std::source_location::current()) {
  detail::assume(cond.value(), detail::to_loc(w));
}

// cond ? a : b elementwise; a and b are promoted together.
template <class A, class B>
  requires detail::binary_ok<detail::BinCat::Arith, A, B>
tile<detail::binary_elem_t<detail::BinCat::Arith, A, B>> where(
    detail::located<bool> cond, const A& a, const B& b) {
  using R = tile<detail::binary_elem_t<detail::BinCat::Arith, A, B>>;
  return R(detail::select(detail::operand(cond.t), detail::operand(a), detail::operand(b), cond.loc()));
}
// Both sides C++ numbers (Triton's `where(mask, 1, 0)`): a tile of cond's
// shape typed as Triton types Python's numbers: floating point f32, bool
// and bool bool, integers i32 (u32 for a 32-bit unsigned type, i64 or u64
// for a 64-bit one).
template <detail::number A, detail::number B>
auto where(detail::located<bool> cond, A a, B b) {
  using C = std::common_type_t<A, B>;
  using I32 = std::conditional_t<(sizeof(C) < 4 || std::is_signed_v<C>), int32_t, uint32_t>;
  using I64 = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
  using I = std::conditional_t<(sizeof(C) <= 4), I32, I64>;
  using E = std::conditional_t<std::is_floating_point_v<C>, float,
                               std::conditional_t<std::is_same_v<C, bool>, bool, I>>;
  tile<E> ta(detail::full(dtype_v<E>, detail::Shape{}, detail::Operand::number(E(a)), cond.loc(), "where"));
  return tile<E>(detail::select(detail::operand(cond.t), detail::operand(ta), detail::operand(E(b)), cond.loc()));
}
// Pointer form: both sides the same pointer tile type.
template <class T>
ptr<T> where(detail::located<bool> cond, const ptr<T>& a, const ptr<T>& b) {
  return ptr<T>(detail::select(detail::operand(cond.t), detail::operand(a), detail::operand(b), cond.loc()));
}

#define TL_BINARY_FUNCTION(FN, KIND)                                                                     \
  template <class A, class B>                                                                            \
    requires detail::binary_ok<detail::BinCat::Arith, A, B>                                              \
  tile<detail::binary_elem_t<detail::BinCat::Arith, A, B>> FN(                                           \
      const A& a, const B& b, std::source_location w = std::source_location::current()) {                \
    using R = tile<detail::binary_elem_t<detail::BinCat::Arith, A, B>>;                                  \
    return R(detail::binary(detail::BinCat::Arith, KIND, #FN, detail::operand(a), detail::operand(b),   \
                            detail::to_loc(w)));                                                         \
  }
// For floats, a NaN operand yields the other operand (as PTX min/max).
TL_BINARY_FUNCTION(minimum, ir::OpKind::Minimum)
TL_BINARY_FUNCTION(maximum, ir::OpKind::Maximum)
#undef TL_BINARY_FUNCTION

// The high half of the double-width product, elementwise (Triton's
// umulhi): integers of one signedness (a C++ literal takes the other's
// type), the product taken in that signedness: for i32 the high 32 bits of
// the signed 64-bit product, for u32 of the unsigned one; i64 and u64 too.
template <class A, class B>
  requires detail::binary_ok<detail::BinCat::Bitwise, A, B>
tile<detail::binary_elem_t<detail::BinCat::Bitwise, A, B>> umulhi(
    const A& a, const B& b, std::source_location w = std::source_location::current()) {
  using R = tile<detail::binary_elem_t<detail::BinCat::Bitwise, A, B>>;
  return R(detail::binary(detail::BinCat::Bitwise, ir::OpKind::MulHi, "umulhi", detail::operand(a),
                          detail::operand(b), detail::to_loc(w)));
}

// minimum(maximum(x, lo), hi)
template <class E, class L, class H>
tile<E> clamp(const tile<E>& x, const L& lo, const H& hi, std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  detail::Value* v = detail::binary(detail::BinCat::Arith, ir::OpKind::Maximum, "clamp", detail::operand(x),
                                    detail::operand(lo), loc);
  v = detail::binary(detail::BinCat::Arith, ir::OpKind::Minimum, "clamp", detail::Operand(v), detail::operand(hi), loc);
  return tile<E>(detail::cast(v, detail::elem_info<E>::dtype, loc, "clamp"));
}

// Unary math. Float functions require a float tile (a C++ compile error otherwise).
#define TL_FLOAT_FUNCTION(FN, KIND)                                                             \
  template <class E>                                                                            \
    requires(!detail::elem_info<E>::is_ptr && is_float(detail::elem_info<E>::dtype))            \
  tile<E> FN(const tile<E>& x, std::source_location w = std::source_location::current()) {      \
    return tile<E>(detail::unary(KIND, #FN, x.value(), detail::to_loc(w)));                     \
  }
TL_FLOAT_FUNCTION(exp, ir::OpKind::Exp)
TL_FLOAT_FUNCTION(exp2, ir::OpKind::Exp2)
TL_FLOAT_FUNCTION(log, ir::OpKind::Log)
TL_FLOAT_FUNCTION(log2, ir::OpKind::Log2)
TL_FLOAT_FUNCTION(sqrt, ir::OpKind::Sqrt)
TL_FLOAT_FUNCTION(rsqrt, ir::OpKind::Rsqrt)
TL_FLOAT_FUNCTION(sin, ir::OpKind::Sin)
TL_FLOAT_FUNCTION(cos, ir::OpKind::Cos)
TL_FLOAT_FUNCTION(tanh, ir::OpKind::Tanh)
TL_FLOAT_FUNCTION(erf, ir::OpKind::Erf)
TL_FLOAT_FUNCTION(floor, ir::OpKind::Floor)
TL_FLOAT_FUNCTION(ceil, ir::OpKind::Ceil)
#undef TL_FLOAT_FUNCTION

template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<E> abs(const tile<E>& x, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::unary(ir::OpKind::Abs, "abs", x.value(), detail::to_loc(w)));
}

// 1 / (1 + exp(-x))
template <class E>
  requires(!detail::elem_info<E>::is_ptr && is_float(detail::elem_info<E>::dtype))
tile<E> sigmoid(const tile<E>& x, std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  detail::Value* v = detail::unary(ir::OpKind::Neg, "sigmoid", x.value(), loc);
  v = detail::unary(ir::OpKind::Exp, "sigmoid", v, loc);
  v = detail::binary(detail::BinCat::Arith, ir::OpKind::Add, "sigmoid", detail::Operand(v), detail::Operand::number(1.0), loc);
  v = detail::binary(detail::BinCat::Arith, ir::OpKind::Div, "sigmoid", detail::Operand::number(1.0), detail::Operand(v), loc);
  return tile<E>(v);
}

// a * b + c with one rounding (float operands, promoted and broadcast together).
template <class A, class B, class C>
  requires(detail::binary_ok<detail::BinCat::Arith, A, B> &&
           detail::binary_ok<detail::BinCat::Arith, tile<detail::binary_elem_t<detail::BinCat::Arith, A, B>>, C>)
auto fma(const A& a, const B& b, const C& c, std::source_location w = std::source_location::current()) {
  using AB = tile<detail::binary_elem_t<detail::BinCat::Arith, A, B>>;
  using R = tile<detail::binary_elem_t<detail::BinCat::Arith, AB, C>>;
  return R(detail::fma(detail::operand(a), detail::operand(b), detail::operand(c), detail::to_loc(w)));
}

}  // namespace tl

#pragma GCC visibility pop
