// Lowering of memory ops (see lowerer.h): tile loads and stores as vector
// accesses of the widths the layout and axis analysis allow, with masks and
// cache hints through the target; atomics with their order and scope;
// device-side assert and print; shared-memory buffers, their slots,
// asynchronous copies into them and the waits for those.
#include "codegen/insert_barriers.h"
#include "codegen/lowerer.h"

namespace tl::codegen::lowering {

MemoryHints Lowerer::hints(const Op& op) {
  return {op.attr_str_or("cache", ""), op.attr_str_or("evict", ""), op.attr_int_or("volatile", 0) != 0};
}

void Lowerer::lower_load(const Op& op) {
  const ir::Type& rt = op.result()->type;
  llvm::Type* mt = memory_type(rt.dtype);
  if (!rt.is_tile()) {
    llvm::Value* mask = op.operands.size() > 1 ? get(op.operands[1])[0] : nullptr;
    llvm::Value* other = op.operands.size() > 2 ? to_memory(get(op.operands[2])[0]) : llvm::Constant::getNullValue(mt);
    vals_[op.result()] = {from_memory(t_.load(b_, mt, get(op.operands[0])[0], mask, other, hints(op)), rt.dtype)};
    return;
  }
  vals_[op.result()] = unpack_chunks(load_chunks(op, operand(op, 0), nullptr), rt.dtype);
}

// The elements of vector accesses (as loaded from memory), in order.
Regs Lowerer::unpack_chunks(const Regs& chunks, DType d) {
  Regs out;
  for (llvm::Value* c : chunks) {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(c->getType());
    for (unsigned k = 0; k < (vt ? vt->getNumElements() : 1); ++k)
      out.push_back(from_memory(vt ? b_.CreateExtractElement(c, uint64_t(k)) : c, d));
  }
  return out;
}

// A tile load's vector accesses from `ptrs` (one a vector_width of
// registers), `other` where the mask (and `live`, when given) is off.
Regs Lowerer::load_chunks(const Op& op, const Regs& ptrs, llvm::Value* live) {
  DType d = op.result()->type.dtype;
  llvm::Type* mt = memory_type(d);
  Regs mask = op.operands.size() > 1 ? operand(op, 1) : Regs{};
  Regs other = op.operands.size() > 2 ? operand(op, 2) : Regs{};
  int vec = vector_width(op, plan_.of(op.result()), d);
  llvm::Type* ty = vec == 1 ? mt : llvm::FixedVectorType::get(mt, vec);
  Regs chunks;
  for (size_t r = 0; r < ptrs.size(); r += vec) {
    llvm::Value* dflt = llvm::Constant::getNullValue(ty);
    if (!other.empty()) {
      dflt = vec == 1 ? to_memory(other[r]) : llvm::UndefValue::get(ty);
      for (int k = 0; k < vec && vec > 1; ++k) dflt = b_.CreateInsertElement(dflt, to_memory(other[r + k]), uint64_t(k));
    }
    llvm::Value* pred = mask.empty() ? live : live ? b_.CreateAnd(live, mask[r]) : mask[r];
    chunks.push_back(t_.load(b_, ty, ptrs[r], pred, dflt, hints(op)));
  }
  return chunks;
}

llvm::Value* Lowerer::from_memory(llvm::Value* v, DType d) {
  return d == DType::i1 ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
}

void Lowerer::lower_store(const Op& op) {
  const ir::Value* ptr = op.operands[0];
  DType d = op.operands[1]->type.dtype;
  if (!ptr->type.is_tile()) {
    // One thread (of the cluster's first CTA) stores a scalar.
    llvm::Value* pred = b_.CreateAnd(leader(), b_.CreateICmpEQ(block_, b_.getInt32(0)));
    if (op.operands.size() > 2) pred = b_.CreateAnd(pred, get(op.operands[2])[0]);
    t_.store(b_, to_memory(get(op.operands[1])[0]), get(ptr)[0], pred, hints(op));
    return;
  }
  // convert_layouts put the value, addresses and mask in one layout: the
  // addresses' own, or the value's where the addresses were cheap to
  // recompute there (a dot's accumulator, say, stored from where it is).
  const LinearLayout* lp = &plan_.of(ptr);
  Regs ptrs = get(ptr), val = operand(op, 1);
  Regs mask = op.operands.size() > 2 ? operand(op, 2) : Regs{};
  const LinearLayout& l = *lp;
  int vec = vector_width(op, l, d);
  llvm::Value* owner = owner_predicate(l);
  auto dup = duplicate_regs(l);
  for (size_t r = 0; r < ptrs.size(); r += vec) {
    if (dup[r]) continue;
    llvm::Value* v;
    if (vec == 1) {
      v = to_memory(val[r]);
    } else {
      v = llvm::UndefValue::get(llvm::FixedVectorType::get(memory_type(d), vec));
      for (int k = 0; k < vec; ++k) v = b_.CreateInsertElement(v, to_memory(val[r + k]), uint64_t(k));
    }
    llvm::Value* pred = owner;
    if (!mask.empty()) pred = b_.CreateAnd(pred, mask[r]);
    t_.store(b_, v, ptrs[r], pred, hints(op));
  }
}

// Runs `body` only where `pred` holds; returns the phi of its value and
// `otherwise` (body may return null for no value).
llvm::Value* Lowerer::guarded(llvm::Value* pred, const std::function<llvm::Value*()>& body, llvm::Value* otherwise) {
  // A predicate known while lowering (an owner test of a tile no thread
  // replicates, say) needs no branch.
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(pred)) return c->isOne() ? body() : otherwise;
  llvm::BasicBlock* from = b_.GetInsertBlock();
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "guarded", fn_);
  auto* join_bb = llvm::BasicBlock::Create(ctx_, "guarded.end", fn_);
  b_.CreateCondBr(pred, then_bb, join_bb);
  b_.SetInsertPoint(then_bb);
  llvm::Value* v = body();
  llvm::BasicBlock* then_end = b_.GetInsertBlock();
  b_.CreateBr(join_bb);
  b_.SetInsertPoint(join_bb);
  if (!v) return nullptr;
  auto* phi = b_.CreatePHI(v->getType(), 2);
  phi->addIncoming(v, then_end);
  phi->addIncoming(otherwise, from);
  return phi;
}

