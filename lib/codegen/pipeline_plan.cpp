// Software-pipelining plan (see pipeline_plan.h).
#include "codegen/pipeline_plan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

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

namespace {

// Ops the lead slice may contain: pure, cheap, no regions.
bool clonable(const Op& op) {
  switch (op.kind) {
    case OpKind::Constant: case OpKind::Splat: case OpKind::Broadcast: case OpKind::ExpandDims:
    case OpKind::Arange: case OpKind::Trans: case OpKind::Reshape: case OpKind::ProgramId:
    case OpKind::NumPrograms:
      return true;
    default:
      return ir::op_is_elementwise(op.kind) && op.regions.empty();
  }
}

bool is_zero_constant(const ir::Value* v) {
  const Op* d = v->def;
  if (d && d->kind == OpKind::Splat) d = d->operands[0]->def;
  if (!d || d->kind != OpKind::Constant) return false;
  const ir::Attr& a = d->attrs.at("value");
  if (std::holds_alternative<double>(a)) return std::get<double>(a) == 0.0 && !std::signbit(std::get<double>(a));
  return std::holds_alternative<int64_t>(a) && std::get<int64_t>(a) == 0;
}

}  // namespace

std::optional<PipelinePlan> plan_pipeline(const Op& loop, const LayoutPlan& plan, const transforms::AxisAnalysis& axis) {
  PipelinePlan p;
  p.stages = int(loop.attr_int_or("num_stages", plan.num_stages));
  if (p.stages < 2) return std::nullopt;
  const ir::Region& body = *loop.regions[0];
  std::unordered_map<const ir::Value*, std::vector<const Op*>> users;
  std::function<void(const ir::Region&)> note = [&](const ir::Region& r) {
    for (const auto& o : r.ops) {
      for (const ir::Value* v : o->operands) users[v].push_back(o.get());
      for (const auto& sub : o->regions) note(*sub);
    }
  };
  note(body);
  auto dot_use = [&](const Op* u, const ir::Value* v) {
    return u->kind == OpKind::Dot && (u->operands[0] == v || u->operands[1] == v) && u->operands[2] != v &&
           matrix_loadable_dot(*u, plan);
  };
  for (const auto& o : body.ops) {
    const Op& ld = *o;
    if (ld.kind != OpKind::Load || !ld.result()->type.is_tile() || ld.result()->type.rank() != 2) continue;
    if (ld.attr_int_or("volatile", 0) || (ld.operands.size() > 2 && !is_zero_constant(ld.operands[2]))) continue;
    const ir::Value* v = ld.result();
    const LinearLayout& l = plan.of(v);
    int bytes = access_width(ld, l, v->type.dtype, axis) * byte_size(v->type.dtype);
    if (bytes != 4 && bytes != 8 && bytes != 16) continue;
    bool ok = !users[v].empty();
    std::vector<const Op*> trans;
    for (const Op* u : users[v]) {
      if (dot_use(u, v)) continue;
      bool t_ok = u->kind == OpKind::Trans && !users[u->result()].empty();
      for (const Op* uu : users[u->result()]) t_ok = t_ok && dot_use(uu, u->result());
      if (t_ok) trans.push_back(u);
      ok = ok && t_ok;
    }
    if (!ok) continue;
    p.loads.push_back(&ld);
    p.skip.insert(&ld);
    p.skip.insert(trans.begin(), trans.end());
  }
  if (p.loads.empty()) return std::nullopt;
  // The backward slice of the loads' operands, closed over carried values.
  const Op* yield = body.terminator();
  std::set<const Op*> need;
  std::set<size_t> args;
  std::function<bool(const ir::Value*)> pull = [&](const ir::Value* v) -> bool {
    if (v == body.args[0].get()) return true;
    for (size_t k = 0; k + 1 < body.args.size(); ++k)
      if (v == body.args[k + 1].get()) return args.count(k) || (args.insert(k), pull(yield->operands[k]));
    if (!v->def || !ir::defined_in(v, body)) return true;  // loop-invariant
    if (need.count(v->def)) return true;
    if (!clonable(*v->def)) return false;
    need.insert(v->def);
    for (const ir::Value* x : v->def->operands)
      if (!pull(x)) return false;
    return true;
  };
  for (const Op* ld : p.loads)
    for (const ir::Value* x : ld->operands)
      if (!pull(x)) return std::nullopt;
  for (const auto& o : body.ops)
    if (need.count(o.get())) p.lead_ops.push_back(o.get());
  p.lead_args.assign(args.begin(), args.end());
  return p;
}

}  // namespace tl::codegen
