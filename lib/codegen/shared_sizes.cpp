// Shared-memory sizes (see shared_sizes.h). Each bound follows what the
// lowering of the op does (the file named beside it); the lowering checks
// every use against it, so a bound that falls short is an internal error
// in the tests, never a kernel that overflows unseen.
#include "codegen/shared_sizes.h"

#include <algorithm>
#include <optional>

namespace tl::codegen {

using ir::Op;
using ir::OpKind;

namespace {

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// A tile of `shape` in layout `l` written row-major (store_row_major in
// lower_llvm.cpp): its CTA's part.
int64_t row_major_bytes(const ir::Type& t, const LinearLayout& l) { return cta_numel(l, t.shape) * shared_elem_bytes(t); }

// A register-to-register move from `from` to `to` of tile `v` that may go
// through shared memory (convert in lower_llvm.cpp): the whole tile (a
// CTA's part of it).
int64_t conversion_bytes(const ir::Value* v, const LinearLayout& from, const LinearLayout& to) {
  if (from == to || is_uniform(v) || permutes_registers(from, to)) return 0;
  return row_major_bytes(v->type, from);
}

// The layout a reduction or scan reads its operands in.
const LinearLayout& reduced_layout(const Op& op, const LayoutPlan& plan, std::optional<LinearLayout>& req) {
  req = required_operand_layout(op, 0, plan);
  return req ? *req : plan.of(op.operands[0]);
}

// A reduction's exchange between warps (lower_reduce.cpp): in one of two
// slots when small enough, else from the base.
int64_t reduce_bytes(const Op& op, const LayoutPlan& plan) {
  int64_t total = reduce_exchange_bytes(op, plan);
  return total > 0 && total <= kExchangeSlotBytes ? kExchangeSlotBytes + total : total;
}

// A scan's exchange between warps (lower_reduce.cpp): every operand's
// whole tile, 16-byte aligned.
int64_t scan_bytes(const Op& op, const LayoutPlan& plan) {
  int axis = int(op.attr_int("axis"));
  std::optional<LinearLayout> req;
  const LinearLayout& l = reduced_layout(op, plan, req);
  if (bits_along(l, kWarp, axis).empty()) return 0;
  int64_t total = 0;
  for (const ir::Value* v : op.operands) total = align_up(total + v->type.numel() * shared_elem_bytes(v->type), 16);
  return total;
}

// A dot's A and B (lower_dot.cpp): staged one after the other, each at a
// 128- or 1024-byte boundary, or converted one at a time; none when a
// pipeline left it in shared memory or it is in its fragment layout, or
// only its registers move.
int64_t dot_bytes(const Op& op, const LayoutPlan& plan, const InShared& in_shared) {
  const DotLayouts& d = plan.dots.at(&op);
  int64_t total = 0;
  for (int i = 0; i < 2; ++i) {
    const ir::Value* v = op.operands[i];
    if (v->type.is_shared() || (in_shared && in_shared(v))) continue;
    const LinearLayout& need = i == 0 ? d.a : d.b;
    if (!d.operand_in_smem(i) && (plan.of(v) == need || is_uniform(v) || permutes_registers(plan.of(v), need))) continue;
    // Each at its boundary: a warpgroup instruction's, or 128 bytes; a
    // CTA's part of it on a cluster.
    total += row_major_bytes(v->type, plan.of(v)) + (d.operand_in_smem(i) ? d.instr->operand_align : 1024);
  }
  return total;
}

}  // namespace

int64_t shared_elem_bytes(const ir::Type& t) { return t.is_ptr ? 8 : byte_size(t.dtype); }

// Each operand's partials of every group of warps along the axis, 16-byte
// aligned.
int64_t reduce_exchange_bytes(const Op& op, const LayoutPlan& plan) {
  int axis = int(op.attr_int("axis"));
  std::optional<LinearLayout> req;
  const LinearLayout& l = reduced_layout(op, plan, req);
  int64_t groups = groups_along(l, kWarp, axis);
  if (groups == 1) return 0;
  const auto& shape = op.operands[0]->type.shape;
  int64_t slots = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (int(d) != axis) slots *= shape[d];
  int64_t total = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    int64_t elem = std::max(shared_elem_bytes(op.operands[i]->type), shared_elem_bytes(op.results[i]->type));
    total = align_up(total + groups * slots * elem, 16);
  }
  return total;
}

bool reduces_across_ctas(const Op& op, const LayoutPlan& plan) {
  if (plan.num_ctas <= 1) return false;
  std::optional<LinearLayout> req;
  return !bits_along(reduced_layout(op, plan, req), kBlock, int(op.attr_int("axis"))).empty();
}

