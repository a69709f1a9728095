// What the GPU passes know of a target: its capability record (name, warp
// size, shared memory, which matrix instructions, copies and matrix loads
// it has). The LLVM-facing hooks that emit them are the Target's
// (target.h), which extends this; the passes (pipeline.h) see only this,
// so they build without LLVM.
#pragma once

#include <optional>
#include <string>

#include "codegen/dot_layout.h"
#include "tiledsl/dtype.h"

namespace tl::codegen {

class TargetInfo {
 public:
  virtual ~TargetInfo() = default;

  virtual std::string name() const = 0;        // "sm_90a", "gfx942"
  virtual int warp_size() const = 0;           // 32 or 64
  virtual int max_shared_bytes() const = 0;    // per block, opt-in maximum

  // The instruction for a dot of `in` x `in` accumulating in f32 (i32 for
  // 8-bit integers); `allow_tf32` lets f32 inputs round to tf32. nullopt:
  // the lowering uses FMAs.
  virtual std::optional<MatrixInstr> matrix_instr(DType in, bool allow_tf32) const { return std::nullopt; }
  // A warpgroup instruction (operands in shared memory, asynchronous) for
  // an M x N x K dot of `in` on `num_warps` warps, or nullopt.
  virtual std::optional<MatrixInstr> warpgroup_instr(DType in, int64_t M, int64_t N, int64_t K,
                                                     int num_warps) const {
    return std::nullopt;
  }
  // 8x8 matrix loads of 16-bit elements from shared memory (dots may read
  // a pipeline's buffers with them).
  virtual bool has_matrix_load_8x8() const { return false; }
  // Asynchronous copies from global to shared memory (software pipelining).
  virtual bool has_async_copy() const { return false; }
  // 32-bit registers one thread may hold in a block of `threads` (0:
  // unknown). Decides whether a pipeline may prefetch into registers.
  virtual int thread_register_limit(int threads) const { return 0; }
  // The most CTAs a thread-block cluster may hold (1: no clusters).
  virtual int max_cluster_ctas() const { return 1; }
};

// The capability record of a registered target (target.h registers them);
// throws tl::Error listing those that exist.
const TargetInfo& get_target_info(const std::string& name);

}  // namespace tl::codegen
