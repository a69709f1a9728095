// Lowering of loops and conditionals (see lowerer.h): carried values become
// phis. A loop's software pipeline is ops of its own by now
// (expand_pipelines.h): the loop lowered here is a plain one.
#include "codegen/lowerer.h"

namespace tl::codegen::lowering {

// Narrow elements travel around a loop packed into vectors of 32 bits at
// least (two 16-bit or four 8-bit ones) and as long as the registers run
// along one dimension, up to 16 bytes (as vector loads produce them): a phi
// of its own per element would hold a register each (a bf16 row prefetched
// into registers spilled so, docs/perf.md run 43). Returns how many go in
// one (1: none).
static int pack_factor(const Regs& regs, const LinearLayout& l) {
  if (regs.size() < 2 || regs[0]->getType()->isVectorTy()) return 1;
  unsigned bits = regs[0]->getType()->getPrimitiveSizeInBits();
  if (bits != 8 && bits != 16) return 1;
  int run = l.contiguous_run(kReg, stored_contiguous_dim(l));
  int f = std::max(int(32 / bits), std::min(int(128 / bits), run));
  if (regs.size() % size_t(f)) f = int(32 / bits);
  if (regs.size() % size_t(f)) return 1;
  for (auto* v : regs)
    if (v->getType() != regs[0]->getType()) return 1;
  return f;
}

Regs Lowerer::pack_narrow(const Regs& regs, int f) {
  if (f == 1) return regs;
  Regs out;
  auto* vt = llvm::FixedVectorType::get(regs[0]->getType(), unsigned(f));
  for (size_t r = 0; r < regs.size(); r += size_t(f)) {
    llvm::Value* v = llvm::PoisonValue::get(vt);
    for (int k = 0; k < f; ++k) v = b_.CreateInsertElement(v, regs[r + size_t(k)], uint64_t(k));
    out.push_back(v);
  }
  return out;
}

Regs Lowerer::unpack_narrow(const Regs& packed, int f) {
  if (f == 1) return packed;
  Regs out;
  for (llvm::Value* v : packed)
    for (int k = 0; k < f; ++k) out.push_back(b_.CreateExtractElement(v, uint64_t(k)));
  return out;
}

// The carried values' initial ones (computed here, packed), then a branch to
// the loop's header with a phi per register of each, which the loop's
// region arguments and results read unpacked (after the induction
// variable's, starting at `iv_init`, for a `for`).
Lowerer::CarriedPhis Lowerer::open_carried(const Op& loop, llvm::BasicBlock* header, llvm::Value* iv_init) {
  CarriedPhis c;
  size_t nc = loop.results.size();
  std::vector<Regs> init;
  for (size_t k = 0; k < nc; ++k) {
    const ir::Value* arg = ir::carried_args(loop, k).front();
    init.push_back(in_layout(loop.operands[ir::carried_init_index(loop) + k], arg));
    c.pack.push_back(arg->type.is_tile() ? pack_factor(init[k], plan_.of(arg)) : 1);
    init[k] = pack_narrow(init[k], c.pack[k]);
  }
  c.pre = b_.GetInsertBlock();
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  if (iv_init) {
    c.iv = b_.CreatePHI(iv_init->getType(), 2, "iv");
    c.iv->addIncoming(iv_init, c.pre);
  }
  for (size_t k = 0; k < nc; ++k) {
    c.phis.emplace_back();
    for (auto* v : init[k]) {
      auto* phi = b_.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, c.pre);
      c.phis[k].push_back(phi);
    }
  }
  for (size_t k = 0; k < nc; ++k) {
    Regs carried = unpack_narrow(Regs(c.phis[k].begin(), c.phis[k].end()), c.pack[k]);
    for (ir::Value* arg : ir::carried_args(loop, k)) vals_[arg] = carried;
    vals_[loop.results[k].get()] = carried;
  }
  return c;
}

// At the end of the loop's body (the insertion point, which then branches
// back): the yielded values into the phis.
// A packed value goes round the loop through a barrier the optimizer
// cannot see into (emitting nothing): else InstCombine carries phi(cast a,
// cast b) as cast(phi(a, b)), the narrow tile in its wide source type (a
// bf16 P of attention carried as f32: 64 registers instead of 32,
// perf.md run 69).
void Lowerer::close_carried(const Op& loop, const CarriedPhis& c) {
  std::vector<Regs> next;
  for (size_t k = 0; k < loop.results.size(); ++k) {
    next.push_back(pack_narrow(in_layout(ir::carried_yield(loop, k), ir::carried_args(loop, k).front()), c.pack[k]));
    if (c.pack[k] > 1)
      for (auto*& v : next.back()) v = t_.opaque(b_, v);
  }
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  for (size_t k = 0; k < next.size(); ++k)
    for (size_t r = 0; r < c.phis[k].size(); ++r) c.phis[k][r]->addIncoming(next[k][r], latch);
}

