// Shared-memory allocation by liveness, the GPU pass "allocate-shared"
// (pipeline.h), after expand-pipelines: where each buffer and each op's
// scratch go, written into the GPU IR for the lowering to use:
//
//   %a = local_alloc {offset = 0} : smem<3x64x32xbf16, #l4>   a pipeline's buffer
//   %s = reduce %x {axis = 1, scratch = 24576}               the op's scratch
//   %b = local_alloc %y {scratch = 24576} : smem<64xf32, #l9>  a conversion's buffer
//
// Each lives from its op to its last use (a use inside a loop: to the
// loop's end; a buffer that asynchronous copies write: to the wait for all
// copies after them, since copies past a loop's end still land; a buffer a
// tensor store {wait = "none"} reads: to the tma_store_wait after it, in
// its loop's next iteration or past the loop, defer_store_waits.h); an op's
// scratch lives while the op runs. In order of their first point, each goes
// at the lowest offset no allocation live at the same time holds (past
// the cluster exchange, kClusterExchangeBytes, with clusters): buffers of
// loops one after the other, and the scratch of ops outside them, share
// bytes. Buffers that warpgroup dots read start at 1024-byte boundaries,
// everything else at 128. insert-barriers, after it, synchronizes what
// shares bytes. A kernel that needs more than the target has is an error
// naming it, the bytes needed and the bytes available (schedule-loops has
// bounded it before: shared_sizes.h).
//
// LLVM-free.
#pragma once

#include <string>

#include "codegen/assign_layouts.h"
#include "ir/ir.h"

namespace tl::codegen {

// `target` names the target in the error, which has `available` bytes.
void allocate_shared(ir::Function& fn, const LayoutPlan& plan, const std::string& target, int64_t available);

// The bytes allocate-shared would place for `fn` as it stands (it places
// nothing: a pass that lengthens a buffer's life checks it still fits).
int64_t shared_bytes_needed(ir::Function& fn, const LayoutPlan& plan);

}  // namespace tl::codegen