bool exchanges_through_scratch(const Op& op) { return op.has_attr("scratch") && op.kind != OpKind::LocalAlloc; }

const ir::Value* buffer_of(const ir::Value* v, const ir::Op** slot) {
  if (slot) *slot = nullptr;
  while (v->type.is_shared() && v->def && (v->def->kind == OpKind::LocalSlot || v->def->kind == OpKind::Trans)) {
    if (slot && v->def->kind == OpKind::LocalSlot) *slot = v->def;
    v = v->def->operands[0];
  }
  return v;
}

int64_t smem_buffer_bytes(const ir::Type& t, const LinearLayout& l) {
  int64_t slots = size_t(t.rank()) > l.out_dims().size() ? t.shape[0] : 1;  // a leading dimension the layout leaves out
  return slots * l.in_size(kOffset) * byte_size(t.dtype);
}

int64_t buffer_slot_bytes(const ir::Value* v, const LayoutPlan& plan) {
  return cta_numel(plan.of(v), v->type.shape) * byte_size(v->type.dtype);
}

int64_t warpgroup_operand_align(const Op& loop, const LayoutPlan& plan) {
  int64_t align = 0;
  for (const auto& o : loop.regions[0]->ops)
    if (o->kind == OpKind::Dot && plan.dots.at(o.get()).on_warpgroups())
      align = std::max(align, plan.dots.at(o.get()).instr->operand_align);
  return align;
}

namespace {


// The bytes load `li`'s buffers take: a slot per stage (one if it is copied
// once), rounded up to the alignment.
int64_t buffer_bytes(const PipelinePlan& p, size_t li, const LayoutPlan& plan, int64_t align) {
  return align_up(buffer_slot_bytes(p.loads[li]->result(), plan) * (p.invariant[li] ? 1 : p.slots()), align);
}

}  // namespace

PipelineBuffers place_pipeline_buffers(const PipelinePlan& p, const LayoutPlan& plan, int64_t base, int64_t wg_align) {
  PipelineBuffers b;
  b.end = base;
  if (p.prefetch_registers) return b;
  int64_t align = std::max<int64_t>(wg_align, 128);
  for (size_t li = 0; li < p.loads.size(); ++li) {
    b.end = align_up(b.end, align);
    b.at.push_back(b.end);
    b.end += buffer_bytes(p, li, plan, align);
  }
  return b;
}

int64_t scratch_bound(const Op& op, const LayoutPlan& plan, const InShared& in_shared) {
  switch (op.kind) {
    case OpKind::ConvertLayout:
      if (op.attr_str_or("move", "") == "remat") return 0;
      return conversion_bytes(op.operands[0], plan.of(op.operands[0]), plan.of(op.result()));
    case OpKind::Trans:
      // A view of a buffer a dot reads in place moves nothing.
      if (op.operands[0]->type.is_shared() || (in_shared && in_shared(op.operands[0]))) return 0;
      // One only a dot reads takes any layout; the lowering converts it.
      if (auto req = required_operand_layout(op, 0, plan))
        return conversion_bytes(op.operands[0], plan.of(op.operands[0]), *req);
      return 0;
    case OpKind::Reduce:
      return reduce_bytes(op, plan);
    case OpKind::Scan:
      return scan_bytes(op, plan);
    case OpKind::Dot:
      return dot_bytes(op, plan, in_shared);
    case OpKind::LocalAlloc:
      // A tile written row-major (expand_conversions.h).
      return op.operands.empty() ? 0 : row_major_bytes(op.operands[0]->type, plan.of(op.operands[0]));
    case OpKind::AtomicRmw: case OpKind::AtomicCas:
      // Old values reach every thread that holds the element (lower_memory.cpp).
      return op.result()->type.numel() * shared_elem_bytes(op.result()->type);
    default:
      return 0;
  }
}

std::vector<Op*> tile_loops(ir::Function& fn) {
  std::vector<Op*> out;
  auto take = [&](Op* o) {
    if (o->kind != OpKind::For) return;
    for (auto& c : o->regions[0]->ops)
      if (ir::is_loop(*c)) {
        out.push_back(o);
        return;
      }
  };
  for (auto& o : fn.body.ops) {
    take(o.get());
    if (o->kind == OpKind::WarpSpecialize && !o->regions.empty())
      for (auto& c : o->regions[0]->ops) take(c.get());
  }
  return out;
}

}  // namespace tl::codegen
