// The GPU stage as one list of passes over a function's IR, run in order by
// the compile (compile.cpp) and one at a time by tiledsl-opt --pass:
//
//   lower-descriptors  Tile IR: tensor descriptors' blocks as the masked
//                    loads and stores they mean, but for the loads that can
//                    be tensor copies on the target (transforms/
//                    lower_descriptors.cpp, tma_descriptors.h)
//   select-dot-instructions  Tile IR: each dot's matrix instruction as its
//                    `instr` (select_dot_instructions.cpp)
//   overlap-dots     Tile IR: a loop's first warpgroup product of a chain
//                    (attention's Q K^T) issued one iteration early, its
//                    result carried (overlap_dots.cpp)
//   assign-layouts   Tile IR -> GPU IR: a layout on every tile type (a
//                    dot's from its instruction), the launch attributes and
//                    the options the lowering reads (num_stages, fp_fusion)
//                    (assign_layouts.cpp), and the conversions between the
//                    layouts as ops (convert_layouts.cpp)
//   schedule-loops   each loop's software-pipelining schedule: its depth
//                    and which loads run ahead, in which form, within the
//                    shared memory the target has (schedule_loops.cpp)
//   expand-conversions  conversions through shared memory as a buffer
//                    written and read back, with barriers (expand_conversions.cpp)
//   expand-pipelines each scheduled loop as the ops that run it: buffers,
//                    the prologue's copies, waits, slots, the refill and the
//                    predicated tail; tensor copies with a ring of full
//                    mbarriers (expand_pipelines.cpp)
//   tma-descriptors  each descriptor load no pipeline took as one tensor
//                    copy where it stands (tma_descriptors.cpp)
//   async-dots       a loop's warpgroup dot issued without waiting for
//                    itself, its dot_wait {pending = 1} after it and
//                    {pending = 0} after the loop; a carried next-iteration
//                    product waited for after the body's last product
//                    (async_dots.cpp)
//   warp-specialize  a loop of tensor copies feeding an asynchronous dot
//                    split into a producer warpgroup and the consumers,
//                    joined by rings of full and empty mbarriers
//                    (warp_specialize.cpp)
//   peel-last-iteration  an overlapped loop's last iteration run after it,
//                    without the product of the block past the end
//                    (peel_last_iteration.cpp)
//   prescale-accumulator  a peeled loop's accumulator carried already
//                    updated for the next step (attention's O rescale
//                    after P V's wait, not between the products)
//                    (prescale_accumulator.cpp)
//   prefetch-tile-copies  a persistent program's one-shot copies of a tile
//                    (attention's Q) issued by the tile before, while it
//                    ends (prefetch_tile_copies.cpp)
//   defer-store-waits  a persistent program's tile store waited for where
//                    the next tile writes its buffer, not where it is
//                    issued (defer_store_waits.cpp)
//   allocate-shared  where each buffer and each op's scratch go in shared
//                    memory, by their lifetimes (allocate_shared.cpp)
//   insert-barriers  a barrier wherever shared-memory accesses of different
//                    threads conflict (insert_barriers.cpp)
//
// then the lowering to LLVM IR (lower_llvm.cpp), which still decides the
// rest (docs/gpu-ir-plan.md). The IR is verified after each pass: every
// pass reads and writes valid IR. A pass run on GPU IR text reads what the
// IR does not hold from plan_from_ir.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/assign_layouts.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

struct TargetInfo;

// What the passes of one compile share: the function (rewritten in place),
// the target, what is known of the arguments, the kernel's options, and
// what the passes have worked out so far.
struct GpuContext {
  ir::Function& fn;
  const TargetInfo& target;
  std::vector<transforms::ArgFacts> args;
  int num_warps = 4;
  int num_ctas = 1;
  int num_stages = 3;
  bool fp_fusion = true;
  bool flush_denormals = false;
  int programs_per_sm = 1;
  int warp_specialize = -1;  // -1: the compiler decides, 0: never, 1: always
  std::optional<transforms::AxisAnalysis> axis;  // of the IR as it is now
  std::optional<LayoutPlan> plan;                // from assign-layouts, or read from GPU IR
  // Decisions a user may ask about (TILEDSL_DUMP=notes), one line each:
  // "<file>:<line>: descriptor_load: a tensor copy", or why not.
  std::vector<std::string> notes;

  GpuContext(ir::Function& f, const TargetInfo& t) : fn(f), target(t) {}
};

struct GpuPass {
  std::string_view name;
  void (*run)(GpuContext&);
  // An optimization the code is correct without, which TILEDSL_GPU_PASSES
  // may switch off (or on, where it is off by default: a pass not yet
  // measured on a GPU is in the list, tested, and off until it is).
  bool optional = false;
  bool on_by_default = true;
};

// The passes in the order they run.
const std::vector<GpuPass>& gpu_passes();
const GpuPass* find_gpu_pass(std::string_view name);  // null if unknown

// TILEDSL_GPU_PASSES, for timing one pass in a package as it is: a comma
// list of `-name` (an optional pass skipped) and `+name` (an optional pass
// run that is off by default), read at each compile and part of the kernel
// cache key ("" when unset). A name that is no optional pass is an error
// naming those that are.
std::string gpu_pass_changes();

// A context for `fn` on a target named as the registry knows it ("sm_90a");
// throws tl::Error for an unknown one.
GpuContext gpu_context(ir::Function& fn, const std::string& target);

// Runs one pass and verifies the IR after it (the pass is named in the
// error).
void run_gpu_pass(GpuContext& ctx, const GpuPass& pass);
// Runs every pass that is on (by default, or as TILEDSL_GPU_PASSES says);
// `after` sees the IR after each.
void run_gpu_passes(GpuContext& ctx, const std::function<void(const GpuPass&)>& after = {});

// The plan of GPU IR read back from its types and attributes (a dot's
// layouts from its `instr` and its result's layout), for a pass run on GPU
// IR text.
LayoutPlan plan_from_ir(const ir::Function& fn, const TargetInfo& t);

}  // namespace tl::codegen
