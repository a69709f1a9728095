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

void Lowerer::lower_for(const Op& op) {
  const ir::Region& body = *op.regions[0];
  llvm::Value* lo = get(op.operands[0])[0];
  llvm::Value* step = get(op.operands[2])[0];
  size_t nc = op.results.size();
  std::vector<Regs> init;
  for (size_t k = 0; k < nc; ++k) init.push_back(in_layout(op.operands[3 + k], body.args[k + 1].get()));
  if (op.has_attr("stages"))
    unsupported(op, "with a pipeline schedule ('stages') is lowered once expand-pipelines has expanded it into "
                    "buffers, copies and waits, found it unexpanded");

  std::vector<int> pack(nc);
  for (size_t k = 0; k < nc; ++k) {
    const ir::Value* arg = body.args[k + 1].get();
    pack[k] = arg->type.is_tile() ? pack_factor(init[k], plan_.of(arg)) : 1;
    init[k] = pack_narrow(init[k], pack[k]);
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
  std::vector<Regs> carried;
  for (size_t k = 0; k < nc; ++k) carried.push_back(unpack_narrow(Regs(phis[k].begin(), phis[k].end()), pack[k]));
  for (size_t k = 0; k < nc; ++k) vals_[body.args[k + 1].get()] = vals_[op.results[k].get()] = carried[k];
  vals_[body.args[0].get()] = {iv};
  llvm::Value* hi = get(op.operands[1])[0];
  b_.CreateCondBr(is_unsigned(op.operands[0]->type.dtype) ? b_.CreateICmpULT(iv, hi) : b_.CreateICmpSLT(iv, hi),
                  body_bb, exit);

  b_.SetInsertPoint(body_bb);
  lower_region(body);
  const Op* yield = body.terminator();
  std::vector<Regs> next;
  // A packed value goes round the loop through a barrier the optimizer
  // cannot see into (emitting nothing): else InstCombine carries phi(cast a,
  // cast b) as cast(phi(a, b)), the narrow tile in its wide source type (a
  // bf16 P of attention carried as f32: 64 registers instead of 32,
  // perf.md run 69).
  for (size_t k = 0; k < nc; ++k) {
    next.push_back(pack_narrow(in_layout(yield->operands[k], body.args[k + 1].get()), pack[k]));
    if (pack[k] > 1)
      for (auto*& v : next.back()) v = t_.opaque(b_, v);
  }
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
  for (size_t k = 0; k < nc; ++k)
    for (size_t r = 0; r < phis[k].size(); ++r) phis[k][r]->addIncoming(next[k][r], latch);
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

// Each partition a branch on the warp index, in order from warp 0, whose
// warps first set their registers. setmaxnreg is a warpgroup's, so a
// partition takes whole warpgroups: warps past its own (a 1-warp producer's
// three) set their registers with it and go straight to the end. Then the
// program ends (the verifier keeps a warp_specialize last). Inside a
// partition a barrier is one of its own threads (named barrier 1 + its
// index), and one thread's work its first thread's.
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
}

}  // namespace tl::codegen::lowering
