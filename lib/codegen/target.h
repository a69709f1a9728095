// The target interface: everything the shared LLVM lowering needs to know
// about a GPU, answered by a back end under backends/. If the lowering ever
// has to ask "which vendor?", a hook is missing here.
//
// LLVM-facing: include only from the files that lower to LLVM IR.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "tiledsl/detail/ir_types.h"

namespace tl::codegen {

struct MemoryHints {
  std::string cache;   // "", ".ca", ".cg", ".cs", ".lu", ".cv" (load); ".wb", ".cg", ".cs", ".wt" (store)
  std::string evict;   // "", "evict_first", "evict_last", "evict_normal"
  bool is_volatile = false;
};

class Target {
 public:
  virtual ~Target() = default;

  virtual std::string name() const = 0;        // "sm_90a", "gfx942"
  virtual int warp_size() const = 0;           // 32 or 64
  virtual unsigned global_address_space() const = 0;
  virtual unsigned shared_address_space() const = 0;
  virtual int max_shared_bytes() const = 0;    // per block, opt-in maximum

  // The module's triple and data layout, and the kernel's attributes.
  virtual void init_module(llvm::Module& m) const = 0;
  virtual void init_kernel(llvm::Function& fn, int threads) const = 0;

  // Hardware indices (i32).
  virtual llvm::Value* thread_id(llvm::IRBuilder<>& b) const = 0;
  virtual llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) const = 0;
  virtual llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) const = 0;

  // Block-wide barrier (also orders shared memory).
  virtual void barrier(llvm::IRBuilder<>& b) const = 0;
  // Exchanges a 32-bit value with lane (lane ^ mask) of the same warp.
  virtual llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v32, int mask) const = 0;

  // Global memory. `ptr` points to the first element of a vector of type
  // `ty` (a scalar or a fixed vector); `mask` is an i1 or null.
  // Masked-off loads yield `other` (same type as `ty`) and touch no memory.
  virtual llvm::Value* load(llvm::IRBuilder<>& b, llvm::Type* ty, llvm::Value* ptr, llvm::Value* mask,
                            llvm::Value* other, const MemoryHints& hints) const = 0;
  virtual void store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr, llvm::Value* mask,
                     const MemoryHints& hints) const = 0;

  // f32 math the target has a fast instruction for; null means "use the
  // generic expansion". `op` is one of the unary math OpKinds.
  virtual llvm::Value* fast_math(llvm::IRBuilder<>& b, ir::OpKind op, llvm::Value* x) const = 0;
  // f32 division x / y as the target's Triton-compatible full-range
  // division (within 2 ulp), or null for the correctly rounded one.
  virtual llvm::Value* fast_divide(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) const { return nullptr; }

  // Device-side printf (format, args) and assertion failure (message,
  // file, line). Printing may be unsupported: then throw tl::Error.
  virtual void print(llvm::IRBuilder<>& b, const std::string& format, const std::vector<llvm::Value*>& args) const = 0;
  virtual void assert_fail(llvm::IRBuilder<>& b, const std::string& message, const std::string& file,
                           int line) const = 0;

  // Runs the target's optimization pipeline (O3) over the lowered module.
  virtual void optimize(llvm::Module& m) const = 0;

  // Back end: optimized module to assembly text, and to a loadable binary
  // (empty when the driver loads the assembly itself).
  virtual std::string emit_assembly(llvm::Module& m) const = 0;
  virtual std::vector<uint8_t> emit_binary(llvm::Module& m) const = 0;
};

// Back ends register their targets once; lookups throw tl::Error listing
// what exists.
using TargetFactory = std::function<std::unique_ptr<Target>()>;
void register_target(const std::string& name, TargetFactory factory);
const Target& get_target(const std::string& name);

// Defined in backends/: registers every target of this build.
void register_builtin_targets();

}  // namespace tl::codegen
