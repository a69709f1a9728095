// The layouts of shapes (see assign_layouts.h): the default blocked layout
// of a tile (registers, lanes and warps spread over it, repeats for dims
// and warp counts that are not powers of two), a CTA's part of a tile, and
// the layouts one side of a shape op implies for the other (broadcast,
// expand_dims, trans, reshape, join, a reduction's line, a scan). Layout
// assignment (assign_layouts.cpp) and the passes after it build from these.
#include <algorithm>
#include <bit>

#include "codegen/assign_layouts.h"

namespace tl::codegen {

namespace {
int ilog2(int64_t v) { return std::countr_zero(uint64_t(v)); }

// Rebuilds a layout with new output dimensions from a per-basis map. `fn`
// maps the repeats' strides too (a buffer's outer digits among them), so it
// must be linear over the integers as well as over GF(2): moving, adding or
// dropping coordinates is.
template <class Fn>
LinearLayout map_bases(const LinearLayout& l, std::vector<LinearLayout::OutDim> outs, Fn&& fn) {
  std::vector<LinearLayout::InDim> ins;
  for (const auto& d : l.in_dims()) {
    LinearLayout::InDim n{d.name, {}, d.repeat, d.repeat > 1 ? fn(d.repeat_stride) : LinearLayout::Coords{}};
    for (const auto& b : d.bases) n.bases.push_back(fn(b));
    for (const auto& [count, stride] : d.outer) n.outer.push_back({count, fn(stride)});
    ins.push_back(std::move(n));
  }
  return LinearLayout(std::move(ins), std::move(outs));
}

// The positions of the dims that are not 1.
std::vector<size_t> non_unit_dims(const std::vector<int64_t>& shape) {
  std::vector<size_t> at;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) at.push_back(d);
  return at;
}

std::vector<LinearLayout::OutDim> outs_for(const std::vector<int64_t>& shape) {
  std::vector<LinearLayout::OutDim> outs;
  for (size_t d = 0; d < shape.size(); ++d) outs.push_back({dim_name(int(d)), int32_t(shape[d])});
  return outs;
}

}  // namespace

LinearLayout default_layout(const std::vector<int64_t>& full_shape, int vec, int num_warps, int warp_size, int fast_dim,
                            int ctas) {
  int rank = int(full_shape.size()), last = rank - 1;
  int fast = fast_dim < 0 ? last : fast_dim;
  // Dimensions from the fastest: `fast`, then the others from the last.
  std::vector<int> order = {fast};
  for (int d = last; d >= 0; --d)
    if (d != fast) order.push_back(d);
  // Warps c x 2^k (12: three warpgroups) repeat c times above the rest,
  // along the slowest dimension whose own odd factor c divides (192 rows
  // over 12 warps: 3 x 64), else replicating (after_warps).
  const int warp_repeat = int(odd_part(num_warps));
  std::vector<int64_t> blocked_shape = full_shape;
  int warp_dim = -1;
  if (warp_repeat > 1)
    for (auto it = order.rbegin(); it != order.rend() && warp_dim < 0; ++it)
      if (odd_part(full_shape[size_t(*it)]) % warp_repeat == 0) warp_dim = *it;
  if (warp_dim >= 0) blocked_shape[size_t(warp_dim)] /= warp_repeat;
  num_warps /= warp_repeat;
  auto after_warps = [&](const LinearLayout& l) {
    if (warp_repeat == 1) return l;
    if (ctas > 1) throw Error("internal: num_warps " + std::to_string(num_warps * warp_repeat) + " over a cluster");
    if (warp_dim >= 0) return l * LinearLayout::repeat(kWarp, warp_repeat, dim_name(warp_dim));
    auto ins = l.in_dims();
    auto w = std::find_if(ins.begin(), ins.end(), [](const auto& d) { return d.name == kWarp; });
    if (w == ins.end()) w = ins.insert(ins.end(), LinearLayout::InDim{kWarp, {}});
    w->repeat = warp_repeat;
    w->repeat_stride.assign(size_t(rank), 0);
    return LinearLayout(std::move(ins), l.out_dims());
  };
  // Threads and warps spread over each dimension's power-of-two part; the
  // odd factor of a dimension c x 2^k repeats in registers (blocked_layout).
  std::vector<int64_t> shape = blocked_shape;
  for (auto& d : shape) d = pow2_part(d);
  std::vector<int> spt(rank, 1), tpw(rank, 1), wpb(rank, 1);
  spt[fast] = int(std::min<int64_t>(vec, shape[fast]));
  // Threads fill the fastest dimension first, warps the slowest.
  int threads = warp_size;
  for (int d : order) {
    if (threads <= 1) break;
    int t = int(std::min<int64_t>(threads, std::max<int64_t>(1, shape[d] / spt[d])));
    tpw[d] = t;
    threads /= t;
  }
  tpw[fast] *= threads;  // a tile smaller than a warp: the rest replicate
  int warps = num_warps;
  for (auto it = order.rbegin(); it != order.rend() && warps > 1; ++it) {
    int d = *it;
    int w = int(std::min<int64_t>(warps, std::max<int64_t>(1, shape[d] / (int64_t(spt[d]) * tpw[d]))));
    wpb[d] = w;
    warps /= w;
  }
  wpb[order.back()] *= warps;
  // CTAs split the slowest dimensions from the top, past what a CTA covers.
  std::vector<int> cpc(rank, 1);
  for (auto it = order.rbegin(); it != order.rend() && ctas > 1; ++it) {
    int d = *it;
    int64_t covered = int64_t(spt[d]) * tpw[d] * wpb[d];
    int c = int(std::min<int64_t>(ctas, std::max<int64_t>(1, shape[d] / covered)));
    cpc[d] = c;
    ctas /= c;
  }
  return after_warps(blocked_layout(blocked_shape, spt, tpw, wpb, order, cpc));
}

