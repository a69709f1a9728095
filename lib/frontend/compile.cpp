// The end of tl::compile (include/tiledsl/compile.h): check the options the
// IR does not (num_warps, num_stages, num_ctas, and each loop's own
// num_stages), verify the traced function, run the target-independent
// simplification, verify again (a pass that breaks the IR is caught here,
// not as a wrong result), and wrap it in a Kernel.
#include <memory>

#include "ir/verifier.h"
#include "runtime/kernel.h"
#include "tiledsl/compile.h"
#include "transforms/passes.h"

namespace tl::detail {

namespace {

bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

// Options are checked here, before any device sees them, so that a bad value
// fails the same way on the interpreter as on a GPU. The target-dependent
// part of num_warps (threads per block) is checked by the GPU compile.
void check_options(const std::string& kernel, const CompileOptions& opts, const ir::Loc& where) {
  auto bad = [&](const std::string& option, const std::string& expected, int found) {
    throw Error(where.str() + ": kernel '" + kernel + "': " + option + " must be " + expected + ", found " +
                std::to_string(found));
  };
  if (!(is_pow2(opts.num_warps) || (opts.num_warps % 12 == 0 && is_pow2(opts.num_warps / 12))) || opts.num_warps > 32)
    bad("num_warps", "a power of two from 1 to 32 (1024 threads of 32 lanes), or 12 or 24 (warpgroups in threes)",
        opts.num_warps);
  if (opts.num_stages < 1) bad("num_stages", "at least 1 (1: no software pipelining)", opts.num_stages);
  if (opts.num_ctas != 1 && opts.num_ctas != 2 && opts.num_ctas != 4 && opts.num_ctas != 8)
    bad("num_ctas", "1, 2, 4 or 8", opts.num_ctas);
  if (opts.programs_per_sm < 1 || opts.programs_per_sm > 8) bad("programs_per_sm", "1 to 8", opts.programs_per_sm);
  // The name becomes the binary's entry symbol: an identifier, as a C or
  // PTX one (LLVM's NVPTX back end aborts the process on anything else).
  if (!ir::is_identifier(kernel))
    throw Error(where.str() + ": kernel name must be an identifier (letters, digits and '_', not starting with a " +
                "digit), found '" + kernel + "'");
}

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
  check_options(fn->name, opts, fn->loc);
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
