// Loop scheduling (see schedule_loops.h).
#include "codegen/schedule_loops.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/pipeline_plan.h"
#include "codegen/shared_sizes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;

namespace {

// Shared memory the body's scratch keeps free of the buffers of loads read
// into registers (the reductions' two exchange slots, small conversions).
constexpr int64_t kScratchReserve = 16 * 1024;

// Whether a plan keeps a load in shared memory for the loop's dots (a ring
// the loop's dots read in place).
bool feeds_dots(const PipelinePlan& p) { return std::ranges::count(p.to_registers, false) > 0; }

class Scheduler {
 public:
  Scheduler(const ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, const ScheduleTarget& t)
      : fn_(fn), plan_(plan), axis_(axis), t_(t) {}

  // Plans every loop in two walks: innermost first, to find the loops
  // around a loop whose pipeline feeds dots (not pipelined, see
  // `plan_innermost_first`), then outer first, placing each loop's buffers
  // above those of the loops around it (and the cluster exchange), as the
  // lowering places them.
  void schedule(bool register_loads) {
    plans_.clear();
    left_.clear();
    register_loads_ = register_loads;
    std::map<const Op*, Planned> at_start;
    plan_innermost_first(fn_.body, at_start);
    place(fn_.body, start(), at_start);
  }

  // At most how much shared memory the kernel takes with this schedule.
  int64_t bound() const { return need(fn_.body, start()); }

  bool has_register_loads() const {
    for (const auto& [loop, p] : plans_)
      for (bool r : p.to_registers)
        if (r) return true;
    return false;
  }

  const std::map<const Op*, PipelinePlan>& plans() const { return plans_; }
  // Loads read into registers whose buffers the budget left out (none when
  // scheduled without such loads: the function says why).
  const std::vector<PipelinePlan::Left>& left() const { return left_; }

 private:
  int64_t start() const { return shared_start(plan_); }

  // The first byte past `loop`'s buffers, which start at `base`.
  int64_t past_buffers(const Op& loop, int64_t base) const {
    auto it = plans_.find(&loop);
    if (it == plans_.end()) return base;
    return place_pipeline_buffers(it->second, plan_, base, warpgroup_operand_align(loop, plan_)).end;
  }

  // A loop's plan, and the loads read into registers its budget left out.
  struct Planned {
    std::optional<PipelinePlan> plan;
    std::vector<PipelinePlan::Left> left;
  };

  Planned plan_loop(const Op& loop, int64_t base) const {
    int64_t budget = register_loads_ ? t_.shared_bytes - base - kScratchReserve : 0;
    Planned p;
    p.plan = plan_pipeline(loop, plan_, axis_, {t_.matrix_loads, budget, t_.thread_registers}, &p.left);
    return p;
  }

  // A loop around a loop whose pipeline feeds dots is not pipelined
  // itself (as Triton pipelines innermost loops): a persistent program's
  // loop over tiles whose body loads a block for its inner loop
  // (attention's Q) would otherwise run that load a tile ahead through a
  // ring of its own, whose prologue before the inner loop keeps
  // warp-specialize from the pair. Loops of loads read into registers
  // nest as they are.
  // Plans the loops in `r` that hold no such loop, innermost first, each
  // with its buffers at the start (`at_start`: which loads feed dots does
  // not depend on where the buffers start); whether `r` holds a loop whose
  // pipeline feeds dots.
  bool plan_innermost_first(const ir::Region& r, std::map<const Op*, Planned>& at_start) const {
    bool dots = false;
    for (const auto& o : r.ops) {
      bool dots_in_o = false;
      for (const auto& sub : o->regions) dots_in_o = plan_innermost_first(*sub, at_start) || dots_in_o;
      if (o->kind == OpKind::For && !dots_in_o) {
        Planned& p = at_start[o.get()];
        p = plan_loop(*o, start());
        dots_in_o = p.plan && feeds_dots(*p.plan);
      }
      dots = dots || dots_in_o;
    }
    return dots;
  }

