// Checks the structural and type rules of the Tile IR (ops.def lists them):
// operand counts and types, shapes (power-of-two tile dims, rank 1..3),
// attributes, region arguments and terminators, SSA dominance (a value is
// used only after its definition, in its region or a nested one); for GPU IR
// also the layouts of its types and the rules of its own ops.
// Throws tl::Error "<loc>: '<op>' <what was expected>, found <what was found>".
#pragma once

#include "ir/export.h"
#include "ir/ir.h"

TILEDSL_SHARED_BEGIN

namespace tl::ir {

void verify(const Function& fn);
void verify(const Module& m);

}  // namespace tl::ir

TILEDSL_SHARED_END
