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
// Uses are counted once per sweep over the whole function; ops are visited
// last-to-first so that removing a use can make its producer dead in the same
// sweep. Sweeps repeat until nothing changes.
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "transforms/passes.h"

namespace tl::transforms {

namespace {

using UseCounts = std::unordered_map<const ir::Value*, int>;

void count_all_uses(ir::Region& body, UseCounts& uses) {
  ir::walk(body, [&](ir::Op* op) {
    for (ir::Value* v : op->operands) ++uses[v];
  });
}

// True when executing `op` (with its regions) has no observable effect.
bool has_no_side_effects(const ir::Op& op) {
  if (op_is_terminator(op.kind)) return true;  // yield only passes values on
  bool regioned_control = op.kind == ir::OpKind::For || op.kind == ir::OpKind::If;
  if (!op_is_pure(op.kind) && !regioned_control) return false;
  for (const auto& region : op.regions)
    for (const auto& inner : region->ops)
      if (!has_no_side_effects(*inner)) return false;
  return true;
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

template <class T>
void erase_renumbered(std::vector<std::unique_ptr<T>>& values, size_t k) {
  values.erase(values.begin() + std::ptrdiff_t(k));
  for (size_t i = k; i < values.size(); ++i) values[i]->index = int(i);
}

// The ops of `body` that compute from carried argument `arg` (its forward
// slice), when that slice is pure, stays at the body's top level and reaches
// the yield only at position `k` (the same carried value's next value). Then
// the argument influences nothing but itself. Null when it does not hold.
std::optional<std::vector<ir::Op*>> self_feeding_slice(ir::Region& body, ir::Value* arg, ir::Op* yield, size_t k) {
  std::unordered_set<const ir::Value*> slice{arg};
  std::vector<ir::Op*> slice_ops;
  auto reads_slice = [&](const ir::Op& op) {
    for (const ir::Value* v : op.operands)
      if (slice.count(v)) return true;
    return false;
  };
  for (auto& owned : body.ops) {
    ir::Op* op = owned.get();
    if (op == yield) {
      for (size_t j = 0; j < yield->operands.size(); ++j)
        if (j != k && slice.count(yield->operands[j])) return std::nullopt;
      continue;
    }
    for (auto& region : op->regions) {
      bool nested_use = false;
      ir::walk(*region, [&](ir::Op* inner) { nested_use |= reads_slice(*inner); });
      if (nested_use) return std::nullopt;
    }
    if (!reads_slice(*op)) continue;
    if (!op_is_pure(op->kind) || !op->regions.empty()) return std::nullopt;
    slice_ops.push_back(op);
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
  bool changed = false;
  for (size_t k = carried; k-- > 0;) {
    if (use_count(uses, loop.result(int(k))) != 0) continue;
    auto slice_ops = self_feeding_slice(body, body.args[1 + k].get(), yield, k);
    if (!slice_ops) continue;
    --uses[yield->operands[k]];
    yield->operands.erase(yield->operands.begin() + std::ptrdiff_t(k));
    // Nothing outside the slice reads it any more; last first, so each op
    // goes after its readers.
    for (auto it = slice_ops->rbegin(); it != slice_ops->rend(); ++it) {
      forget_uses(**it, uses);
      body.erase(*it);
    }
    --uses[loop.operands[kBounds + k]];
    loop.operands.erase(loop.operands.begin() + std::ptrdiff_t(kBounds + k));
    erase_renumbered(body.args, 1 + k);
    erase_renumbered(loop.results, k);
    changed = true;
  }
  return changed;
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
  bool changed = false;
  for (size_t k = n; k-- > 0;) {
    if (use_count(uses, branch.result(int(k))) != 0) continue;
    for (ir::Op* y : yields) {
      --uses[y->operands[k]];
      y->operands.erase(y->operands.begin() + std::ptrdiff_t(k));
    }
    erase_renumbered(branch.results, k);
    changed = true;
  }
  return changed;
}

bool sweep_region(ir::Region& region, UseCounts& uses) {
  bool changed = false;
  for (auto it = region.ops.end(); it != region.ops.begin();) {
    --it;
    ir::Op* op = it->get();
    if (!op_is_terminator(op->kind) && results_unused(*op, uses) && has_no_side_effects(*op)) {
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
      changed |= sweep_region(**r, uses);
  }
  return changed;
}

}  // namespace

bool dce(ir::Function& fn) {
  bool changed = false;
  for (;;) {
    UseCounts uses;
    count_all_uses(fn.body, uses);
    if (!sweep_region(fn.body, uses)) break;
    changed = true;
  }
  return changed;
}

}  // namespace tl::transforms
