// Conversions through shared memory as buffers (see expand_conversions.h).
#include "codegen/expand_conversions.h"

#include <bit>
#include <set>

#include "codegen/pipeline_plan.h"
#include "ir/verifier_rules.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;

LinearLayout row_major_buffer(const std::vector<int64_t>& shape) {
  // A dimension c x 2^k is a repeat, the offset's highest digit: row-major
  // where it is the first (192 x 64), else c panels of its power-of-two
  // part, each row-major (64 x 96: three [64, 32] panels). One such
  // dimension (the offset has one repeat).
  int odd = 0;
  for (int64_t d : shape) odd += !std::has_single_bit(uint64_t(d));
  if (odd > 1)
    throw Error("a buffer of " + ir::verify_rules::shape_str(shape) +
                ", with more than one dimension that is not a power of two, is not lowered yet");
  std::vector<LinearLayout::Coords> bases;
  LinearLayout::InDim off{kOffset, {}};
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    const int64_t pow2 = pow2_part(shape[size_t(d)]);
    for (int64_t bit = 1; bit < pow2; bit <<= 1) {
      LinearLayout::Coords c(shape.size(), 0);
      c[size_t(d)] = int32_t(bit);
      off.bases.push_back(c);
    }
    if (pow2 != shape[size_t(d)]) {
      off.repeat = int32_t(shape[size_t(d)] / pow2);
      off.repeat_stride.assign(shape.size(), 0);
      off.repeat_stride[size_t(d)] = int32_t(pow2);
    }
  }
  std::vector<LinearLayout::OutDim> outs;
  for (size_t d = 0; d < shape.size(); ++d) outs.push_back({dim_name(int(d)), int32_t(shape[d])});
  return LinearLayout({off}, outs);
}

namespace {

class Expander {
 public:
  Expander(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads)
      : fn_(fn), plan_(plan), axis_(axis), matrix_loads_(matrix_loads) {}

  void region(ir::Region& r) {
    for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
      Op& op = **it;
      if (op.kind == OpKind::For) keep_scheduled(op);
      for (auto& sub : op.regions) region(*sub);
      if (op.kind == OpKind::ConvertLayout && op.attr_str_or("move", "") == "shared" && !keep_.count(&op))
        it = expand(r, it);
    }
  }

 private:
  // A scheduled loop's conversions that run ahead with its loads, or that
  // only what lives in its buffers reads, stay.
  void keep_scheduled(const Op& loop) {
    auto p = scheduled_pipeline(loop, plan_, axis_, {matrix_loads_});
    if (!p) return;
    for (const Op* o : p->lead_ops)
      if (o->kind == OpKind::ConvertLayout) keep_.insert(o);
    for (const Op* o : p->skip)
      if (o->kind == OpKind::ConvertLayout) keep_.insert(o);
  }

  // Replaces the conversion at `it`; returns the iterator of its last op.
  ir::Region::iterator expand(ir::Region& r, ir::Region::iterator it) {
    Op& conv = **it;
    ir::Value* x = conv.operands[0];
    ir::Value* y = conv.result();
    ir::Builder b(&r, it);
    b.loc = conv.loc;
    // Buffers hold numbers: a pointer tile goes through as its addresses.
    const bool ptrs = x->type.is_ptr;
    auto as_address = [](ir::Type t) {
      t.is_ptr = false;
      t.dtype = DType::i64;
      return t;
    };
    if (ptrs) x = b.create1(OpKind::Bitcast, {x}, as_address(x->type));
    ir::Type buf{x->type.dtype, x->type.is_ptr, x->type.shape};
    buf.kind = ir::TypeKind::shared;
    try {
      buf.layout = fn_.intern_layout(row_major_buffer(x->type.shape));
    } catch (const Error& e) {
      throw Error(conv.loc.str() + ": 'convert_layout' of " + x->type.str() + " through shared memory: " + e.what());
    }
    ir::Value* mem = b.create1(OpKind::LocalAlloc, {x}, buf);
    ir::Value* read = b.create1(OpKind::LocalLoad, {mem}, ptrs ? as_address(y->type) : y->type);
    if (ptrs) read = b.create1(OpKind::Bitcast, {read}, y->type);
    ir::replace_uses(r, y, read);
    auto last = std::prev(it);
    r.ops.erase(it);
    return last;
  }

  ir::Function& fn_;
  const LayoutPlan& plan_;
  const transforms::AxisAnalysis& axis_;
  bool matrix_loads_;
  std::set<const Op*> keep_;
};

}  // namespace

void expand_conversions(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads) {
  Expander(fn, plan, axis, matrix_loads).region(fn.body);
}

}  // namespace tl::codegen
