// Reductions, scans and the matrix product.
#pragma once

#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "tiledsl/tile.h"

namespace tl {

namespace detail {
// The element sum/cumsum/cumprod accumulate and return: narrow floats (f16,
// bf16, f8) widen to f32, integers narrower than 32 bits (and bool) to i32.
constexpr DType accumulation_dtype(DType d) {
  if (is_float(d)) return bit_width(d) < 32 ? DType::f32 : d;
  return bit_width(d) < 32 ? DType::i32 : d;
}
template <class E>
using accumulation_elem_t = typename elem_for<accumulation_dtype(elem_info<E>::dtype)>::type;

// The accumulator of dot: f64 for f64 inputs, f32 for other float inputs,
// i32 for 8-bit integer inputs (Triton's defaults).
template <class E>
using dot_acc_t = std::conditional_t<elem_info<E>::dtype == DType::f64, double,
                                     std::conditional_t<is_float(elem_info<E>::dtype), float, int32_t>>;

inline std::vector<int64_t> without_axis(std::vector<int64_t> shape, int axis) {
  shape.erase(shape.begin() + axis);
  return shape;
}
}  // namespace detail

// Sum along `axis` (negative counts from the end); rank 1 gives a scalar.
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<detail::accumulation_elem_t<E>> sum(const tile<E>& x, int axis,
                                         std::source_location w = std::source_location::current()) {
  return tile<detail::accumulation_elem_t<E>>(
      detail::reduce_builtin(ir::OpKind::Add, "sum", x.value(), axis, true, detail::to_loc(w)));
}
// Largest / smallest element along `axis` (floats: a NaN loses to a number).
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<E> max(const tile<E>& x, int axis, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::reduce_builtin(ir::OpKind::Maximum, "max", x.value(), axis, false, detail::to_loc(w)));
}
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<E> min(const tile<E>& x, int axis, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::reduce_builtin(ir::OpKind::Minimum, "min", x.value(), axis, false, detail::to_loc(w)));
}
// i32 index of the largest / smallest element along `axis`; the lowest index wins ties.
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<int32_t> argmax(const tile<E>& x, int axis, std::source_location w = std::source_location::current()) {
  return tile<int32_t>(detail::arg_reduce(true, x.value(), axis, detail::to_loc(w)));
}
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<int32_t> argmin(const tile<E>& x, int axis, std::source_location w = std::source_location::current()) {
  return tile<int32_t>(detail::arg_reduce(false, x.value(), axis, detail::to_loc(w)));
}

// Generic reduction: `combine(tile<E> a, tile<E> b) -> tile<E>` is traced once
// on scalars and must be associative and commutative (the interpreter
// combines in a balanced tree, a GPU in its layout's order: docs/language.md).
template <class E, class F>
tile<E> reduce(const tile<E>& x, int axis, F&& combine, std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  int ax = detail::check_reduce_input(x.value(), axis, loc, "reduce");
  auto body = [&](const std::vector<detail::Value*>& args) -> std::vector<detail::Value*> {
    tile<E> a(args[0]), b(args[1]);
    tile<E> r = combine(a, b);
    return {r.value()};
  };
  ir::Type result = x.type().with_shape(detail::without_axis(x.shape(), ax));
  return tile<E>(detail::emit_combine(ir::OpKind::Reduce, {x.value()}, {result}, {{"axis", int64_t(ax)}}, loc, body)[0]);
}

// Inclusive prefix sum / product along `axis` (same widening as sum).
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<detail::accumulation_elem_t<E>> cumsum(const tile<E>& x, int axis, bool reverse = false,
                                            std::source_location w = std::source_location::current()) {
  return tile<detail::accumulation_elem_t<E>>(
      detail::scan_builtin(ir::OpKind::Add, "cumsum", x.value(), axis, reverse, detail::to_loc(w)));
}
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<detail::accumulation_elem_t<E>> cumprod(const tile<E>& x, int axis, bool reverse = false,
                                             std::source_location w = std::source_location::current()) {
  return tile<detail::accumulation_elem_t<E>>(
      detail::scan_builtin(ir::OpKind::Mul, "cumprod", x.value(), axis, reverse, detail::to_loc(w)));
}

struct DotOptions {
  // "tf32" (f32 inputs rounded to 10 mantissa bits, the tensor-core default)
  // or "ieee" (exact f32 products). Ignored for narrower inputs.
  std::string input_precision = "tf32";
};

// [M, K] x [K, N] -> [M, N]: bf16/f16/f8 and f32 inputs give f32, i8 gives i32.
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<detail::dot_acc_t<E>> dot(const tile<E>& a, const tile<E>& b, const DotOptions& opts = {},
                               std::source_location w = std::source_location::current()) {
  return tile<detail::dot_acc_t<E>>(detail::dot(a.value(), b.value(), nullptr, opts.input_precision, detail::to_loc(w)));
}
// a x b + acc (acc [M, N], a float dtype for float inputs, i32 for i8 inputs).
template <class E, class C>
  requires(!detail::elem_info<E>::is_ptr)
tile<C> dot(const tile<E>& a, const tile<E>& b, const tile<C>& acc, const DotOptions& opts = {},
            std::source_location w = std::source_location::current()) {
  return tile<C>(detail::dot(a.value(), b.value(), acc.value(), opts.input_precision, detail::to_loc(w)));
}

}  // namespace tl
