// Lowering of loops and conditionals (see lowerer.h): carried values become
// phis; loops are software-pipelined as pipeline_plan.h decides
// (asynchronous copies into shared-memory buffers, or at depth 2 loads into
// registers the loop carries; address ops run ahead, predicated tail).
#include "codegen/lowerer.h"

namespace tl::codegen::lowering {

// Pipelined loops (pipeline_plan.h says which and what runs ahead): the
// prologue issues the copies of the first `stages - 1` iterations; each
// iteration waits for its own, reads them from shared memory, and issues
// those of iteration i + stages - 1: into the slot iteration i - 1 read
// when dots read the buffers (after this iteration's multiplies), else
// into its own slot right after its last pipelined load has been read.
// A register prefetch is the same without buffers: the loads' results
// travel with the lead carried values, and nothing waits or synchronizes.

// A pipelined load's buffer in slot `slot`: rank-1 tiles are one row.
SmemTile Lowerer::buffer_tile(const ir::Value* v, llvm::Value* base, llvm::Value* slot) {
  const auto sh = cta_shape(plan_.of(v), v->type.shape);  // this CTA's part
  int bytes = byte_size(v->type.dtype);
  SmemTile t = sh.size() == 1 ? SmemTile::plan(1, sh[0], 1, bytes)
                              : SmemTile::plan(sh[0], sh[1], contiguous_dim(plan_.of(v)), bytes);
  t.base = slot ? b_.CreateGEP(b_.getInt8Ty(), base,
                               b_.CreateMul(b_.CreateZExt(slot, b_.getInt64Ty()), b_.getInt64(t.bytes())))
                : base;
  return t;
}

// Where register r of a tile in layout `l` lives in its buffer `t`.
// In a cluster the buffer holds this CTA's part (buffer_tile): the CTA's
// coordinate bits, the top ones, are masked off.
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

// A load pipelined into registers: each thread reads back the elements
// it copied (or, for replicated layouts, a peer copied), then applies
// `other` where the mask is off (the copies zero-filled those, so an
// `other` of all zero bits needs nothing).
void Lowerer::read_buffer(const Op& op, const BufferRead& at) {
  if (at.wait >= 0) t_.async_wait(b_, at.wait);
  const SmemTile& t = at.tile;
  const ir::Type& rt = op.result()->type;
  const LinearLayout& l = plan_.of(op.result());
  llvm::Type* mt = memory_type(rt.dtype);
  Regs mask = op.operands.size() > 1 ? operand(op, 1) : Regs{};
  Regs other = op.operands.size() > 2 ? operand(op, 2) : Regs{};
  int vec = vector_width(op, l, rt.dtype);
  llvm::Type* ty = vec == 1 ? mt : llvm::FixedVectorType::get(mt, vec);
  auto hw = hw_coords(l);
  Regs chunks;
  for (int r = 0; r < num_regs(l); r += vec)
    chunks.push_back(b_.CreateAlignedLoad(ty, buffer_ptr(t, l, hw, r), llvm::Align(vec * byte_size(rt.dtype))));
  Regs out = unpack_chunks(chunks, rt.dtype);
  for (size_t r = 0; r < out.size() && !other.empty(); ++r) {
    auto* zero = llvm::dyn_cast<llvm::Constant>(other[r]);
    if (!(zero && zero->isNullValue())) out[r] = b_.CreateSelect(mask[r], out[r], other[r]);  // else zero-filled
  }
  vals_[op.result()] = out;
}

// Lowers the lead ops for iteration `iv_lead` with the lead carried
// values, issues the loads' copies into `slot`, commits them as one group
// and returns the lead carried values of the next iteration (then, for a
// register prefetch, the loaded chunks of each load). The body's own
// values of those ops are left as they were. Invariant loads are copied
// only with the first stage (`first`), into their one buffer, and commit
// as a group of their own when the plan says so (invariant_group).
std::vector<Regs> Lowerer::issue_stage(const Op& loop, const PipelinePlan& p, const std::vector<llvm::Value*>& bases,
                                       const std::vector<Regs>& lead, llvm::Value* iv_lead, llvm::Value* slot,
                                       bool first) {
  const ir::Region& body = *loop.regions[0];
  std::vector<Regs> prefetched;  // per load, its chunks (register prefetch)
  std::vector<std::pair<const ir::Value*, std::optional<Regs>>> saved;
  auto save = [&](const ir::Value* v) {
    auto it = vals_.find(v);
    saved.push_back({v, it == vals_.end() ? std::nullopt : std::optional<Regs>(it->second)});
  };
  for (const auto& a : body.args) save(a.get());
  for (const Op* o : p.lead_ops)
    for (const auto& r : o->results) save(r.get());
  vals_[body.args[0].get()] = {iv_lead};
  for (size_t j = 0; j < p.lead_args.size(); ++j) vals_[body.args[p.lead_args[j] + 1].get()] = lead[j];
  for (const Op* o : p.lead_ops) lower_op(*o);
  llvm::Value* live = in_range(loop, iv_lead);
  for (size_t li = 0; li < p.loads.size(); ++li) {
    // Invariant loads: with the first stage only, and after its commit
    // when they form their own group.
    if (p.invariant[li] && (!first || p.invariant_group)) continue;
    issue_copy(*p.loads[li], p, li, bases, slot, live, prefetched);
  }
  if (!p.prefetch_registers) t_.async_commit(b_);
  if (first && p.invariant_group) {
    for (size_t li = 0; li < p.loads.size(); ++li)
      if (p.invariant[li]) issue_copy(*p.loads[li], p, li, bases, slot, live, prefetched);
    t_.async_commit(b_);
  }
  const Op* yield = body.terminator();
  std::vector<Regs> next;
  for (size_t k : p.lead_args) next.push_back(in_layout(yield->operands[k], body.args[k + 1].get()));
  // Prefetched registers travel with the lead values, after them.
  next.insert(next.end(), prefetched.begin(), prefetched.end());
  for (auto& [v, regs] : saved) {
    if (regs) vals_[v] = *regs;
    else vals_.erase(v);
  }
  return next;
}

// One pipelined load of a stage: its copies into its buffer (slot `slot`
// unless invariant), or for a register prefetch its chunks, appended to
// `prefetched`.
void Lowerer::issue_copy(const Op& ld, const PipelinePlan& p, size_t li, const std::vector<llvm::Value*>& bases,
                         llvm::Value* slot, llvm::Value* live, std::vector<Regs>& prefetched) {
  Regs ptrs = operand(ld, 0);
  if (p.prefetch_registers) {
    // The next iteration's elements, loaded now into registers.
    prefetched.push_back(load_chunks(ld, ptrs, live));
    return;
  }
  const ir::Value* v = ld.result();
  const LinearLayout& l = plan_.of(v);
  SmemTile t = buffer_tile(v, bases[li], p.invariant[li] ? nullptr : slot);
  Regs mask = ld.operands.size() > 1 ? operand(ld, 1) : Regs{};
  int vec = vector_width(ld, l, v->type.dtype);
  auto hw = hw_coords(l);
  auto dup = duplicate_regs(l);
  auto copies = [&]() -> llvm::Value* {
    for (int r = 0; r < num_regs(l); r += vec) {
      if (dup[r]) continue;
      llvm::Value* pred = mask.empty() ? live : b_.CreateAnd(live, mask[r]);
      t_.async_copy(b_, buffer_ptr(t, l, hw, r), ptrs[r], vec * byte_size(v->type.dtype), pred);
    }
    return nullptr;
  };
  // Lanes and warps that replicate the tile leave its copy to their owner
  // (readers wait for the whole CTA's copies at a barrier anyway): a copy
  // whose predicate is off still writes zeros, so they branch around it.
  guarded(owner_predicate(l), copies, nullptr);
}

// Whether induction value `iv` is below `loop`'s upper bound.
llvm::Value* Lowerer::in_range(const Op& loop, llvm::Value* iv) {
  llvm::Value* hi = get(loop.operands[1])[0];
  return is_unsigned(loop.operands[0]->type.dtype) ? b_.CreateICmpULT(iv, hi) : b_.CreateICmpSLT(iv, hi);
}

// Dot operands defined before the loop are brought to their fragment
// layout once, before it.
void Lowerer::hoist_dot_operands(const ir::Region& body) {
  for (const auto& o : body.ops)
    if (o->kind == OpKind::Dot && !plan_.dots.at(o.get()).on_warpgroups())
      for (int i = 0; i < 2; ++i)
        if (!ir::defined_in(o->operands[i], body) && o->operands[i]->type.is_tile() && !hoisted_.count({o.get(), i})) {
          PlacementScope scope(*this);
          place_scratch(*o, *body.parent);  // at the loop's entry
          hoisted_[{o.get(), i}] = dot_operand(*o, i);
        }
}

// `loop`'s pipeline as its schedule says (schedule_loops.h), its buffers
// (a slot per stage and load) where allocate-shared put them; or nullopt.
std::optional<Lowerer::LoopPipeline> Lowerer::plan_loop_pipeline(const Op& loop) {
  auto plan = scheduled_pipeline(loop, plan_, axis_, {t_.has_matrix_load_8x8()});
  if (!plan) return std::nullopt;
  if (!t_.has_async_copy())
    unsupported(loop, "with a pipeline schedule ('stages'): the target has no asynchronous copies");
  LoopPipeline lp;
  lp.plan = *plan;
  if (plan->prefetch_registers) return lp;
  lp.async_reads = warpgroup_reads(loop, plan_);
  if (!loop.has_attr("buffers") || loop.attr_ints("buffers").size() != plan->loads.size())
    throw Error(loop.loc.str() + ": 'for' expects attribute 'buffers' with an offset for each of its " +
                std::to_string(plan->loads.size()) + " pipelined loads (allocate-shared gives it)");
  for (int64_t a : loop.attr_ints("buffers")) lp.bases.push_back(b_.CreateGEP(b_.getInt8Ty(), smem_, b_.getInt64(a)));
  smem_bytes_ = std::max(smem_bytes_, pipeline_buffers_end(*plan, plan_, loop.attr_ints("buffers"), lp.async_reads));
  // The buffers overlap scratch that earlier users (a hoisted operand's
  // matrix loads, say) may still be reading.
  barrier();
  return lp;
}

// The prologue: iterations 0 .. stages-2 into slots 0 .. stages-2. Returns
// the lead carried values (and prefetched registers) the loop starts with.
std::vector<Regs> Lowerer::pipeline_prologue(const Op& loop, const LoopPipeline& lp, const std::vector<Regs>& init,
                                             llvm::Value* lo, llvm::Value* step) {
  std::vector<Regs> lead;
  for (size_t k : lp.plan.lead_args) lead.push_back(init[k]);
  llvm::Value* iv_lead = lo;
  for (int j = 0; j + 1 < lp.plan.stages; ++j) {
    lead = issue_stage(loop, lp.plan, lp.bases, lead, iv_lead, b_.getInt32(j), j == 0);
    iv_lead = b_.CreateAdd(iv_lead, step);
  }
  return lead;
}

// One iteration's body with its pipeline: wait for this iteration's
// copies, point the loads at them, lower the body, and issue iteration
// i + stages - 1 (lp.lead_next, lp.slot_next).
void Lowerer::pipelined_body(const Op& loop, LoopPipeline& lp, llvm::Value* iv, llvm::Value* lo, llvm::Value* step,
                             const std::vector<Regs>& lead) {
  const PipelinePlan& p = lp.plan;
  if (!p.prefetch_registers) {
    // This iteration's copies have landed (and every thread is past the
    // previous iteration's reads of the slot refilled below). A thread
    // that reads only what it copied itself needs no barrier.
    if (p.invariant_group) {
      // Iteration 0 waits for its own copies only: the invariant group,
      // committed after them, may still be pending (read_buffer waits).
      auto* first_bb = llvm::BasicBlock::Create(ctx_, "pipe.first", fn_);
      auto* rest_bb = llvm::BasicBlock::Create(ctx_, "pipe.rest", fn_);
      auto* join_bb = llvm::BasicBlock::Create(ctx_, "pipe.waited", fn_);
      b_.CreateCondBr(b_.CreateICmpEQ(iv, lo), first_bb, rest_bb);
      b_.SetInsertPoint(first_bb);
      t_.async_wait(b_, p.stages - 1);
      b_.CreateBr(join_bb);
      b_.SetInsertPoint(rest_bb);
      t_.async_wait(b_, p.stages - 2);
      b_.CreateBr(join_bb);
      b_.SetInsertPoint(join_bb);
    } else {
      t_.async_wait(b_, p.stages - 2);
    }
    // Warpgroup dots read the buffers through the asynchronous proxy.
    if (lp.async_reads) t_.async_proxy_fence(b_);
    if (!p.early_refill || p.shared_reads) barrier();
  }
  // Where the refill is issued in the body (early refill: after the last
  // load that changes; otherwise at the end).
  const Op* refill_at = nullptr;
  for (size_t li = 0; li < p.loads.size() && p.early_refill; ++li)
    if (!p.invariant[li]) refill_at = p.loads[li];
  auto refilled_before = [&](const Op* ld) {
    if (!refill_at) return false;
    for (const auto& o : loop.regions[0]->ops) {
      if (o.get() == ld) return false;
      if (o.get() == refill_at) return true;
    }
    return false;
  };
  for (size_t li = 0; li < p.loads.size(); ++li) {
    const Op* ld = p.loads[li];
    if (p.prefetch_registers) {
      prefetched_[ld] = lead[p.lead_args.size() + li];
      continue;
    }
    SmemTile t = buffer_tile(ld->result(), lp.bases[li], p.invariant[li] ? nullptr : lp.slot);
    if (p.to_registers[li]) {
      // An invariant group is complete once no more than the groups
      // committed after it are pending: the other stages' and, past the
      // refill, this iteration's. Later iterations find it so already.
      int wait = p.invariant_group && p.invariant[li] ? p.stages - 2 + int(refilled_before(ld)) : -1;
      buffer_reads_[ld] = {t, wait};
      continue;
    }
    smem_vals_[ld->result()] = t;
    for (const Op* o : p.skip)
      if (o->kind == OpKind::Trans && o->operands[0] == ld->result()) {
        SmemTile tt = t;
        tt.transposed = true;
        smem_vals_[o->result()] = tt;
      }
  }
  skip_.insert(p.skip.begin(), p.skip.end());
  llvm::Value* iv_lead = b_.CreateAdd(iv, b_.CreateMul(step, llvm::ConstantInt::get(iv->getType(), p.stages - 1)));
  auto refill = [&, iv_lead](llvm::Value* fill) { lp.lead_next = issue_stage(loop, p, lp.bases, lead, iv_lead, fill, false); };
  llvm::Value* last = b_.getInt32(p.slots() - 1);
  lp.slot_next = b_.CreateSelect(b_.CreateICmpEQ(lp.slot, last), b_.getInt32(0), b_.CreateAdd(lp.slot, b_.getInt32(1)));
  const Op* saved_refill_after = refill_after_;
  std::function<void()> saved_refill = refill_;
  if (p.early_refill) {
    // Iteration i + stages - 1 reuses this iteration's slot once every
    // thread has read it.
    refill_after_ = refill_at;
    refill_ = [&, refill] {
      if (p.shared_reads && !p.prefetch_registers) barrier();
      refill(lp.slot);
    };
  }
  lower_region(*loop.regions[0]);
  refill_after_ = saved_refill_after, refill_ = saved_refill;
  // Into the slot iteration i - 1 read, after this iteration's multiplies
  // so that those start right after the barrier.
  if (!p.early_refill)
    refill(b_.CreateSelect(b_.CreateICmpEQ(lp.slot, b_.getInt32(0)), last, b_.CreateSub(lp.slot, b_.getInt32(1))));
}

// After the loop: copies past the end still write zeros, so drain them
// before the buffers become scratch again.
void Lowerer::finish_pipeline(const LoopPipeline& lp) {
  if (!lp.plan.prefetch_registers) {
    t_.async_wait(b_, 0);
    barrier();
  }
  for (const Op* o : lp.plan.skip) smem_vals_.erase(o->result());
  for (const Op* o : lp.plan.loads) buffer_reads_.erase(o), prefetched_.erase(o);
}

void Lowerer::lower_for(const Op& op) {
  const ir::Region& body = *op.regions[0];
  llvm::Value* lo = get(op.operands[0])[0];
  llvm::Value* step = get(op.operands[2])[0];
  size_t nc = op.results.size();
  std::vector<Regs> init;
  for (size_t k = 0; k < nc; ++k) init.push_back(in_layout(op.operands[3 + k], body.args[k + 1].get()));
  hoist_dot_operands(body);
  auto pipe = plan_loop_pipeline(op);
  std::vector<Regs> lead = pipe ? pipeline_prologue(op, *pipe, init, lo, step) : std::vector<Regs>{};

  // The body assumes both exchange slots clean on entry (lower_reduce.cpp),
  // and both cluster slots.
  if (!slot_clean_[0] || !slot_clean_[1] || !cluster_clean_[0] || !cluster_clean_[1]) {
    barrier();
  } else {
    for (int k = 0; k < 2; ++k) rely_on_clean(k), rely_on_cluster_clean(k);
  }
  std::vector<bool> outer_seen;
  for (const auto& sc : scopes_) outer_seen.push_back(sc.barrier_seen);
  scopes_.push_back({});

  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "for.header", fn_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(lo->getType(), 2, "iv");
  iv->addIncoming(lo, pre);
  auto make_phis = [&](const std::vector<Regs>& from) {
    std::vector<std::vector<llvm::PHINode*>> out;
    for (const Regs& regs : from) {
      out.emplace_back();
      for (auto* v : regs) {
        auto* phi = b_.CreatePHI(v->getType(), 2);
        phi->addIncoming(v, pre);
        out.back().push_back(phi);
      }
    }
    return out;
  };
  auto as_regs = [](const std::vector<std::vector<llvm::PHINode*>>& phis) {
    std::vector<Regs> out;
    for (const auto& ph : phis) out.emplace_back(ph.begin(), ph.end());
    return out;
  };
  auto phis = make_phis(init);
  auto lead_phis = make_phis(lead);
  if (pipe) {
    pipe->slot = b_.CreatePHI(b_.getInt32Ty(), 2, "slot");
    pipe->slot->addIncoming(b_.getInt32(0), pre);
  }
  std::vector<Regs> carried = as_regs(phis);
  for (size_t k = 0; k < nc; ++k) vals_[body.args[k + 1].get()] = vals_[op.results[k].get()] = carried[k];
  vals_[body.args[0].get()] = {iv};
  b_.CreateCondBr(in_range(op, iv), body_bb, exit);

  b_.SetInsertPoint(body_bb);
  std::set<const Op*> saved_skip = skip_;
  if (pipe) pipelined_body(op, *pipe, iv, lo, step, as_regs(lead_phis));
  else lower_region(body);
  skip_ = saved_skip;
  const Op* yield = body.terminator();
  std::vector<Regs> next;
  for (size_t k = 0; k < nc; ++k) next.push_back(in_layout(yield->operands[k], body.args[k + 1].get()));
  // Back to the top: restore what the body assumed of the slots.
  const ScratchScope body_scope = scopes_.back();
  bool dirty = false;
  for (int k = 0; k < 2; ++k)
    dirty = dirty || (body_scope.assumed[k] && !slot_clean_[k]) || (body_scope.cluster_assumed[k] && !cluster_clean_[k]);
  if (dirty) barrier();
  scopes_.pop_back();
  for (size_t k = 0; k < outer_seen.size(); ++k) scopes_[k].barrier_seen = outer_seen[k];  // the body may not run
  llvm::Value* iv_next = b_.CreateAdd(iv, step);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  b_.CreateBr(header);
  iv->addIncoming(iv_next, latch);
  for (size_t k = 0; k < nc; ++k)
    for (size_t r = 0; r < phis[k].size(); ++r) phis[k][r]->addIncoming(next[k][r], latch);
  if (pipe) {
    for (size_t k = 0; k < lead_phis.size(); ++k)
      for (size_t r = 0; r < lead_phis[k].size(); ++r) lead_phis[k][r]->addIncoming(pipe->lead_next[k][r], latch);
    pipe->slot->addIncoming(pipe->slot_next, latch);
  }
  b_.SetInsertPoint(exit);
  if (pipe) finish_pipeline(*pipe);
  for (const auto& o : body.ops)
    for (int i = 0; i < 2; ++i) hoisted_.erase({o.get(), i});
}

void Lowerer::lower_if(const Op& op) {
  llvm::Value* cond = get(op.operands[0])[0];
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
  auto* join = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
  b_.CreateCondBr(cond, then_bb, else_bb);
  std::vector<std::pair<llvm::BasicBlock*, std::vector<Regs>>> arms;
  // Exchange-slot state: each arm starts from the state here; after the
  // join a slot is clean, or a barrier seen, only if so on both paths.
  const bool entry_clean[2] = {slot_clean_[0], slot_clean_[1]};
  const bool entry_cclean[2] = {cluster_clean_[0], cluster_clean_[1]};
  std::vector<bool> entry_seen, join_seen;
  for (const auto& sc : scopes_) entry_seen.push_back(sc.barrier_seen);
  bool join_clean[2] = {true, true}, join_cclean[2] = {true, true};
  join_seen.assign(scopes_.size(), true);
  for (int side = 0; side < 2; ++side) {
    slot_clean_[0] = entry_clean[0], slot_clean_[1] = entry_clean[1];
    cluster_clean_[0] = entry_cclean[0], cluster_clean_[1] = entry_cclean[1];
    for (size_t k = 0; k < scopes_.size(); ++k) scopes_[k].barrier_seen = entry_seen[k];
    b_.SetInsertPoint(side == 0 ? then_bb : else_bb);
    std::vector<Regs> vals;
    if (side < int(op.regions.size())) {
      const ir::Region& r = *op.regions[side];
      lower_region(r);
      if (const Op* y = r.terminator())
        for (size_t k = 0; k < op.results.size(); ++k) vals.push_back(in_layout(y->operands[k], op.results[k].get()));
    }
    arms.push_back({b_.GetInsertBlock(), vals});
    b_.CreateBr(join);
    for (int k = 0; k < 2; ++k) join_clean[k] = join_clean[k] && slot_clean_[k];
    for (int k = 0; k < 2; ++k) join_cclean[k] = join_cclean[k] && cluster_clean_[k];
    for (size_t k = 0; k < scopes_.size(); ++k) join_seen[k] = join_seen[k] && scopes_[k].barrier_seen;
  }
  slot_clean_[0] = join_clean[0], slot_clean_[1] = join_clean[1];
  cluster_clean_[0] = join_cclean[0], cluster_clean_[1] = join_cclean[1];
  for (size_t k = 0; k < scopes_.size(); ++k) scopes_[k].barrier_seen = join_seen[k];
  b_.SetInsertPoint(join);
  for (size_t k = 0; k < op.results.size(); ++k) {
    Regs merged;
    for (size_t r = 0; r < arms[0].second[k].size(); ++r) {
      auto* phi = b_.CreatePHI(arms[0].second[k][r]->getType(), 2);
      phi->addIncoming(arms[0].second[k][r], arms[0].first);
      phi->addIncoming(arms[1].second[k][r], arms[1].first);
      merged.push_back(phi);
    }
    vals_[op.results[k].get()] = merged;
  }
}

}  // namespace tl::codegen::lowering
