// The GPU compile pipeline, as the runtime and the tools see it:
//   Tile IR --GPU passes (pipeline.h)--> GPU IR --lower--> LLVM IR
//           --target back end--> assembly (PTX / AMDGCN) --> binary.
// No LLVM type appears here; the LLVM-facing files stay behind it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/export.h"
#include "runtime/kernel.h"
#include "runtime/tensor_map_param.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

// Facts about the launch arguments that the compiled code may rely on
// (as Triton does): integers divisible by 16 or equal to 1, pointers
// aligned to 16 bytes. Part of the kernel cache key.
// Its methods, parse_stage and the argument facts below are the runtime's
// (lib/runtime/compiler.cpp), exported for the compiler (ir/export.h).
struct TILEDSL_SHARED Specialization {
  std::vector<transforms::ArgFacts> args;
  std::string key() const;  // e.g. "d16,d1,v1,d16"
};

// What a stage dump or a compile produces.
enum class Stage { Tile, Gpu, Llvm, Asm };
TILEDSL_SHARED bool parse_stage(const std::string& name, Stage& out);  // tile|gpu|llvm|asm

// A tensor map the kernel takes by value after its own parameters
// (runtime/tensor_map_param.h).
using runtime::TensorMapParam;

struct CompiledKernel {
  std::string target;          // "sm_90a", "gfx942", ...
  std::string entry;           // symbol to launch
  std::string assembly;        // PTX text, or AMDGCN assembly
  std::vector<uint8_t> binary; // code object (AMD); empty for PTX (driver JITs or links)
  int threads = 128;           // block size: num_warps * warp size
  int shared_bytes = 0;        // dynamic shared memory per block
  std::vector<ir::Type> params;
  std::vector<TensorMapParam> tensor_maps;  // passed after `params`
  // Milliseconds compile() spent in each stage (CompileStats' breakdown).
  struct Times {
    double passes = 0, lower = 0, optimize = 0, emit = 0;
  } times;
};

// Targets this build can compile for (from the registered back ends).
std::vector<std::string> available_targets();
bool is_known_target(const std::string& target);

// Compiles a traced kernel for `target`. Throws tl::Error naming the op and
// the source line for anything the GPU path cannot lower yet.
CompiledKernel compile(const detail::KernelImpl& kernel, const Specialization& spec, const std::string& target);

// The text of one stage for `target` (Stage::Tile needs no target).
std::string emit_stage(const detail::KernelImpl& kernel, const Specialization& spec, const std::string& target,
                       Stage stage);

// GPU IR (printed by Stage::Gpu and parsed back, say) lowered for `target`:
// its LLVM IR or assembly (Stage::Llvm or Stage::Asm). What the lowering
// needs beyond the IR is read from it (plan_from_ir) or is `spec`; the
// kernel options the IR does not record take their defaults.
std::string lower_gpu_ir(ir::Function& gpu, const Specialization& spec, const std::string& target, Stage stage);

// The same, as the kernel it compiles to (its entry the function's name,
// its parameters the function's arguments).
CompiledKernel compile_gpu_ir(ir::Function& gpu, const Specialization& spec, const std::string& target);

// Facts of one launch argument: an integer's value, a pointer's address.
TILEDSL_SHARED transforms::ArgFacts int_arg_facts(int64_t value);
TILEDSL_SHARED transforms::ArgFacts pointer_arg_facts(uint64_t address);

}  // namespace tl::codegen
