// The swizzled shared-memory tile: how a 2-D tile is stored in shared
// memory for matrix loads, warpgroup instructions and the pipelines'
// buffers, and the same thing as a LinearLayout (offset -> coordinates) for
// the buffer types of the GPU IR (smem<..., #lN>).
//
// Rows of the contiguous dimension are stored in 16-byte chunks whose order
// within a row is XOR-swizzled by the row index (bank-conflict-free 8-row
// matrix loads). Rows longer than 128 bytes are cut into 128-byte panels
// stored one after the other (all rows of panel 0, then of panel 1): the
// swizzled layouts warpgroup instructions read (32, 64 or 128 bytes a row
// with the 32B/64B/128B swizzle, the tile 1024-byte aligned). A row that
// is not a multiple of 128 bytes (a dimension c x 2^k) takes the widest
// panels of 64 or 32 bytes that divide it; a dimension c x 2^k is a repeat
// of the layout (linear_layout.h), one per tile.
//
// The lowering (lowerer.h's SmemTile) computes addresses from these fields;
// `layout()` is the same map as a LinearLayout, which the lowering checks a
// buffer's type against before it addresses it.
//
// LLVM-free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/linear_layout.h"

namespace tl::codegen {

using ir::LinearLayout;

struct SwizzledTile {
  int64_t shape[2] = {0, 0};  // stored shape
  int contiguous = 1;         // stored dimension that is contiguous
  int elem_bytes = 2;
  int vec = 8;                // elements per 16-byte chunk
  int per_phase = 1, max_phase = 1;
  int64_t panel = 0;          // elements of a panel row (0: min(row, 128 bytes))

  static SwizzledTile plan(int64_t d0, int64_t d1, int contiguous, int elem_bytes);
  int64_t bytes() const { return shape[0] * shape[1] * elem_bytes; }
  // Elements of a panel row along the contiguous dimension: 128 bytes, or
  // 64 or 32 where a row (160 bf16: 320 bytes) is not a multiple of 128.
  int64_t panel_elems() const { return panel ? panel : std::min<int64_t>(shape[contiguous], 128 / elem_bytes); }
  // The element offset of stored coordinates (c0, c1).
  int64_t elem_offset(int64_t c0, int64_t c1) const;
  // Element offset -> (dim0, dim1).
  LinearLayout layout() const;
  // Why layout() cannot describe this tile ("" when it can): rows of
  // c x 2^k need the swizzle's pattern within their power-of-two part
  // (plan() makes it so).
  std::string layout_refusal() const;
};

// How tensor copies (TMA) fill or read a tile (one slot): one box a panel,
// `rows` x `inner` elements (`inner` along the contiguous dimension), the
// tensor map's swizzle storing the panel's 16-byte chunks as the tile's
// phase does (swizzle_bytes: 128, 64, 32, or 0 for none). `why` says what
// rules them out when no tensor map stores the tile so.
struct TensorBox {
  int64_t inner = 0, rows = 0;
  int panels = 0;
  int swizzle_bytes = 0;
  int elem_bytes = 0;
  std::string why;  // not empty: no box
  int64_t panel_bytes() const { return inner * rows * elem_bytes; }
};
TensorBox tensor_box_of(const SwizzledTile& t);

// The buffer (one slot) of a pipelined load of a tile of `shape` in
// register layout `l`: this CTA's part of it (cta_shape), contiguous along
// the dimension the registers run along, one row for a rank-1 tile.
SwizzledTile buffer_slot_tile(const LinearLayout& l, const std::vector<int64_t>& shape, int elem_bytes);
// Its layout over the whole tile: offset -> coordinates within this CTA's
// part, and the CTAs' part as `l` splits it ("block" bits).
LinearLayout buffer_slot_layout(const LinearLayout& l, const std::vector<int64_t>& shape, int elem_bytes);
// The buffer of a tensor copy of a tile of `shape` in register layout
// `l`: rows contiguous along the last dimension (a box's), this CTA's part
// of it as `l` splits it over a cluster.
LinearLayout tensor_copy_buffer_layout(const LinearLayout& l, const std::vector<int64_t>& shape, int elem_bytes);
// The tile a buffer (one slot) of `shape` in layout `buffer` stores, when
// that is a layout buffer_slot_layout makes; nullopt otherwise.
std::optional<SwizzledTile> swizzled_tile_of(const LinearLayout& buffer, const std::vector<int64_t>& shape,
                                             int elem_bytes);

}  // namespace tl::codegen
