// Kernels compiled ahead of time, as the runtime loads them. The code that
// fills these structs is written by tiledsl's ahead-of-time compiler
// (tiledsl/aot.h, the CMake function tiledsl_add_aot_kernels), not by
// hand: a generated accessor such as
//
//   tl::Kernel gemm_bf16();   // declared in the generated header
//
// returns a Kernel that launches like any other (Device::launch, the same
// argument checks) on a program linked with tiledsl::runtime alone, which
// has no compiler and no LLVM. A launch picks the binary built for the
// device's target ("sm_90a", "gfx942", ...) whose specialization the
// arguments satisfy; on the interpreter the kernel runs from its Tile IR,
// which is kept beside the binaries. A launch no binary fits (another
// target; arguments without the alignment or divisibility a binary was
// specialized for) is compiled like a traced kernel when the program also
// links the compiler (tiledsl::tiledsl), and is otherwise a tl::Error that
// lists the binaries there are.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tiledsl/runtime.h"

namespace tl {

// One binary of a precompiled kernel. The views point at data of static
// storage duration (arrays in the generated code), which a Kernel refers to
// without copying.
struct PrecompiledBinary {
  std::string_view device;          // the device kind it runs on: "cuda", "hip"
  std::string_view target;          // "sm_90a", "sm_80", "gfx942", ...
  // What it assumes of the launch arguments, one entry per parameter:
  // "d16" (a pointer 16-byte aligned, an integer divisible by 16), "v1" (an
  // integer equal to 1) or "d1" (nothing), comma-separated.
  std::string_view specialization;
  std::span<const uint8_t> payload;  // the binary with what a launch needs (block size, shared memory, entry)
};

struct PrecompiledKernel {
  CompileOptions options;           // as the kernel was compiled with (options.name: its name)
  std::string_view tile_ir;         // its Tile IR text (Kernel::ir() when it was compiled)
  std::vector<PrecompiledBinary> binaries;
};

// The kernel `k` describes. Its Tile IR is parsed and verified here; a text
// that does not parse, or that is not one function named options.name, is
// a tl::Error (a damaged or hand-edited generated file), as is a binary
// whose specialization does not have one entry per parameter. The binaries
// themselves are checked when a launch loads them.
Kernel load_precompiled(const PrecompiledKernel& k);

// The binaries `k` carries (empty for a traced kernel).
std::vector<PrecompiledBinary> precompiled_binaries(const Kernel& k);

}  // namespace tl

#pragma GCC visibility pop