void Lowerer::lower_atomic(const Op& op) {
  const ir::Value* ptr = op.operands[0];
  bool cas = op.kind == OpKind::AtomicCas;
  DType d = op.result()->type.dtype;
  llvm::Type* ty = elem_type(d);
  bool tile = ptr->type.is_tile();
  Regs ptrs = get(ptr);
  std::vector<Regs> args;
  for (size_t i = 1; i < op.operands.size(); ++i) args.push_back(tile ? operand(op, int(i)) : get(op.operands[i]));
  const LinearLayout* l = tile ? &plan_.of(ptr) : nullptr;
  // Each CTA of a cluster must perform its own elements' atomics and see
  // their old values: replicated ones are not supported yet.
  if (plan_.num_ctas > 1 && (!tile || l->broadcast_mask(kBlock) || l->in_size(kBlock) < plan_.num_ctas))
    unsupported(op, std::string("(tl::") + (cas ? "atomic_cas" : "atomic_add and the other atomics") +
                        ") with num_ctas > 1 on a value every CTA of the cluster holds (a scalar or a replicated "
                        "tile) is not supported yet; use num_ctas = 1");
  llvm::Value* owner = tile ? owner_predicate(*l) : leader();
  std::vector<bool> dup = tile ? duplicate_regs(*l) : std::vector<bool>{false};
  MemOrder order = mem_order(op);
  MemScope scope = mem_scope(op);
  // A scalar's atomic is one thread's, acting for the program: its release
  // orders the program's earlier writes, all threads', once they have all
  // reached it (a partial result stored by every thread, then a flag).
  // insert-barriers counts this barrier (atomic_syncs_threads).
  if (atomic_syncs_threads(op)) sync_threads();
  // No GPU adds or orders f8 numbers atomically (a loop of compare-and-swap
  // would; none is emitted yet).
  if (!cas && is_f8(d) && op.attr_str("kind") != "xchg")
    unsupported(op, op.attr_str("kind") + " on " + std::string(dtype_name(d)) +
                        " is not supported on GPU targets (xchg and atomic_cas are; f16, bf16 and f32 add, max and "
                        "min are)");
  // A bool is a byte (0 or 1) in memory: its atomics are byte atomics, and
  // add (mod 2) is xor.
  llvm::Type* mem_ty = d == DType::i1 ? b_.getInt8Ty() : ty;
  auto to_mem = [&](llvm::Value* v) { return d == DType::i1 ? b_.CreateZExt(v, mem_ty) : v; };
  auto from_mem = [&](llvm::Value* v) { return d == DType::i1 ? b_.CreateTrunc(v, ty) : v; };
  Regs old(ptrs.size(), llvm::Constant::getNullValue(ty));
  for (size_t r = 0; r < ptrs.size(); ++r) {
    if (dup[r]) continue;
    llvm::Value* pred = owner;
    if (!cas && args.size() > 1) pred = b_.CreateAnd(pred, args[1][r]);
    old[r] = guarded(pred, [&]() -> llvm::Value* {
      if (cas) {
        llvm::Type* it = b_.getIntNTy(mem_ty->getPrimitiveSizeInBits());
        llvm::Value* cmp = b_.CreateBitCast(to_mem(args[0][r]), it);
        llvm::Value* val = b_.CreateBitCast(to_mem(args[1][r]), it);
        return from_mem(b_.CreateBitCast(t_.atomic_cas(b_, ptrs[r], cmp, val, order, scope), mem_ty));
      }
      auto kind = rmw_kind(op, d);
      if (d == DType::i1 && kind == llvm::AtomicRMWInst::Add) kind = llvm::AtomicRMWInst::Xor;
      return from_mem(t_.atomic_rmw(b_, kind, ptrs[r], to_mem(args[0][r]), order, scope));
    }, llvm::Constant::getNullValue(ty));
  }
  // Old values reach every thread that holds the element (duplicates and,
  // for a scalar, all threads) through shared memory.
  if (tile) {
    int64_t numel = ptr->type.numel();
    need_smem(numel * alloc_size(ty));
    scratch_fence();
    auto hw = hw_coords(*l);
    for (size_t r = 0; r < ptrs.size(); ++r)
      if (!dup[r]) guarded(owner, [&]() -> llvm::Value* {
          smem_store(old[r], flat_index(hw, reg_coords(*l, int(r)), ptr->type.shape), ty);
          return nullptr;
        }, nullptr);
    barrier();
    Regs out;
    for (size_t r = 0; r < ptrs.size(); ++r) out.push_back(smem_load(ty, flat_index(hw, reg_coords(*l, int(r)), ptr->type.shape)));
    vals_[op.result()] = out;
  } else {
    need_smem(alloc_size(ty));
    scratch_fence();
    guarded(owner, [&]() -> llvm::Value* { smem_store(old[0], b_.getInt32(0), ty); return nullptr; }, nullptr);
    barrier();
    vals_[op.result()] = {smem_load(ty, b_.getInt32(0))};
  }
}

