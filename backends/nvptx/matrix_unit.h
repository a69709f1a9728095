// NVIDIA matrix instructions for dot: mma.sync fragment layouts (from the
// PTX ISA's fragment tables) and their emission as inline PTX.
#pragma once

#include <optional>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "codegen/dot_layout.h"

namespace tl::codegen::nvptx {

// The mma.sync shape for inputs `in` on sm_`sm` (80, 86, 89, 90), or nullopt.
std::optional<MatrixInstr> mma_instr(DType in, bool allow_tf32, int sm);

// c + a x b on one mma.sync (registers as described in target.h).
std::vector<llvm::Value*> mma_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr,
                                       const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                       const std::vector<llvm::Value*>& c);

// ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16.
std::vector<llvm::Value*> ldmatrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr, int count, bool trans);

// cp.async.{ca,cg}.shared.global with zero fill, commit_group, wait_group.
void cp_async(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, int bytes, llvm::Value* pred);
void cp_async_commit(llvm::IRBuilder<>& b);
void cp_async_wait(llvm::IRBuilder<>& b, int pending);

}  // namespace tl::codegen::nvptx
