// Barriers from an analysis of shared-memory reads and writes, the GPU pass
// "insert-barriers" (pipeline.h), the last one: every `barrier` of a
// kernel's GPU IR is this pass's (the passes before it write none), in the
// manner of Triton's Membar.cpp.
//
// It walks the function in program order with the accesses to shared
// memory since the last barrier (byte ranges allocate-shared and
// expand-pipelines placed, read or written) and puts a `barrier` right
// before an op whose access conflicts with one of them: a read after
// another thread's write, or a write after another thread's read or write.
// What it knows of each op:
//   local_alloc %x        writes its buffer (at its scratch)
//   local_load %buf       reads it
//   async_copy %buf, ...  writes it once a wait completes its commit group
//                         (async_wait {pending}); a barrier before the wait
//                         publishes nothing, and the write conflicts with
//                         earlier reads from its issue on
//   dot %a, %b            reads the buffers it reads in place
//   ops with `scratch`    an exchange within the op (a reduction's or
//                         scan's between warps, a dot's staged operands, a
//                         matrix-load conversion, an atomic's old values):
//                         writes, a barrier of the op's own, reads; so a
//                         barrier is needed only before its writes, and
//                         after it only its reads are outstanding (the
//                         lowering keeps that promise, lowerer.h)
//   atomic_rmw, atomic_cas on a scalar, release or acq_rel: a barrier of
//                         the program's threads first (its lowering's, so
//                         that one thread's release orders all their
//                         writes): nothing is outstanding at it
// A reduction's exchange goes in one of two slots of its scratch, in turn
// ({exchange = 0|1}, written here), so that back-to-back reductions (a
// row's max, then its sum) need no barrier between them; so do the two
// slots of the exchange between the CTAs of a cluster ({cluster_slot}).
// Two accesses do not conflict when
//   - they are in different slots of one pipeline buffer: a view
//     `local_slot %buf, %i {stage = k}` is the slot of iteration i + k of
//     its loop (expand-pipelines), and across the loop's back edge stage k
//     becomes k - 1, so the refill of the slot iteration i - 1 read needs
//     no barrier after the dots of iteration i;
//   - each thread reads back only the elements it wrote (the same view in
//     the same layout, one thread per element: a row pipeline's copies and
//     loads).
// Loops run to a fixed point; a conflict whose earlier access is from
// before a loop puts its barrier before the loop, not in it.
//
// LLVM-free.
#pragma once

#include "codegen/assign_layouts.h"
#include "ir/ir.h"

namespace tl::codegen {

void insert_barriers(ir::Function& fn, const LayoutPlan& plan);

// Whether `op` is an atomic on a scalar with release or acq_rel order: one
// thread performs it for the program, so its lowering first waits at a
// barrier of all the program's threads (its release then orders every
// thread's earlier writes). insert-barriers counts that barrier as one.
bool atomic_syncs_threads(const ir::Op& op);

}  // namespace tl::codegen
