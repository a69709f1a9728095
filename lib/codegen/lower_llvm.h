// Lowering of GPU IR (Tile IR + a LayoutPlan) to an LLVM module for one
// target. LLVM-facing: include only from the files that lower to LLVM IR.
#pragma once

#include <memory>
#include <string>

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

}  // namespace tl::codegen
