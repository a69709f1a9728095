// Creation ops: program ids, index ranges, constant tiles, cdiv.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <initializer_list>
#include <source_location>
#include <type_traits>

#include "tiledsl/tile.h"

namespace tl {

// Index of this program along `axis` (0..2) of the launch grid.
inline scalar<int32_t> program_id(int axis, std::source_location w = std::source_location::current()) {
  return scalar<int32_t>(detail::program_id(ir::OpKind::ProgramId, axis, detail::to_loc(w)));
}
// Number of programs along `axis` of the launch grid.
inline scalar<int32_t> num_programs(int axis, std::source_location w = std::source_location::current()) {
  return scalar<int32_t>(detail::program_id(ir::OpKind::NumPrograms, axis, detail::to_loc(w)));
}

// [end - start] i32 holding start, start+1, ..., end-1 (a length c x 2^k,
// c = 1, 3, ..., 15; GPU targets lower powers of two).
inline tile<int32_t> arange(int64_t start, int64_t end, std::source_location w = std::source_location::current()) {
  return tile<int32_t>(detail::arange(start, end, detail::to_loc(w)));
}

// A tile of `shape` (empty: a scalar) filled with `value`.
template <class T, detail::fill_value V>
tile<T> full(std::initializer_list<int64_t> shape, V value, std::source_location w = std::source_location::current()) {
  return tile<T>(detail::full(dtype_v<T>, detail::Shape(shape), detail::fill_number(value), detail::to_loc(w), "full"));
}
template <class T, detail::fill_value V>
tile<T> full(const std::vector<int64_t>& shape, V value, std::source_location w = std::source_location::current()) {
  return tile<T>(detail::full(dtype_v<T>, shape, detail::fill_number(value), detail::to_loc(w), "full"));
}
template <class T>
tile<T> zeros(std::initializer_list<int64_t> shape, std::source_location w = std::source_location::current()) {
  return tile<T>(detail::full(dtype_v<T>, detail::Shape(shape), detail::Operand::number(0), detail::to_loc(w), "zeros"));
}
template <class T>
tile<T> zeros(const std::vector<int64_t>& shape, std::source_location w = std::source_location::current()) {
  return tile<T>(detail::full(dtype_v<T>, shape, detail::Operand::number(0), detail::to_loc(w), "zeros"));
}
template <class E>
tile<E> zeros_like(const tile<E>& x, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::full(detail::elem_info<E>::dtype, x.shape(), detail::Operand::number(0), detail::to_loc(w),
                              "zeros_like"));
}
template <class E, detail::fill_value V>
tile<E> full_like(const tile<E>& x, V value, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::full(detail::elem_info<E>::dtype, x.shape(), detail::fill_number(value),
                              detail::to_loc(w), "full_like"));
}

// ceil(a / b). On C++ integers a constexpr number; with a traced operand a
// traced integer.
template <class A, class B>
  requires(std::is_integral_v<A> && std::is_integral_v<B>)
constexpr std::common_type_t<A, B> cdiv(A a, B b) {
  return (a + b - 1) / b;
}
template <class A, class B>
  requires((detail::operand_of<A>::desc.is_tile || detail::operand_of<B>::desc.is_tile) &&
           detail::binary_ok<detail::BinCat::Bitwise, A, B>)
tile<detail::binary_elem_t<detail::BinCat::Bitwise, A, B>> cdiv(
    const A& a, const B& b, std::source_location w = std::source_location::current()) {
  using R = tile<detail::binary_elem_t<detail::BinCat::Bitwise, A, B>>;
  return R(detail::cdiv(detail::operand(a), detail::operand(b), detail::to_loc(w)));
}

}  // namespace tl

#pragma GCC visibility pop