// The verifier admits only these names; absent means Triton's default.
MemOrder Lowerer::mem_order(const Op& op) {
  std::string s = op.attr_str_or("sem", "acq_rel");
  if (s == "relaxed") return MemOrder::relaxed;
  if (s == "acquire") return MemOrder::acquire;
  if (s == "release") return MemOrder::release;
  if (s == "acq_rel") return MemOrder::acq_rel;
  unsupported(op, "has an unknown memory order '" + s + "'");
}
MemScope Lowerer::mem_scope(const Op& op) {
  std::string s = op.attr_str_or("scope", "gpu");
  if (s == "cta") return MemScope::cta;
  if (s == "gpu") return MemScope::gpu;
  if (s == "sys") return MemScope::sys;
  unsupported(op, "has an unknown memory scope '" + s + "'");
}

llvm::AtomicRMWInst::BinOp Lowerer::rmw_kind(const Op& op, DType d) {
  using B = llvm::AtomicRMWInst::BinOp;
  const std::string& k = op.attr_str("kind");
  bool f = is_float(d), s = !is_unsigned(d);
  if (k == "add") return f ? B::FAdd : B::Add;
  if (k == "max") return f ? B::FMax : s ? B::Max : B::UMax;
  if (k == "min") return f ? B::FMin : s ? B::Min : B::UMin;
  if (k == "xchg") return B::Xchg;
  if (k == "and") return B::And;
  if (k == "or") return B::Or;
  if (k == "xor") return B::Xor;
  unsupported(op, "has an unknown kind '" + k + "'");
}

