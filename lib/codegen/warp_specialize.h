// Warp specialization, the GPU pass "warp-specialize" (pipeline.h), after
// async-dots: a loop whose tensor copies feed an asynchronous warpgroup dot
// through a ring of full mbarriers (expand-pipelines, async-dots) is split
// into a producer and consumers that run at the same time on warps of
// their own, joined by a second ring of empty mbarriers:
//
//   %empty = local_alloc : smem<Sx1xi64>        beside the full ring, one
//   mbarrier_init %empty[s] {count = W}         arrival per consumer warp
//   barrier
//   warp_specialize {warps = [W, 1], registers = [232, 40]} {
//     for %k ... (%acc, %slot, %phase) {         the default partition: the
//       mbarrier_wait %full[%slot], %phase      consumers, the kernel's own
//       %y = dot %A[%slot], %B[%slot], %acc {async = 1}     W warps
//       %w = dot_wait %y {pending = 1}          the previous step's dot is done:
//       if %k != %lo { mbarrier_arrive %empty[%slot - 1] {per_warp = 1} }
//       yield %w, ...
//     }
//     dot_wait ... {pending = 0}; the mbarriers end; the epilogue (all that
//     followed the loop)
//   } {
//     for %k ... (%slot, %phase) {               the producer: one warp
//       mbarrier_wait %empty[%slot], %phase ^ 1 (its warpgroup's others
//       mbarrier_expect_tx %full[%slot]          idle) whose leader issues
//       tma_load ..., %full[%slot], coords(%k)   iteration k's copies into
//       yield ...                                the slot once its last
//     }                                          reader has let it go
//   }
//
// The consumers lose the prologue's copies and the refill (and the block
// barrier before it); the producer runs ahead of them by the ring's depth,
// and the first round of its waits passes at once (a fresh mbarrier's
// phase 1 counts as complete). Every copy it issues is for a live
// iteration, which the consumers wait for: its accesses to the ring are
// all done before the consumers' last wait, which is what allocate-shared
// and insert-barriers rely on (the epilogue may reuse the ring's bytes).
// The producer's warpgroup's registers go down and the consumers' up
// (setmaxnreg). Only one warp of it runs: one that lagged behind the warp
// issuing the copies could still be waiting on an mbarrier the consumers
// have ended (and whose bytes the epilogue reuses).
//
// A loop whose dots all retire by a `dot_wait {pending = 0}` in the body
// (attention's two products, async_dots.h) lets each step's own slot go
// right after that wait instead of the previous step's (and nothing is
// left to let go after the loop). Where the slot's buffers are read by
// dots that retire at different waits (attention's K by S, retired by the
// `{pending = 1}` before the softmax; V by P V, retired by the last), each
// group of buffers is let go after its own wait, on its own empty
// mbarriers (one ring holds every group's: group g's slot i at
// g * stages + i), and the producer copies the groups in that order, each
// once its buffers are free: the next K block lands while P V still reads
// V (FlashAttention-3's separate K and V releases). With two consumer
// warpgroups the last such wait is then pinned where it stands
// (`{pinned = 1}`: the target keeps its assembler from issuing it at the
// top of the softmax, where the first registers P V reads are written),
// so that P V runs beside the softmax (docs/perf.md run 94: pinned with
// one release for the whole slot, d 128 lost 5 %; with K let go apart it
// gained 0-2 %; four warpgroups taking turns, d 64, lost 5 % either way).
//
// Ping-pong: where the consumers are two warpgroups and their step issues
// two or more products and then works while one is still in flight (a
// `dot_wait {pending > 0}` after them: attention's softmax of the next S
// with P V running, overlap_dots.h), the warpgroups take turns issuing
// their products, so that one's softmax runs under the other's products
// instead of both softmaxes at once with the tensor cores idle
// (FlashAttention-3's inter-warpgroup overlap). A pair of named barriers
// after the partitions' own (3 and 4) carries the turn:
//
//   named_barrier {id = 3, pingpong = "start"}    warpgroup 1 gives 0 its first turn
//   for ... {
//     named_barrier {id = 3, pingpong = "wait"}   wait on barrier 3 + g for the turn
//     ...the products...
//     named_barrier {id = 3, pingpong = "pass"}   arrive on the other's barrier
//     ...
//   }
//   named_barrier {id = 3, pingpong = "finish"}   warpgroup 0 takes the last turn
//                                               (every arrival is waited for)
//
// In a persistent program the turns start and finish around the loop in
// each tile, and a barrier of the consumers follows the finish, so that
// the second warpgroup cannot reach the next tile's start (an arrival on
// the first's barrier) before the first has taken its last turn.
//
// Code before the loop that the producer's warps must not run (a block
// copied once, a store, a dot: attention's Q and its first product) starts
// the consumers' partition: the ring's set-up after it moves before it,
// and the producer computes for itself the pure values its copies and its
// loop's bounds read from after it (a loop bound that needs a load there
// is refused with the reason).
//
// A persistent program: where the loop is in the body of a top-level loop
// (over tiles), that loop is specialized as a whole. The ring's buffers and
// full mbarriers are made and initialized once before it (not a tile);
// both partitions run it, the producer's copy computing only what its
// copies read; the ring's slot and phase are carried from tile to tile, and
// the consumers let a tile's last slot go after its `dot_wait {pending =
// 0}`, so the producer fills the next tile's first slots during the
// epilogue. The ring then lives through the whole loop (the epilogue has
// bytes of its own).
//
// Which loops: the first loop of the function's top level, or directly in
// the body of one, that expand-pipelines gave a ring of full mbarriers and
// async-dots asynchronous dots (waited for as above), with nothing else
// reading the ring's buffers and no cp.async copies, whose refill depends
// only on the iteration and the slot (and, around a persistent loop, on
// pure values of the outer iteration), in a function of whole warpgroups
// (a persistent program's code before its top-level loop with no effects
// other threads could see twice).
//
// On a cluster (num_ctas > 1; only a persistent program's loop) a copy of
// a block every CTA holds (a dot's B, dot_layout.h) is multicast: each
// CTA's producer issues its share of the box's panels into every CTA
// (`tma_load {multicast = N}`), so a CTA's full mbarrier counts its peers'
// bytes too and a slot may be refilled only once every CTA's consumers let
// it go: the empty ring counts the consumer warps of the whole cluster and
// each arrives on it in every CTA (`mbarrier_arrive {cluster = 1}`). The
// rings' initialization is followed by a barrier of the cluster
// (`barrier {cluster = 1}`); they are not ended, and the kernel ends with
// a barrier of the cluster (lower_control.cpp), since a peer may arrive on
// them until its last step. The kernel option
// `warp_specialize` forbids it (0) or demands it (1: a kernel with no loop
// that can be specialized is then an error naming why); by default (-1)
// such a loop is specialized. A loop's own option (tl::range's, the
// attribute `warp_specialize` of its `for`) overrides the kernel's; a loop
// that demands it and cannot have it is an error naming the loop.
//
// LLVM-free.
#pragma once

