// The pass table (names for tiledsl-opt) and the simplification pipeline that
// tl::compile runs after tracing. Kept apart from the passes so each pass file
// holds one transformation only.
#include "transforms/passes.h"

#include "tiledsl/detail/ir_types.h"

namespace tl::transforms {

namespace {
struct NamedPass {
  std::string_view name;
  PassFn fn;
};
constexpr NamedPass kPasses[] = {
    {"canonicalize", &canonicalize},
    {"cse", &cse},
    {"dce", &dce},
};
// Each pass only shrinks the IR or replaces an op by a simpler one, so the
// fixed point is reached quickly; the cap turns a pass bug that flips the IR
// back and forth into an error instead of a hang.
constexpr int kMaxSimplifyRounds = 32;
}  // namespace

PassFn find_pass(std::string_view name) {
  for (const auto& p : kPasses)
    if (p.name == name) return p.fn;
  return nullptr;
}

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const auto& p : kPasses) names.emplace_back(p.name);
  return names;
}

void simplify(ir::Function& fn) {
  for (int round = 0; round < kMaxSimplifyRounds; ++round) {
    bool changed = false;
    // Non-short-circuit: every pass runs each round.
    changed |= canonicalize(fn);
    changed |= cse(fn);
    changed |= dce(fn);
    if (!changed) return;
  }
  throw Error("simplify: function '" + fn.name + "' did not reach a fixed point after " +
              std::to_string(kMaxSimplifyRounds) + " rounds of canonicalize, cse, dce");
}

}  // namespace tl::transforms
