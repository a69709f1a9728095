// The next tile's one-shot copies issued while this tile ends, the GPU pass
// "prefetch-tile-copies" (pipeline.h), after warp-specialize: in a
// persistent program's tile loop (a loop at the top level, or the
// consumers' partition's, around a loop: a tile's work), the copies tma-descriptors made of a tile's
// one-shot blocks (attention's Q and first K block, one mbarrier, one
// wait) each tile start a round trip to memory with the tensor cores
// idle. Their buffers and mbarrier move before the loop, initialized
// once; the first tile's copies are issued there, and each tile issues the
// next tile's (its coordinates computed from the loop's next index) once
// every reader of the buffers is done (after the last op of the body that
// reads them, and a barrier of the partition), so they land while the
// tile's end (attention's normalization and output store) runs. The wait
// takes the mbarrier's phase, carried around the loop:
//
//   %bar = local_alloc, %q = local_alloc, ...           before the loop
//   mbarrier_init %bar {count = 1}
//   barrier
//   if %lo < %hi { mbarrier_expect_tx %bar; tma_load ..., %q, %bar, <coords at %lo> }
//   for %lo, %hi, %step, ..., %zero (%iv, ..., %phase) {
//     mbarrier_wait %bar, %phase
//     ...the readers of %q
//     barrier
//     if %iv + %step < %hi { mbarrier_expect_tx %bar; tma_load ..., <coords at %iv + %step> }
//     ...the tile's end
//     yield ..., %phase ^ 1
//   }
//   barrier; mbarrier_inval %bar
//
// Only where the coordinates are scalar pure ops of the loop index and
// values from outside the loop, every reader of the buffers is in the
// loop's body, and the buffers, no longer sharing bytes with what the
// body's end allocates, still fit the target's shared memory by a bound
// that shares nothing (a kernel that fit before keeps fitting).
//
// LLVM-free.
#pragma once

#include <cstdint>

#include "codegen/assign_layouts.h"
#include "ir/ir.h"

namespace tl::codegen {

void prefetch_tile_copies(ir::Function& fn, const LayoutPlan& plan, int64_t available_shared_bytes);

}  // namespace tl::codegen
