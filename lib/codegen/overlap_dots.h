// Overlapping a loop's first product with the rest of its iteration, the
// GPU pass "overlap-dots" (pipeline.h), on Tile IR after
// select-dot-instructions: where a loop's body starts a chain of warpgroup
// products (attention's S = Q K^T, whose softmax feeds O += P V), the
// first product of iteration i + 1 is issued in iteration i, before the
// work that reads iteration i's, and goes around the loop:
//
//   %s0 = dot %q, trans(load K[lo]  if lo < hi), 0         before the loop
//   for %j = lo .. hi step st (..., %s = %s0) {
//     %sn = dot %q, trans(load K[%j + st]  if %j + st < hi), 0
//     ...softmax of %s, O += P V...                  (reads %s, not %sn)
//     yield ..., %sn
//   }
//
// Then, where the work between the two products (B: the softmax, pure)
// reads the carried product and updates carried values of its own (the
// running max and sum) and what the second product's side (D2 and the
// ops that read its accumulator: the rescale of O) reads of B is all it
// needs, B moves after D2 and runs on the product just issued, for the
// next iteration:
//
//   %s0 = dot ...; B(%s0, lo) -> %p0, %a0, %m0     before the loop
//   for %j ... (%m, %acc, %a = %a0, %p = %p0) {   (%m: select(lo < hi, %m0, init))
//     %sn = dot %q, trans(load K[%j + st]), 0
//     %o = dot %p, V[%j], %acc * col(%a)
//     %pn', %an, %mn = if %j + st < hi { B(%sn, %j + st) } else { %sn, %a, %m }
//     yield %mn, %o, %an, cast(%pn')
//   }
//
// so both products are issued back to back and B runs while the second
// is in flight; the loop carries B's values that D2's side reads (P, the
// [BM] rescale; shape ops only D2's side reads stay with it) instead of
// the product, and B runs only where iteration j + st exists: the last
// iteration computes no softmax of a block past the end (its S product is
// still issued: a predicated wgmma makes ptxas serialize them all; the
// loop is marked {peel_last = 1}, and peel-last-iteration, where it runs,
// moves that iteration after the loop without the product). A value B makes by a cast (P) is cast after the `if`, which yields the
// cast's operand, so that async-dots can still move the cast past D2's
// wait (docs/perf.md run 100: +1-3 % at d 64). B, and what it reads of
// the body's other ops, must not read carried values but the index and
// B's own, nothing outside B may read the ones it updates, and B neither
// loads nor multiplies; otherwise only the first step is done. async-dots
// then issues both products without waiting, waits for %sn before B with
// the second still pending, and retires it before the yield (async_dots.h):
// FlashAttention-3's intra-warpgroup overlap, found in the kernel rather
// than written in it.
//
// The product moved is the first warpgroup dot of the loop's body whose
// result a later warpgroup dot of the body reads (through any ops), and
// whose operands come from the loop's index and values from before the
// loop alone (loads included: nothing in the loop writes memory, and each
// load the move clones reads for that dot alone). The clones' loads are
// masked off where their iteration does not exist, so the product of an
// iteration past the end reads nothing (and is never used). Loops not of
// that shape, and targets without warpgroup instructions, are left as they
// are.
//
// LLVM-free.
#pragma once

#include "ir/ir.h"

namespace tl::codegen {

struct TargetInfo;

// Returns the number of loops changed.
int overlap_dots(ir::Function& fn, const TargetInfo& t, int num_warps);

}  // namespace tl::codegen
