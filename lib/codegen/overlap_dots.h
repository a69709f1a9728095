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
// async-dots then issues %sn without waiting for it (async_dots.h), so the
// tensor cores multiply the next block while this one's exponentials run
// (FlashAttention-3's intra-warpgroup overlap, found in the kernel rather
// than written in it).
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
