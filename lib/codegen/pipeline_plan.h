// Software-pipelining plan of a loop: which of its tile loads go through
// shared-memory buffers filled ahead by asynchronous copies, and which ops
// must run ahead with them.
//
// A load qualifies when every use is a dot operand the target reads with
// matrix loads (directly, or through a trans), its `other` is 0 (the copies
// zero-fill masked elements), and each thread's accesses are 4, 8 or 16
// contiguous bytes (along either dimension). The ops its address and
// mask need (pointer increments, the ragged-K mask) form the "lead" slice:
// the lowering runs them `stages - 1` iterations ahead, carrying its own
// copies of the loop-carried values they read. The slice must consist of
// cheap pure ops (elementwise, shape, constants): if a load needs anything
// else (another load, a reduction), the loop is not pipelined.
//
// LLVM-free: the lowering (lower_llvm.cpp) emits what this decides.
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "codegen/assign_layouts.h"
#include "ir/ir.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

struct PipelinePlan {
  int stages = 0;
  std::vector<const ir::Op*> loads;     // pipelined loads, in body order
  std::vector<const ir::Op*> lead_ops;  // ops their operands need, in body order
  std::vector<size_t> lead_args;        // carried values (index k of args[k + 1]) those ops read
  std::set<const ir::Op*> skip;         // the loads and their trans: never in registers
};

// The plan for `loop` (a For op), or nullopt when nothing qualifies or its
// depth (the loop's num_stages, else the kernel's) is below 2. Call only
// for targets with asynchronous copies and 8x8 matrix loads.
std::optional<PipelinePlan> plan_pipeline(const ir::Op& loop, const LayoutPlan& plan,
                                          const transforms::AxisAnalysis& axis);

// Shared with the lowering:
// elements per vector access of a memory op whose tile is in layout `l`,
// along the dimension its registers run along (what axis analysis proved,
// what the layout makes contiguous, 16 bytes);
int access_width(const ir::Op& op, const LinearLayout& l, DType d, const transforms::AxisAnalysis& axis);
// the dimension a tile's registers run along (the last on a tie), which is
// also the one stored contiguously in shared memory;
int stored_contiguous_dim(const LinearLayout& l);
// whether `dot`'s operands can be read with 8x8 matrix loads (16-bit
// elements on a k = 16 instruction), given the target has them.
bool matrix_loadable_dot(const ir::Op& dot, const LayoutPlan& plan);

}  // namespace tl::codegen
