// Asynchronous warpgroup dots, the GPU pass "async-dots" (pipeline.h),
// after expand-pipelines: a loop's warpgroup dot that reads both operands
// from buffers and whose accumulator goes around the loop and nowhere else
// is issued without waiting for itself. Its wait, with one dot still in
// flight, comes right after it; the loop's result waits for the last one:
//
//   for ... (%iv, %acc, ...) {
//     ...
//     %y = dot %a, %b, %acc {async = 1, instr = "<a warpgroup instruction>"}
//     %w = dot_wait %y {pending = 1}        the previous iteration's dot is done
//     ...the refill of the slot that dot read
//     yield %w, ...
//   }
//   %c = dot_wait %loop#acc {pending = 0}   the epilogue reads %c
//
// so one K step's multiplies run while the next step's copies are waited
// for and issued (Triton's warp_group_dot {isAsync} with
// warp_group_dot_wait {pendings = 1}). A dot in flight reads its buffers
// until a wait retires it in every warpgroup: insert-barriers puts the
// barrier between that wait and the refill (insert_barriers.h).
//
// In a loop of several warpgroup dots, those reading B from a buffer are
// issued without waiting where their result is read only by the yield (an
// accumulator nothing reads after its dot), or first read after a later
// such dot was issued: that read waits for it with the later ones still
// pending. One dot_wait {pending = 0} right before the yield retires the
// rest (overlap_dots.h's loop):
//
//   %sn = dot %q, %k_slot, %zero {async = 1, ...}
//   %o = dot %p, %v_slot, %acc_scaled {a_in = "registers", async = 1, ...}
//   %snw = dot_wait %sn {pending = 1}
//   ...the softmax of %snw, its exponentials %e...
//   %ow = dot_wait %o {pending = 0}
//   %pn = cast %e                       the next A, once %o no longer reads %p
//   yield %ow, ..., %pn
//
// A dot in flight reads its A registers (%p, carried) until it retires:
// the casts making the next iteration's A move after the last wait, or
// the target's assembler would wait for the dot where they start.
//
// Left synchronous: dots whose operands come in registers (staged through
// the dot's scratch, which the next op may reuse), whose accumulator or
// result anything else reads in the loop (it would read registers still
// being written), whose accumulator is converted to the instruction's type
// and back, accumulating loops of more than one warpgroup dot, and dots
// outside loops.
//
// LLVM-free.
#pragma once

#include "codegen/assign_layouts.h"

namespace tl::codegen {

void async_dots(ir::Function& fn, const LayoutPlan& plan);

}  // namespace tl::codegen