#include <string>

#include "codegen/assign_layouts.h"

namespace tl::codegen {

struct TargetInfo;

// The registers a thread of the producer keeps: setmaxnreg's floor (24)
// for one loop's copies (a slot, a phase and the copies' coordinates);
// more for a persistent program's, which also walks the tiles (their
// order's division and remainders).
inline constexpr int kProducerRegisters = 24;
inline constexpr int kPersistentProducerRegisters = 40;

// `mode`: -1 decide, 0 never, 1 always (an error where it cannot).
void warp_specialize(ir::Function& fn, const LayoutPlan& plan, const TargetInfo& target, int mode);

// The registers a thread of `consumer_warps` warps may take beside a
// producer warpgroup at `producer_registers`, within a block's registers
// (a multiple of 8, at most 248: a thread has at most 255; with 4
// consumer warps that is the entry cap, and they keep it).
int consumer_registers(int consumer_warps, int producer_registers, int block_registers);
// The threads of a block of `consumer_warps` warps and a producer
// warpgroup.
int warp_specialized_threads(int consumer_warps);
// A thread's registers at entry in a block of `consumer_warps` warps and
// a producer warpgroup: its share with `programs_per_sm` blocks a
// multiprocessor, a multiple of 8. The block holds these times its
// threads; setmaxnreg moves registers within them (a warpgroup raising
// past them would wait for ever).
int warp_specialized_entry_registers(const TargetInfo& t, int consumer_warps, int programs_per_sm);

}  // namespace tl::codegen