  // Records the plans of the loops in `r` that `plan_innermost_first`
  // planned, their buffers starting at `base`: planned again where that
  // is not the start (inside a pipelined loop).
  void place(const ir::Region& r, int64_t base, std::map<const Op*, Planned>& at_start) {
    for (const auto& o : r.ops) {
      int64_t inner = base;
      if (auto it = at_start.find(o.get()); it != at_start.end()) {
        Planned p = base == start() ? std::move(it->second) : plan_loop(*o, base);
        if (p.plan) plans_.emplace(o.get(), std::move(*p.plan));
        if (register_loads_) left_.insert(left_.end(), p.left.begin(), p.left.end());
        inner = past_buffers(*o, base);
      }
      for (const auto& sub : o->regions) place(*sub, inner, at_start);
    }
  }

  bool in_shared(const ir::Value* v) const {
    if (!v->def) return false;
    for (const auto& [loop, p] : plans_)
      if (p.skip.count(v->def) && v->def->kind != OpKind::ConvertLayout) return true;
    return false;
  }

  // In the body of a loop at the top level (a persistent program's loop
  // over tiles), the ring of a loop there whose pipeline feeds dots lives
  // through the whole body once warp-specialize has split the pair
  // (warp_specialize.h: it is made once, before the tiles): what else the
  // body holds, other loops' buffers and scratch, goes above it.
  int64_t need(const ir::Region& r, int64_t base, bool tile_body = false) const {
    int64_t most = base;
    InShared shared = [this](const ir::Value* v) { return in_shared(v); };
    const Op* ring = tile_body ? feeding_dots(r) : nullptr;
    int64_t others = ring ? past_buffers(*ring, base) : base;
    for (const auto& o : r.ops) {
      int64_t at = o.get() == ring ? base : others;
      most = std::max(most, at + scratch_bound(*o, plan_, shared));
      int64_t inner = o->kind == OpKind::For ? past_buffers(*o, at) : at;
      for (const auto& sub : o->regions)
        most = std::max(most, need(*sub, inner, &r == &fn_.body && o->kind == OpKind::For));
    }
    return most;
  }

  // The first loop directly in `r` whose plan has a load feeding dots.
  const Op* feeding_dots(const ir::Region& r) const {
    for (const auto& o : r.ops)
      if (auto it = plans_.find(o.get()); it != plans_.end() && feeds_dots(it->second)) return o.get();
    return nullptr;
  }

  const ir::Function& fn_;
  const LayoutPlan& plan_;
  const transforms::AxisAnalysis& axis_;
  const ScheduleTarget& t_;
  bool register_loads_ = true;
  std::map<const Op*, PipelinePlan> plans_;
  std::vector<PipelinePlan::Left> left_;
};

const char* form_of(const PipelinePlan& p, size_t li) {
  if (p.prefetch_registers) return "prefetch";
  if (!p.to_registers[li]) return "dots";
  return p.invariant[li] ? "once" : "registers";
}

void clear_schedule(ir::Region& r) {
  for (auto& o : r.ops) {
    for (const char* k : {"stages", "pipeline", "unpipelined"}) o->attrs.erase(k);
    for (auto& sub : o->regions) clear_schedule(*sub);
  }
}

}  // namespace

void schedule_loops(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis,
                    const ScheduleTarget& t) {
  clear_schedule(fn.body);
  fn.attrs.erase("schedule");
  if (!t.async_copy) return;
  Scheduler s(fn, plan, axis, t);
  s.schedule(true);
  if (s.has_register_loads()) {
    int64_t need = s.bound();
    if (need > t.shared_bytes) {
      s.schedule(false);
      fn.attrs["schedule"] = "loads read into registers left in place: with their buffers the kernel could need " +
                             std::to_string(need) + " bytes of shared memory, " + t.name + " has " +
                             std::to_string(t.shared_bytes);
    }
  }
  for (const auto& [loop, p] : s.plans()) {
    auto* l = const_cast<Op*>(loop);  // the plans point into `fn`
    l->attrs["stages"] = int64_t(p.stages);
    for (size_t li = 0; li < p.loads.size(); ++li) const_cast<Op*>(p.loads[li])->attrs["pipeline"] = std::string(form_of(p, li));
  }
  for (const auto& left : s.left())
    const_cast<Op*>(left.load)->attrs["unpipelined"] =
        "its buffers would take " + std::to_string(left.bytes) + " bytes of shared memory, " +
        std::to_string(std::max<int64_t>(left.room, 0)) + " are left beside the body's scratch";
}

}  // namespace tl::codegen
