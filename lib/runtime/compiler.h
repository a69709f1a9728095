// The compiler, as the runtime reaches it. tiledsl is two libraries: the
// runtime (libtiledsl_runtime: devices, buffers, launches, the kernel
// cache, the interpreter, kernels compiled ahead of time; no LLVM) and the
// compiler (libtiledsl: the tracer, the GPU passes and the LLVM back ends),
// which links the runtime. The compiler registers itself here when it is
// loaded (lib/codegen/compile.cpp), so that a program linked with the
// runtime alone runs its precompiled kernels and says clearly what is
// missing when a launch would need a compile.
#pragma once

#include <string>
#include <vector>

#include "codegen/compile.h"
#include "ir/export.h"

TILEDSL_SHARED_BEGIN

namespace tl::runtime {

struct Compiler {
  // codegen::compile, codegen::emit_stage, codegen::available_targets,
  // codegen::is_known_target (see codegen/compile.h).
  codegen::CompiledKernel (*compile)(const detail::KernelImpl&, const codegen::Specialization&,
                                     const std::string& target) = nullptr;
  std::string (*emit_stage)(const detail::KernelImpl&, const codegen::Specialization&, const std::string& target,
                            codegen::Stage) = nullptr;
  std::vector<std::string> (*available_targets)() = nullptr;
  bool (*is_known_target)(const std::string&) = nullptr;
  // The compiler library's build (build_identity of an address in it): part
  // of every kernel cache key.
  std::string version;
};

// Called once, by the compiler library's static initialization.
void register_compiler(Compiler c);
// The registered compiler, or nullptr in a program without one.
const Compiler* compiler();
// The registered compiler, or a tl::Error saying that `what` needs one and
// how to link it.
const Compiler& require_compiler(const std::string& what);

// Whether the registered compiler compiles for `target`; without a
// compiler every target is taken as known (a device then names its GPU's
// own target, and only kernels precompiled for it launch there).
bool known_target(const std::string& target);

// "build <hex>": the linker's build id of the loaded object (library or
// program) that holds `address`, which changes with every rebuild; without
// a build id note, "file <size>.<mtime>" of that object's file.
std::string build_identity(const void* address);

}  // namespace tl::runtime

TILEDSL_SHARED_END
