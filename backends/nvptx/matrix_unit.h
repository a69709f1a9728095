// NVIDIA matrix instructions for dot: mma.sync fragment layouts (from the
// PTX ISA's fragment tables), wgmma (sm_90a), and their emission as
// inline PTX.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "codegen/dot_layout.h"
#include "codegen/target.h"

namespace tl::codegen::nvptx {

// The mma.sync shape for inputs `in` on sm_`sm` (80, 86, 89, 90), or nullopt.
std::optional<MatrixInstr> mma_instr(DType in, bool allow_tf32, int sm);

// c + a x b on one mma.sync (registers as described in target.h).
std::vector<llvm::Value*> mma_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr,
                                       const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                       const std::vector<llvm::Value*>& c);

// The wgmma shape (m64nNk16, bf16/f16 in, f32 accumulators) for an
// M x N x K dot on `num_warps` warps on `arch` (sm_90a only), or nullopt.
std::optional<MatrixInstr> wgmma_instr(DType in, int64_t M, int64_t N, int64_t K, int num_warps,
                                       const std::string& arch);
// wgmma.mma_async with B in shared memory and A there or in registers
// (target.h).
std::vector<llvm::Value*> wgmma_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr, const WarpgroupA& a,
                                         const SmemOperand& b_op, bool trans_b, const std::vector<llvm::Value*>& c,
                                         bool accumulate);
// wgmma.fence, commit_group, and wait_group with the accumulators passed
// through; fence.proxy.async for shared memory.
void wgmma_fence(llvm::IRBuilder<>& b);
void wgmma_commit(llvm::IRBuilder<>& b);
std::vector<llvm::Value*> wgmma_wait(llvm::IRBuilder<>& b, int pending, const std::vector<llvm::Value*>& acc,
                                     bool pinned = false);
void fence_proxy_async(llvm::IRBuilder<>& b);
// The shared-memory matrix descriptor (i64) of a wgmma operand at `addr`
// (shared, i32) in swizzled panels `row_bytes` wide, `panel_bytes` apart.
llvm::Value* wgmma_descriptor(llvm::IRBuilder<>& b, llvm::Value* addr, int64_t row_bytes, int64_t panel_bytes,
                              bool k_major);

// ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16.
std::vector<llvm::Value*> ldmatrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr, int count, bool trans);

// cp.async.{ca,cg}.shared.global with zero fill, commit_group, wait_group.
void cp_async(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, int bytes, llvm::Value* pred);
void cp_async_commit(llvm::IRBuilder<>& b);
void cp_async_wait(llvm::IRBuilder<>& b, int pending);

}  // namespace tl::codegen::nvptx
