// Tensor descriptors as tensor copies (TMA) on targets that have them.
//
// lower-descriptors keeps a descriptor_load (ops.def) on such a target when
// tensor_copy_refusal finds nothing against it; then:
//  - assign-layouts anchors its result like a load's;
//  - schedule-loops / expand-pipelines pipeline it in a loop like a load
//    whose copies are tensor copies (a ring of full mbarriers beside the
//    buffers, expand_pipelines.h);
//  - the GPU pass "tma-descriptors" (this file) turns each one left (not
//    pipelined: outside a loop, a loop of one stage) into one copy:
//
//      %bar = local_alloc : smem<1xi64>
//      %buf = local_alloc : smem<BMxBKxbf16, #swizzled>
//      mbarrier_init %bar {count = 1}
//      mbarrier_expect_tx %bar {bytes}
//      tma_load %map, %buf, %bar, %c0, %c1
//      mbarrier_wait %bar, 0
//      mbarrier_inval %bar           its bytes are scratch again
//      ...
//      %v = local_load %buf          where the load was, in the result's layout
//      fence_async_shared            the read before any later copy there
//
// where %map is a tensor_map at the function's entry (one per tensor and
// box). Loads of one region with nothing between them but pure ops and
// other loads, whose coordinates are known at the first, are one group:
// every copy issued at the first load on one mbarrier expecting all their
// bytes, one wait (attention's Q and first K block, or a one-stage K
// loop's A and B blocks, take one round trip to memory instead of two).
// A kept descriptor_store (lower-descriptors runs it only where its
// coordinates are all non-negative, the masked store elsewhere) becomes
//
//      %buf = local_alloc : smem<BMxBNxbf16, #swizzled>
//      local_store %buf, %value    each thread its registers
//      fence_async_shared          the writes, for the copy to read
//      tma_store %map, %buf, %c0, %c1 {wait = "read"}
//
// (insert-barriers puts the barrier before the copy, and one before the
// next writes into its bytes; `wait = "read"`: the issuing thread waits
// only for the buffer to be read, where nothing in the kernel reads the
// tensor back through its base; defer-store-waits moves that wait to the
// next tile's store in a persistent program).
//
// On a cluster (num_ctas > 1) each CTA copies its part of a block split
// over the CTAs (the box is the part, the coordinates the part's origin,
// lower_tma.cpp) and the whole of a block every CTA holds (a dot's B),
// which warp-specialize may multicast; a stored tile must be split.
//
// What a descriptor_load needs to become a copy, measured on the
// H200 (docs/hopper-plan.md): a block of 2- or 4-byte elements, of rank 2
// or of a higher rank whose sizes are 1 but in the last two (a 2-D box of
// a higher-rank tensor: a head's keys of [B * H, N, D]), read by dots
// (directly, through a trans, or through a reshape dropping the leading
// 1s); its base a kernel argument
// proven 16-byte aligned; sizes and strides kernel arguments, constants or
// products of them (the launcher encodes the map from them, a product as
// the kernel's i32 multiplication: Triton's attention's Z * H * N_CTX),
// the last stride 1 and the other proven a multiple of 16 bytes; the innermost coordinate proven a
// multiple of 16 bytes (another traps); the block stored as a box a map
// can describe (TensorBox). A store needs the same
// and the tensor's innermost size proven a multiple of 16 bytes (a copy
// writes whole 16-byte pieces of a row). Any other stays the masked load
// or store it means.
//
// LLVM-free.
#pragma once

#include <optional>
#include <string>

#include "codegen/assign_layouts.h"
#include "codegen/swizzled_tile.h"
#include "ir/ir.h"
#include "runtime/tensor_map_param.h"
#include "transforms/axis_analysis.h"

namespace tl::codegen {

// Why the descriptor_load or descriptor_store `op` (Tile IR) cannot be a
// tensor copy; empty when it can (on a target with tensor copies).
std::string tensor_copy_refusal(const ir::Function& fn, const ir::Op& op, const transforms::AxisAnalysis& axis);

// How the launcher computes the size or stride `v` of a tensor map: an
// argument, a constant, or a product of such (at most 8 arguments);
// nullopt for anything else the kernel computes.
std::optional<runtime::TensorMapParam::Operand> map_operand(const ir::Function& fn, const ir::Value* v);

// Each kept descriptor_load of rank > 2 as its squeezed form (ops.def: the
// result the block's last two dimensions) and a reshape back, which
// simplify folds into the kernel's reshape to rank 2: the passes after see
// a 2-D tile, the copy keeps the descriptor's coordinates. Whether any.
bool squeeze_tensor_copies(ir::Function& fn);

// The box that copies a kept descriptor_load into its buffer (or a kept
// store's buffer out), whose layout
// `buffer` must be the swizzled tile the block's box stores (else an
// internal error naming the op).
TensorBox descriptor_box(const ir::Op& op, const ir::Function& fn, const ir::Type& buffer);

// The tensor map of the descriptor of `op` moved in `box`, at the
// function's entry: an equal one already there, or a new one.
ir::Value* entry_tensor_map(ir::Function& fn, const ir::Op& op, const TensorBox& box);

// The mbarrier type: one (slots = 0) or a ring of `slots`.
ir::Type mbarrier_type(ir::Function& fn, int slots);

// The GPU pass: each descriptor_load left as one tensor copy.
void tma_descriptors(ir::Function& fn, const LayoutPlan& plan);

}  // namespace tl::codegen
