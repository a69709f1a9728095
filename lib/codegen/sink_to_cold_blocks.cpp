// sink-to-cold-blocks: an LLVM pass run after the O3 pipeline.
//
// LICM hoists every loop-invariant value out of its loop, also one only a
// block the loop seldom runs reads: a tile's edge masks compare a column
// index per element, so attention's 128-key blocks kept 16 indices live
// across the whole loop, the registers its softmax needed (ptxas spilled
// and then waited for every product; perf.md run 69). On a GPU a register
// live across a loop costs more than recomputing a cheap value where it is
// used, so such values are computed again in those blocks.
//
// A block of loop L is cold when it does not dominate L's latch (not every
// iteration runs it) and no loop inside L holds it. A value defined
// outside L moves into L's cold blocks when it is cheap (integer
// arithmetic, a compare, a cast, or a read of a special register) and
// every use is in a cold block of L or in another value that moves: each
// cold block using it gets its own copy, and the original goes.
#include "codegen/lower_llvm.h"

#include <functional>
#include <vector>

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SetVector.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IntrinsicInst.h>

namespace tl::codegen {

namespace {

bool cheap(const llvm::Instruction& i) {
  if (i.mayHaveSideEffects() || i.mayReadFromMemory() || !llvm::isSafeToSpeculativelyExecute(&i)) return false;
  if (llvm::isa<llvm::BinaryOperator>(i) || llvm::isa<llvm::ICmpInst>(i) || llvm::isa<llvm::CastInst>(i))
    return i.getType()->isIntOrIntVectorTy() || i.getType()->isPointerTy();
  if (const auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&i))  // thread and block indices
    return call->doesNotAccessMemory() && call->arg_size() == 0;
  return false;
}

bool sink_into(llvm::Loop& loop, llvm::LoopInfo& li, llvm::DominatorTree& dt) {
  llvm::BasicBlock* latch = loop.getLoopLatch();
  if (!latch) return false;
  auto cold = [&](const llvm::BasicBlock* bb) {
    return li.getLoopFor(bb) == &loop && !dt.dominates(bb, latch);
  };
  // Candidates: cheap values from outside the loop that something in it
  // reads; then drop, to a fixed point, those with a use elsewhere.
  llvm::SetVector<llvm::Instruction*> moving;
  for (llvm::BasicBlock* bb : loop.blocks())
    for (llvm::Instruction& user : *bb)
      for (llvm::Value* v : user.operands())
        if (auto* i = llvm::dyn_cast<llvm::Instruction>(v); i && !loop.contains(i) && cheap(*i)) moving.insert(i);
  // Operands of candidates may move too (a column index and the lane bits
  // it is made of).
  for (size_t k = 0; k < moving.size(); ++k)
    for (llvm::Value* v : moving[k]->operands())
      if (auto* i = llvm::dyn_cast<llvm::Instruction>(v); i && !loop.contains(i) && cheap(*i)) moving.insert(i);
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (llvm::Instruction* i : std::vector<llvm::Instruction*>(moving.begin(), moving.end())) {
      bool stays = false;
      for (llvm::User* u : i->users()) {
        auto* ui = llvm::dyn_cast<llvm::Instruction>(u);
        stays = stays || !ui || !(moving.contains(ui) || (!llvm::isa<llvm::PHINode>(ui) && cold(ui->getParent())));
      }
      if (stays) {
        moving.remove(i);
        dropped = true;
      }
    }
  }
  if (moving.empty()) return false;

  // A copy per (value, cold block), each before the block's first original
  // instruction, its operands' copies before it.
  llvm::DenseMap<llvm::BasicBlock*, llvm::Instruction*> anchor;
  llvm::DenseMap<std::pair<llvm::Instruction*, llvm::BasicBlock*>, llvm::Instruction*> copies;
  std::function<llvm::Value*(llvm::Value*, llvm::BasicBlock*)> in_block = [&](llvm::Value* v, llvm::BasicBlock* bb) {
    auto* i = llvm::dyn_cast<llvm::Instruction>(v);
    if (!i || !moving.contains(i)) return v;
    if (auto it = copies.find({i, bb}); it != copies.end()) return static_cast<llvm::Value*>(it->second);
    llvm::Instruction* copy = i->clone();
    for (unsigned k = 0; k < copy->getNumOperands(); ++k) copy->setOperand(k, in_block(copy->getOperand(k), bb));
    llvm::Instruction* at = anchor.try_emplace(bb, &*bb->getFirstNonPHIIt()).first->second;
    copy->insertBefore(at->getIterator());
    copy->setName(i->getName());
    copies[{i, bb}] = copy;
    return static_cast<llvm::Value*>(copy);
  };
  for (llvm::Instruction* i : moving) {
    llvm::SmallVector<llvm::Use*, 8> uses;
    for (llvm::Use& u : i->uses())
      if (!moving.contains(llvm::cast<llvm::Instruction>(u.getUser()))) uses.push_back(&u);
    for (llvm::Use* u : uses) u->set(in_block(i, llvm::cast<llvm::Instruction>(u->getUser())->getParent()));
  }
  // The originals, users before what they use.
  for (bool erased = true; erased;) {
    erased = false;
    for (llvm::Instruction* i : std::vector<llvm::Instruction*>(moving.begin(), moving.end()))
      if (i->use_empty()) {
        moving.remove(i);
        i->eraseFromParent();
        erased = true;
      }
  }
  return true;
}

}  // namespace

llvm::PreservedAnalyses SinkToColdBlocks::run(llvm::Function& f, llvm::FunctionAnalysisManager& am) {
  auto& li = am.getResult<llvm::LoopAnalysis>(f);
  auto& dt = am.getResult<llvm::DominatorTreeAnalysis>(f);
  bool changed = false;
  for (llvm::Loop* loop : li.getLoopsInPreorder()) changed |= sink_into(*loop, li, dt);
  if (!changed) return llvm::PreservedAnalyses::all();
  llvm::PreservedAnalyses kept;
  kept.preserveSet<llvm::CFGAnalyses>();
  return kept;
}

}  // namespace tl::codegen
