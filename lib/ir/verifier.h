// Checks the structural and type rules of the Tile IR (ops.def lists them):
// operand counts and types, shapes (tile dims c x 2^k, c odd and at most
// 15: is_tile_dim; rank 1..5, max_tile_rank),
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

// A named barrier's ping-pong passes turns among 2 to this many
// warpgroups, one barrier each (ids id .. id + groups - 1).
inline constexpr int kMaxPingpongGroups = 4;

}  // namespace tl::ir

TILEDSL_SHARED_END