int64_t cta_numel(const LinearLayout& l, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t x : cta_shape(l, shape)) n *= x;
  return n;
}

std::vector<int64_t> cta_shape(const LinearLayout& l, const std::vector<int64_t>& shape) {
  std::vector<int64_t> local = shape;
  for (const auto& d : l.in_dims()) {
    if (d.name != kBlock) continue;
    for (auto it = d.bases.rbegin(); it != d.bases.rend(); ++it) {  // the highest bit first
      const auto& b = *it;
      int dim = -1;
      for (size_t k = 0; k < b.size(); ++k)
        if (b[k] != 0) {
          if (dim >= 0 || (b[k] & (b[k] - 1))) return shape;  // not one coordinate bit
          dim = int(k);
        }
      if (dim < 0) continue;  // replicated
      if (b[dim] != local[dim] / 2) return shape;  // not the top bit left
      local[dim] /= 2;
    }
  }
  return local;
}

LinearLayout broadcast_operand_layout(const LinearLayout& result, const std::vector<int64_t>& operand_shape) {
  auto outs = result.out_dims();
  for (size_t d = 0; d < outs.size(); ++d)
    if (operand_shape[d] == 1) outs[d].size = 1;
  return map_bases(result, outs, [&](LinearLayout::Coords c) {
    for (size_t d = 0; d < c.size(); ++d)
      if (operand_shape[d] == 1) c[d] = 0;
    return c;
  });
}

LinearLayout expand_dims_result_layout(const LinearLayout& operand, int axis) {
  std::vector<int64_t> shape;
  for (const auto& o : operand.out_dims()) shape.push_back(o.size);
  shape.insert(shape.begin() + axis, 1);
  return map_bases(operand, outs_for(shape), [&](LinearLayout::Coords c) {
    c.insert(c.begin() + axis, 0);
    return c;
  });
}

LinearLayout expand_dims_operand_layout(const LinearLayout& result, int axis) {
  std::vector<int64_t> shape;
  for (const auto& o : result.out_dims()) shape.push_back(o.size);
  shape.erase(shape.begin() + axis);
  return map_bases(result, outs_for(shape), [&](LinearLayout::Coords c) {
    c.erase(c.begin() + axis);
    return c;
  });
}

LinearLayout trans_layout(const LinearLayout& operand, const std::vector<int64_t>& order) {
  std::vector<int64_t> shape;
  for (auto o : order) shape.push_back(operand.out_dims()[o].size);
  return map_bases(operand, outs_for(shape), [&](const LinearLayout::Coords& c) {
    LinearLayout::Coords r(c.size());
    for (size_t i = 0; i < order.size(); ++i) r[i] = c[order[i]];
    return r;
  });
}

bool reshapes_unit_dims_only(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  auto f = non_unit_dims(from), t = non_unit_dims(to);
  if (f.size() != t.size()) return false;
  for (size_t i = 0; i < f.size(); ++i)
    if (from[f[i]] != to[t[i]]) return false;
  return true;
}

