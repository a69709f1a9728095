// Layout assignment: gives every tile value of a function a distributed
// linear layout (register, lane, warp -> tile coordinates), turning Tile IR
// into GPU IR.
//
// Anchors are the memory ops: a load or store gets the coalesced blocked
// layout whose per-thread vector is the width axis analysis proved safe,
// widened to the widest of the memory ops its values meet through
// elementwise ops (so a bf16 row and the f32 weights it is scaled by share
// one layout).
// Layouts then flow backward from anchors to the values that feed them
// (through elementwise, broadcast, expand_dims, trans and reshape, whose
// operand layouts follow from the result's), and forward to everything
// else. Where an operand's layout still differs from what its op needs, the
// lowering converts it (register permutation, or through shared memory);
// `required_operand_layout` is the one rule both sides use.
//
// The result is written into the function, which becomes GPU IR: its
// attributes record the launch shape and every tile's type names its layout
// in the function's layout table (ir.h). The plan keeps what the IR does
// not hold yet: each dot's instruction and operand layouts, and the
// pipelining depth.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "codegen/dot_layout.h"
#include "ir/ir.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

struct LayoutPlan {
  int num_warps = 4;
  int warp_size = 32;
  int num_stages = 3;  // default software-pipelining depth of loops
  bool fp_fusion = true;  // a multiply feeding an add may fuse (CompileOptions)
  bool flush_denormals = false;  // f32 subnormals may read and compute as zero (CompileOptions)
  int programs_per_sm = 1;       // programs a multiprocessor holds at once, at least (CompileOptions)
  int num_ctas = 1;       // CTAs of a cluster a program's tiles are split over
  const ir::Function* fn = nullptr;  // the GPU IR, whose types hold the layouts
  std::unordered_map<const ir::Value*, LinearLayout> layouts;  // while assigning: those placed so far
  std::unordered_map<const ir::Op*, DotLayouts> dots;          // every dot

  // The layout of tile `v`: its type's, or while assigning, the one placed.
  const LinearLayout& of(const ir::Value* v) const;
  bool has(const ir::Value* v) const { return v->type.layout != 0 || layouts.count(v) != 0; }
};

// The matrix instruction of a dot (its `instr`, select_dot_instructions.h),
// or nullopt for the FMA form.
using MatrixInstrPicker = std::function<std::optional<MatrixInstr>(const ir::Op& dot)>;

LayoutPlan assign_layouts(ir::Function& fn, const transforms::AxisAnalysis& axis, int num_warps,
                          int warp_size, const MatrixInstrPicker& pick = {}, int num_ctas = 1);

// On a cluster of `plan.num_ctas` CTAs, why `dot` (with layouts `d`)
// cannot run: only a warpgroup dot whose rows split over the CTAs can
// (dot_layout.h); empty when it can. assign-layouts and the lowering
// refuse it with this.
std::string cluster_dot_refusal(const ir::Op& dot, const DotLayouts& d, int num_ctas);

// The layout op `op` needs for tile operand `i`, given the plan's layouts of
// its results; null-equivalent (empty optional) when any layout will do
// (scalars, or ops that take their operand's layout as it is).
std::optional<LinearLayout> required_operand_layout(const ir::Op& op, int i, const LayoutPlan& plan);

// Whether `v` holds one value in every element (a splat or a constant): it
// is made again in any layout, never converted.
bool is_uniform(const ir::Value* v);

// The value `v` holds the elements of in another layout (a convert_layout's
// operand, or the tile a local_alloc wrote that a local_load reads back),
// or null.
const ir::Value* moved_from(const ir::Value* v);

// Whether two layouts put the same elements in the same lanes, warps and
// CTAs (a conversion between them only permutes registers).
bool same_threads(const LinearLayout& a, const LinearLayout& b);
// Whether converting from `from` to `to` only moves registers within each
// thread: every thread already holds every element it holds in `to`.
bool permutes_registers(const LinearLayout& from, const LinearLayout& to);
// Whether converting from `from` to `to` moves elements between the CTAs
// of a cluster (each holds another part in `to`): not supported yet.
bool crosses_ctas(const LinearLayout& from, const LinearLayout& to);

// Layout rules of the shape ops (also used by the lowering).
// The coalesced blocked layout: `vec` elements per thread along `fast_dim`
// (-1: the last dimension), then threads along it, then the others from
// the last; warps over the slowest dimensions; with `ctas` > 1 the top
// coordinate bits of the slowest dimensions go to the CTAs of a cluster
// (each holds a contiguous part), what cannot be split is replicated.
LinearLayout default_layout(const std::vector<int64_t>& shape, int vec, int num_warps, int warp_size,
                            int fast_dim = -1, int ctas = 1);
// The part of a tile in layout `l` one CTA of a cluster holds, as a shape:
// the CTAs' bits are the top coordinate bits of their dimensions (as
// default_layout puts them), so a CTA's part is the tile with those bits
// cleared. The whole shape when there are none, or they are elsewhere.
std::vector<int64_t> cta_shape(const LinearLayout& l, const std::vector<int64_t>& shape);
// The elements of that part.
int64_t cta_numel(const LinearLayout& l, const std::vector<int64_t>& shape);
LinearLayout broadcast_operand_layout(const LinearLayout& result, const std::vector<int64_t>& operand_shape);
LinearLayout expand_dims_result_layout(const LinearLayout& operand, int axis);
LinearLayout expand_dims_operand_layout(const LinearLayout& result, int axis);
LinearLayout trans_layout(const LinearLayout& operand, const std::vector<int64_t>& order);
LinearLayout reshape_layout(const LinearLayout& operand, const std::vector<int64_t>& shape);
// Whether a reshape from `from` to `to` only adds or drops dims of size 1
// (reshape_layout then moves each coordinate, whatever the sizes).
bool reshapes_unit_dims_only(const std::vector<int64_t>& from, const std::vector<int64_t>& to);
LinearLayout join_layout(const LinearLayout& operand);  // adds a top register bit for the new minor dim
// A layout in which every thread holds whole lines along `axis` (for scans).
LinearLayout line_layout(const std::vector<int64_t>& shape, int axis, int num_warps, int warp_size, int ctas = 1);
// The bits of input `in` of layout `l` that move along dimension `axis`.
std::vector<int> bits_along(const LinearLayout& l, const std::string& in, int axis);
// The count of `in`'s repeat when it steps along `axis` (12 warps: 3 groups
// of warps), else 1.
int repeat_along(const LinearLayout& l, const std::string& in, int axis);
// How many groups of `in` (warps, CTAs) lie along `axis`: 2^bits_along
// times repeat_along.
int groups_along(const LinearLayout& l, const std::string& in, int axis);
// True if a reduction along `axis` can run on `l` with register combines,
// lane shuffles and one exchange between warps.
bool reducible(const LinearLayout& l, int axis);
// True if a scan along `axis` can run on `l` (lower_reduce.cpp): every
// basis that moves the axis moves it alone, by one bit, each bit once, and
// none is a CTA's.
bool scannable(const LinearLayout& l, int axis);
// The layout a scan along `axis` runs in: the operand's own when
// scannable, else a default layout with the axis fastest.
LinearLayout scan_layout(const LinearLayout& operand, const std::vector<int64_t>& shape, int axis, int num_warps,
                         int warp_size, int ctas);


}  // namespace tl::codegen
