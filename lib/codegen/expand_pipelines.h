// Software pipelines as IR, the GPU pass "expand-pipelines" (pipeline.h):
// each loop that schedule-loops scheduled ({stages = S}, its loads'
// {pipeline = ...}) becomes the ops that run it, and a plain loop the
// lowering lowers as it is; allocate-shared then places its buffers.
// At depth S, for a gemm's B tile read by its dot:
//
//   %buf = local_alloc : smem<3x32x64xbf16, #lS>   one slot a stage
//   ...the address slice for iteration 0 (cloned), %live0 = cmp %lo, %hi
//   %s0 = local_slot %buf, %c0 {stage = 0}    the slot of iteration 0
//   %t0 = async_copy %s0, %ptr0, (%mask0 and splat %live0)     the tail predicated
//   %g0 = async_commit %t0
//   ...the same for iterations 1 .. S-2, into slots 1 .. S-2
//   for ... (%iv, %carried..., %lead..., %slot) {
//     async_wait {pending = S-2}              this iteration's group has landed
//     %b = local_slot %buf, %slot {stage = 0} the dot reads the buffer in place
//     ...the body, %b for the load...
//     ...the address slice for iteration i + S - 1 from %lead, into the slot
//        iteration i - 1 read ({stage = S-1}); async_commit
//     yield %carried'..., %lead'..., %slot + 1 mod S
//   }
//   async_wait {pending = 0}                  copies past the end still land
//
// Descriptor loads (tensor copies, tma_descriptors.h) use the same buffers
// and slots, with a ring of full mbarriers beside them (one a slot, each
// initialized for one arrival before the prologue) instead of commit
// groups:
//
//   %full = local_alloc : smem<3x1xi64>          mbarrier_init of each slot
//   if %live { mbarrier_expect_tx %full[s] {bytes}; tma_load %map, %buf[s], %full[s], %c0, %c1 }
//   for ... (..., %slot, %phase) {
//     mbarrier_wait %full[%slot], %phase         the slot's copies landed
//     ...the body; the refill as above, into the slot and barrier of i - 1...
//     yield ..., %slot + 1 mod S, %phase ^ (%slot wraps)
//   }
//   mbarrier_inval of each slot
//
// Copies are issued only for live iterations, so every one is waited for
// inside the loop; the phase flips each time the ring wraps. Where threads
// read the slots in the generic proxy (local_load, ldmatrix) a
// fence_async_shared precedes each refill: a tensor copy is the async
// proxy's, and a barrier alone does not order those reads before it.
//
// Its barriers are insert-barriers' (insert_barriers.h): before the
// prologue where earlier users of the buffers' bytes need one, after each
// wait (every thread sees every copy, and is past the reads of the slot
// refilled next), none where each thread reads back only what it copied.
//
// The forms (schedule_loops.h, pipeline_plan.h): "registers" loads become
// local_load of their slot (and a select where `other` is not 0); "once"
// loads are copied with iteration 0 into a buffer of one slot (a commit
// group of their own when each thread reads only what it copied: iteration
// 0 then waits for its own copies at the top and for those at their first
// read); without dots reading the buffers, each slot is refilled right after
// its last read (S - 1 slots); "prefetch" loads are plain loads of the next
// iteration, carried in registers. Warpgroup dots read the buffers through
// the asynchronous proxy: a fence_async_shared after each wait.
//
// LLVM-free.
#pragma once

#include "codegen/assign_layouts.h"
#include "ir/ir.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

void expand_pipelines(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads);

}  // namespace tl::codegen
