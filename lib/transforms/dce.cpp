// Dead code elimination: removes ops whose results nobody reads and whose
// execution has no effect besides producing those results.
//
// An op is removable when it is pure (trait P in ops.def) or is a `for`/`if`
// whose regions contain only removable ops, and none of its results is used.
// Loads, stores, atomics, asserts and prints are never removed: a load may
// fault or be volatile, the others are the point of the program.
//
// Uses are counted once per sweep over the whole function; ops are visited
// last-to-first so that removing a use can make its producer dead in the same
// sweep. Sweeps repeat until nothing changes.
#include <unordered_map>

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
