// Loop scheduling, the GPU pass "schedule-loops" (pipeline.h): on targets
// with asynchronous copies, which loads of each loop run ahead of it and
// how deep (pipeline_plan.h decides), written into the GPU IR for the
// lowering to expand:
//
//   scf.for ... {stages = 3}                   the pipeline's depth
//   %a = load %p, %m, %z {pipeline = "dots"}   copied ahead into buffers that
//                                              the loop's dots read in place
//   %r = load ... {pipeline = "registers"}     copied ahead, read into
//                                              registers where it stands
//   %w = load ... {pipeline = "once"}          the same every iteration:
//                                              copied once, before the loop
//   %r = load ... {pipeline = "prefetch"}      depth 2: the next iteration's
//                                              load goes straight to registers
//
// Loads read into registers share shared memory with the body's scratch:
// the first that fit in what the scratch leaves are scheduled, and a load
// left out says so (`unpipelined = "..."`). The pass then bounds the
// kernel's shared memory (shared_sizes.h), counting in a persistent
// program's loop over tiles the ring of its loop feeding dots as live
// through the whole body (warp-specialize keeps it so); if loads read into
// registers would make it overflow, it schedules the kernel again without
// them and says so on the function (`schedule = "..."`): the lowering
// runs once.
//
// LLVM-free: what it needs of the target is a ScheduleTarget.
#pragma once

#include <string>

#include "codegen/assign_layouts.h"
#include "ir/ir.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

// What scheduling needs to know of the target.
struct ScheduleTarget {
  std::string name;
  bool async_copy = false;    // asynchronous copies from global to shared memory
  bool matrix_loads = false;  // 8x8 matrix loads (dots may read the buffers)
  int64_t shared_bytes = 0;   // shared memory a block may have
  int thread_registers = 0;   // registers a thread may hold at the kernel's block size (0: unknown)
};

void schedule_loops(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis,
                    const ScheduleTarget& t);

}  // namespace tl::codegen
