// Reductions, scans and the matrix product.
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

#include "tiledsl/math.h"
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

// Inclusive scan along `axis` with `combine(tile<E> a, tile<E> b) -> tile<E>`
// (traced once on scalars; associative, not necessarily commutative: a is
// the earlier element, or the later one with `reverse`), as Triton's
// associative_scan: element i combines elements 0..i (i..n-1 reversed).
template <class E, class F>
tile<E> associative_scan(const tile<E>& x, int axis, F&& combine, bool reverse = false,
                         std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  int ax = detail::check_reduce_input(x.value(), axis, loc, "associative_scan");
  auto body = [&](const std::vector<detail::Value*>& args) -> std::vector<detail::Value*> {
    return {tile<E>(combine(tile<E>(args[0]), tile<E>(args[1]))).value()};
  };
  return tile<E>(detail::emit_combine(ir::OpKind::Scan, {x.value()}, {x.type()},
                                      {{"axis", int64_t(ax)}, {"reverse", int64_t(reverse)}}, loc, body)[0]);
}

namespace detail {
template <class... E>
std::vector<Value*> values_of(const std::tuple<tile<E>...>& t) {
  return std::apply([](const auto&... x) { return std::vector<Value*>{x.value()...}; }, t);
}
template <class... E, size_t... I>
std::tuple<tile<E>...> tiles_of(const std::vector<Value*>& v, size_t first, std::index_sequence<I...>) {
  return std::tuple<tile<E>...>(tile<E>(v[first + I])...);
}
// The operands of a reduction or scan of several tiles: one shape, each
// reducible; the axis normalized.
template <class... E>
int check_tuple_input(const std::tuple<tile<E>...>& xs, int axis, const ir::Loc& loc, const char* op) {
  std::vector<Value*> v = values_of(xs);
  int ax = check_reduce_input(v[0], axis, loc, op);
  for (size_t i = 1; i < v.size(); ++i) {
    check_reduce_input(v[i], axis, loc, op);
    if (type_of(v[i]).shape != type_of(v[0]).shape)
      throw Error(loc.str() + ": " + op + ": expected tiles of one shape, found " + type_of(v[0]).str() + " and " +
                  type_of(v[i]).str() + " (operand " + std::to_string(i) + ")");
  }
  return ax;
}
// The combine region of a tuple: combine(std::tuple a, std::tuple b) -> a
// tuple of the same tile types.
template <class... E, class F>
auto tuple_combiner(F& combine) {
  return [&combine](const std::vector<Value*>& args) -> std::vector<Value*> {
    constexpr size_t n = sizeof...(E);
    auto a = tiles_of<E...>(args, 0, std::index_sequence_for<E...>{});
    auto b = tiles_of<E...>(args, n, std::index_sequence_for<E...>{});
    std::tuple<tile<E>...> r = combine(a, b);
    return values_of(r);
  };
}
}  // namespace detail

// Reduction of several tiles of one shape at once along `axis` (Triton's
// reduce over a tuple: argmax by hand, Welford's mean and variance):
// `combine(std::tuple<tile<E>...> a, std::tuple<tile<E>...> b)` returns the
// combined tuple; associative and commutative, as reduce's.
template <class... E, class F>
std::tuple<tile<E>...> reduce(const std::tuple<tile<E>...>& xs, int axis, F&& combine,
                              std::source_location w = std::source_location::current()) {
  static_assert(sizeof...(E) >= 1, "reduce: at least one tile");
  ir::Loc loc = detail::to_loc(w);
  int ax = detail::check_tuple_input(xs, axis, loc, "reduce");
  std::vector<detail::Value*> in = detail::values_of(xs);
  std::vector<ir::Type> results;
  for (detail::Value* v : in) results.push_back(detail::type_of(v).with_shape(detail::without_axis(detail::type_of(v).shape, ax)));
  auto out = detail::emit_combine(ir::OpKind::Reduce, in, results, {{"axis", int64_t(ax)}}, loc,
                                  detail::tuple_combiner<E...>(combine));
  return detail::tiles_of<E...>(out, 0, std::index_sequence_for<E...>{});
}

