// Lowering of the Hopper synchronization and copy ops (ops.def): mbarriers,
// tensor copies through tensor maps (TMA), named barriers.
//
// Who runs what: an op of the program (mbarrier_init, mbarrier_expect_tx,
// tma_load, tma_store, tma_store_wait) is one thread's, thread 0's (in a partition of a
// warp_specialize, the partition's first thread's); mbarrier_arrive is
// every thread's own arrival ({per_warp = 1}: each warp's first lane's;
// {cluster = 1}: one on the barrier at that address in each CTA of the
// cluster);
// mbarrier_wait and named_barrier are every thread's. insert-barriers
// (insert_barriers.cpp) puts the block barriers between an mbarrier's
// initialization and its uses, and between a
// buffer's readers and the tensor copy that refills it; a tensor copy's
// bytes are visible to the threads that waited on its mbarrier.
#include "codegen/lowerer.h"
#include "codegen/tma_descriptors.h"

namespace tl::codegen::lowering {

namespace {

void need_tma(const Target& t, const Op& op) {
  if (!t.has_tma)
    unsupported(op, "needs tensor copies (TMA) and transaction mbarriers, which " + t.name +
                        " does not have (sm_90 or later)");
}

}  // namespace

// The shared address (i32) of the buffer or mbarrier operand i.
llvm::Value* Lowerer::shared_address(const Op& op, int i) {
  auto it = smem_vals_.find(op.operands[size_t(i)]);
  if (it == smem_vals_.end())
    unsupported(op, "of a buffer no local_alloc or local_slot made is not lowered yet (operand #" +
                        std::to_string(i) + ")");
  return b_.CreatePtrToInt(it->second.base, b_.getInt32Ty());
}

// Spins until the phase of parity `parity` (i32) of the mbarrier at `bar`
// has completed.
void Lowerer::wait_mbarrier(llvm::Value* bar, llvm::Value* parity) {
  auto* wait_bb = llvm::BasicBlock::Create(ctx_, "mbarrier.wait", fn_);
  auto* done_bb = llvm::BasicBlock::Create(ctx_, "mbarrier.done", fn_);
  b_.CreateBr(wait_bb);
  b_.SetInsertPoint(wait_bb);
  b_.CreateCondBr(t_.barrier_done(b_, bar, parity), done_bb, wait_bb);
  b_.SetInsertPoint(done_bb);
}

void Lowerer::lower_mbarrier(const Op& op) {
  need_tma(t_, op);
  llvm::Value* bar = shared_address(op, 0);
  llvm::Value* first = leader();
  switch (op.kind) {
    case OpKind::MbarrierInit:
      guarded(first, [&]() -> llvm::Value* {
        t_.mbarrier_init(b_, bar, int(op.attr_int("count")));
        t_.fence_barrier_init(b_);
        return nullptr;
      }, nullptr);
      return;
    case OpKind::MbarrierInval:
      guarded(first, [&]() -> llvm::Value* {
        t_.mbarrier_inval(b_, bar);
        return nullptr;
      }, nullptr);
      return;
    case OpKind::MbarrierExpectTx:
      guarded(first, [&]() -> llvm::Value* {
        t_.expect_bytes(b_, bar, b_.getInt32(int32_t(op.attr_int("bytes"))));
        return nullptr;
      }, nullptr);
      return;
    case OpKind::MbarrierArrive:
      if (op.attr_int_or("cluster", 0)) {  // the barrier at this address in every CTA of the cluster
        if (op.attr_int_or("count", 1) != 1) unsupported(op, "with cluster = 1 expects count = 1");
        llvm::Value* only = op.attr_int_or("per_warp", 0) ? b_.CreateICmpEQ(lane_, b_.getInt32(0)) : nullptr;
        for (int r = 0; r < plan_.num_ctas; ++r) t_.mbarrier_arrive_remote(b_, bar, b_.getInt32(r), only);
        return;
      }
      if (op.attr_int_or("per_warp", 0)) {  // a warp's arrival, its first lane's (predicated, no branch)
        t_.mbarrier_arrive(b_, bar, int(op.attr_int_or("count", 1)), b_.CreateICmpEQ(lane_, b_.getInt32(0)));
        return;
      }
      t_.mbarrier_arrive(b_, bar, int(op.attr_int_or("count", 1)));
      return;
    default: wait_mbarrier(bar, get(op.operands[1])[0]); return;
  }
}

// A tensor copy of a whole buffer (one slot): a box a panel of its
// swizzled tile, the panels `inner` elements apart along the contiguous
// dimension, issued by thread 0. The map must describe the tensor with
// that box and swizzle (tensor_box_of); the buffer starts on the swizzle's
// atom, as the copy swizzles by address.
void Lowerer::lower_tma_copy(const Op& op) {
  need_tma(t_, op);
  bool load = op.kind == OpKind::TmaLoad;
  const ir::Value* buf = op.operands[1];
  auto it = smem_vals_.find(buf);
  if (it == smem_vals_.end()) unsupported(op, "of a buffer no local_alloc or local_slot made is not lowered yet");
  const SmemTile& t = it->second;
  TensorBox box = tensor_box_of(t);
  if (!box.why.empty()) unsupported(op, "expects a buffer a tensor copy can fill, found " + box.why);
  if (t.transposed) unsupported(op, "of a transposed view of a buffer is not lowered yet");
  // The atom a swizzle repeats over: 8 rows of its width.
  int64_t atom = std::max(128, 8 * box.swizzle_bytes);
  const Op* slot = nullptr;
  const ir::Value* whole = buffer_of(buf, &slot);
  int64_t at = whole->def ? whole->def->attr_int_or("offset", 0) : 0;
  if (at % atom || (slot && t.bytes() % atom))
    unsupported(op, "expects its buffer (and each slot) at a multiple of " + std::to_string(atom) +
                        " bytes of shared memory (its swizzle's atom), found offset " + std::to_string(at) +
                        (slot ? " and slots of " + std::to_string(t.bytes()) + " bytes" : ""));
  if (smem_->getAlign().valueOrOne().value() < uint64_t(atom)) smem_->setAlignment(llvm::Align(uint64_t(atom)));
  llvm::Value* map = get(op.operands[0])[0];
  map = b_.CreatePtrToInt(b_.CreateAddrSpaceCast(map, b_.getPtrTy(0)), b_.getInt64Ty());
  llvm::Value* smem = shared_address(op, 1);
  llvm::Value* bar = load ? shared_address(op, 2) : nullptr;
  size_t first_coord = load ? 3 : 2;
  std::vector<llvm::Value*> coords;
  for (size_t i = first_coord; i < op.operands.size(); ++i) coords.push_back(get(op.operands[i])[0]);
  // On a cluster the buffer holds this CTA's part of the block (its
  // layout's CTA bits, the top ones of their dimensions): the box starts
  // at the part's origin.
  const int64_t multicast = load ? op.attr_int_or("multicast", 0) : 0;
  if (plan_.num_ctas > 1) {
    const LinearLayout& l = plan_.of(buf);
    if (l.in_bits(kBlock) > 0) {
      if (multicast) unsupported(op, "with multicast expects a block every CTA holds, found one split over the cluster");
      auto origin = hw_coords_of(l, kBlock);
      for (size_t d = 0; d < origin.size(); ++d) {
        size_t at = coords.size() - origin.size() + d;
        coords[at] = b_.CreateAdd(coords[at], origin[d]);
      }
    }
  }
  // Innermost first: the contiguous dimension, the rows, then any leading
  // dimensions (of size 1 in the box) outermost last.
  if (t.contiguous == 1) std::reverse(coords.begin(), coords.end());
  else if (coords.size() > 2)
    unsupported(op, "of a column-major buffer with " + std::to_string(coords.size()) +
                        " coordinates is not lowered yet (rank 2 only)");
  // Multicast over the cluster's `multicast` CTAs: each issues every
  // multicast-th panel into all of them (warp_specialize.h).
  if (multicast && (multicast != plan_.num_ctas || box.panels % multicast))
    unsupported(op, "with multicast = " + std::to_string(multicast) + " expects the cluster's " +
                        std::to_string(plan_.num_ctas) + " CTAs and a multiple of them of panels, found " +
                        std::to_string(box.panels) + " panels");
  llvm::Value* mask = multicast ? b_.getInt16(uint16_t((1u << multicast) - 1)) : nullptr;
  guarded(leader(), [&]() -> llvm::Value* {
    for (int p = 0; p < box.panels; ++p) {
      std::vector<llvm::Value*> at = coords;
      at[0] = b_.CreateAdd(at[0], b_.getInt32(int32_t(p * box.inner)));
      llvm::Value* s = b_.CreateAdd(smem, b_.getInt32(int32_t(p * box.panel_bytes())));
      if (!load) t_.tma_store(b_, map, s, at);
      else if (!multicast) t_.tma_load(b_, map, s, bar, at);
      else
        guarded(b_.CreateICmpEQ(block_, b_.getInt32(int32_t(p % multicast))), [&]() -> llvm::Value* {
          t_.tma_load(b_, map, s, bar, at, mask);
          return nullptr;
        }, nullptr);
    }
    if (!load) {
      t_.tma_store_commit(b_);
      const std::string wait = op.attr_str_or("wait", "");
      if (wait != "none") t_.tma_store_wait(b_, wait == "read");
    }
    return nullptr;
  }, nullptr);
}

// The issuing thread (the tensor stores' own: thread 0 of the partition)
// waits until its stores have read their buffers (defer_store_waits.h).
void Lowerer::lower_tma_store_wait(const Op& op) {
  need_tma(t_, op);
  guarded(leader(), [&]() -> llvm::Value* {
    t_.tma_store_wait(b_, true);
    return nullptr;
  }, nullptr);
}

// The kernel's tensor maps (tensor_map ops, in program order), checked and
// described for the launcher: one parameter each after the function's
// arguments, a pointer the target passes by value (tensor_map_param).
void Lowerer::collect_tensor_maps(const ir::Function& fn, std::vector<llvm::Type*>& params) {
  auto arg_index = [&](const ir::Value* v) {
    for (size_t i = 0; i < fn.body.args.size(); ++i)
      if (fn.body.args[i].get() == v) return int(i);
    return -1;
  };
  ir::walk(const_cast<ir::Region&>(fn.body), [&](Op* op) {
    if (op->kind != OpKind::TensorMap) return;
    need_tma(t_, *op);
    TensorMapParam m;
    m.dtype = op->operands[0]->type.dtype;
    m.base_arg = arg_index(op->operands[0]);
    if (m.base_arg < 0) unsupported(*op, "expects its base to be a kernel argument (the launcher encodes the map), found a pointer the kernel computes");
    m.box = op->attr_ints("box");
    m.swizzle_bytes = int(op->attr_int("swizzle"));
    size_t r = m.box.size();
    for (size_t i = 1; i < op->operands.size(); ++i) {
      auto o = map_operand(fn, op->operands[i]);
      if (!o)
        unsupported(*op, "expects each size and stride to be a kernel argument, a constant or a product of them (the "
                         "launcher encodes the map), found operand #" + std::to_string(i) + " computed otherwise");
      (i <= r ? m.sizes : m.strides).push_back(*o);
    }
    tensor_map_ops_.push_back(op);
    tensor_maps_.push_back(m);
    params.push_back(b_.getPtrTy(0));
  });
}

// Its value is its parameter's address (run() bound it).
void Lowerer::lower_tensor_map(const Op& op) {}

// A named barrier; with {pingpong}, one of the barriers that order the
// `groups` (2 unless given) warpgroups of a partition in turns
// (warp_specialize.h): warpgroup g waits on barrier id + g for its turn
// ("wait"), hands it to the next one, g + 1 round the warpgroups, by
// arriving on that one's ("pass"); before the loop the last warpgroup
// hands the first its first turn ("start"), after it the first takes the
// turn handed to it last ("finish"), so that every arrival is waited for.
void Lowerer::lower_named_barrier(const Op& op) {
  int id = int(op.attr_int("id")), threads = int(op.attr_int("threads"));
  std::string turn = op.attr_str_or("pingpong", "");
  if (turn.empty()) {
    if (!t_.named_barrier(b_, b_.getInt32(id), threads))
      unsupported(op, "needs named barriers, which " + t_.name + " does not have");
    return;
  }
  const int groups = int(op.attr_int_or("groups", 2));
  llvm::Value* group = b_.CreateLShr(warp_, 2);  // the warpgroup within the partition: 0 .. groups - 1
  bool ok = true;
  if (turn == "wait" || turn == "pass") {
    llvm::Value* own = b_.CreateAdd(b_.getInt32(id), group);
    // The next warpgroup's barrier: id + (g + 1) mod groups. Two take
    // id + 1 - g, the form timed since run 80 (their PTX is unchanged by
    // the ring); the select is the same value for any count.
    llvm::Value* next =
        groups == 2 ? b_.CreateSub(b_.getInt32(id + 1), group)
                    : b_.CreateSelect(b_.CreateICmpEQ(group, b_.getInt32(groups - 1)), b_.getInt32(id),
                                      b_.CreateAdd(own, b_.getInt32(1)));
    ok = t_.named_barrier(b_, turn == "wait" ? own : next, threads, turn == "pass");
  } else {
    auto* then = llvm::BasicBlock::Create(ctx_, "pingpong." + turn, fn_);
    auto* after = llvm::BasicBlock::Create(ctx_, "pingpong." + turn + ".after", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(group, b_.getInt32(turn == "start" ? groups - 1 : 0)), then, after);
    b_.SetInsertPoint(then);
    ok = t_.named_barrier(b_, b_.getInt32(id), threads, turn == "start");
    b_.CreateBr(after);
    b_.SetInsertPoint(after);
  }
  if (!ok) unsupported(op, "needs named barriers, which " + t_.name + " does not have");
}

}  // namespace tl::codegen::lowering
