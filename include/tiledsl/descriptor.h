// Tensor descriptors, as Triton's tl.make_tensor_descriptor: a tensor of
// `shape` elements with `strides` (in elements) at `base`, read and written
// one block of `block` elements at a time:
//
//   auto a = tl::make_tensor_descriptor(a_ptr, {M, K}, {stride_am, 1}, {BM, BK});
//   auto t = a.load({m, k});     // [BM, BK]: the elements (m + i, k + j); 0 outside the tensor
//   c.store({m, n}, acc_tile);   // writes the block's elements inside the tensor only
//
// Ranks 1 to 5; the block's sizes are powers of two (a tile's). Shapes,
// strides and coordinates are i32 scalars or C++ integers; a coordinate is
// the element offset of the block's first element along its dimension and
// may lie outside the tensor. Today a descriptor traces to the masked loads
// and stores it means, on every target (TMA on sm_90 is
// docs/hopper-plan.md's next step, with the same meaning).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "tiledsl/creation.h"
#include "tiledsl/math.h"
#include "tiledsl/memory.h"
#include "tiledsl/shape.h"
#include "tiledsl/tile.h"

namespace tl {

// An i32 index: a traced scalar or a C++ integer.
class index {
 public:
  index(const scalar<int32_t>& s) : traced_(s) {}
  index(int64_t n) : n_(n) {}
  index(int n) : n_(n) {}

  // x + i, x * i for a tile `x` of i32.
  tile<int32_t> added_to(const tile<int32_t>& x) const { return traced_ ? x + *traced_ : x + int32_t(n_); }
  tile<int32_t> times(const tile<int32_t>& x) const { return traced_ ? x * *traced_ : x * int32_t(n_); }
  // 0 <= x < i (a negative x, as unsigned, is past any i32 size).
  tile<bool> above_unsigned(const tile<int32_t>& x) const {
    tile<uint32_t> u = cast<uint32_t>(x);
    return traced_ ? u < cast<uint32_t>(*traced_) : u < uint32_t(n_);
  }

 private:
  std::optional<scalar<int32_t>> traced_;
  int64_t n_ = 0;
};

template <class T>
class tensor_descriptor {
 public:
  tensor_descriptor(const ptr<T>& base, std::vector<index> shape, std::vector<index> strides,
                    std::vector<int64_t> block, const std::source_location& w)
      : base_(base), shape_(std::move(shape)), strides_(std::move(strides)), block_(std::move(block)) {
    size_t r = block_.size();
    if (r < 1 || r > 5 || shape_.size() != r || strides_.size() != r)
      throw Error(where(w) + "make_tensor_descriptor: expected a shape, strides and block of one rank from 1 to 5, found " +
                  std::to_string(shape_.size()) + ", " + std::to_string(strides_.size()) + " and " +
                  std::to_string(r) + " entries");
  }

  const std::vector<int64_t>& block_shape() const { return block_; }

  // The block whose first element is at `coords`; elements outside the
  // tensor read as 0.
  tile<T> load(std::initializer_list<index> coords, std::source_location w = std::source_location::current()) const {
    auto [p, ok] = addresses(coords, "load", w);
    return tl::load(p, ok, 0, {}, w);
  }

  // `value` (the block's shape) to the block whose first element is at
  // `coords`; elements outside the tensor are not written.
  template <class V>
  void store(std::initializer_list<index> coords, const V& value,
             std::source_location w = std::source_location::current()) const {
    auto [p, ok] = addresses(coords, "store", w);
    tl::store(p, value, ok, {}, w);
  }

 private:
  static std::string where(const std::source_location& w) { return detail::to_loc(w).str() + ": "; }

  // The block's addresses and which of them lie inside the tensor.
  std::pair<ptr<T>, tile<bool>> addresses(std::initializer_list<index> coords, const char* what,
                                          const std::source_location& w) const {
    const size_t r = block_.size();
    if (coords.size() != r)
      throw Error(where(w) + "tensor_descriptor::" + what + ": expected " + std::to_string(r) +
                  " coordinates (the descriptor's rank), found " + std::to_string(coords.size()));
    std::optional<ptr<T>> p;
    std::optional<tile<bool>> ok;
    size_t d = 0;
    for (const index& c : coords) {
      // This dimension's offsets, of size 1 along every other dimension.
      tile<int32_t> offs = c.added_to(arange(0, block_[d], w));
      for (size_t a = 0; a < r; ++a)
        if (a != d) offs = expand_dims(offs, int(a), w);
      tile<bool> in = shape_[d].above_unsigned(offs);  // 0 <= offs < shape in one compare
      tile<int32_t> step = strides_[d].times(offs);
      p = p ? *p + step : base_ + step;
      ok = ok ? *ok & in : in;
      ++d;
    }
    return {broadcast_to(*p, block_, w), broadcast_to(*ok, block_, w)};
  }

  ptr<T> base_;
  std::vector<index> shape_, strides_;
  std::vector<int64_t> block_;
};

template <class T>
tensor_descriptor<T> make_tensor_descriptor(const ptr<T>& base, std::initializer_list<index> shape,
                                            std::initializer_list<index> strides, std::initializer_list<int64_t> block,
                                            std::source_location w = std::source_location::current()) {
  return tensor_descriptor<T>(base, shape, strides, block, w);
}

}  // namespace tl
