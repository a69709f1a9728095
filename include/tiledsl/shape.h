// Shape ops. Binary ops broadcast numpy-style on their own (tile.h); these
// are the explicit forms.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <initializer_list>
#include <source_location>
#include <utility>
#include <vector>

#include "tiledsl/tile.h"

namespace tl {

// Inserts a dimension of size 1 at `axis` (negative counts from the end).
template <class E>
tile<E> expand_dims(const tile<E>& x, int axis, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::expand_dims(x.value(), axis, detail::to_loc(w)));
}
// [N] -> [1, N]
template <class E>
tile<E> row(const tile<E>& x, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::expand_dims(x.value(), 0, detail::to_loc(w)));
}
// [N] -> [N, 1]
template <class E>
tile<E> col(const tile<E>& x, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::expand_dims(x.value(), 1, detail::to_loc(w)));
}
template <class E>
tile<E> broadcast_to(const tile<E>& x, const std::vector<int64_t>& shape,
                     std::source_location w = std::source_location::current()) {
  detail::check_shape(shape, detail::to_loc(w), "broadcast_to", true);
  return tile<E>(detail::broadcast_to(x.value(), shape, detail::to_loc(w), "broadcast_to"));
}
template <class E>
tile<E> broadcast_to(const tile<E>& x, std::initializer_list<int64_t> shape,
                     std::source_location w = std::source_location::current()) {
  return broadcast_to(x, std::vector<int64_t>(shape), w);
}
// Same elements in row-major order, another shape.
template <class E>
tile<E> reshape(const tile<E>& x, const std::vector<int64_t>& shape,
                std::source_location w = std::source_location::current()) {
  return tile<E>(detail::reshape(x.value(), shape, detail::to_loc(w)));
}
template <class E>
tile<E> reshape(const tile<E>& x, std::initializer_list<int64_t> shape,
                std::source_location w = std::source_location::current()) {
  return reshape(x, std::vector<int64_t>(shape), w);
}
// Result dim i = x's dim order[i].
template <class E>
tile<E> permute(const tile<E>& x, std::initializer_list<int64_t> order,
                std::source_location w = std::source_location::current()) {
  return tile<E>(detail::permute(x.value(), std::vector<int64_t>(order), detail::to_loc(w), "permute"));
}
// 2-D: swaps the dims; 3-D: reverses them; 1-D: unchanged.
template <class E>
tile<E> trans(const tile<E>& x, std::source_location w = std::source_location::current()) {
  int r = x.rank();
  std::vector<int64_t> order;
  for (int i = r - 1; i >= 0; --i) order.push_back(i);
  return tile<E>(detail::permute(x.value(), order, detail::to_loc(w), "trans"));
}
// a, b of one shape [..] -> [.., 2].
template <class E>
tile<E> join(const tile<E>& a, const tile<E>& b, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::join(a.value(), b.value(), detail::to_loc(w)));
}
// [.., 2] -> the two halves [..].
template <class E>
std::pair<tile<E>, tile<E>> split(const tile<E>& x, std::source_location w = std::source_location::current()) {
  auto [lo, hi] = detail::split(x.value(), detail::to_loc(w));
  return {tile<E>(lo), tile<E>(hi)};
}

}  // namespace tl

#pragma GCC visibility pop
