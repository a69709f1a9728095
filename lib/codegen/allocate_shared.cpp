// Shared-memory allocation (see allocate_shared.h).
#include "codegen/allocate_shared.h"

#include <set>

#include "codegen/pipeline_plan.h"
#include "codegen/shared_sizes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;

namespace {

class Allocator {
 public:
  Allocator(const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads)
      : plan_(plan), axis_(axis), matrix_loads_(matrix_loads) {}

  void region(ir::Region& r, int64_t base) {
    for (auto& o : r.ops) {
      int64_t inner = base;
      if (o->kind == OpKind::For) inner = loop(*o, base);
      if (scratch_bound(*o, plan_, [this](const ir::Value* v) { return in_shared_.count(v) != 0; }) > 0)
        o->attrs["scratch"] = base;
      for (auto& sub : o->regions) region(*sub, inner);
    }
  }

 private:
  // Places `loop`'s buffers from `base`; returns where its body's scratch
  // starts.
  int64_t loop(Op& loop, int64_t base) {
    auto p = scheduled_pipeline(loop, plan_, axis_, {matrix_loads_});
    if (!p || p->prefetch_registers) return base;
    PipelineBuffers b = place_pipeline_buffers(*p, plan_, base, warpgroup_reads(loop, plan_));
    loop.attrs["buffers"] = b.at;
    for (const Op* s : p->skip)
      if (s->kind != OpKind::ConvertLayout) in_shared_.insert(s->result());
    return b.end;
  }

  const LayoutPlan& plan_;
  const transforms::AxisAnalysis& axis_;
  bool matrix_loads_;
  std::set<const ir::Value*> in_shared_;  // values the pipelines leave in their buffers
};

void clear(ir::Region& r) {
  for (auto& o : r.ops) {
    o->attrs.erase("buffers");
    o->attrs.erase("scratch");
    for (auto& sub : o->regions) clear(*sub);
  }
}

}  // namespace

void allocate_shared(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads) {
  clear(fn.body);
  Allocator(plan, axis, matrix_loads).region(fn.body, shared_start(plan));
}

}  // namespace tl::codegen
