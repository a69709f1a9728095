// How much shared memory the lowering uses, known before it runs: where a
// loop's pipeline buffers go, and how many bytes of scratch each op may
// take at the scratch base (a conversion through shared memory, a
// reduction's or scan's exchange between warps, a dot's staged operands, an
// atomic's old values). schedule-loops (schedule_loops.h) bounds a
// kernel's shared memory with them before choosing its schedule (the
// buffers stacked as place_pipeline_buffers does), allocate-shared places
// what it needs by lifetimes (allocate_shared.h), and the lowering checks
// every scratch use against scratch_bound.
//
// LLVM-free.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "codegen/assign_layouts.h"
#include "codegen/pipeline_plan.h"

namespace tl::codegen {

// With clusters, the start of shared memory holds the exchange between
// their CTAs: two slots, then their two transaction barriers
// (lower_reduce.cpp); scratch and buffers come after it.
constexpr int64_t kClusterSlotBytes = 4096;
constexpr int64_t kClusterExchangeBytes = 2 * kClusterSlotBytes + 128;

// Bytes one element of `t` takes in shared memory (a pointer: 8; a bool: 1).
int64_t shared_elem_bytes(const ir::Type& t);

// A pipeline's buffers, placed from byte `base` up: each load's first
// byte (none for a register prefetch) and the first byte past them: at the
// boundaries `wg_align` of the warpgroup instructions reading them
// (warpgroup_operand_align), else at 128 bytes.
struct PipelineBuffers {
  std::vector<int64_t> at;  // per load of the plan
  int64_t end = 0;
};
PipelineBuffers place_pipeline_buffers(const PipelinePlan& p, const LayoutPlan& plan, int64_t base, int64_t wg_align);
// Where shared memory for buffers and scratch starts (past the cluster
// exchange, with clusters).
inline int64_t shared_start(const LayoutPlan& plan) { return plan.num_ctas > 1 ? kClusterExchangeBytes : 0; }
// The alignment the warpgroup instructions of `loop`'s dots want of their
// operands in shared memory (MatrixInstr::operand_align; 0: no such dot).
int64_t warpgroup_operand_align(const ir::Op& loop, const LayoutPlan& plan);
inline bool warpgroup_reads(const ir::Op& loop, const LayoutPlan& plan) { return warpgroup_operand_align(loop, plan) > 0; }
// The buffer a buffer value is part of, through the views of its slots and
// its trans; `slot` (if given) gets the `local_slot` on the way, or null.
const ir::Value* buffer_of(const ir::Value* v, const ir::Op** slot = nullptr);
// The bytes of a buffer of type `t` whose layout is `l`: all its slots.
int64_t smem_buffer_bytes(const ir::Type& t, const LinearLayout& l);
// The bytes of one slot of the buffer of tile `v` (this CTA's part).
int64_t buffer_slot_bytes(const ir::Value* v, const LayoutPlan& plan);

// At most how many bytes of scratch, from the scratch base, `op` uses
// (0: none). A buffer (smem<...>) a dot or trans reads in place takes
// none; before expand-pipelines makes the buffers, `in_shared` says which
// loads a schedule will leave in shared memory.
using InShared = std::function<bool(const ir::Value*)>;
int64_t scratch_bound(const ir::Op& op, const LayoutPlan& plan, const InShared& in_shared);

// The loops a persistent program walks its tiles with: at the top level,
// or at the top of a warp_specialize's consumers (its first partition),
// with a loop in their body (a tile's work; a loop of one-shot copies and
// no inner loop is a loop the kernel asked to run unpipelined, a gemm's
// one-stage K loop).
std::vector<ir::Op*> tile_loops(ir::Function& fn);

// A reduction's exchange between warps: the bytes of its partials (0:
// none), which go in one of two slots of kExchangeSlotBytes at its scratch
// when they fit (insert_barriers.h picks the slot, {exchange = k}).
constexpr int64_t kExchangeSlotBytes = 4096;
int64_t reduce_exchange_bytes(const ir::Op& op, const LayoutPlan& plan);
// Whether a reduction's axis is split over the CTAs of a cluster.
bool reduces_across_ctas(const ir::Op& op, const LayoutPlan& plan);
// Whether `op` exchanges values between threads through its scratch: it
// writes there, waits at a barrier of its own, reads; insert-barriers puts
// one before it where earlier accesses need it, and the lowering keeps the
// promise of the barrier between (lowerer.h).
bool exchanges_through_scratch(const ir::Op& op);

}  // namespace tl::codegen
