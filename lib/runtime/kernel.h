// What a tl::Kernel holds: the traced module and how it was compiled.
// The tracer (lib/frontend) fills it; devices (interp, later GPUs) read it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/export.h"
#include "ir/ir.h"
#include "tiledsl/precompiled.h"
#include "tiledsl/runtime.h"

namespace tl::detail {

// A number no other kernel of the process has (a kernel's address may be
// reused once it is freed). Out of line: both libraries make kernels (the
// tracer, load_precompiled), and with hidden visibility an inline
// function's counter would be one per library.
TILEDSL_SHARED uint64_t next_kernel_id();

// Checks the options a kernel is compiled with (num_warps, num_stages,
// num_ctas, programs_per_sm, the name), before any device sees them, so
// that a bad value fails the same way on the interpreter as on a GPU, and
// for a precompiled kernel as for a traced one; `where` begins the
// message (the kernel's line). The target-dependent part of num_warps
// (threads per block) is checked by the GPU compile.
TILEDSL_SHARED void check_compile_options(const std::string& kernel, const CompileOptions& opts,
                                          const std::string& where);

// A binary compiled ahead of time (tiledsl/precompiled.h): its names
// copied (the caller's may be temporaries), its payload the caller's, and
// its specialization split into one entry per parameter ("d16", "v1",
// "d1").
struct PrecompiledEntry {
  std::string device, target, specialization;
  std::span<const uint8_t> payload;
  std::vector<std::string> facts;
};

struct KernelImpl {
  // What launchers remember the kernels they loaded by (runtime/launcher.h).
  uint64_t id = next_kernel_id();
  std::string name;
  CompileOptions options;
  std::unique_ptr<ir::Module> module;  // holds exactly one function: the kernel
  ir::Function* fn = nullptr;
  std::vector<ir::Type> params;        // == types of fn->body.args
  // SHA-256 (hex) of the Tile IR text, filled by the kernel cache on the
  // first GPU launch (runtime/kernel_cache.cpp, under its mutex) so later
  // launches do not reprint the IR, which is immutable after tracing.
  mutable std::string ir_digest;
  // Binaries compiled ahead of time (load_precompiled); empty for a traced
  // kernel.
  std::vector<PrecompiledEntry> precompiled;
};

}  // namespace tl::detail
