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
};

}  // namespace tl::detail
