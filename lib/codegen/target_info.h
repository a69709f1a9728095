// What the GPU passes know of a target: its capability record, plain data
// a back end fills in (name, warp size, shared memory, which copies,
// matrix loads and clusters it has, its registers) and its two choices of
// a dot's instruction. The LLVM-facing hooks that emit code are the
// Target's (target.h), which extends this; the passes (pipeline.h) see
// only this, so they build without LLVM.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "codegen/dot_layout.h"
#include "tiledsl/dtype.h"

namespace tl::codegen {

struct TargetInfo {
  std::string name;              // "sm_90a", "gfx942"
  std::string asm_language;      // what inline assembly it takes: "ptx", "amdgcn"
  std::string device;            // the device kind that runs its code: "cuda", "hip"
  int warp_size = 32;            // 32 or 64
  int max_shared_bytes = 0;      // per block, opt-in maximum
  int shared_reserved_per_block = 0;  // shared memory the hardware keeps of each block's
  // 8x8 matrix loads of 16-bit elements from shared memory (dots may read
  // a pipeline's buffers with them).
  bool has_matrix_load_8x8 = false;
  bool has_async_copy = false;   // asynchronous copies from global to shared memory
  int max_cluster_ctas = 1;      // the most CTAs a thread-block cluster may hold (1: none)
  // Tensor copies through tensor maps (TMA) completing on transaction
  // mbarriers (mbarrier_*, tma_load, tma_store).
  bool has_tma = false;
  // Partitions of a block's warps with register budgets of their own
  // (setmaxnreg): warp_specialize's producer and consumers.
  bool has_warp_specialization = false;
  // 32-bit registers of a block, and the most one thread may hold (0:
  // unknown): whether a pipeline may prefetch into registers.
  int block_registers = 0, thread_registers = 0;
  // A multiprocessor gives registers to warps in groups of this many
  // (NVIDIA: 4, one a scheduler): a block of 13 warps needs 16 warps'
  // registers, or its launch fails (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).
  int register_warp_granularity = 1;

  // The instruction for a dot of `in` x `in` accumulating in f32 (i32 for
  // 8-bit integers); `allow_tf32` lets f32 inputs round to tf32. nullopt:
  // the lowering uses FMAs.
  std::function<std::optional<MatrixInstr>(DType in, bool allow_tf32)> matrix_instr = [](DType, bool) {
    return std::optional<MatrixInstr>();
  };
  // A warpgroup instruction (operands in shared memory, asynchronous) for
  // an M x N x K dot of `in` on `num_warps` warps, or nullopt.
  std::function<std::optional<MatrixInstr>(DType in, int64_t M, int64_t N, int64_t K, int num_warps)> warpgroup_instr =
      [](DType, int64_t, int64_t, int64_t, int) { return std::optional<MatrixInstr>(); };

  // The binary an assembler program (a path: NVIDIA's ptxas) makes of this
  // target's assembly; `name` is the kernel's, for messages. Unset where the
  // target has none (AMD's code objects come out of the compile itself).
  std::function<std::string(const std::string& tool, const std::string& assembly, const std::string& name)>
      assemble_with{};

  // 32-bit registers one thread may hold in a block of `threads`, of which
  // `programs` share a multiprocessor (0: unknown).
  int thread_register_limit(int threads, int programs = 1) const {
    if (!block_registers) return 0;
    const int g = std::max(register_warp_granularity, 1);
    const int warps = (std::max(threads, 1) + warp_size - 1) / warp_size * std::max(programs, 1);
    return std::min(thread_registers, block_registers / ((warps + g - 1) / g * g * warp_size));
  }
  // The same rounded down to a multiple of 8, as .maxnreg and setmaxnreg
  // take it: the cap a kernel's threads get at entry.
  int register_cap(int threads, int programs = 1) const { return thread_register_limit(threads, programs) / 8 * 8; }
  // Shared memory a block may use where `programs` share a multiprocessor:
  // the multiprocessor's bytes (the opt-in maximum and one block's
  // reservation) split, less each block's reservation.
  int64_t shared_bytes_for(int programs) const {
    if (programs <= 1) return max_shared_bytes;
    return (int64_t(max_shared_bytes) + shared_reserved_per_block) / programs - shared_reserved_per_block;
  }
};

// The capability record of a registered target (target.h registers them);
// throws tl::Error listing those that exist.
const TargetInfo& get_target_info(const std::string& name);

}  // namespace tl::codegen
