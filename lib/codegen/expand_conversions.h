// Layout conversions through shared memory as buffers, the GPU pass
// "expand-conversions" (pipeline.h): each convert_layout {move = "shared"}
// becomes a buffer every thread writes what it holds into and then reads
// what it needs from:
//
//   %b = local_alloc %x : smem<64x32xf32, #lK>   the tile, row-major (#lK maps
//                                                element offsets to coordinates)
//   %y = local_load %b : tile<64x32xf32, #lJ>    in the layout needed
//
// A tile of pointers goes through as its addresses (bitcast to i64 and
// back): buffers hold numbers.
//
// allocate-shared then places the buffer (its `scratch`), and
// insert-barriers puts a barrier between the two (every write has landed)
// and one before the first where earlier readers of its bytes need it. Conversions a
// loop's schedule runs ahead of the loop (the slice a pipelined load's
// address needs) or leaves unlowered stay as they are: the schedule's
// expansion handles them.
//
// LLVM-free.
#pragma once

#include "codegen/assign_layouts.h"
#include "ir/ir.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

void expand_conversions(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads);

// The layout of a row-major buffer of `shape`: element offset -> coordinates.
LinearLayout row_major_buffer(const std::vector<int64_t>& shape);

}  // namespace tl::codegen
