// The end of tl::compile (include/tiledsl/compile.h): check the options the
// IR does not (num_ctas), verify the traced function, run the
// target-independent simplification, verify again (a pass that breaks the
// IR is caught here, not as a wrong result), and wrap it in a Kernel.
#include <memory>

#include "ir/verifier.h"
#include "runtime/kernel.h"
#include "tiledsl/compile.h"
#include "transforms/passes.h"

namespace tl::detail {

Kernel finish_compile(ir::Function* traced, const CompileOptions& opts) {
  std::unique_ptr<ir::Function> fn(traced);
  if (opts.num_ctas != 1 && opts.num_ctas != 2 && opts.num_ctas != 4 && opts.num_ctas != 8)
    throw Error("kernel '" + fn->name + "': num_ctas must be 1, 2, 4 or 8, found " + std::to_string(opts.num_ctas));
  ir::verify(*fn);
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
