// The end of tl::compile (include/tiledsl/compile.h): check the options the
// IR does not (check_compile_options, and each loop's own num_stages),
// verify the traced function, run the target-independent simplification,
// verify again (a pass that breaks the IR is caught here, not as a wrong
// result), and wrap it in a Kernel.
#include <memory>

#include "ir/verifier.h"
#include "runtime/kernel.h"
#include "tiledsl/compile.h"
#include "transforms/passes.h"

namespace tl::detail {

namespace {

// A loop's own num_stages (tl::RangeOptions), at the loop's line.
void check_loop_stages(const std::string& kernel, const ir::Region& r) {
  for (const auto& op : r.ops) {
    if (op->kind == ir::OpKind::For && op->has_attr("num_stages") && op->attr_int("num_stages") < 1)
      throw Error(op->loc.str() + ": kernel '" + kernel + "': range: num_stages must be at least 1 (1: no software " +
                  "pipelining), found " + std::to_string(op->attr_int("num_stages")));
    for (const auto& sub : op->regions) check_loop_stages(kernel, *sub);
  }
}

}  // namespace

Kernel finish_compile(ir::Function* traced, const CompileOptions& opts) {
  std::unique_ptr<ir::Function> fn(traced);
  check_compile_options(fn->name, opts, fn->loc.str());
  ir::verify(*fn);
  check_loop_stages(fn->name, fn->body);
  transforms::simplify(*fn);
  ir::verify(*fn);

  auto impl = std::make_shared<KernelImpl>();
  impl->name = fn->name;
  impl->options = opts;
  impl->options.name = fn->name;
  for (const auto& a : fn->body.args) impl->params.push_back(a->type);
  impl->fn = fn.get();
  impl->module = std::make_unique<ir::Module>();
  impl->module->functions.push_back(std::move(fn));
  return Kernel(std::move(impl));
}

}  // namespace tl::detail
