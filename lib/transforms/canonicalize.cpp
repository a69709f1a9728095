// Canonicalization: constant folding and algebraic simplification.
// (Being written; this first version makes no rewrites so that simplify()
// links for the front end.)
#include "transforms/passes.h"

namespace tl::transforms {

bool canonicalize(ir::Function& fn) { return false; }

}  // namespace tl::transforms
