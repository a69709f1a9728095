// Dead code elimination: removes ops whose results nobody reads and whose
// execution has no effect besides producing those results.
//
// An op is removable when it is pure (trait P in ops.def) or is a `for`/`if`
// whose regions contain only removable ops, and none of its results is used.
// Loads, stores, atomics, asserts and prints are never removed: a load may
// fault or be volatile, the others are the point of the program.
//
// Loop-carried values and `if` results nobody reads are dropped too: a `for`
// carried value is dead when its result is unused and its region argument
// feeds, through pure ops of the loop body, only the yield operand that
// produces its next value (the chain influences nothing else); an unused `if`
// result loses its yield operands, and what computed them then dies like any
// other op.
//
// Uses are counted, and which ops have effects found, once per sweep over the
// whole function (removing pure ops never changes the latter); ops are
// visited last-to-first so that removing a use can make its producer dead in
// the same sweep. Sweeps repeat until nothing changes. A sweep is linear in
// the number of ops, except that each dead carried value of a loop looks
// once at that loop's body.
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "transforms/passes.h"

namespace tl::transforms {

namespace {

using UseCounts = std::unordered_map<const ir::Value*, int>;
// Ops whose execution (with their regions) has an observable effect.
using EffectfulOps = std::unordered_set<const ir::Op*>;

void count_all_uses(ir::Region& body, UseCounts& uses) {
  ir::walk(body, [&](ir::Op* op) {
    for (ir::Value* v : op->operands) ++uses[v];
  });
}

// Records every op of `r` (at any depth) that has an effect; true if one
// does. One visit per op: an op is effectful by itself or through an op in
// its regions.
bool find_effects(const ir::Region& r, EffectfulOps& effectful) {
  bool any = false;
  for (const auto& owned : r.ops) {
    const ir::Op& op = *owned;
    bool inner = false;
    for (const auto& region : op.regions) inner |= find_effects(*region, effectful);
    bool regioned_control = op.kind == ir::OpKind::For || op.kind == ir::OpKind::If;
    // yield only passes values on; a for whose step is not a constant
    // above 0 may stop the program (the interpreter's check of the step,
    // language.md), so it stays.
    bool itself = (!op_is_terminator(op.kind) && !op_is_pure(op.kind) && !regioned_control) ||
                  (op.kind == ir::OpKind::For && !for_step_known_positive(op));
    if (itself || inner) {
      effectful.insert(&op);
      any = true;
    }
  }
  return any;
}

bool results_unused(const ir::Op& op, const UseCounts& uses) {
  for (const auto& r : op.results) {
    auto it = uses.find(r.get());
    if (it != uses.end() && it->second > 0) return false;
  }
  return true;
}

// Drops every use `op` makes (its operands and those of its nested ops) from
// the counts, so that producers it kept alive can die in the same sweep.
void forget_uses(ir::Op& op, UseCounts& uses) {
  for (ir::Value* v : op.operands) --uses[v];
  for (auto& region : op.regions) ir::walk(*region, [&](ir::Op* inner) {
    for (ir::Value* v : inner->operands) --uses[v];
  });
}

int use_count(const UseCounts& uses, const ir::Value* v) {
  auto it = uses.find(v);
  return it == uses.end() ? 0 : it->second;
}

// Removes the entries of `v` whose position (from `offset` on) is marked in
// `drop`, in one pass.
template <class T>
void erase_marked(std::vector<T>& v, const std::vector<bool>& drop, size_t offset = 0) {
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (i < offset || !drop[i - offset]) v[out++] = std::move(v[i]);
  v.resize(out);
}
// The same for results or region arguments, which know their position.
template <class T>
void erase_marked_renumbered(std::vector<std::unique_ptr<T>>& values, const std::vector<bool>& drop,
                             size_t offset = 0) {
  erase_marked(values, drop, offset);
  for (size_t i = 0; i < values.size(); ++i) values[i]->index = int(i);
}

// The ops of `body` that compute from carried argument `arg` (its forward
// slice), when that slice is pure, stays at the body's top level and reaches
// the yield only at position `k` (the same carried value's next value; yield
// operands marked in `dropped` are already gone). Then the argument
// influences nothing but itself. Null when it does not hold.
std::optional<std::vector<ir::Region::iterator>> self_feeding_slice(ir::Region& body, ir::Value* arg, ir::Op* yield,
                                                                    size_t k, const std::vector<bool>& dropped) {
  std::unordered_set<const ir::Value*> slice{arg};
  std::vector<ir::Region::iterator> slice_ops;
  auto reads_slice = [&](const ir::Op& op) {
    for (const ir::Value* v : op.operands)
      if (slice.count(v)) return true;
    return false;
  };
  for (auto it = body.ops.begin(); it != body.ops.end(); ++it) {
    ir::Op* op = it->get();
    if (op == yield) {
      for (size_t j = 0; j < yield->operands.size(); ++j)
        if (j != k && !dropped[j] && slice.count(yield->operands[j])) return std::nullopt;
      continue;
    }
    for (auto& region : op->regions) {
      bool nested_use = false;
      ir::walk(*region, [&](ir::Op* inner) { nested_use |= reads_slice(*inner); });
      if (nested_use) return std::nullopt;
    }
    if (!reads_slice(*op)) continue;
    if (!op_is_pure(op->kind) || !op->regions.empty()) return std::nullopt;
    slice_ops.push_back(it);
    for (auto& r : op->results) slice.insert(r.get());
  }
  return slice_ops;
}

// for %lo, %hi, %step, %init... { ^(%iv, %carried...): ... yield %next... }
// Drops carried value k when its result is unused and its argument only
// feeds its own next value.
bool drop_dead_carried_values(ir::Op& loop, UseCounts& uses) {
  constexpr size_t kBounds = 3;  // lo, hi, step before the initial values
  if (loop.regions.size() != 1) return false;
  ir::Region& body = *loop.regions[0];
  ir::Op* yield = body.terminator();
  const size_t carried = loop.results.size();
  if (!yield || yield->kind != ir::OpKind::Yield || yield->operands.size() != carried ||
      loop.operands.size() != kBounds + carried || body.args.size() != 1 + carried)
    return false;
  // Marked first and removed together at the end, so that dropping many
  // carried values of one loop does not shift the vectors once each.
  std::vector<bool> dropped(carried, false);
  bool changed = false;
  for (size_t k = carried; k-- > 0;) {
    if (use_count(uses, loop.result(int(k))) != 0) continue;
    auto slice_ops = self_feeding_slice(body, body.args[1 + k].get(), yield, k, dropped);
    if (!slice_ops) continue;
    --uses[yield->operands[k]];
    // Nothing outside the slice reads it any more; last first, so each op
    // goes after its readers.
    for (auto it = slice_ops->rbegin(); it != slice_ops->rend(); ++it) {
      forget_uses(***it, uses);
      body.ops.erase(*it);
    }
    --uses[loop.operands[kBounds + k]];
    dropped[k] = true;
    changed = true;
  }
  if (!changed) return false;
  erase_marked(yield->operands, dropped);
  erase_marked(loop.operands, dropped, kBounds);
  erase_marked_renumbered(body.args, dropped, 1);
  erase_marked_renumbered(loop.results, dropped);
  return true;
}

// if %cond { ... yield %a... }, { ... yield %b... }
bool drop_dead_if_results(ir::Op& branch, UseCounts& uses) {
  const size_t n = branch.results.size();
  std::vector<ir::Op*> yields;
  for (auto& region : branch.regions) {
    ir::Op* y = region->terminator();
    if (!y || y->kind != ir::OpKind::Yield || y->operands.size() != n) return false;
    yields.push_back(y);
  }
  std::vector<bool> dropped(n, false);
  bool changed = false;
  for (size_t k = 0; k < n; ++k) {
    if (use_count(uses, branch.result(int(k))) != 0) continue;
    for (ir::Op* y : yields) --uses[y->operands[k]];
    dropped[k] = true;
    changed = true;
  }
  if (!changed) return false;
  for (ir::Op* y : yields) erase_marked(y->operands, dropped);
  erase_marked_renumbered(branch.results, dropped);
  return true;
}

bool sweep_region(ir::Region& region, UseCounts& uses, const EffectfulOps& effectful) {
  bool changed = false;
  for (auto it = region.ops.end(); it != region.ops.begin();) {
    --it;
    ir::Op* op = it->get();
    if (!op_is_terminator(op->kind) && results_unused(*op, uses) && !effectful.count(op)) {
      forget_uses(*op, uses);
      it = region.ops.erase(it);
      changed = true;
      continue;
    }
    if (op->kind == ir::OpKind::For) changed |= drop_dead_carried_values(*op, uses);
    if (op->kind == ir::OpKind::If) changed |= drop_dead_if_results(*op, uses);
    // Nested ops come after the op in program order, so visit them first
    // (reverse order) before moving on to earlier ops of this region.
    for (auto r = op->regions.rbegin(); r != op->regions.rend(); ++r)
      changed |= sweep_region(**r, uses, effectful);
  }
  return changed;
}

}  // namespace

bool dce(ir::Function& fn) {
  bool changed = false;
  for (;;) {
    UseCounts uses;
    count_all_uses(fn.body, uses);
    EffectfulOps effectful;
    find_effects(fn.body, effectful);
    if (!sweep_region(fn.body, uses, effectful)) break;
    changed = true;
  }
  return changed;
}

}  // namespace tl::transforms
