// A persistent program's tensor stores waited for a tile later, the GPU
// pass "defer-store-waits" (pipeline.h), after prefetch-tile-copies.
//
// tma-descriptors makes a tile's output store as
//
//   %buf = local_alloc; local_store %buf, %value; fence_async_shared
//   tma_store %map, %buf, ... {wait = "read"}
//
// (lower-descriptors puts it in the `then` of an `if` its coordinates are
// non-negative), whose issuing thread waits, right there, until the copy
// has read the buffer: in a persistent program's tile loop (shared_sizes.h
// tile_loops) its warp, and with it the warpgroup's next products, stall
// for the copy's read of the whole tile (64 KiB for a 128 x 256 bf16 gemm
// tile) every tile. The wait moves to where the next tile stores:
//
//   for ... {
//     ...the tile's work (its products run while the last store reads)
//     tma_store_wait                        the last tile's store has read its buffer
//     if %ok {
//       %buf = local_alloc; local_store %buf, %value; fence_async_shared
//       tma_store %map, %buf, ... {wait = "none"}
//     } else { ...the masked store }
//   }
//   tma_store_wait                          before the program ends
//
// allocate-shared keeps the buffer's bytes from the store to the next
// tma_store_wait, round the loop (what the body allocates before the wait
// no longer shares them), and insert-barriers puts the barrier before the
// next writes after the wait. Only where the store, directly in the body
// or in a branch of an `if` there (or of `if`s nested in one: a stream-K
// tile stored by whichever program adds it up), is its buffer's one
// reader and one local_store its one writer, and the kernel still fits
// the shared memory (otherwise it keeps its wait). A store whose kernel
// reads the tensor back (no `wait`: it waits for the global writes too)
// keeps its wait.
//
// LLVM-free.
#pragma once

#include <cstdint>

#include "codegen/assign_layouts.h"
#include "ir/ir.h"

namespace tl::codegen {

void defer_store_waits(ir::Function& fn, const LayoutPlan& plan, int64_t available_shared_bytes);

}  // namespace tl::codegen
