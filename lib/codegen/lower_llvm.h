// Lowering of GPU IR (Tile IR + a LayoutPlan) to an LLVM module for one
// target. LLVM-facing: include only from the files that lower to LLVM IR.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/assign_layouts.h"
#include "codegen/compile.h"
#include "codegen/target.h"

namespace tl::codegen {

struct LoweredKernel {
  std::unique_ptr<llvm::Module> module;
  int threads = 0;       // block size
  int shared_bytes = 0;  // dynamic shared memory the kernel needs
  std::vector<TensorMapParam> tensor_maps;  // its parameters after the function's arguments
};

LoweredKernel lower_to_llvm(llvm::LLVMContext& ctx, const ir::Function& fn, const LayoutPlan& plan,
                            const transforms::AxisAnalysis& axis, const Target& target, const std::string& name);

}  // namespace tl::codegen

namespace tl::codegen {

// Masked global accesses through a branch around the access: the generic
// form any target can use (targets with predicated instructions may do
// better). A null mask means unconditional.
llvm::Value* branch_masked_load(llvm::IRBuilder<>& b, llvm::Type* ty, llvm::Value* ptr, llvm::Value* mask,
                                llvm::Value* other, bool is_volatile);
void branch_masked_store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr, llvm::Value* mask,
                         bool is_volatile);

// The O3 pipeline and code emission with a target machine.
void optimize_module(llvm::Module& m, llvm::TargetMachine& tm);
// Cheap loop-invariant values used only in blocks a loop seldom runs,
// computed again there (sink_to_cold_blocks.cpp); optimize_module runs it
// after the O3 pipeline.
struct SinkToColdBlocks : llvm::PassInfoMixin<SinkToColdBlocks> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& am);
};
std::string emit_assembly_text(llvm::Module& m, llvm::TargetMachine& tm);
std::vector<uint8_t> emit_object_file(llvm::Module& m, llvm::TargetMachine& tm);

// The target machines of one target, one lent to each compile that
// optimizes or emits code: a TargetMachine may not run passes for two
// threads at once, and one shared machine behind a lock serialized LLVM's
// half of every compile. Idle machines are kept for the next compile (a
// new one costs about a millisecond); all are made alike, so the code does
// not depend on which one a compile gets. info() is a machine of its own,
// never lent, for what init_module reads (triple, data layout).
class TargetMachinePool {
 public:
  using Make = std::function<std::unique_ptr<llvm::TargetMachine>()>;
  void init(Make make) {
    make_ = std::move(make);
    info_ = make_();
  }
  const llvm::TargetMachine& info() const { return *info_; }
  template <class F>
  decltype(auto) with(F&& f) const {
    struct Lease {
      const TargetMachinePool& pool;
      std::unique_ptr<llvm::TargetMachine> tm;
      ~Lease() {
        std::lock_guard<std::mutex> lock(pool.mu_);
        pool.idle_.push_back(std::move(tm));
      }
    } lease{*this, take()};
    return f(*lease.tm);
  }

 private:
  std::unique_ptr<llvm::TargetMachine> take() const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        auto tm = std::move(idle_.back());
        idle_.pop_back();
        return tm;
      }
    }
    return make_();
  }
  Make make_;
  std::unique_ptr<llvm::TargetMachine> info_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<llvm::TargetMachine>> idle_;
};

}  // namespace tl::codegen