void Lowerer::lower_assert(const Op& op) {
  Regs c = get(op.operands[0]);
  llvm::Value* all = b_.getTrue();
  for (auto* v : c) all = b_.CreateAnd(all, v);
  guarded(b_.CreateNot(all), [&]() -> llvm::Value* {
    t_.assert_fail(b_, op.attr_str_or("msg", "device_assert failed"), op.loc.file, op.loc.line);
    return nullptr;
  }, nullptr);
}

void Lowerer::lower_assume(const Op& op) {
  for (llvm::Value* c : get(op.operands[0])) b_.CreateAssumption(c);
}

void Lowerer::lower_print(const Op& op) {
  std::string prefix = op.attr_str_or("prefix", "");
  for (const ir::Value* v : op.operands) {
    Regs regs = get(v);
    for (size_t r = 0; r < regs.size(); ++r) {
      llvm::Value* x = regs[r];
      std::string fmt;
      if (is_float(v->type.dtype)) {
        // printf takes doubles; an f64 is one already (through f32 it would round).
        if (v->type.dtype != DType::f64) x = b_.CreateFPExt(to_f32(x, v->type.dtype), b_.getDoubleTy());
        fmt = "%f";
      } else if (v->type.is_ptr) {
        fmt = "%p";
      } else {
        x = b_.CreateIntCast(x, b_.getInt64Ty(), !is_unsigned(v->type.dtype) && v->type.dtype != DType::i1);
        fmt = "%lld";
      }
      std::vector<llvm::Value*> args = {t_.program_id(b_, 0), t_.program_id(b_, 1), t_.program_id(b_, 2), tid_,
                                        b_.getInt32(int32_t(r)), x};
      // A target that cannot print says why; the error names the op's line.
      try {
        t_.print(b_, "pid (%d, %d, %d) thread %d reg %d " + prefix + " " + fmt + "\n", args);
      } catch (const Error& e) {
        unsupported(op, std::string("cannot be lowered: ") + e.what());
      }
    }
  }
}

// ---- shared-memory buffers ------------------------------------------------

// A buffer. With an initial value (expand_conversions.h): the tile written
// row-major at the op's scratch. Without: a pipeline's buffer at its
// `offset` (expand_pipelines.h), in the swizzled layout the lowering
// addresses (swizzled_tile.h), one slot or a leading dimension of them.
void Lowerer::lower_local_alloc(const Op& op) {
  if (!op.operands.empty()) {
    const ir::Value* v = op.operands[0];
    store_row_major(get(v), plan_.of(v), v->type.shape, value_type(v->type));
    buffers_[op.result()] = {scratch_base_, &plan_.of(v)};
    return;
  }
  if (!op.has_attr("offset"))
    unsupported(op, "without an initial value expects attribute 'offset' (allocate-shared gives it), found none");
  const ir::Type& t = op.result()->type;
  const LinearLayout& l = plan_.of(op.result());
  bool slotted = size_t(t.rank()) > l.out_dims().size();
  std::vector<int64_t> shape(t.shape.begin() + int(slotted), t.shape.end());
  auto tile = swizzled_tile_of(l, shape, byte_size(t.dtype));
  if (!tile)
    unsupported(op, "expects a buffer in the swizzled layout of a pipeline's buffers (swizzled_tile.h), found " + t.str());
  int64_t at = op.attr_int("offset");
  smem_bytes_ = std::max(smem_bytes_, at + tile->bytes() * (slotted ? t.shape[0] : 1));
  SmemTile st(*tile);
  st.base = b_.CreateGEP(b_.getInt8Ty(), smem_, b_.getInt64(at));
  if (slotted) slotted_[op.result()] = st;
  else smem_vals_[op.result()] = st;
}

