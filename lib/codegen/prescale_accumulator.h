// An accumulator carried already updated for the next step, the GPU pass
// "prescale-accumulator" (pipeline.h), after peel-last-iteration: in a
// loop it peeled (attention's), the second product reads the carried
// accumulator through pure work on it and on other carried values (O's
// rescale by the softmax's alpha, `%acc * broadcast(%alpha)`), between the
// two products' issue, where it delays the second one (ptxas places those
// 64 multiplies after the turn's barrier, docs/hopper-plan.md, run 98).
// The update moves to the end of the step before, on the product just
// retired and the carried values' next ones, so that the products are
// issued back to back:
//
//   for ... (%acc = %a0, %alpha = %al0, ...) {         {peeled = 1}
//     %s = dot ...                                     (the next S)
//     %u = mul %acc, broadcast(%alpha)
//     %o = dot %p, %v, %u {async = 1}
//     ...the softmax: %alpha' ...
//     %w = dot_wait %o {pending = 0}
//     yield %w, %alpha', ...
//   }
//   if %live { ...%u = mul %r#acc, broadcast(%r#alpha); dot %p, %v, %u... }
// becomes
//   %a0' = if %live { mul %a0, broadcast(%al0) } else { %a0 }
//   for ... (%acc = %a0', %alpha = %al0, ...) {
//     %s = dot ...
//     %o = dot %p, %v, %acc {async = 1}
//     ...
//     %w = dot_wait %o {pending = 0}
//     yield mul %w, broadcast(%alpha'), %alpha', ...
//   }
//   if %live { ...dot %p, %v, %r#acc... }          (already updated)
//
// The same multiplies in the same order, so the results are the same bits;
// the last step (peeled) applies none after its product, and where the
// loop does not run the accumulator is its initial value. Only where the
// update is pure ops of the body's top level (no products, no regions)
// reading the accumulator, which nothing else reads, and other carried
// values (not the index), and the product's wait {pending = 0} is what the
// loop yields for it. On by default (perf.md run 103: +0.6-2 % at d 128
// and d 64 without a causal mask, 2 % less with one, not yet understood);
// TILEDSL_GPU_PASSES=-prescale-accumulator leaves it out.
//
// LLVM-free.
#pragma once

#include "ir/ir.h"

namespace tl::codegen {

// Returns the number of loops changed.
int prescale_accumulator(ir::Function& fn);

}  // namespace tl::codegen
