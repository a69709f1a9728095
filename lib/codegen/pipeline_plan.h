// Software-pipelining plan of a loop: which of its tile loads go through
// shared-memory buffers filled ahead by asynchronous copies, and which ops
// must run ahead with them.
//
// A tile load (rank 1 or 2, not volatile) whose accesses are 4, 8 or 16
// contiguous bytes per thread qualifies in one of two forms:
//  - read by dots: every use is a dot operand the target reads with matrix
//    loads (directly, or through a trans) and its `other` is 0 (the copies
//    zero-fill masked elements). The dots read the buffer itself.
//  - read into registers: any other load whose address or mask changes
//    from one iteration to the next. At its place in the body each
//    thread reads its elements back from the buffer in the load's own
//    layout and applies `other` where the mask is off. Such loads are
//    pipelined only in loops that write no memory, unless the loop asks
//    for a depth itself (tl::range's num_stages): issuing a load early is
//    wrong if an earlier iteration stores to what it reads, and only the
//    author knows that. Those whose buffers would not leave room for the
//    body's scratch are left in place. A load whose address and mask are
//    the same in every iteration (a layernorm's weights) is copied once,
//    before the loop, and read from its buffer in each iteration: shared
//    memory instead of L2 for every row, and no registers held across the
//    loop. Such loads ride along with a pipeline; alone they make none.
// A descriptor_load kept for tensor copies (tma_descriptors.h) qualifies
// in both forms too (rank 2): one thread copies the block into its slot,
// completing on the slot's full mbarrier. One whose block is the same in
// every iteration is not pipelined, and none is prefetched into registers.
// The ops a load's address and mask need (pointer increments, the
// ragged-K mask) form the "lead" slice: expand-pipelines runs them `stages - 1`
// iterations ahead, carrying its own copies of the loop-carried values they
// read. The slice must consist of cheap pure ops (elementwise, shape,
// constants): a load that needs anything else (another load, a reduction)
// is left unpipelined.
//
// When no dot reads a buffer, each iteration refills its slot as soon as
// the last load has been read, so `stages - 1` buffers suffice; if no two
// threads read the same element, no barrier is needed either.
//
// Invariant copies form a commit group of their own, after the first
// iteration's other copies, when each thread reads only what it copied:
// the first iteration waits for its row alone at the top and for the
// weights only where it first reads them, so its reductions overlap their
// arrival (a layernorm's 128 KB of weights took longer than its first row).
//
// At depth 2 with no dot reads and no invariant loads, the next
// iteration's loads may go straight into registers instead (plain loads
// whose results the loop carries; nothing waits until they are used) when
// that copy plus the current one, counted a register per element as f32,
// fit in three quarters of a thread's registers. Measured, this took the
// persistent bf16 softmax at 32768 from 3172 to 3356 GB/s; where it spilled
// (f32 rows of 32 per thread at 64 registers) it lost a quarter, hence the
// bound (docs/perf.md, run 25).
//
// LLVM-free: schedule-loops writes what this decides into the GPU IR, and
// expand-pipelines (expand_pipelines.h) expands it.
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
  std::vector<bool> to_registers;       // per load: read into registers (else by dots)
  std::vector<bool> invariant;          // per load: the same every iteration: copied once
  bool early_refill = false;            // no dot reads a buffer: stages - 1 slots
  bool shared_reads = false;           // some thread reads an element another copied
  bool prefetch_registers = false;      // next iteration's loads into registers, no buffers
  bool invariant_group = false;         // invariant copies commit apart; iteration 0 waits at first read
  bool tensor_copies = false;           // some loads are descriptor loads: tensor copies on full mbarriers
  bool async_copies = false;            // some are pointer loads copied in commit groups
  std::vector<const ir::Op*> lead_ops;  // ops their operands need, in body order
  std::vector<size_t> lead_args;        // carried values (index k of args[k + 1]) those ops read
  std::set<const ir::Op*> skip;         // loads read by dots, their trans and conversions: never in registers
  struct Left {  // a load left in place: its buffers would not fit beside the body's scratch
    const ir::Op* load;
    int64_t bytes, room;
  };

  int slots() const { return early_refill ? stages - 1 : stages; }
};

// What the target offers the pipeline.
struct PipelineTarget {
  bool matrix_loads = false;  // 8x8 matrix loads (dots may read the buffers)
  int64_t smem_budget = 0;    // bytes the buffers of register loads may take
  int thread_registers = 0;   // registers a thread may hold (0: unknown)
};

// The plan for `loop` (a For op), or nullopt when nothing qualifies or its
// depth (the loop's num_stages, else the kernel's) is below 2. Call only
// for targets with asynchronous copies. `left` (if given) receives the
// loads read into registers that the shared-memory budget left in place.
std::optional<PipelinePlan> plan_pipeline(const ir::Op& loop, const LayoutPlan& plan,
                                          const transforms::AxisAnalysis& axis, const PipelineTarget& target,
                                          std::vector<PipelinePlan::Left>* left = nullptr);

// The plan of a loop that schedule-loops scheduled (its `stages` and its
// loads' `pipeline` forms, schedule_loops.h), rebuilt and checked: nullopt
// for a loop without a schedule; a schedule the rules do not allow is an
// error naming the op. The target's matrix loads are all it reads.
std::optional<PipelinePlan> scheduled_pipeline(const ir::Op& loop, const LayoutPlan& plan,
                                               const transforms::AxisAnalysis& axis, const PipelineTarget& target);

// Shared with the lowering:
// elements per vector access of a memory op whose tile is in layout `l`,
// along the dimension its registers run along (what axis analysis proved,
// what the layout makes contiguous, 16 bytes);
int access_width(const ir::Op& op, const LinearLayout& l, DType d, const transforms::AxisAnalysis& axis);
// the dimension a tile's registers run along (the last on a tie), which is
// also the one stored contiguously in shared memory;
int stored_contiguous_dim(const LinearLayout& l);
// whether `v` is the constant 0 (or a splat of it), bit for bit;
bool is_zero_constant(const ir::Value* v);
// whether `dot`'s operands can be read with 8x8 matrix loads (16-bit
// elements on a k = 16 instruction), given the target has them.
bool matrix_loadable_dot(const ir::Op& dot, const LayoutPlan& plan);
// whether `v`, as operand `i` (0: A, 1: B) of such a dot, reaches its
// fragments by a round trip through swizzled shared memory read with
// matrix loads: not uniform, and held by other threads than the fragments
// need (given the target has matrix loads).
bool staged_for_matrix_loads(const ir::Op& dot, int i, const ir::Value* v, const LayoutPlan& plan);

}  // namespace tl::codegen
