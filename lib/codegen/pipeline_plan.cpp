// Software-pipelining plan (see pipeline_plan.h).
#include "codegen/pipeline_plan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "codegen/swizzled_tile.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;

int access_width(const Op& op, const LinearLayout& l, DType d, const transforms::AxisAnalysis& axis) {
  int dim = stored_contiguous_dim(l);
  int w = std::min<int>(axis.vector_width(op, dim), l.contiguous_run(kReg, dim));
  return std::max(1, std::min(w, 16 / std::max(1, byte_size(d))));
}

int stored_contiguous_dim(const LinearLayout& l) {
  int best = int(l.out_dims().size()) - 1;
  for (int d = best - 1; d >= 0; --d)
    if (l.contiguous_run(kReg, d) > l.contiguous_run(kReg, best)) best = d;
  return std::max(best, 0);
}

bool matrix_loadable_dot(const Op& dot, const LayoutPlan& plan) {
  const DotLayouts& d = plan.dots.at(&dot);
  return d.instr && d.instr->k == 16 && byte_size(dot.operands[0]->type.dtype) == 2;
}

bool staged_for_matrix_loads(const Op& dot, int i, const ir::Value* v, const LayoutPlan& plan) {
  if (!matrix_loadable_dot(dot, plan) || is_uniform(v)) return false;
  const DotLayouts& d = plan.dots.at(&dot);
  if (d.on_warpgroups()) return false;  // read by the instruction, or an A in registers converted as any tile
  const LinearLayout &from = plan.of(v), &need = i == 0 ? d.a : d.b;
  return !(from == need) && !same_threads(from, need);
}

bool is_zero_constant(const ir::Value* v) {
  const Op* d = v->def;
  if (d && d->kind == OpKind::Splat) d = d->operands[0]->def;
  if (!d || d->kind != OpKind::Constant) return false;
  const ir::Attr& a = d->attrs.at("value");
  if (std::holds_alternative<double>(a)) return std::get<double>(a) == 0.0 && !std::signbit(std::get<double>(a));
  return std::holds_alternative<int64_t>(a) && std::get<int64_t>(a) == 0;
}

namespace {

// Ops the lead slice may contain: pure, cheap, no regions.
bool clonable(const Op& op) {
  switch (op.kind) {
    case OpKind::Constant: case OpKind::Splat: case OpKind::Broadcast: case OpKind::ExpandDims:
    case OpKind::Arange: case OpKind::Trans: case OpKind::Reshape: case OpKind::ProgramId:
    case OpKind::NumPrograms: case OpKind::ConvertLayout:
      return true;
    default:
      return ir::op_is_elementwise(op.kind) && op.regions.empty();
  }
}

bool writes_memory(const ir::Region& r) {
  for (const auto& o : r.ops) {
    if (o->kind == OpKind::Store || o->kind == OpKind::AtomicRmw || o->kind == OpKind::AtomicCas) return true;
    for (const auto& sub : o->regions)
      if (writes_memory(*sub)) return true;
  }
  return false;
}

}  // namespace

namespace {

// The planning of one loop: which loads, in which form, and the slice
// that runs ahead of them.
class Planner {
 public:
  Planner(const Op& loop, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, const PipelineTarget& target)
      : loop_(loop), body_(*loop.regions[0]), plan_(plan), axis_(axis), target_(target) {
    note_users(body_);
  }

  std::optional<PipelinePlan> run(std::vector<PipelinePlan::Left>* left);
  std::optional<PipelinePlan> scheduled();

 private:
  struct Candidate {
    const Op* load;
    bool to_registers;
    std::vector<const Op*> trans;
    bool invariant = false;
  };

