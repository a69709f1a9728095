// Shared-memory allocation, the GPU pass "allocate-shared" (pipeline.h):
// where in shared memory each loop's pipeline buffers and each op's
// scratch go, written into the GPU IR for the lowering to use:
//
//   for ... {buffers = [0, 16384], stages = 3}   each pipelined load's
//                                                buffers (body order)
//   %s = reduce %x {axis = 1, scratch = 32768}   the first byte of the
//                                                op's scratch
//
// Lifetimes follow the regions: a loop's buffers live while it runs, so
// they sit above those of the loops around it and the cluster exchange
// (kClusterExchangeBytes, shared_sizes.h) and below the scratch of the ops
// inside it; two loops one after the other reuse the same bytes. An op's
// scratch lives while the op runs: every op's starts at the first byte
// past the buffers live around it. A loop whose dots take operands defined
// before it stages them at its entry, at its own `scratch`. The sizes are
// shared_sizes.h's.
//
// LLVM-free.
#pragma once

#include "codegen/assign_layouts.h"
#include "ir/ir.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

// `matrix_loads`: the target's 8x8 matrix loads (what lets a pipeline's
// buffers be read by dots in place: scheduled_pipeline).
void allocate_shared(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads);

}  // namespace tl::codegen