// Slot `i` of a buffer of slots: its tile, `i` tiles on.
void Lowerer::lower_local_slot(const Op& op) {
  auto it = slotted_.find(op.operands[0]);
  if (it == slotted_.end()) unsupported(op, "of a buffer no local_alloc with an 'offset' made is not lowered yet");
  SmemTile t = it->second;
  llvm::Value* slot = b_.CreateZExt(get(op.operands[1])[0], b_.getInt64Ty());
  t.base = b_.CreateGEP(b_.getInt8Ty(), t.base, b_.CreateMul(slot, b_.getInt64(t.bytes())));
  smem_vals_[op.result()] = t;
}

// A trans of a buffer: the same bytes seen transposed (a dot reads it).
void Lowerer::lower_buffer_trans(const Op& op) {
  auto it = smem_vals_.find(op.operands[0]);
  if (it == smem_vals_.end()) unsupported(op, "of a buffer no local_alloc or local_slot made is not lowered yet");
  SmemTile t = it->second;
  t.transposed = !t.transposed;
  smem_vals_[op.result()] = t;
}

// Where register r of a tile in layout `l` lives in its buffer `t`.
// In a cluster the buffer holds this CTA's part (buffer_slot_tile): the
// CTA's coordinate bits, the top ones, are masked off.
llvm::Value* Lowerer::buffer_ptr(const SmemTile& t, const LinearLayout& l, const std::vector<llvm::Value*>& hw, int r) {
  auto c = reg_coords(l, r);
  bool row = c.size() == 1;  // stored as one row
  auto at = [&](int d) {
    llvm::Value* x = coord(l, d, hw[d], c[d]);
    int64_t stored = t.shape[row ? 1 : d];
    return l.out_size(dim_name(d)) > stored ? b_.CreateAnd(x, b_.getInt32(int32_t(stored - 1))) : x;
  };
  if (row) return tile_ptr(t, b_.getInt32(0), at(0));
  return tile_ptr(t, at(0), at(1));
}

// Elements of a tile in layout `l` one access moves between registers and
// a swizzled buffer in layout `buffer`: as many as both run along the
// dimension the registers are stored along, 16 bytes at most.
int Lowerer::buffer_vector(const LinearLayout& l, const LinearLayout& buffer, DType d) {
  int dim = stored_contiguous_dim(l);
  return int(std::bit_floor(uint32_t(std::min<int64_t>(
      {l.contiguous_run(kReg, dim), buffer.contiguous_run(kOffset, dim), 16 / std::max(1, byte_size(d))}))));
}

// A buffer read back as a tile: a row-major one (local_alloc with an
// initial value) within the CTA that wrote it; a swizzled one (a
// pipeline's) by each thread's own elements, in vectors as long as its
// registers and the buffer's offsets run along one dimension (16 bytes at
// most).
void Lowerer::lower_local_load(const Op& op) {
  const ir::Value* v = op.result();
  const LinearLayout& l = plan_.of(v);
  if (auto it = smem_vals_.find(op.operands[0]); it != smem_vals_.end()) {
    const SmemTile& t = it->second;
    DType d = v->type.dtype;
    llvm::Type* mt = memory_type(d);
    int vec = buffer_vector(l, plan_.of(op.operands[0]), d);
    llvm::Type* ty = vec == 1 ? mt : llvm::FixedVectorType::get(mt, vec);
    auto hw = hw_coords(l);
    Regs chunks;
    for (int r = 0; r < num_regs(l); r += vec)
      chunks.push_back(b_.CreateAlignedLoad(ty, buffer_ptr(t, l, hw, r), llvm::Align(vec * byte_size(d))));
    vals_[v] = unpack_chunks(chunks, d);
    return;
  }
  auto it = buffers_.find(op.operands[0]);
  if (it == buffers_.end()) unsupported(op, "of a buffer no local_alloc made is not lowered yet");
  check_within_ctas(*it->second.from, l);
  PlacementScope scope(*this);
  scratch_base_ = it->second.at;
  vals_[v] = load_row_major(l, v->type.shape, value_type(v->type));
}

