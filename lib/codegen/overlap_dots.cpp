// Overlapping a loop's first product with the rest of its iteration (see
// overlap_dots.h).
#include "codegen/overlap_dots.h"

#include <unordered_map>
#include <unordered_set>

#include "codegen/select_dot_instructions.h"
#include "codegen/target_info.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

class OverlapDots {
 public:
  OverlapDots(const TargetInfo& t, int num_warps) : t_(t), num_warps_(num_warps) {}

  int region(ir::Region& r) {
    int changed = 0;
    for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
      for (auto& sub : (*it)->regions) changed += region(*sub);
      if ((*it)->kind == OpKind::For) changed += loop(r, it);
    }
    return changed;
  }

 private:
  bool on_warpgroups(const Op& op) const {
    if (op.kind != OpKind::Dot) return false;
    auto mi = chosen_instr(op, t_, num_warps_);
    return mi && mi->operands_in_smem;
  }

  // Whether nothing in `r` writes memory (or prints, or asserts): loads
  // may then move from one iteration to the one before.
  static bool only_reads(ir::Region& r) {
    bool ok = true;
    ir::walk(r, [&](Op* o) {
      bool reads = o->kind == OpKind::Load || o->kind == OpKind::DescriptorLoad;
      bool control = o->kind == OpKind::For || o->kind == OpKind::If || o->kind == OpKind::Yield;
      ok = ok && (ir::op_is_pure(o->kind) || reads || control);
    });
    return ok;
  }

  using Users = std::unordered_map<const Value*, std::vector<Op*>>;

  // Whether `dot`'s result reaches, through the ops of `body` that use it
  // (`users`) and their results, a warpgroup dot other than `dot`.
  bool feeds_warpgroup_dot(ir::Region& body, Users& users, const Op* dot) {
    std::vector<const Value*> work{dot->result()};
    std::unordered_set<const Value*> seen{dot->result()};
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      for (Op* u : users[v]) {
        if (u != dot && on_warpgroups(*u)) return true;
        std::vector<const Value*> next;
        for (const auto& res : u->results) next.push_back(res.get());
        // A yield of a nested region passes the value to its op's results.
        if (u->kind == OpKind::Yield && u->parent != &body && u->parent->parent)
          for (const auto& res : u->parent->parent->results) next.push_back(res.get());
        for (const Value* n : next)
          if (seen.insert(n).second) work.push_back(n);
      }
    }
    return false;
  }

  // The ops of `body` that compute `v` from the loop's index and values
  // from before the loop alone, appended in an order they can run in;
  // false where `v` needs anything else.
  bool slice_of(ir::Region& body, Value* v, std::vector<Op*>& slice, std::unordered_set<const Op*>& in_slice) {
    if (!ir::defined_in(v, body)) return true;
    if (v->is_arg()) return v == body.args[0].get();
    Op* d = v->def;
    if (d->parent != &body || !d->regions.empty()) return false;
    if (in_slice.count(d)) return true;
    bool load = (d->kind == OpKind::Load && !d->attr_int_or("volatile", 0)) || d->kind == OpKind::DescriptorLoad;
    if (!ir::op_is_pure(d->kind) && !load && d->kind != OpKind::Dot) return false;
    for (Value* o : d->operands)
      if (!slice_of(body, o, slice, in_slice)) return false;
    in_slice.insert(d);
    slice.push_back(d);
    return true;
  }

  // Copies `slice` before `pos` of `r`, the loop's index read as `iv`;
  // loads masked by `pred` (their iteration exists). Returns the copy of
  // `v`.
  Value* copy(ir::Region& r, ir::Region::iterator pos, const std::vector<Op*>& slice, const Value* index, Value* iv,
              Value* pred, const Value* v) {
    std::unordered_map<const Value*, Value*> map{{index, iv}};
    for (const Op* o : slice) {
      Op* c = r.insert(pos, ir::clone_op(*o, map));
      if (c->kind != OpKind::Load) continue;
      // The mask: the load's own and the iteration's.
      ir::Builder b(&r, r.find(c));
      b.loc = c->loc;
      const ir::Type& ptr = c->operands[0]->type;
      Value* p = pred;
      if (ptr.is_tile()) p = b.create1(OpKind::Splat, {pred}, ir::Type{DType::i1, false, ptr.shape});
      if (c->operands.size() > 1) c->operands[1] = b.create1(OpKind::And, {c->operands[1], p}, c->operands[1]->type);
      else c->operands.push_back(p);
    }
    return map.at(v);
  }

  int loop(ir::Region& r, ir::Region::iterator it) {
    Op& loop = **it;
    ir::Region& body = *loop.regions[0];
    if (!only_reads(body)) return 0;
    // The first warpgroup dot of the body that starts a chain.
    Users users;
    ir::walk(body, [&](Op* o) {
      for (Value* v : o->operands) users[v].push_back(o);
    });
    Op* dot = nullptr;
    for (const auto& o : body.ops)
      if (on_warpgroups(*o) && feeds_warpgroup_dot(body, users, o.get())) {
        dot = o.get();
        break;
      }
    if (!dot) return 0;
    std::vector<Op*> slice;
    std::unordered_set<const Op*> in_slice;
    for (Value* o : dot->operands)
      if (!slice_of(body, o, slice, in_slice)) return 0;
    slice.push_back(dot);
    in_slice.insert(dot);
    // Each load moved feeds the product alone (else it would be read twice).
    std::unordered_map<const Value*, int> outside_uses;
    ir::walk(body, [&](Op* o) {
      if (!in_slice.count(o))
        for (Value* v : o->operands) ++outside_uses[v];
    });
    for (const Op* o : slice)
      if (o->kind == OpKind::Load || o->kind == OpKind::DescriptorLoad)
        if (outside_uses[o->result()]) return 0;

    Value *lo = loop.operands[0], *hi = loop.operands[1], *step = loop.operands[2];
    const Value* index = body.args[0].get();
    const ir::Type i1 = ir::scalar_type(DType::i1);
    // Iteration lo's product, before the loop.
    ir::Builder pre(&r, it);
    pre.loc = dot->loc;
    Value* first = pre.create1(OpKind::Cmp, {lo, hi}, i1, {{"pred", std::string("lt")}});
    Value* s0 = copy(r, it, slice, index, lo, first, dot->result());
    // The next iteration's, where this iteration's was.
    auto at = body.find(dot);
    ir::Builder in(&body, at);
    in.loc = dot->loc;
    Value* iv_next = in.create1(OpKind::Add, {body.args[0].get(), step}, index->type);
    Value* more = in.create1(OpKind::Cmp, {iv_next, hi}, i1, {{"pred", std::string("lt")}});
    Value* s_next = copy(body, at, slice, index, iv_next, more, dot->result());
    // It goes around the loop; this iteration reads the one carried in.
    loop.operands.push_back(s0);
    loop.add_result(s0->type);
    Value* s = body.add_arg(s0->type);
    ir::replace_uses(body, dot->result(), s);
    body.ops.back()->operands.push_back(s_next);
    // The originals nothing reads now.
    for (auto o = slice.rbegin(); o != slice.rend(); ++o) {
      bool used = false;
      for (const auto& res : (*o)->results) used = used || ir::count_uses(body, res.get()) > 0;
      if (!used) body.erase(*o);
    }
    return 1;
  }

  const TargetInfo& t_;
  int num_warps_;
};

}  // namespace

int overlap_dots(ir::Function& fn, const TargetInfo& t, int num_warps) {
  if (fn.is_gpu()) throw Error("overlap-dots: expected Tile IR (a function without layouts), found GPU IR in @" + fn.name);
  return OverlapDots(t, num_warps).region(fn.body);
}

}  // namespace tl::codegen