void Lowerer::lower_for(const Op& op) {
  const ir::Region& body = *op.regions[0];
  llvm::Value* lo = get(op.operands[0])[0];
  llvm::Value* step = get(op.operands[2])[0];
  if (op.has_attr("stages"))
    unsupported(op, "with a pipeline schedule ('stages') is lowered once expand-pipelines has expanded it into "
                    "buffers, copies and waits, found it unexpanded");

  auto* header = llvm::BasicBlock::Create(ctx_, "for.header", fn_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
  CarriedPhis carried = open_carried(op, header, lo);
  llvm::PHINode* iv = carried.iv;
  vals_[body.args[0].get()] = {iv};
  llvm::Value* hi = get(op.operands[1])[0];
  b_.CreateCondBr(is_unsigned(op.operands[0]->type.dtype) ? b_.CreateICmpULT(iv, hi) : b_.CreateICmpSLT(iv, hi),
                  body_bb, exit);

  b_.SetInsertPoint(body_bb);
  lower_region(body);
  close_carried(op, carried);
  llvm::Value* iv_next = b_.CreateAdd(iv, step);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  llvm::BranchInst* back = b_.CreateBr(header);
  // A loop around loops of dots (a persistent program's over tiles) keeps
  // what it computes in its body there: hoisted out of it (LICM), values
  // the inner loops do not read would hold registers through them, beside
  // their accumulators (the persistent gemm spilled 300-616 bytes).
  bool outer = false;
  ir::walk(const_cast<ir::Region&>(body), [&](Op* o) {
    if (o->kind == OpKind::For)
      ir::walk(*o->regions[0], [&](Op* d) { outer = outer || d->kind == OpKind::Dot; });
  });
  if (outer) {
    llvm::Metadata* disable = llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.licm.disable"));
    llvm::MDNode* loop_md = llvm::MDNode::getDistinct(ctx_, {nullptr, disable});
    loop_md->replaceOperandWith(0, loop_md);
    back->setMetadata(llvm::LLVMContext::MD_loop, loop_md);
  }
  iv->addIncoming(iv_next, latch);
  b_.SetInsertPoint(exit);
}

// The condition runs at the header, from the entry and after each body; its
// value is the same in every thread of the program (a scalar), so the loop
// is uniform.
void Lowerer::lower_while(const Op& op) {
  auto* header = llvm::BasicBlock::Create(ctx_, "while.cond", fn_);
  auto* body_bb = llvm::BasicBlock::Create(ctx_, "while.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "while.exit", fn_);
  CarriedPhis carried = open_carried(op, header);
  const ir::Region& cond = *op.regions[0];
  lower_region(cond);
  b_.CreateCondBr(get(cond.terminator()->operands[0])[0], body_bb, exit);
  b_.SetInsertPoint(body_bb);
  lower_region(*op.regions[1]);
  close_carried(op, carried);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
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

// A block barrier; {cluster = 1}: of every thread of the cluster, which
// also orders their shared-memory accesses (an mbarrier initialized
// before it is then visible to every CTA). Inside a partition a barrier of
// its own threads.
void Lowerer::lower_barrier(const Op& op) {
  if (!op.attr_int_or("cluster", 0)) {
    barrier();
    return;
  }
  if (partition_.threads) unsupported(op, "with cluster = 1 inside a partition of a warp_specialize");
  if (plan_.num_ctas > 1) t_.cluster_barrier(b_);
  else barrier();
}

// Each partition a branch on the warp index, in order from warp 0, whose
// warps first set their registers. setmaxnreg is a warpgroup's, so a
// partition takes whole warpgroups: warps past its own (a 1-warp producer's
// three) set their registers with it and go straight to the end. Then the
// program ends (the verifier keeps a warp_specialize last): on a cluster
// after a barrier of all its threads, so that no CTA ends while another
// may still arrive on its mbarriers or copy into its shared memory
// (warp_specialize.h). Inside a partition a barrier is one of its own
// threads (named barrier 1 + its index), and one thread's work its first
// thread's.
void Lowerer::lower_warp_specialize(const Op& op) {
  const auto& warps = op.attr_ints("warps");
  const auto& regs = op.attr_ints("registers");
  auto* done = llvm::BasicBlock::Create(ctx_, "partitions.end", fn_);
  int first = 0;
  for (size_t k = 0; k < op.regions.size(); ++k) {
    auto name = "partition" + std::to_string(k);
    auto* group = llvm::BasicBlock::Create(ctx_, name + ".warpgroups", fn_);
    auto* part = llvm::BasicBlock::Create(ctx_, name, fn_);
    auto* next = llvm::BasicBlock::Create(ctx_, name + ".after", fn_);
    int span = partition_warps(int(warps[k]));
    b_.CreateCondBr(b_.CreateICmpULT(warp_, b_.getInt32(first + span)), group, next);
    b_.SetInsertPoint(group);
    if (regs[k] != register_cap_) t_.set_registers(b_, int(regs[k]), regs[k] > register_cap_);
    b_.CreateCondBr(b_.CreateICmpULT(warp_, b_.getInt32(first + int(warps[k]))), part, done);
    b_.SetInsertPoint(part);
    Partition outer = partition_;
    llvm::Value* warp = warp_;
    partition_ = {first * plan_.warp_size, int(warps[k]) * plan_.warp_size, 1 + int(k)};
    warp_ = b_.CreateSub(warp, b_.getInt32(first));  // layouts count the partition's warps
    lower_region(*op.regions[k]);
    partition_ = outer;
    warp_ = warp;
    b_.CreateBr(done);
    b_.SetInsertPoint(next);
    first += span;
  }
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  if (plan_.num_ctas > 1) t_.cluster_barrier(b_, /*aligned=*/false);
}

}  // namespace tl::codegen::lowering