// A tile written into a buffer (a tensor store's, tma_descriptors.h): each
// thread its own elements, in vectors as long as its registers and the
// buffer's offsets run along one dimension (16 bytes at most), as
// local_load reads them; an element replicated over threads is written by
// its owner only (one in each CTA of a cluster: each its own buffer).
void Lowerer::lower_local_store(const Op& op) {
  auto it = smem_vals_.find(op.operands[0]);
  if (it == smem_vals_.end()) unsupported(op, "into a buffer no local_alloc or local_slot made is not lowered yet");
  const SmemTile& t = it->second;
  const ir::Value* v = op.operands[1];
  const LinearLayout& l = plan_.of(v);
  DType d = v->type.dtype;
  int vec = buffer_vector(l, plan_.of(op.operands[0]), d);
  const Regs& regs = get(v);
  auto hw = hw_coords(l);
  auto dup = duplicate_regs(l);
  guarded(owner_predicate(l, /*within_cta=*/true), [&]() -> llvm::Value* {
    for (int r = 0; r < num_regs(l); r += vec) {
      if (dup[r]) continue;
      llvm::Value* x = to_memory(regs[r]);
      if (vec > 1) {
        x = llvm::PoisonValue::get(llvm::FixedVectorType::get(memory_type(d), vec));
        for (int k = 0; k < vec; ++k) x = b_.CreateInsertElement(x, to_memory(regs[r + k]), uint64_t(k));
      }
      b_.CreateAlignedStore(x, buffer_ptr(t, l, hw, r), llvm::Align(vec * byte_size(d)));
    }
    return nullptr;
  }, nullptr);
}

// An asynchronous copy into a buffer: each thread copies its elements
// (masked-off ones are written with 0) in vectors of what axis analysis
// proved contiguous; lanes and warps that replicate the tile leave their
// copy to its owner (readers wait for the whole CTA's copies at a barrier
// anyway), and branch around it, since a copy whose predicate is off still
// writes zeros.
void Lowerer::lower_async_copy(const Op& op) {
  if (!t_.has_async_copy) unsupported(op, "needs asynchronous copies, which the target does not have");
  auto it = smem_vals_.find(op.operands[0]);
  if (it == smem_vals_.end()) unsupported(op, "into a buffer no local_alloc or local_slot made is not lowered yet");
  const SmemTile& t = it->second;
  const ir::Value* ptr = op.operands[1];
  const LinearLayout& l = plan_.of(ptr);
  Regs ptrs = get(ptr);
  Regs mask = op.operands.size() > 2 ? get(op.operands[2]) : Regs{};
  // As wide as the addresses are contiguous and the buffer's offsets run.
  int vec = std::min<int>(vector_width(op, l, ptr->type.dtype),
                          plan_.of(op.operands[0]).contiguous_run(kOffset, stored_contiguous_dim(l)));
  auto hw = hw_coords(l);
  auto dup = duplicate_regs(l);
  guarded(owner_predicate(l, /*within_cta=*/true), [&]() -> llvm::Value* {
    for (int r = 0; r < num_regs(l); r += vec)
      if (!dup[r])
        t_.async_copy(b_, buffer_ptr(t, l, hw, r), ptrs[r], vec * byte_size(ptr->type.dtype),
                      mask.empty() ? b_.getTrue() : mask[r]);
    return nullptr;
  }, nullptr);
  vals_[op.result()] = {};
}

// Commit groups, waits, and the fence before the asynchronous proxy reads.
void Lowerer::lower_async_sync(const Op& op) {
  if (!t_.has_async_copy) unsupported(op, "needs asynchronous copies, which the target does not have");
  if (op.kind == OpKind::AsyncCommit) t_.async_commit(b_);
  else if (op.kind == OpKind::AsyncWait) t_.async_wait(b_, int(op.attr_int("pending")));
  else t_.async_proxy_fence(b_);
  if (!op.results.empty()) vals_[op.result()] = {};
}

}  // namespace tl::codegen::lowering