// Inclusive scan of several tiles of one shape at once (a linear recurrence
// x_i = a_i x_{i-1} + b_i as pairs, cummax with its index):
// `combine(std::tuple a, std::tuple b)` as associative_scan's.
template <class... E, class F>
std::tuple<tile<E>...> associative_scan(const std::tuple<tile<E>...>& xs, int axis, F&& combine, bool reverse = false,
                                        std::source_location w = std::source_location::current()) {
  static_assert(sizeof...(E) >= 1, "associative_scan: at least one tile");
  ir::Loc loc = detail::to_loc(w);
  int ax = detail::check_tuple_input(xs, axis, loc, "associative_scan");
  std::vector<detail::Value*> in = detail::values_of(xs);
  std::vector<ir::Type> results;
  for (detail::Value* v : in) results.push_back(detail::type_of(v));
  auto out = detail::emit_combine(ir::OpKind::Scan, in, results, {{"axis", int64_t(ax)}, {"reverse", int64_t(reverse)}},
                                  loc, detail::tuple_combiner<E...>(combine));
  return detail::tiles_of<E...>(out, 0, std::index_sequence_for<E...>{});
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
  // "tf32" (f32 inputs rounded to 10 mantissa bits, the tensor-core
  // default), "tf32x3" (each f32 input split into a tf32 part and the rest,
  // three tf32 products summed: about f32 accuracy for three times the
  // work; finite inputs) or "ieee" (exact f32 products). Ignored for
  // narrower inputs.
  std::string input_precision = "tf32";
  // f8 inputs: at most this many products of K summed in the matrix unit's
  // accumulator before an f32 add (Triton's max_num_imprecise_acc); 0: no
  // limit. Other inputs ignore it.
  int max_num_imprecise_acc = 0;
};

namespace detail {
// a x b (+ acc, when not null) with input_precision "tf32x3" on f32 tiles:
// x = big + small, big being x with the 13 low mantissa bits cleared (a
// tf32 value) and small = x - big (exact); small·big + big·small + big·big
// on tf32 products, the small terms first; small·small (2^-22 of the
// product) is dropped, as Triton's tf32x3 does.
inline Value* dot_tf32x3(const tile<float>& a, const tile<float>& b, Value* acc, std::source_location w) {
  auto big = [&](const tile<float>& x) { return bitcast<float>(bitcast<int32_t>(x, w) & int32_t(0xFFFFE000), w); };
  tile<float> a_big = big(a), b_big = big(b);
  tile<float> a_small = a - a_big, b_small = b - b_big;
  const ir::Loc loc = to_loc(w);
  Value* r = dot(a_small.value(), b_big.value(), acc, "tf32", loc);
  r = dot(a_big.value(), b_small.value(), r, "tf32", loc);
  return dot(a_big.value(), b_big.value(), r, "tf32", loc);
}
// The precision the dot op takes: "tf32x3" on anything but f32 is "tf32"
// (both ignored there).
inline std::string op_precision(const std::string& p) { return p == "tf32x3" ? "tf32" : p; }
}  // namespace detail

// [M, K] x [K, N] -> [M, N]: bf16/f16/f8 and f32 inputs give f32, i8 gives i32.
// Batched: [B, M, K] x [B, K, N] -> [B, M, N], one product a batch element.
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<detail::dot_acc_t<E>> dot(const tile<E>& a, const tile<E>& b, const DotOptions& opts = {},
                               std::source_location w = std::source_location::current()) {
  if constexpr (std::is_same_v<E, float>)
    if (opts.input_precision == "tf32x3") return tile<float>(detail::dot_tf32x3(a, b, nullptr, w));
  return tile<detail::dot_acc_t<E>>(detail::dot(a.value(), b.value(), nullptr, detail::op_precision(opts.input_precision),
                                                detail::to_loc(w), opts.max_num_imprecise_acc));
}
// a x b + acc (acc [M, N], a float dtype for float inputs, i32 for i8 inputs).
template <class E, class C>
  requires(!detail::elem_info<E>::is_ptr)
tile<C> dot(const tile<E>& a, const tile<E>& b, const tile<C>& acc, const DotOptions& opts = {},
            std::source_location w = std::source_location::current()) {
  if constexpr (std::is_same_v<E, float>)
    if (opts.input_precision == "tf32x3") return tile<C>(detail::dot_tf32x3(a, b, acc.value(), w));
  return tile<C>(detail::dot(a.value(), b.value(), acc.value(), detail::op_precision(opts.input_precision),
                             detail::to_loc(w), opts.max_num_imprecise_acc));
}

}  // namespace tl

#pragma GCC visibility pop
