// Tensor descriptors, as Triton's tl.make_tensor_descriptor: a tensor of
// `shape` elements with `strides` (in elements) at `base`, read and written
// one block of `block` elements at a time:
//
//   auto a = tl::make_tensor_descriptor(a_ptr, {M, K}, {stride_am, 1}, {BM, BK});
//   auto t = a.load({m, k});     // [BM, BK]: the elements (m + i, k + j); 0 outside the tensor
//   c.store({m, n}, acc_tile);   // writes the block's elements inside the tensor only
//
// Ranks 1 to 5 (a block is a tile); the block's sizes are powers of two
// (a tile's). Shapes, strides and coordinates are i32 scalars or C++ integers; a coordinate is
// the element offset of the block's first element along its dimension and
// may lie outside the tensor. A block traces to descriptor_load /
// descriptor_store (ops.def); the compiler runs them as the masked loads
// and stores they mean (lower-descriptors), except that on sm_90 a load
// read by dots whose launch proves TMA's rules (16-byte aligned base and
// row stride, last stride 1, innermost coordinate a multiple of 16 bytes)
// becomes a tensor copy, pipelined in a loop (codegen/tma_descriptors.h).
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
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

  // A C++ integer outside i32 (a traced scalar is i32 already).
  std::optional<int64_t> too_wide() const {
    if (traced_ || (n_ >= INT32_MIN && n_ <= INT32_MAX)) return std::nullopt;
    return n_;
  }

  // The traced i32 scalar (a constant for a C++ integer, which must fit).
  detail::Value* value(const ir::Loc& loc, std::string_view op) const {
    return traced_ ? traced_->value() : detail::constant(detail::Operand::number(n_), DType::i32, {}, loc, op);
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
    // A block is a tile: at most max_tile_rank (5) dims, as Triton's.
    size_t r = block_.size();
    if (r < 1 || r > size_t(max_tile_rank) || shape_.size() != r || strides_.size() != r)
      throw Error(where(w) + "make_tensor_descriptor: expected a shape, strides and block of one rank from 1 to " +
                  std::to_string(max_tile_rank) + ", found " + std::to_string(shape_.size()) + ", " +
                  std::to_string(strides_.size()) + " and " + std::to_string(r) + " entries");
    // Checked here, where they are given: they become i32 constants only at
    // each load and store, whose line the error would name instead.
    for (const auto* part : {&shape_, &strides_})
      for (const index& i : *part)
        if (auto n = i.too_wide())
          throw Error(where(w) + "make_tensor_descriptor: expected a " + (part == &shape_ ? "size" : "stride") +
                      " representable in i32, found " + std::to_string(*n));
    for (int64_t b : block_)
      if (!is_tile_dim(b))
        throw Error(where(w) + "make_tensor_descriptor: expected block sizes c x 2^k (c = 1, 3, ..., 15), found " +
                    std::to_string(b));
  }

  const std::vector<int64_t>& block_shape() const { return block_; }

  // The block whose first element is at `coords`; elements outside the
  // tensor read as 0.
  tile<T> load(std::initializer_list<index> coords, std::source_location w = std::source_location::current()) const {
    ir::Loc loc = detail::to_loc(w);
    auto [shape, strides, at] = operands(coords, "load", loc);
    return tile<T>(detail::descriptor_load(base_.value(), shape, strides, at, block_, loc));
  }

  // `value` (the block's shape) to the block whose first element is at
  // `coords`; elements outside the tensor are not written.
  template <class V>
    requires detail::operand_of<V>::valid
  void store(std::initializer_list<index> coords, const V& value,
             std::source_location w = std::source_location::current()) const {
    ir::Loc loc = detail::to_loc(w);
    auto [shape, strides, at] = operands(coords, "store", loc);
    detail::descriptor_store(base_.value(), shape, strides, at, block_, detail::operand(value), loc);
  }

 private:
  static std::string where(const std::source_location& w) { return detail::to_loc(w).str() + ": "; }

  using Values = std::vector<detail::Value*>;
  std::tuple<Values, Values, Values> operands(std::initializer_list<index> coords, const char* what,
                                              const ir::Loc& loc) const {
    const size_t r = block_.size();
    if (coords.size() != r)
      throw Error(loc.str() + ": tensor_descriptor::" + what + ": expected " + std::to_string(r) +
                  " coordinates (the descriptor's rank), found " + std::to_string(coords.size()));
    std::string op = std::string("tensor_descriptor::") + what;
    Values shape, strides, at;
    for (size_t d = 0; d < r; ++d) {
      shape.push_back(shape_[d].value(loc, op));
      strides.push_back(strides_[d].value(loc, op));
    }
    for (const index& c : coords) at.push_back(c.value(loc, op));
    return {shape, strides, at};
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

#pragma GCC visibility pop