LinearLayout reshape_layout(const LinearLayout& operand, const std::vector<int64_t>& shape) {
  std::vector<int64_t> src;
  for (const auto& o : operand.out_dims()) src.push_back(o.size);
  // Adding or dropping dims of size 1 ([1, 160, 128] to [160, 128]) moves
  // each coordinate to its dim's new place, whatever the sizes.
  if (reshapes_unit_dims_only(src, shape)) {
    auto from = non_unit_dims(src), to = non_unit_dims(shape);
    return map_bases(operand, outs_for(shape), [&](const LinearLayout::Coords& c) {
      LinearLayout::Coords r(shape.size(), 0);
      for (size_t i = 0; i < from.size(); ++i) r[to[i]] = c[from[i]];
      return r;
    });
  }
  // Otherwise row-major flattening, linear on power-of-two shapes: the
  // coordinate bits of the last dimension are the low bits of the flat
  // index (over GF(2) only: no repeats).
  operand.refuse_outer("a tile's layout flattened to another shape");
  for (auto d : src)
    if (!std::has_single_bit(uint64_t(d))) throw Error("internal: a reshape flattening a dim of " + std::to_string(d));
  return map_bases(operand, outs_for(shape), [&](const LinearLayout::Coords& c) {
    int64_t flat = 0;
    for (size_t d = 0; d < src.size(); ++d) flat = (flat << ilog2(src[d])) | c[d];
    LinearLayout::Coords r(shape.size());
    for (int d = int(shape.size()) - 1; d >= 0; --d) {
      r[d] = int32_t(flat & (shape[d] - 1));
      flat >>= ilog2(shape[d]);
    }
    return r;
  });
}

LinearLayout join_layout(const LinearLayout& operand) {
  std::vector<int64_t> shape;
  for (const auto& o : operand.out_dims()) shape.push_back(o.size);
  shape.push_back(2);
  auto widened = map_bases(operand, outs_for(shape), [&](LinearLayout::Coords c) {
    c.push_back(0);
    return c;
  });
  LinearLayout::Coords top(shape.size(), 0);
  top.back() = 1;
  auto ins = widened.in_dims();
  auto reg = std::find_if(ins.begin(), ins.end(), [](const auto& d) { return d.name == kReg; });
  if (reg == ins.end()) reg = ins.insert(ins.begin(), LinearLayout::InDim{kReg, {}});
  reg->bases.push_back(top);
  return LinearLayout(std::move(ins), widened.out_dims());
}

LinearLayout line_layout(const std::vector<int64_t>& shape, int axis, int num_warps, int warp_size, int ctas) {
  // Move `axis` into registers: lay out the other dimensions with threads
  // and warps, then add register bits covering the whole axis.
  std::vector<int64_t> rest = shape;
  rest[axis] = 1;
  LinearLayout base = default_layout(rest, 1, num_warps, warp_size, -1, ctas);
  auto outs = base.out_dims();
  outs[axis].size = int32_t(shape[axis]);
  auto ins = base.in_dims();
  auto reg = std::find_if(ins.begin(), ins.end(), [](const auto& d) { return d.name == kReg; });
  if (reg == ins.end()) reg = ins.insert(ins.begin(), LinearLayout::InDim{kReg, {}});
  // Registers of the line first, so that register order is axis order.
  std::vector<LinearLayout::Coords> line;
  for (int b = 0; b < ilog2(shape[axis]); ++b) {
    LinearLayout::Coords c(shape.size(), 0);
    c[axis] = int32_t(1) << b;
    line.push_back(c);
  }
  reg->bases.insert(reg->bases.begin(), line.begin(), line.end());
  return LinearLayout(std::move(ins), std::move(outs));
}

bool scannable(const LinearLayout& l, int axis) {
  int32_t seen = 0;
  for (const auto& d : l.in_dims())
    for (const auto& b : d.bases) {
      int32_t a = b[size_t(axis)];
      if (a == 0) continue;
      if (d.name == kBlock || (a & (a - 1)) || (seen & a)) return false;
      for (size_t i = 0; i < b.size(); ++i)
        if (int(i) != axis && b[i] != 0) return false;
      seen |= a;
    }
  return true;
}

LinearLayout scan_layout(const LinearLayout& operand, const std::vector<int64_t>& shape, int axis, int num_warps,
                         int warp_size, int ctas) {
  if (scannable(operand, axis)) return operand;
  return default_layout(shape, 1, num_warps, warp_size, axis, ctas);
}

}  // namespace tl::codegen
