// What a tl::Kernel holds: the traced module and how it was compiled.
// The tracer (lib/frontend) fills it; devices (interp, later GPUs) read it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "tiledsl/runtime.h"

namespace tl::detail {

struct KernelImpl {
  std::string name;
  CompileOptions options;
  std::unique_ptr<ir::Module> module;  // holds exactly one function: the kernel
  ir::Function* fn = nullptr;
  std::vector<ir::Type> params;        // == types of fn->body.args
  // SHA-256 (hex) of the Tile IR text, filled by the kernel cache on the
  // first GPU launch (runtime/kernel_cache.cpp, under its mutex) so later
  // launches do not reprint the IR, which is immutable after tracing.
  mutable std::string ir_digest;
};

}  // namespace tl::detail
