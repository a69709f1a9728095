// The swizzled shared-memory tile (see swizzled_tile.h).
#include "codegen/swizzled_tile.h"

#include <algorithm>
#include <bit>

#include "codegen/assign_layouts.h"
#include "codegen/pipeline_plan.h"

namespace tl::codegen {

SwizzledTile SwizzledTile::plan(int64_t d0, int64_t d1, int contiguous, int elem_bytes) {
  SwizzledTile t;
  t.shape[0] = d0, t.shape[1] = d1;
  t.contiguous = contiguous;
  t.elem_bytes = elem_bytes;
  int64_t row_bytes = t.shape[contiguous] * elem_bytes;
  t.vec = int(std::min<int64_t>(16 / elem_bytes, t.shape[contiguous]));
  // A row of c x 2^k elements (c odd): panels of its power-of-two part, 128
  // bytes at most, repeated.
  if (int64_t pow2 = pow2_part(t.shape[contiguous]); pow2 != t.shape[contiguous]) {
    t.panel = std::min<int64_t>(pow2, 128 / elem_bytes);
    row_bytes = t.panel * elem_bytes;
  }
  t.per_phase = int(std::max<int64_t>(1, 128 / row_bytes));
  t.max_phase = int(std::max<int64_t>(1, std::min<int64_t>(row_bytes / 16, 8)));
  // Rows of c x 2^k (c odd) repeat the offsets of their power-of-two part
  // (layout()), so the swizzle's pattern (per_phase x max_phase rows) must
  // fit in that part: a [12, 64] bf16 slot swizzles over 4 rows, not 8.
  // Tiles of a power of two of rows keep the full pattern.
  if (int64_t rows = t.shape[1 - contiguous], p = pow2_part(rows); p != rows)
    while (t.max_phase > 1 && t.per_phase * t.max_phase > p) t.max_phase /= 2;
  return t;
}

// As Lowerer::tile_offset computes it (lower_dot.cpp), in elements.
int64_t SwizzledTile::elem_offset(int64_t c0, int64_t c1) const {
  int64_t row = contiguous == 1 ? c0 : c1, col = contiguous == 1 ? c1 : c0;
  int64_t cols = panel_elems(), rows = shape[1 - contiguous];
  int64_t phase = (row / per_phase) % max_phase;
  int64_t chunk = ((col % cols) / vec) ^ phase;
  return row * cols + chunk * vec + col % vec + (col / cols) * rows * cols;
}

std::string SwizzledTile::layout_refusal() const {
  const int r = 1 - contiguous;
  const int64_t p = pow2_part(shape[r]);
  if (p != shape[r] && max_phase > 1 && p % (per_phase * max_phase))
    return std::to_string(p) + " rows, less than one swizzle pattern";
  return "";
}

// The map from coordinates to offsets is a bijection linear over GF(2)
// (every size a power of two, the phase XORed into chunk bits of the same
// row): built from each coordinate bit's offset and inverted. A dimension
// c x 2^k adds a repeat above its bits: each step of 2^k rows (or panels)
// moves the offset by a power of two, above the rest.
LinearLayout SwizzledTile::layout() const {
  if (std::string why = layout_refusal(); !why.empty()) throw Error("internal: a swizzled tile of " + why);
  // Rows of c x 2^k and more than one panel (a [192, 160] store buffer, or
  // [192, 128] bf16 in two panels of 64): each panel holds all the rows, so
  // a panel's offsets are not above the rows' repeat. The power-of-two
  // sub-tile's offsets (one panel's 2^k rows), then its rows repeated, then
  // the panels, as outer digits of mixed radix (linear_layout.h).
  const int c = contiguous, r = 1 - contiguous;
  const int64_t rows_pow2 = pow2_part(shape[r]), cols = panel_elems();
  if (rows_pow2 != shape[r] && cols < shape[c]) {
    SwizzledTile sub = *this;
    sub.shape[r] = rows_pow2, sub.shape[c] = cols;
    LinearLayout bits = sub.layout();  // offsets below rows_pow2 * cols
    auto in = bits.in_dims().at(0);
    in.repeat = int32_t(shape[r] / rows_pow2);
    in.repeat_stride.assign(2, 0);
    in.repeat_stride[size_t(r)] = int32_t(rows_pow2);
    LinearLayout::Coords panel(2, 0);
    panel[size_t(c)] = int32_t(cols);
    in.outer = {{int32_t(shape[c] / cols), panel}};
    return LinearLayout({in}, {{dim_name(0), int32_t(shape[0])}, {dim_name(1), int32_t(shape[1])}});
  }
  std::vector<LinearLayout::InDim> coords;
  for (int d = 0; d < 2; ++d) {
    LinearLayout::InDim in{dim_name(d), {}};
    auto offset_of = [&](int64_t c) { return int32_t(d == 0 ? elem_offset(c, 0) : elem_offset(0, c)); };
    const int64_t pow2 = pow2_part(shape[d]);
    for (int64_t bit = 1; bit < pow2; bit <<= 1) in.bases.push_back({offset_of(bit)});
    if (pow2 != shape[d]) {
      in.repeat = int32_t(shape[d] / pow2);
      in.repeat_stride = {offset_of(pow2)};
    }
    coords.push_back(in);
  }
  auto inverse = LinearLayout(coords, {{kOffset, int32_t(shape[0] * shape[1])}}).invert();
  if (!inverse) throw Error("internal: a swizzled tile's offsets are not a bijection");
  return *inverse;
}

// TMA's swizzle modes XOR address bits [4, 7) with the bits 3 above them
// (128B: a 1024-byte atom of 8 rows of 128 bytes; 64B: 4 chunks, the
// phase from the row pair; 32B: 2 chunks, from the row quad) — the
// tile's phase (row / per_phase) % max_phase exactly where panels are 128,
// 64 or 32 bytes wide; rows of 16 bytes are not swizzled.
TensorBox tensor_box_of(const SwizzledTile& t) {
  TensorBox box;
  box.elem_bytes = t.elem_bytes;
  box.inner = t.panel_elems();
  box.rows = t.shape[1 - t.contiguous];
  box.panels = int(t.shape[t.contiguous] / box.inner);
  int64_t row_bytes = box.inner * t.elem_bytes;
  if (row_bytes % 16)
    box.why = "rows of " + std::to_string(row_bytes) + " bytes (tensor copies move rows of a multiple of 16 bytes)";
  else if (box.rows > 256)
    box.why = std::to_string(box.rows) + " rows (a tensor copy's box has 256 at most)";
  else if (t.max_phase > 1 && (t.per_phase * row_bytes != 128 || t.max_phase * 16 != row_bytes))
    box.why = "a swizzle no tensor map stores";
  else if (std::string why = t.layout_refusal(); !why.empty())
    box.why = why;
  box.swizzle_bytes = t.max_phase > 1 ? int(row_bytes) : 0;
  return box;
}

SwizzledTile buffer_slot_tile(const LinearLayout& l, const std::vector<int64_t>& shape, int elem_bytes) {
  auto sh = cta_shape(l, shape);
  return sh.size() == 1 ? SwizzledTile::plan(1, sh[0], 1, elem_bytes)
                        : SwizzledTile::plan(sh[0], sh[1], stored_contiguous_dim(l), elem_bytes);
}

namespace {

// `t` over a tile of `shape`, its CTAs' parts as `block` says.
LinearLayout over_tile(const SwizzledTile& t, const std::vector<int64_t>& shape,
                       const std::vector<LinearLayout::Coords>& block) {
  LinearLayout::InDim off = t.layout().in_dims().at(0);  // offset, a repeat included
  if (shape.size() == 1) {  // one row: dim1 is the tile's only dimension
    for (auto& c : off.bases) c = {c[1]};
    if (off.repeat > 1) off.repeat_stride = {off.repeat_stride[1]};
  }
  std::vector<LinearLayout::InDim> ins{off};
  if (!block.empty()) ins.push_back({kBlock, block});
  std::vector<LinearLayout::OutDim> outs;
  for (size_t d = 0; d < shape.size(); ++d) outs.push_back({dim_name(int(d)), int32_t(shape[d])});
  return LinearLayout(ins, outs);
}

}  // namespace

LinearLayout buffer_slot_layout(const LinearLayout& l, const std::vector<int64_t>& shape, int elem_bytes) {
  return over_tile(buffer_slot_tile(l, shape, elem_bytes), shape, l.bases(kBlock));
}

LinearLayout tensor_copy_buffer_layout(const LinearLayout& l, const std::vector<int64_t>& shape, int elem_bytes) {
  auto sh = cta_shape(l, shape);
  return over_tile(SwizzledTile::plan(sh[0], sh[1], 1, elem_bytes), shape, l.bases(kBlock));
}

// The CTA's part from the block bits; then the layout must be the one
// either contiguous dimension makes (a dimension of 1 makes both alike).
std::optional<SwizzledTile> swizzled_tile_of(const LinearLayout& buffer, const std::vector<int64_t>& shape,
                                             int elem_bytes) {
  if (shape.empty() || shape.size() > 2 || buffer.out_dims().size() != shape.size()) return std::nullopt;
  auto sh = cta_shape(buffer, shape);
  for (int contiguous : {1, 0}) {
    SwizzledTile t = sh.size() == 1 ? SwizzledTile::plan(1, sh[0], 1, elem_bytes)
                                    : SwizzledTile::plan(sh[0], sh[1], contiguous, elem_bytes);
    if (over_tile(t, shape, buffer.bases(kBlock)) == buffer) return t;
  }
  return std::nullopt;
}

}  // namespace tl::codegen
