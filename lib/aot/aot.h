// The ahead-of-time compiler's pieces below tiledsl/aot.h: one binary made
// the way generate() makes each, for tests that load it on a GPU without
// compiling generated C++.
#pragma once

#include <string>
#include <vector>

#include "codegen/compile.h"
#include "runtime/kernel.h"
#include "runtime/kernel_cache.h"
#include "tiledsl/aot.h"

namespace tl::aot {

// The device kind that runs `target`'s code (its back end's TargetInfo:
// "cuda", "hip"), "" for a target the compiler does not know.
std::string device_of(const std::string& target);

struct Precompiled {
  runtime::Bytes payload;  // what a PrecompiledBinary's payload views
  std::string binary;      // the binary alone (PTX text, a cubin, a code object)
  std::string assembly;    // PTX or AMDGCN assembly
  std::string kind;        // the binary's file extension: "ptx", "cubin", "hsaco"
  size_t binary_bytes = 0; // as loaded (PTX with its NUL)
};

// `k` compiled for `target` under `spec`: NVIDIA's as PTX (the driver
// assembles it at load) or, given `ptxas`, as the cubin that ptxas makes
// of it for exactly that target; AMD's as a code object.
Precompiled precompile(const detail::KernelImpl& k, const codegen::Specialization& spec, const std::string& target,
                       const std::string& ptxas = "");

}  // namespace tl::aot
