// Target-independent passes over a Function. Each returns true when it
// changed the IR. One file per pass in this folder.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/export.h"
#include "ir/ir.h"

TILEDSL_SHARED_BEGIN

namespace tl::transforms {

bool canonicalize(ir::Function& fn);  // constant folding, algebraic simplification (Tile IR only)
bool cse(ir::Function& fn);           // common subexpression elimination (pure ops)
bool dce(ir::Function& fn);           // removes pure ops whose results are unused
// Tensor descriptors' blocks as the masked loads and stores they mean
// (the interpreter's form; the GPU pass list's first pass). Those `keep`
// accepts stay (the GPU passes make tensor copies of them).
bool lower_descriptors(ir::Function& fn, const std::function<bool(const ir::Op&)>& keep = {});

// Whether a `for`'s step is a constant above 0 at its type's width: only
// such a loop may be folded away or removed, since the interpreter names a
// step of 0 or below whether or not the loop runs (language.md).
bool for_step_known_positive(const ir::Op& for_op);

using PassFn = bool (*)(ir::Function&);
// By name ("canonicalize", "cse", "dce"), for tiledsl-opt; null if unknown.
PassFn find_pass(std::string_view name);
std::vector<std::string> pass_names();

// What tl::compile runs after tracing: the three passes until nothing changes.
void simplify(ir::Function& fn);

}  // namespace tl::transforms

TILEDSL_SHARED_END
