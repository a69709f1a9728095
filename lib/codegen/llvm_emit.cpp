// Target-independent LLVM plumbing: the O3 pipeline, assembly and object
// emission through a TargetMachine, and branch-guarded memory accesses.
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/OptBisect.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Timer.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/lower_llvm.h"

namespace tl::codegen {

llvm::Value* branch_masked_load(llvm::IRBuilder<>& b, llvm::Type* ty, llvm::Value* ptr, llvm::Value* mask,
                                llvm::Value* other, bool is_volatile) {
  auto align = llvm::Align(b.GetInsertBlock()->getModule()->getDataLayout().getTypeStoreSize(ty).getFixedValue());
  if (!mask) {
    auto* ld = b.CreateAlignedLoad(ty, ptr, align, is_volatile);
    return ld;
  }
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* from = b.GetInsertBlock();
  auto* load_bb = llvm::BasicBlock::Create(b.getContext(), "load", fn);
  auto* join = llvm::BasicBlock::Create(b.getContext(), "load.end", fn);
  b.CreateCondBr(mask, load_bb, join);
  b.SetInsertPoint(load_bb);
  llvm::Value* v = b.CreateAlignedLoad(ty, ptr, align, is_volatile);
  b.CreateBr(join);
  b.SetInsertPoint(join);
  auto* phi = b.CreatePHI(ty, 2);
  phi->addIncoming(v, load_bb);
  phi->addIncoming(other, from);
  return phi;
}

void branch_masked_store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr, llvm::Value* mask,
                         bool is_volatile) {
  auto align = llvm::Align(
      b.GetInsertBlock()->getModule()->getDataLayout().getTypeStoreSize(value->getType()).getFixedValue());
  if (!mask) {
    b.CreateAlignedStore(value, ptr, align, is_volatile);
    return;
  }
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  auto* store_bb = llvm::BasicBlock::Create(b.getContext(), "store", fn);
  auto* join = llvm::BasicBlock::Create(b.getContext(), "store.end", fn);
  b.CreateCondBr(mask, store_bb, join);
  b.SetInsertPoint(store_bb);
  b.CreateAlignedStore(value, ptr, align, is_volatile);
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

namespace {
// The code generator's passes TILEDSL_LLVM_SKIP_PASSES names (below).
struct SkipPasses : llvm::OptPassGate {
  std::vector<std::string> names;
  bool shouldRunPass(llvm::StringRef pass, llvm::StringRef) const override {
    return std::find(names.begin(), names.end(), pass.str()) == names.end();
  }
  bool isEnabled() const override { return !names.empty(); }
};
SkipPasses& skip_passes() {
  static SkipPasses gate;
  return gate;
}

// Once per process, before the first kernel is optimized (every compile
// passes here first):
// - LLVM's shared real file system, which every PassBuilder takes a
//   reference to, is made here rather than by whichever of several
//   concurrent compiles gets there first: LLVM's own lazy initialization of
//   it is invisible to ThreadSanitizer (LLVM is not instrumented), which
//   then sees the first compile's construction race with another's release.
// - TILEDSL_LLVM_ARGS="-time-passes ...": options for LLVM itself (as llc
//   takes them). For looking into the back end; not part of the cache key.
// - TILEDSL_LLVM_SKIP_PASSES="slsr,...": passes of the code generator
//   (the legacy pipeline after O3; by their short names: slsr, gvn,
//   nary-reassociate, ...) skipped, for timing the back end without them (the
//   NVPTX back end's strength reduction is a quarter of a gemm's LLVM
//   time, docs/perf.md run 78). Not part of the cache key either.
bool& llvm_args_given() {
  static bool given = false;
  return given;
}

void init_llvm_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::vfs::getRealFileSystem();
    if (const char* skip = std::getenv("TILEDSL_LLVM_SKIP_PASSES")) {
      std::string list = skip;
      for (size_t at = 0; at <= list.size();) {
        size_t end = std::min(list.find(',', at), list.size());
        if (end > at) skip_passes().names.push_back(list.substr(at, end - at));
        at = end + 1;
      }
    }
    const char* env = std::getenv("TILEDSL_LLVM_ARGS");
    if (!env || !*env) return;
    llvm_args_given() = true;
    std::istringstream in(env);
    // LLVM's own -help and -version print and then end the process, the
    // host program with it: they are printed here and the compile goes on.
    std::vector<std::string> words{"TILEDSL_LLVM_ARGS"};
    bool version = false, help = false, hidden = false;
    for (std::string w; in >> w;) {
      std::string flag = w.rfind("--", 0) == 0 ? w.substr(1) : w;
      if (flag == "-help" || flag == "-help-list") help = true;
      else if (flag == "-help-hidden" || flag == "-help-list-hidden") help = hidden = true;
      else if (flag == "-version") version = true;
      else words.push_back(w);
    }
    std::vector<const char*> argv;
    for (const auto& w : words) argv.push_back(w.c_str());
    llvm::cl::ParseCommandLineOptions(int(argv.size()), argv.data(), "", &llvm::errs());
    if (version) llvm::cl::PrintVersionMessage();
    if (help) llvm::cl::PrintHelpMessage(hidden);
  });
}
}  // namespace

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm) {
  init_llvm_once();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cam;
  llvm::ModuleAnalysisManager mam;
  // With TILEDSL_LLVM_ARGS, the instrumentation its options act on in this
  // pipeline (-time-passes' timers, -print-after ...); none otherwise, for
  // the compile's time.
  std::optional<llvm::PassInstrumentationCallbacks> pic;
  std::optional<llvm::StandardInstrumentations> si;
  if (llvm_args_given()) {
    pic.emplace();
    si.emplace(m.getContext(), false);
    si->registerCallbacks(*pic, &mam);
  }
  llvm::PassBuilder pb(&tm, llvm::PipelineTuningOptions(), std::nullopt, pic ? &*pic : nullptr);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(SinkToColdBlocks()));
  mpm.run(m, mam);
}

namespace {
void emit(llvm::Module& m, llvm::TargetMachine& tm, llvm::raw_pwrite_stream& os, llvm::CodeGenFileType type) {
  init_llvm_once();
  if (skip_passes().isEnabled()) m.getContext().setOptPassGate(skip_passes());
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type)) throw Error("internal: the target cannot emit this file type");
  pm.run(m);
  // -time-passes: the report of this compile's passes now (LLVM prints it
  // at its shutdown, which a library's process never calls).
  if (llvm::TimePassesIsEnabled) llvm::TimerGroup::printAll(llvm::errs());
}
}  // namespace

std::string emit_assembly_text(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::SmallString<0> buf;
  llvm::raw_svector_ostream os(buf);
  emit(m, tm, os, llvm::CodeGenFileType::AssemblyFile);
  return std::string(buf.str());
}

std::vector<uint8_t> emit_object_file(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::SmallString<0> buf;
  llvm::raw_svector_ostream os(buf);
  emit(m, tm, os, llvm::CodeGenFileType::ObjectFile);
  return std::vector<uint8_t>(buf.begin(), buf.end());
}

}  // namespace tl::codegen