  void note_users(const ir::Region& r) {
    for (const auto& o : r.ops) {
      for (const ir::Value* v : o->operands) users_[v].push_back(o.get());
      for (const auto& sub : o->regions) note_users(*sub);
    }
  }
  bool dot_use(const Op* u, const ir::Value* v) const {
    return u->kind == OpKind::Dot && (u->operands[0] == v || u->operands[1] == v) && u->operands[2] != v &&
           matrix_loadable_dot(*u, plan_);
  }
  bool dot_reads(const Op& ld, std::vector<const Op*>& trans);
  // A tile load (rank 1 or 2, not volatile) of 4, 8 or 16 bytes a thread
  // per access: what an asynchronous copy can do.
  // A descriptor_load (kept for tensor copies, tma_descriptors.h) of rank 2
  // is copied whole by one thread.
  bool copyable(const Op& ld) const {
    if (ld.kind == OpKind::DescriptorLoad) return ld.result()->type.rank() == 2;
    if (ld.kind != OpKind::Load) return false;
    const ir::Value* v = ld.result();
    if (!v->type.is_tile() || v->type.rank() > 2 || ld.attr_int_or("volatile", 0)) return false;
    // A slot of a tile whose two dims are not powers of two must have a
    // layout (swizzled_tile.h); else the load stays where it stands.
    if (v->type.rank() == 2 && !is_pow2_dim(v->type.shape[0]) && !is_pow2_dim(v->type.shape[1]) &&
        !buffer_slot_tile(plan_.of(v), v->type.shape, byte_size(v->type.dtype)).layout_refusal().empty())
      return false;
    int bytes = access_width(ld, plan_.of(v), v->type.dtype, axis_) * byte_size(v->type.dtype);
    return bytes == 4 || bytes == 8 || bytes == 16;
  }
  // Loads read into registers may be issued early: the loop stores
  // nothing, or its author named its depth.
  bool may_reorder() const { return loop_.attrs.count("num_stages") || !writes_memory(body_); }
  bool invariant(const ir::Value* v);
  std::vector<Candidate> candidates(int stages);
  bool pull(const ir::Value* v);
  bool prefetch_fits(const PipelinePlan& p) const;
  std::optional<PipelinePlan> build(int stages, const std::vector<Candidate>& cands, const Op* prefetch_of);

