// An accumulator carried already updated for the next step (see
// prescale_accumulator.h).
#include "codegen/prescale_accumulator.h"

#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

bool async_dot(const Op& o) { return o.kind == OpKind::Dot && o.attr_int_or("async", 0); }

// The top-level pure ops of `r` (no products, no regions) that compute
// `v`, and the values they read from outside that set; false where `v`
// needs an op of `r` that is not such an op, or a value nested in one.
bool pure_slice(ir::Region& r, Value* v, std::set<Op*>& ops, std::vector<Value*>& leaves) {
  std::vector<Value*> work{v};
  while (!work.empty()) {
    Value* x = work.back();
    work.pop_back();
    if (x->is_arg() || x->def->parent != &r) {
      if (!x->is_arg() && ir::defined_in(x, r)) return false;
      leaves.push_back(x);
      continue;
    }
    Op* d = x->def;
    if (ops.count(d)) continue;
    if (!ir::op_is_pure(d->kind) || d->kind == OpKind::Dot || !d->regions.empty()) return false;
    ops.insert(d);
    for (Value* o : d->operands) work.push_back(o);
  }
  return true;
}

// A product of the loop's body and the update its accumulator operand is.
struct Update {
  Op* dot = nullptr;
  Value* updated = nullptr;   // the dot's accumulator operand
  int acc = -1;               // the carried value it updates
  std::vector<Op*> ops;       // the update, in the body's order
};

std::optional<Update> find_update(ir::Region& body) {
  Op* yield = body.ops.back().get();
  if (yield->kind != OpKind::Yield) return std::nullopt;
  for (auto& o : body.ops) {
    if (!async_dot(*o)) continue;
    Update u;
    u.dot = o.get();
    u.updated = o->operands[2];
    // Its wait {pending = 0} is what the loop yields for it, and only that.
    for (auto& w : body.ops)
      if (w->kind == OpKind::DotWait && w->operands.size() == 1 && w->operands[0] == u.dot->result() &&
          w->attr_int("pending") == 0 && ir::count_uses(body, w->result()) == 1)
        for (size_t k = 0; k < yield->operands.size(); ++k)
          if (yield->operands[k] == w->result()) u.acc = int(k);
    if (u.acc < 0 || u.updated->type != yield->operands[size_t(u.acc)]->type) continue;
    std::set<Op*> ops;
    std::vector<Value*> leaves;
    if (!pure_slice(body, u.updated, ops, leaves) || ops.empty()) continue;
    // It reads carried values (the accumulator among them) and values from
    // before the loop, not the index.
    const Value* acc = body.args[size_t(u.acc) + 1].get();
    bool reads_acc = false, ok = true;
    for (const Value* l : leaves) {
      reads_acc = reads_acc || l == acc;
      ok = ok && l != body.args[0].get();
    }
    // Nothing but the update reads the accumulator or the update's values,
    // and the product reads them as its accumulator only.
    ir::walk(body, [&](Op* n) {
      for (size_t i = 0; i < n->operands.size(); ++i) {
        const Value* x = n->operands[i];
        bool from_update = x == acc || (!x->is_arg() && ops.count(x->def));
        if (from_update && !ops.count(n) && !(n == u.dot && i == 2)) ok = false;
      }
    });
    if (!ok || !reads_acc) continue;
    for (auto& x : body.ops)
      if (ops.count(x.get())) u.ops.push_back(x.get());
    return u;
  }
  return std::nullopt;
}

// Copies `ops` before `pos` of `r` reading through `map`; returns the
// copy of `v`.
Value* copy(ir::Region& r, ir::Region::iterator pos, const std::vector<Op*>& ops,
            std::unordered_map<const Value*, Value*>& map, const Value* v) {
  for (const Op* o : ops) r.insert(pos, ir::clone_op(*o, map));
  return map.at(v);
}

// The peeled step's product (in the first branch of `guard`) whose
// accumulator operand is computed from the loop's result `acc`.
Op* peeled_product(Op& guard, Value* acc) {
  ir::Region& then = *guard.regions[0];
  for (auto& o : then.ops) {
    if (!async_dot(*o)) continue;
    std::set<Op*> ops;
    std::vector<Value*> leaves;
    if (!pure_slice(then, o->operands[2], ops, leaves)) continue;
    for (const Value* l : leaves)
      if (l == acc) return o.get();
  }
  return nullptr;
}

bool prescale(Op& loop) {
  ir::Region& r = *loop.parent;
  ir::Region& body = *loop.regions[0];
  auto next = std::next(r.find(&loop));
  if (next == r.ops.end()) return false;
  Op& guard = **next;
  // peel-last-iteration's form: the bound a select on whether the loop
  // runs, the peeled step in an `if` on that right after it.
  const Value* bound = loop.operands[1];
  if (guard.kind != OpKind::If || bound->is_arg() || bound->def->kind != OpKind::Select ||
      guard.operands[0] != bound->def->operands[0])
    return false;
  Value* live = guard.operands[0];
  std::optional<Update> u = find_update(body);
  if (!u) return false;
  Op* last = peeled_product(guard, loop.result(u->acc));
  if (!last) return false;
  // The peeled step adds its product to the accumulator as the loop left it.
  last->operands[2] = loop.result(u->acc);
  // Each step's product reads the accumulator as carried; the step updates
  // it for the next one after its product's wait, with the next values.
  Value* acc = body.args[size_t(u->acc) + 1].get();
  Op* yield = body.ops.back().get();
  u->dot->operands[2] = acc;
  std::unordered_map<const Value*, Value*> map;
  for (size_t k = 0; k + 1 < body.args.size(); ++k) map[body.args[k + 1].get()] = yield->operands[k];
  yield->operands[size_t(u->acc)] = copy(body, body.find(yield), u->ops, map, u->updated);
  // The first step's update before the loop, where the loop runs.
  ir::Builder b(&r, r.find(&loop));
  b.loc = loop.loc;
  Value*& init = loop.operands[3 + size_t(u->acc)];
  Op* first = b.create(OpKind::If, {live}, {});
  ir::Region& then = *first->add_region();
  ir::Region& other = *first->add_region();
  std::unordered_map<const Value*, Value*> pre;
  for (size_t k = 0; k + 1 < body.args.size(); ++k) pre[body.args[k + 1].get()] = loop.operands[3 + k];
  Value* updated = copy(then, then.ops.end(), u->ops, pre, u->updated);
  ir::Builder(&then).create(OpKind::Yield, {updated}, {});
  ir::Builder(&other).create(OpKind::Yield, {init}, {});
  init = first->add_result(init->type);
  return true;
}

}  // namespace

int prescale_accumulator(ir::Function& fn) {
  std::vector<Op*> loops;
  ir::walk(fn.body, [&](Op* o) {
    if (o->kind == OpKind::For && o->attr_int_or("peeled", 0)) loops.push_back(o);
  });
  int changed = 0;
  for (Op* loop : loops) {
    loop->attrs.erase("peeled");
    changed += prescale(*loop);
  }
  return changed;
}

}  // namespace tl::codegen
