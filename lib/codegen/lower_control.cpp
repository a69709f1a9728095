// Lowering of loops and conditionals (see lowerer.h): carried values become
// phis; loops whose loads feed dots are software-pipelined as
// pipeline_plan.h decides (asynchronous copies into shared-memory buffers,
// address ops run ahead, predicated tail).
#include "codegen/lowerer.h"

namespace tl::codegen::lowering {

// Pipelined loops (pipeline_plan.h says which and what runs ahead): the
// prologue issues the copies of the first `stages - 1` iterations; each
// iteration waits for its own, reads them from shared memory, and issues
// those of iteration i + stages - 1 into the slot iteration i - 1 read.
// Lowers the lead ops for iteration `iv_lead` with the lead carried
// values, issues the loads' copies into `slot`, commits them as one group
// and returns the lead carried values of the next iteration.
std::vector<Regs> Lowerer::issue_stage(const Op& loop, const PipelinePlan& p, const std::vector<SmemTile>& tiles,
                              const std::vector<Regs>& lead, llvm::Value* iv_lead, llvm::Value* slot) {
  const ir::Region& body = *loop.regions[0];
  vals_[body.args[0].get()] = {iv_lead};
  for (size_t j = 0; j < p.lead_args.size(); ++j) vals_[body.args[p.lead_args[j] + 1].get()] = lead[j];
  for (const Op* o : p.lead_ops) lower_op(*o);
  llvm::Value* hi = get(loop.operands[1])[0];
  bool s = !is_unsigned(loop.operands[0]->type.dtype);
  llvm::Value* live = s ? b_.CreateICmpSLT(iv_lead, hi) : b_.CreateICmpULT(iv_lead, hi);
  for (size_t li = 0; li < p.loads.size(); ++li) {
    const Op& ld = *p.loads[li];
    const ir::Value* v = ld.result();
    const LinearLayout& l = plan_.of(v);
    SmemTile t = tiles[li];
    t.base = b_.CreateGEP(b_.getInt8Ty(), t.base, b_.CreateMul(b_.CreateZExt(slot, b_.getInt64Ty()),
                                                                b_.getInt64(t.bytes())));
    Regs ptrs = operand(ld, 0);
    Regs mask = ld.operands.size() > 1 ? operand(ld, 1) : Regs{};
    int vec = vector_width(ld, l, v->type.dtype);
    auto hw = hw_coords(l);
    auto dup = duplicate_regs(l);
    for (int r = 0; r < num_regs(l); r += vec) {
      if (dup[r]) continue;
      auto c = reg_coords(l, r);
      llvm::Value* dst = tile_ptr(t, b_.CreateXor(hw[0], b_.getInt32(c[0])), b_.CreateXor(hw[1], b_.getInt32(c[1])));
      llvm::Value* pred = mask.empty() ? live : b_.CreateAnd(live, mask[r]);
      t_.async_copy(b_, dst, ptrs[r], vec * byte_size(v->type.dtype), pred);
    }
  }
  t_.async_commit(b_);
  const Op* yield = body.terminator();
  std::vector<Regs> next;
  for (size_t k : p.lead_args) next.push_back(in_layout(yield->operands[k], body.args[k + 1].get()));
  return next;
}

// Dot operands defined before the loop are brought to their fragment
// layout once, before it.
void Lowerer::hoist_dot_operands(const ir::Region& body) {
  for (const auto& o : body.ops)
    if (o->kind == OpKind::Dot)
      for (int i = 0; i < 2; ++i)
        if (!ir::defined_in(o->operands[i], body) && o->operands[i]->type.is_tile() && !hoisted_.count({o.get(), i}))
          hoisted_[{o.get(), i}] = dot_operand(*o, i);
}

void Lowerer::lower_for(const Op& op) {
  const ir::Region& body = *op.regions[0];
  llvm::Value* lo = get(op.operands[0])[0];
  llvm::Value* hi = get(op.operands[1])[0];
  llvm::Value* step = get(op.operands[2])[0];
  bool s = !is_unsigned(op.operands[0]->type.dtype);
  size_t nc = op.results.size();
  std::vector<Regs> init;
  for (size_t k = 0; k < nc; ++k) init.push_back(in_layout(op.operands[3 + k], body.args[k + 1].get()));
  hoist_dot_operands(body);

  // Pipeline buffers: `stages` slots per load, below the scratch region.
  auto pipe = t_.has_async_copy() && t_.has_matrix_load_8x8() ? plan_pipeline(op, plan_, axis_) : std::nullopt;
  std::vector<SmemTile> tiles;
  int64_t saved_scratch = scratch_base_;
  std::vector<Regs> lead;
  if (pipe) {
    for (const Op* ld : pipe->loads) {
      const auto& sh = ld->result()->type.shape;
      SmemTile t = SmemTile::plan(sh[0], sh[1], contiguous_dim(plan_.of(ld->result())), byte_size(ld->result()->type.dtype));
      t.base = b_.CreateGEP(b_.getInt8Ty(), smem_, b_.getInt64(scratch_base_));
      scratch_base_ += (t.bytes() * pipe->stages + 127) / 128 * 128;
      tiles.push_back(t);
    }
    need_smem(0);
    // The buffers overlap scratch that earlier users (a hoisted operand's
    // matrix loads, say) may still be reading.
    t_.barrier(b_);
    // Prologue: iterations 0 .. stages-2 into slots 0 .. stages-2.
    for (size_t k : pipe->lead_args) lead.push_back(init[k]);
    llvm::Value* iv_lead = lo;
    for (int j = 0; j + 1 < pipe->stages; ++j) {
      lead = issue_stage(op, *pipe, tiles, lead, iv_lead, b_.getInt32(j));
      iv_lead = b_.CreateAdd(iv_lead, step);
    }
  }

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
  auto phis = make_phis(init);
  auto lead_phis = make_phis(lead);
  llvm::PHINode* slot = nullptr;
  if (pipe) {
    slot = b_.CreatePHI(b_.getInt32Ty(), 2, "slot");
    slot->addIncoming(b_.getInt32(0), pre);
  }
  auto bind_carried = [&] {
    for (size_t k = 0; k < nc; ++k) vals_[body.args[k + 1].get()] = Regs(phis[k].begin(), phis[k].end());
    vals_[body.args[0].get()] = {iv};
  };
  bind_carried();
  for (size_t k = 0; k < nc; ++k) vals_[op.results[k].get()] = Regs(phis[k].begin(), phis[k].end());
  llvm::Value* go = s ? b_.CreateICmpSLT(iv, hi) : b_.CreateICmpULT(iv, hi);
  b_.CreateCondBr(go, body_bb, exit);

  b_.SetInsertPoint(body_bb);
  std::vector<Regs> lead_next;
  llvm::Value* slot_next = nullptr;
  if (pipe) {
    // This iteration's copies have landed (and every thread is past the
    // previous iteration's reads of the slot refilled below).
    t_.async_wait(b_, pipe->stages - 2);
    t_.barrier(b_);
    for (size_t li = 0; li < pipe->loads.size(); ++li) {
      SmemTile t = tiles[li];
      t.base = b_.CreateGEP(b_.getInt8Ty(), t.base,
                            b_.CreateMul(b_.CreateZExt(slot, b_.getInt64Ty()), b_.getInt64(t.bytes())));
      smem_vals_[pipe->loads[li]->result()] = t;
      for (const Op* o : pipe->skip)
        if (o->kind == OpKind::Trans && o->operands[0] == pipe->loads[li]->result()) {
          SmemTile tt = t;
          tt.transposed = true;
          smem_vals_[o->result()] = tt;
        }
    }
    skip_ = pipe->skip;
  }
  lower_region(body);
  skip_.clear();
  const Op* yield = body.terminator();
  std::vector<Regs> next;
  for (size_t k = 0; k < nc; ++k) next.push_back(in_layout(yield->operands[k], body.args[k + 1].get()));
  if (pipe) {
    // The copies for iteration i + stages - 1 go into the slot iteration
    // i - 1 read, issued after this iteration's multiplies so that those
    // start right after the barrier.
    llvm::Value* last = b_.getInt32(pipe->stages - 1);
    llvm::Value* fill = b_.CreateSelect(b_.CreateICmpEQ(slot, b_.getInt32(0)), last,
                                        b_.CreateSub(slot, b_.getInt32(1)));
    llvm::Value* iv_lead =
        b_.CreateAdd(iv, b_.CreateMul(step, llvm::ConstantInt::get(iv->getType(), pipe->stages - 1)));
    std::vector<Regs> cur;
    for (auto& ph : lead_phis) cur.emplace_back(ph.begin(), ph.end());
    lead_next = issue_stage(op, *pipe, tiles, cur, iv_lead, fill);
    slot_next = b_.CreateSelect(b_.CreateICmpEQ(slot, last), b_.getInt32(0), b_.CreateAdd(slot, b_.getInt32(1)));
  }
  llvm::Value* iv_next = b_.CreateAdd(iv, step);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  b_.CreateBr(header);
  iv->addIncoming(iv_next, latch);
  for (size_t k = 0; k < nc; ++k)
    for (size_t r = 0; r < phis[k].size(); ++r) phis[k][r]->addIncoming(next[k][r], latch);
  for (size_t k = 0; k < lead_phis.size(); ++k)
    for (size_t r = 0; r < lead_phis[k].size(); ++r) lead_phis[k][r]->addIncoming(lead_next[k][r], latch);
  if (slot) slot->addIncoming(slot_next, latch);
  b_.SetInsertPoint(exit);
  if (pipe) {
    // Copies past the end still write zeros: drain them before the
    // buffers become scratch again.
    t_.async_wait(b_, 0);
    t_.barrier(b_);
    for (const Op* o : pipe->skip) smem_vals_.erase(o->result());
    scratch_base_ = saved_scratch;
  }
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
  for (int side = 0; side < 2; ++side) {
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
  }
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
