// Ahead-of-time compilation: kernels traced and compiled when the
// application is built, for chosen targets, into a C++ source and header
// that the application compiles in. At run time the generated accessors
// return Kernels that launch without a compiler (tiledsl/precompiled.h):
// the application links tiledsl::runtime, which has no LLVM, and starts
// without compiling anything. Triton's AOT compiler does the same from
// Python; here the generator is a small C++ program:
//
//   // gemm_kernels.cpp, linked with tiledsl::tiledsl, run at build time
//   #include <tiledsl/aot.h>
//   #include "kernels/gemm.h"
//   int main(int argc, char** argv) {
//     return tl::aot::main(argc, argv, {
//         {.symbol = "gemm_bf16",
//          .kernel = tl::compile(gemm<tl::bf16, 128, 128, 64>, {.name = "gemm", .num_warps = 8}),
//          .specializations = {"16,16,16,16,16,16,16,1,16,1,16,1", ""}},
//     });
//   }
//
// and in CMake (the function comes with find_package(tiledsl)):
//
//   add_executable(gemm_kernels gemm_kernels.cpp)
//   target_link_libraries(gemm_kernels PRIVATE tiledsl::tiledsl)
//   tiledsl_add_aot_kernels(gemm_aot_kernels GENERATOR gemm_kernels TARGETS sm_80 sm_90a gfx942)
//   target_link_libraries(app PRIVATE gemm_aot_kernels)   # brings tiledsl::runtime
//
// after which the application includes "gemm_aot_kernels.h" and calls
// gemm_bf16() for a tl::Kernel (or gemm_aot_kernels("gemm_bf16"): the header
// also declares a lookup by symbol named after the library).
//
// A specialization says what one binary may assume of the launch
// arguments, like Triton's AOT signatures: one entry per kernel parameter,
// comma-separated: "16" (a pointer aligned to 16 bytes, or an integer
// divisible by 16), "1" (an integer equal to 1) or "-" (nothing); "" is
// every parameter "-", a binary any arguments can use. A launch uses the
// most specialized binary its arguments satisfy, so list the fast case and
// a general one. Triton's JIT specializes the same facts per launch.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <string>
#include <vector>

#include "tiledsl/runtime.h"

namespace tl::aot {

// One kernel to compile ahead of time.
struct KernelSpec {
  // The C++ name of its accessor in the generated header
  // (`tl::Kernel <symbol>();`): an identifier, unique in the generator.
  std::string symbol{};
  Kernel kernel{};  // tl::compile(...)
  // Its binaries per target (see above); {""} when left empty.
  std::vector<std::string> specializations{};
  // The targets it is compiled for; empty: every target of the generator.
  // A kernel that only makes sense on some (one using tensor copies, say)
  // names them here.
  std::vector<std::string> targets{};
};

struct Options {
  std::vector<std::string> targets{};  // "sm_80", "sm_90a", "gfx942", ...
  // The generated source; the header is beside it, with the extension .h.
  std::string output{};
  std::string name_space{};  // namespace of the accessors ("" : the global one)
  // A directory to also write each binary into, as a file of its own
  // (<symbol>.<target>.<n>.ptx, .cubin or .hsaco, n its specialization's
  // index; a cubin's PTX beside it), for disassembly; "" : none.
  std::string binaries_dir{};
  // ptxas (the CUDA toolkit's) to assemble NVIDIA binaries at build time:
  // the program then loads machine code for exactly its target, without
  // the driver's JIT at its first launch. "": PTX, which the driver
  // assembles when the kernel is first loaded (and which also loads on
  // that target's newer drivers).
  std::string ptxas{};
};

// What was generated: one line per binary.
struct Generated {
  std::string symbol, target, specialization;
  size_t bytes = 0;        // the binary's size
  double compile_ms = 0;   // its compile
  std::string file;        // under binaries_dir, if any
};

// Compiles every kernel for its targets and specializations and writes
// the source and header. A kernel that fails to compile for a target, an
// unknown target, a malformed specialization or symbol is a tl::Error
// naming the kernel and what was expected; nothing is written then.
std::vector<Generated> generate(const std::vector<KernelSpec>& kernels, const Options& options);

// A generator's main: parses --targets=sm_80,sm_90a,... --output=FILE.cpp
// [--namespace=NS] [--binaries=DIR] [--ptxas=PATH] [--quiet], calls generate, prints one
// line per binary (unless --quiet) and returns 0, or prints the error and
// returns 1.
int main(int argc, char** argv, const std::vector<KernelSpec>& kernels);

}  // namespace tl::aot

#pragma GCC visibility pop
