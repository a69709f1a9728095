// The last iteration of a loop that overlap-dots rotated, run after the
// loop, the GPU pass "peel-last-iteration" (pipeline.h), after
// warp-specialize: overlap-dots issues, at the top of iteration j, the
// first product of iteration j + st (attention's S = Q K^T of the next key
// block, its loads masked off past the end), so the last iteration issues
// one product for a block past the end that nothing reads (1 in 65
// products at N 4096). A branch around it makes ptxas serialize every
// wgmma of the kernel (docs/perf.md runs 99, 101: the accumulator
// registers would be defined by something other than a wgmma on one path).
// On by default (perf.md run 103: +1-4 % on attention's four table
// shapes; TILEDSL_GPU_PASSES=-peel-last-iteration leaves it out). Peeled,
// the loop stops one iteration early and that iteration follows it with
// the conditions it knows folded: there `j + st < hi` is false, so
// the `if` it guards takes its other branch, and the product whose only
// reader was that branch's yield dies with its wait:
//
//   for %j = lo .. hi step st (...) { body }      {peel_last = 1}
// becomes
//   %live = cmp lo, hi {lt}
//   %last = lo + ((hi - lo - 1) udiv st) * st       (in the index's width)
//   for %j = lo .. select(%live, %last, hi) step st (...) { body }
//   %r... = if %live { body at %j = %last, carried = the loop's results,
//                       `cmp (%last + st), hi {lt}` as false, folded }
//           else { the loop's results }
//
// In the loop itself that condition is true (j + st <= last < hi): the
// `if`s on it there are replaced by their first branch, so the softmax is
// straight-line code between the products' issue and P V's wait. The loop
// is marked {peeled = 1} for prescale-accumulator (prescale_accumulator.h).
//
// It reads the ring's slot and phase the loop carried, so the producer's
// loop (warp-specialize's partition), which still runs every iteration,
// needs no change. A product and its `dot_wait` go where the product's
// only reader is that wait, its result unread, nothing is in flight before
// the product (the loop's body ends retiring every product: a `dot_wait
// {pending = 0}` after its last one, checked before peeling), and the
// products issued between them are no more than the wait leaves pending
// (so it retired nothing else). Loops without the mark, or whose body
// does not end so, are left as they are.
//
// LLVM-free.
#pragma once

#include "codegen/assign_layouts.h"
#include "ir/ir.h"

namespace tl::codegen {

// Returns the number of loops peeled; the cloned dots join `plan.dots`.
int peel_last_iteration(ir::Function& fn, LayoutPlan& plan);

}  // namespace tl::codegen