  const Op& loop_;
  const ir::Region& body_;
  const LayoutPlan& plan_;
  const transforms::AxisAnalysis& axis_;
  const PipelineTarget& target_;
  std::unordered_map<const ir::Value*, std::vector<const Op*>> users_;
  std::unordered_map<const ir::Value*, bool> invariant_memo_;
  std::set<const Op*> need_;  // the lead slice
  std::set<size_t> args_;     // carried values it reads
  std::vector<PipelinePlan::Left> over_budget_;  // register loads whose buffers did not fit
};

// Whether every use of `ld` is a dot operand read with matrix loads
// (directly, or through the trans ops it collects) and masked elements
// are 0.
bool Planner::dot_reads(const Op& ld, std::vector<const Op*>& trans) {
  const ir::Value* v = ld.result();
  if (!target_.matrix_loads || v->type.rank() != 2 || users_[v].empty()) return false;
  if (ld.kind == OpKind::Load && ld.operands.size() > 2 && !is_zero_constant(ld.operands[2])) return false;
  for (const Op* u : users_[v]) {
    if (dot_use(u, v)) continue;
    if (u->kind != OpKind::Trans || users_[u->result()].empty()) return false;  // a store has no result
    for (const Op* uu : users_[u->result()])
      if (!dot_use(uu, u->result())) return false;
    trans.push_back(u);
  }
  return true;
}

// Values the same in every iteration: defined before the loop, or by pure
// ops of such values (an address computed in the body from arguments
// alone).
bool Planner::invariant(const ir::Value* v) {
  if (!ir::defined_in(v, body_)) return true;
  if (!v->def || !clonable(*v->def)) return false;
  if (auto it = invariant_memo_.find(v); it != invariant_memo_.end()) return it->second;
  bool inv = std::all_of(v->def->operands.begin(), v->def->operands.end(), [&](const ir::Value* x) { return invariant(x); });
  return invariant_memo_[v] = inv;
}

// The body's tile loads that may be pipelined, in body order, within the
// shared-memory budget.
std::vector<Planner::Candidate> Planner::candidates(int stages) {
  std::vector<Candidate> cands;
  bool any_dot_reads = false;
  for (const auto& o : body_.ops) {
    const Op& ld = *o;
    if (!copyable(ld)) continue;
    Candidate c{&ld, false, {}};
    if (!dot_reads(ld, c.trans)) {
      if (!may_reorder()) continue;
      c.invariant = std::all_of(ld.operands.begin(), ld.operands.end(), [&](const ir::Value* x) { return invariant(x); });
      // A tensor copy of the same block every iteration: not pipelined
      // (tma-descriptors copies it where it stands).
      if (c.invariant && ld.kind == OpKind::DescriptorLoad) continue;
      c.to_registers = true;
      c.trans.clear();
    }
    any_dot_reads = any_dot_reads || !c.to_registers;
    cands.push_back(std::move(c));
  }
  // Buffers of register loads must leave room for the body's scratch:
  // the first ones in body order that fit are pipelined, loads that change
  // each iteration before invariant ones (one buffer each, filled once).
  int64_t register_bytes = 0;
  for (bool inv : {false, true})
    std::erase_if(cands, [&](const Candidate& c) {
      if (!c.to_registers || c.invariant != inv) return false;
      const ir::Type& t = c.load->result()->type;
      int64_t bytes = cta_numel(plan_.of(c.load->result()), t.shape) * byte_size(t.dtype) * (inv ? 1 : any_dot_reads ? stages : stages - 1);
      if (register_bytes + bytes > target_.smem_budget) {
        over_budget_.push_back({c.load, bytes, target_.smem_budget - register_bytes});
        return true;
      }
      register_bytes += bytes;
      return false;
    });
  return cands;
}

// Adds what computing `v` ahead needs to the lead slice; false when that
// holds an op that cannot run ahead.
bool Planner::pull(const ir::Value* v) {
  if (v == body_.args[0].get()) return true;
  const Op* yield = body_.terminator();
  for (size_t k = 0; k + 1 < body_.args.size(); ++k)
    if (v == body_.args[k + 1].get()) return args_.count(k) || (args_.insert(k), pull(yield->operands[k]));
  if (!v->def || !ir::defined_in(v, body_)) return true;  // loop-invariant
  if (need_.count(v->def)) return true;
  if (!clonable(*v->def)) return false;
  need_.insert(v->def);
  for (const ir::Value* x : v->def->operands)
    if (!pull(x)) return false;
  return true;
}

// Register prefetch: the prefetched copy (packed) and the current one (a
// register per f32 element) within three quarters of a thread's registers.
bool Planner::prefetch_fits(const PipelinePlan& p) const {
  int64_t regs = 0;
  for (const Op* ld : p.loads) {
    const ir::Type& t = ld->result()->type;
    int64_t n = plan_.of(ld->result()).in_size(kReg);
    regs += (n * byte_size(t.dtype) + 3) / 4 + n * std::max(1, byte_size(t.dtype) / 4);
  }
  return 4 * regs <= 3 * int64_t(target_.thread_registers);
}

std::optional<PipelinePlan> Planner::run(std::vector<PipelinePlan::Left>* left) {
  int stages = int(loop_.attr_int_or("num_stages", plan_.num_stages));
  if (stages < 2) return std::nullopt;
  auto p = build(stages, candidates(stages), nullptr);
  if (left) *left = over_budget_;
  return p;
}

// The plan of a loop that schedule-loops scheduled: its `stages`, and each
// load's `pipeline` form, checked against what the rules allow.
std::optional<PipelinePlan> Planner::scheduled() {
  if (!loop_.attrs.count("stages")) return std::nullopt;
  int stages = int(loop_.attr_int("stages"));
  auto bad = [&](const Op& at, const std::string& what) {
    throw Error(at.loc.str() + ": '" + std::string(at.name()) + "' " + what);
  };
  if (stages < 2) bad(loop_, "expects a pipeline schedule of 2 stages or more, found stages = " + std::to_string(stages));
  std::vector<Candidate> cands;
  const Op* prefetch_of = nullptr;
  for (const auto& o : body_.ops) {
    if (!o->attrs.count("pipeline")) continue;
    const Op& ld = *o;
    const std::string& form = ld.attr_str("pipeline");
    if (!copyable(ld))
      bad(ld, "cannot be pipelined: asynchronous copies take tile loads of rank 1 or 2, not volatile, of 4, 8 or "
              "16 bytes a thread per access");
    Candidate c{&ld, form != "dots", {}};
    bool dots = dot_reads(ld, c.trans);
    if (!dots && !may_reorder())
      bad(ld, "cannot be issued ahead of its loop's stores: a loop that stores pipelines loads read into registers "
              "only when it names its depth (num_stages)");
    c.invariant = std::all_of(ld.operands.begin(), ld.operands.end(), [&](const ir::Value* x) { return invariant(x); });
    if (!dots && c.invariant && ld.kind == OpKind::DescriptorLoad)
      bad(ld, "cannot be pipelined: its block is the same in every iteration (a tensor copy where it stands)");
    if (form == "prefetch" && ld.kind == OpKind::DescriptorLoad)
      bad(ld, "cannot be prefetched into registers: its block is a tensor copy into shared memory");
    std::string expected = dots ? "dots" : c.invariant ? "once" : "registers";
    if (form == "prefetch" && !dots && !c.invariant) {
      prefetch_of = &ld;
    } else if (form != expected) {
      bad(ld, "expects pipeline = \"" + expected + "\" (its uses and address say so), found \"" + form + "\"");
    }
    if (!c.to_registers) c.invariant = false;
    else c.trans.clear();
    cands.push_back(std::move(c));
  }
  if (cands.empty()) bad(loop_, "has a pipeline schedule (stages) but no load with a 'pipeline' form");
  auto p = build(stages, cands, prefetch_of);
  if (!p || p->loads.size() != cands.size())
    bad(loop_, "has a load scheduled ahead whose address or mask needs an op that cannot run ahead (a load, a reduction)");
  return p;
}

// The plan from candidate loads (in body order): a load whose slice holds
// an op that cannot run ahead stays where it is. A scheduled loop's
// register prefetch is given (`prefetch_of`: one of its loads is so
// marked); otherwise it is chosen here.
std::optional<PipelinePlan> Planner::build(int stages, const std::vector<Candidate>& cands, const Op* prefetch_of) {
  PipelinePlan p;
  p.stages = stages;
  for (const Candidate& c : cands) {
    auto need0 = need_;
    auto args0 = args_;
    bool ok = true;
    for (const ir::Value* x : c.load->operands) ok = ok && pull(x);
    if (!ok) {
      need_ = std::move(need0), args_ = std::move(args0);
      continue;
    }
    p.loads.push_back(c.load);
    p.to_registers.push_back(c.to_registers);
    p.invariant.push_back(c.invariant);
    if (c.to_registers) {
      const LinearLayout& l = plan_.of(c.load->result());
      // One thread issues a tensor copy for all.
      bool one_owner = c.load->kind == OpKind::Load && !l.broadcast_mask(kLane) && !l.broadcast_mask(kWarp) &&
                       l.in_size(kWarp) >= plan_.num_warps;
      p.shared_reads = p.shared_reads || !one_owner;
    } else {
      p.skip.insert(c.load);
      p.skip.insert(c.trans.begin(), c.trans.end());
    }
  }
  // Conversions feeding only what lives in shared memory (a load's mask,
  // say) are not lowered in the body either: only the lead slice needs them.
  for (bool more = true; more;) {
    more = false;
    for (const auto& o : body_.ops)
      if (o->kind == OpKind::ConvertLayout && !p.skip.count(o.get()) && !users_[o->result()].empty() &&
          std::all_of(users_[o->result()].begin(), users_[o->result()].end(), [&](const Op* u) { return p.skip.count(u) != 0; }))
        p.skip.insert(o.get()), more = true;
  }
  // Invariant loads alone make no pipeline: measured, a layernorm whose
  // weights alone took the shared memory lost the L1 they hit in
  // (docs/perf.md, run 22).
  if (std::find(p.invariant.begin(), p.invariant.end(), false) == p.invariant.end()) return std::nullopt;
  p.early_refill = std::find(p.to_registers.begin(), p.to_registers.end(), false) == p.to_registers.end();
  p.tensor_copies =
      std::any_of(p.loads.begin(), p.loads.end(), [](const Op* l) { return l->kind == OpKind::DescriptorLoad; });
  bool no_invariant = std::find(p.invariant.begin(), p.invariant.end(), true) == p.invariant.end();
  if (prefetch_of) {
    // Every load marked so, at depth 2, with no buffers read by dots.
    for (size_t li = 0; li < cands.size(); ++li)
      if (cands[li].load->attr_str("pipeline") != "prefetch")
        throw Error(prefetch_of->loc.str() + ": 'load' expects every load of its loop's pipeline to be prefetched "
                    "into registers when one is (pipeline = \"prefetch\")");
    if (stages != 2 || !p.early_refill || !no_invariant)
      throw Error(prefetch_of->loc.str() + ": 'load' expects a loop of stages = 2 with no loads read by dots or "
                  "copied once for pipeline = \"prefetch\", found stages = " + std::to_string(stages));
    p.prefetch_registers = true;
  } else {
    p.prefetch_registers = !loop_.attrs.count("stages") && p.stages == 2 && p.early_refill && !p.tensor_copies &&
                           target_.thread_registers > 0 && no_invariant && prefetch_fits(p);
  }
  p.async_copies = !p.prefetch_registers &&
                   std::any_of(p.loads.begin(), p.loads.end(), [](const Op* l) { return l->kind == OpKind::Load; });
  p.invariant_group = !p.shared_reads && !no_invariant;
  for (const auto& o : body_.ops)
    if (need_.count(o.get())) p.lead_ops.push_back(o.get());
  p.lead_args.assign(args_.begin(), args_.end());
  return p;
}

}  // namespace

std::optional<PipelinePlan> plan_pipeline(const Op& loop, const LayoutPlan& plan, const transforms::AxisAnalysis& axis,
                                          const PipelineTarget& target, std::vector<PipelinePlan::Left>* left) {
  return Planner(loop, plan, axis, target).run(left);
}

std::optional<PipelinePlan> scheduled_pipeline(const Op& loop, const LayoutPlan& plan,
                                               const transforms::AxisAnalysis& axis, const PipelineTarget& target) {
  return Planner(loop, plan, axis, target).scheduled();
}

}  // namespace tl::codegen
