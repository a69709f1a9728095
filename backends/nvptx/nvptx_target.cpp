// NVIDIA targets (sm_80 … sm_90a) for the shared lowering: special
// registers, barriers, warp shuffles, fast f32 math, vprintf, and PTX
// emission through LLVM's NVPTX back end. The driver JIT-links the PTX.
#include <mutex>
#include <regex>

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/lower_llvm.h"
#include "codegen/target.h"
#include "nvptx/cuda_ptxas.h"
#include "nvptx/matrix_unit.h"

namespace tl::codegen {
namespace {

// ptxas (CUDA 13's driver JIT, on the H200) computes 16-bit integers in
// 32-bit registers and takes the result of neg.s16 as already sign-
// extended: -(-32768) comes back +32768 through a later cvt.s32.s16,
// setp.lt.s16, shr.s16 or mul.wide.s16 (PTX makes 16-bit arithmetic
// machine-specific; sub.s16 from a zero register, not + add and every other
// op measured wrap correctly). LLVM selects neg.s16 for every 8- and 16-bit
// negation (i8 lives in 16-bit registers), so the PTX text is rewritten:
// each neg.s16 becomes not.b16 and add.s16 1, its guard on both. Likewise
// abs.s16, as shr/xor/sub (|-32768| wraps to -32768).
std::string avoid_neg16(std::string ptx) {
  if (ptx.find("neg.s16") == std::string::npos && ptx.find("abs.s16") == std::string::npos) return ptx;
  static const std::regex neg(R"((\t| )*(@!?%p\d+ +)?neg\.s16\s+(%rs\d+),\s*(%rs\d+);)");
  static const std::regex abs(R"((\t| )*(@!?%p\d+ +)?abs\.s16\s+(%rs\d+),\s*(%rs\d+);)");
  ptx = std::regex_replace(ptx, neg, "\t$2not.b16 \t$3, $4;\n\t$2add.s16 \t$3, $3, 1;");
  return std::regex_replace(ptx, abs,
                            "\t{ .reg .b16 %abs_t; $2shr.s16 %abs_t, $4, 15; $2xor.b16 $3, $4, %abs_t; "
                            "$2sub.s16 $3, $3, %abs_t; }");
}

using llvm::Intrinsic::ID;

// A value of 1 to 16 bytes as the registers a PTX access moves.
struct Words {
  int count = 1;                 // registers
  llvm::Type* word = nullptr;    // i32, or i16 for accesses under 4 bytes
  std::string constraint, mov;   // "r"/"h" and "b32"/"b16"
  std::string suffix;            // ".v4.b32", ".b32", ".b16", ".b8"
  int bytes = 0;

  // "{$k, $k+1, ...}" or "$k" for one register.
  std::string list(int first) const {
    if (count == 1) return "$" + std::to_string(first);
    std::string s = "{";
    for (int i = 0; i < count; ++i) s += (i ? ", $" : "$") + std::to_string(first + i);
    return s + "}";
  }
  std::vector<llvm::Value*> split(llvm::IRBuilder<>& b, llvm::Value* v) const {
    llvm::Value* bits = b.CreateBitCast(v, b.getIntNTy(unsigned(bytes * 8)));
    std::vector<llvm::Value*> out;
    if (bytes < 2) return {b.CreateZExt(bits, word)};
    llvm::Type* as_words = count == 1 ? word : static_cast<llvm::Type*>(llvm::FixedVectorType::get(word, count));
    llvm::Value* wv = b.CreateBitCast(bits, as_words);
    for (int i = 0; i < count; ++i) out.push_back(count == 1 ? wv : b.CreateExtractElement(wv, uint64_t(i)));
    return out;
  }
  llvm::Value* join(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& parts, llvm::Type* ty) const {
    if (bytes < 2) return b.CreateBitCast(b.CreateTrunc(parts[0], b.getIntNTy(unsigned(bytes * 8))), ty);
    llvm::Value* v;
    if (count == 1) {
      v = parts[0];
    } else {
      v = llvm::UndefValue::get(llvm::FixedVectorType::get(word, count));
      for (int i = 0; i < count; ++i) v = b.CreateInsertElement(v, parts[i], uint64_t(i));
    }
    return b.CreateBitCast(b.CreateBitCast(v, b.getIntNTy(unsigned(bytes * 8))), ty);
  }
};

Words words_of(llvm::IRBuilder<>& b, llvm::Type* ty) {
  const llvm::DataLayout& dl = b.GetInsertBlock()->getModule()->getDataLayout();
  Words w;
  w.bytes = int(dl.getTypeStoreSize(ty).getFixedValue());
  if (w.bytes >= 4) {
    w.count = w.bytes / 4;
    w.word = b.getInt32Ty();
    w.constraint = "r";
    w.mov = "b32";
    w.suffix = w.count == 1 ? ".b32" : ".v" + std::to_string(w.count) + ".b32";
  } else {
    w.word = b.getInt16Ty();
    w.constraint = "h";
    w.mov = "b16";
    w.suffix = w.bytes == 2 ? ".b16" : ".b8";
  }
  return w;
}

class NvptxTarget final : public Target {
 public:
  NvptxTarget(std::string arch, int shared_kib)
      : arch_(std::move(arch)), sm_(std::stoi(arch_.substr(3, 2))) {
    // The capability record.
    name = arch_;
    asm_language = "ptx";
    device = "cuda";
    warp_size = 32;
    max_shared_bytes = shared_kib * 1024;
    shared_reserved_per_block = 1024;  // the driver's, of each CTA (sm_80 and later)
    has_matrix_load_8x8 = true;  // ldmatrix
    has_async_copy = true;       // cp.async
    max_cluster_ctas = sm_ >= 90 ? 8 : 1;
    has_tma = sm_ >= 90;         // cp.async.bulk.tensor, mbarrier expect_tx
    has_warp_specialization = arch_ == "sm_90a";  // setmaxnreg
    block_registers = 65536, thread_registers = 255;  // sm_80 .. sm_90
    register_warp_granularity = 4;  // the occupancy calculator's warp allocation granularity
    matrix_instr = [sm = sm_](DType in, bool allow_tf32) { return nvptx::mma_instr(in, allow_tf32, sm); };
    warpgroup_instr = [arch = arch_](DType in, int64_t M, int64_t N, int64_t K, int num_warps) {
      return nvptx::wgmma_instr(in, M, N, K, num_warps, arch);
    };
    assemble_with = [arch = arch_](const std::string& ptxas, const std::string& ptx, const std::string& kernel) {
      return tl::nvptx::run_ptxas(ptxas, ptx, arch, kernel);
    };
    static std::once_flag once;
    std::call_once(once, [] {
      LLVMInitializeNVPTXTargetInfo();
      LLVMInitializeNVPTXTarget();
      LLVMInitializeNVPTXTargetMC();
      LLVMInitializeNVPTXAsmPrinter();
      // 32-bit shared-memory pointers (as Triton's data layout has them):
      // shared addresses fit in 32 bits, and a 64-bit one costs a register
      // pair in kernels that run at the register limit. The option is
      // process-wide, but this LLVM is linked into libtiledsl privately
      // (--exclude-libs), so no other user of LLVM sees it.
      auto& opts = llvm::cl::getRegisteredOptions();
      if (auto it = opts.find("nvptx-short-ptr"); it != opts.end())
        if (auto* short_ptr = static_cast<llvm::cl::opt<bool>*>(it->second)) short_ptr->setValue(true);
    });
    llvm::Triple triple("nvptx64-nvidia-cuda");
    std::string err;
    const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!t) throw Error("the NVPTX back end is missing from this LLVM: " + err);
    // PTX 8.6: accepted by ptxas 13 and by the 580 driver; sm_90a needs the
    // CPU name itself to print ".target sm_90a".
    machines_.init([t, triple, arch = arch_] {
      return std::unique_ptr<llvm::TargetMachine>(t->createTargetMachine(
          triple, arch, "+ptx86", llvm::TargetOptions(), std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
    });
  }

  unsigned global_address_space() const override { return 1; }
  unsigned shared_address_space() const override { return 3; }

  void init_module(llvm::Module& m) const override {
    m.setTargetTriple(machines_.info().getTargetTriple());
    m.setDataLayout(machines_.info().createDataLayout());
  }
  void init_kernel(llvm::Function& fn, int threads) const override {
    fn.setCallingConv(llvm::CallingConv::PTX_Kernel);
    fn.addFnAttr("nvvm.maxntid", std::to_string(threads));
  }

  llvm::Value* thread_id(llvm::IRBuilder<>& b) const override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {});
  }
  llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) const override {
    static const ID ids[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                             llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
    return b.CreateIntrinsic(ids[axis], {});
  }
  llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) const override {
    static const ID ids[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x,
                             llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
                             llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z};
    return b.CreateIntrinsic(ids[axis], {});
  }

  void set_cluster_size(llvm::Function& fn, int ctas) const override {
    if (sm_ < 90) throw Error("num_ctas > 1 needs thread-block clusters: sm_90 or later, not " + arch_);
    fn.addFnAttr("nvvm.cluster_dim", std::to_string(ctas) + ",1,1");  // .explicitcluster .reqnctapercluster
  }
  llvm::Value* cluster_rank(llvm::IRBuilder<>& b) const override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank, {});
  }
  void cluster_barrier(llvm::IRBuilder<>& b, bool aligned) const override {
    b.CreateIntrinsic(aligned ? llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned
                              : llvm::Intrinsic::nvvm_barrier_cluster_arrive, {});
    b.CreateIntrinsic(aligned ? llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned
                              : llvm::Intrinsic::nvvm_barrier_cluster_wait, {});
  }
  static void asm_call(llvm::IRBuilder<>& b, const std::string& text, const std::string& cons,
                       const std::vector<llvm::Value*>& args) {
    std::vector<llvm::Type*> types;
    for (auto* a : args) types.push_back(a->getType());
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), types, false);
    b.CreateCall(llvm::InlineAsm::get(fty, text, cons + (cons.empty() ? "" : ",") + "~{memory}", true), args);
  }
  void mbarrier_init(llvm::IRBuilder<>& b, llvm::Value* bar, int count) const override {
    asm_call(b, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", {bar, b.getInt32(count)});
  }
  void mbarrier_inval(llvm::IRBuilder<>& b, llvm::Value* bar) const override {
    asm_call(b, "mbarrier.inval.shared::cta.b64 [$0];", "r", {bar});
  }
  void fence_barrier_init(llvm::IRBuilder<>& b) const override {
    asm_call(b, "fence.mbarrier_init.release.cluster;", "", {});
  }
  void expect_bytes(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* bytes) const override {
    asm_call(b, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", {bar, bytes});
  }
  void mbarrier_arrive(llvm::IRBuilder<>& b, llvm::Value* bar, int count, llvm::Value* only) const override {
    if (!only) {
      asm_call(b, "mbarrier.arrive.shared::cta.b64 _, [$0], $1;", "r,r", {bar, b.getInt32(count)});
      return;
    }
    asm_call(b,
             "{\n.reg .pred tl_p;\nsetp.ne.u32 tl_p, $2, 0;\n@tl_p mbarrier.arrive.shared::cta.b64 _, [$0], $1;\n}",
             "r,r,r", {bar, b.getInt32(count), b.CreateZExt(only, b.getInt32Ty())});
  }
  void send_to_cta(llvm::IRBuilder<>& b, llvm::Value* at, llvm::Value* value, llvm::Value* bar,
                   llvm::Value* rank) const override {
    bool wide = value->getType()->isIntegerTy(64);
    std::string text = std::string("{\n.reg .b32 tl_at, tl_bar;\nmapa.shared::cluster.u32 tl_at, $0, $3;\n") +
                       "mapa.shared::cluster.u32 tl_bar, $2, $3;\n" +
                       "st.async.shared::cluster.mbarrier::complete_tx::bytes" + (wide ? ".b64" : ".b32") +
                       " [tl_at], $1, [tl_bar];\n}";
    asm_call(b, text, std::string("r,") + (wide ? "l" : "r") + ",r,r", {at, value, bar, rank});
  }
  void mbarrier_arrive_remote(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* rank,
                              llvm::Value* only) const override {
    if (!only) only = b.getTrue();
    // The default semantics (release at CTA scope), as CUTLASS's cluster
    // barriers arrive: what the arrival orders is the arriving threads'
    // reads, already retired. Released at cluster scope it fences every
    // consumer's step: the multicast gemm ran at 0.41 of its speed (perf.md
    // run 85).
    asm_call(b,
             "{\n.reg .pred tl_p;\n.reg .b32 tl_at;\nsetp.ne.u32 tl_p, $2, 0;\n"
             "mapa.shared::cluster.u32 tl_at, $0, $1;\n"
             "@tl_p mbarrier.arrive.shared::cluster.b64 _, [tl_at];\n}",
             "r,r,r", {bar, rank, b.CreateZExt(only, b.getInt32Ty())});
  }
  llvm::Value* barrier_done(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* parity) const override {
    auto* fty = llvm::FunctionType::get(b.getInt32Ty(), {b.getInt32Ty(), b.getInt32Ty()}, false);
    const char* text =
        "{\n.reg .pred tl_done;\nmbarrier.try_wait.parity.shared::cta.b64 tl_done, [$1], $2;\n"
        "selp.u32 $0, 1, 0, tl_done;\n}";
    llvm::Value* r = b.CreateCall(llvm::InlineAsm::get(fty, text, "=r,r,r,~{memory}", true), {bar, parity});
    return b.CreateICmpNE(r, b.getInt32(0));
  }

  // A tensor copy's operands: `first` ones, then the map (a generic
  // address) and its coordinates; and "[$map, {$c0, $c1, ...}]".
  static std::string tensor_operands(std::vector<llvm::Value*>& args, llvm::Value* map,
                                     const std::vector<llvm::Value*>& coords, std::string& cons) {
    std::string box = "[$" + std::to_string(args.size()) + ", {";
    args.push_back(map);
    cons += ",l";
    for (size_t i = 0; i < coords.size(); ++i) {
      box += (i ? ", $" : "$") + std::to_string(args.size());
      args.push_back(coords[i]);
      cons += ",r";
    }
    return box + "}]";
  }
  static std::string bulk_tensor(size_t rank) { return "cp.async.bulk.tensor." + std::to_string(rank) + "d."; }
  void tma_load(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* smem, llvm::Value* bar,
                const std::vector<llvm::Value*>& coords, llvm::Value* multicast) const override {
    std::vector<llvm::Value*> args = {smem, bar};
    std::string cons = "r,r";
    std::string box = tensor_operands(args, map, coords, cons);
    std::string mask;
    if (multicast) {
      mask = ", $" + std::to_string(args.size());
      args.push_back(multicast);
      cons += ",h";
    }
    asm_call(b, bulk_tensor(coords.size()) + "shared::cluster.global.mbarrier::complete_tx::bytes" +
                    (multicast ? ".multicast::cluster" : "") + " [$0], " + box + ", [$1]" + mask + ";",
             cons, args);
  }
  void tma_store(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* smem,
                 const std::vector<llvm::Value*>& coords) const override {
    std::vector<llvm::Value*> args = {smem};
    std::string cons = "r";
    std::string box = tensor_operands(args, map, coords, cons);
    asm_call(b, bulk_tensor(coords.size()) + "global.shared::cta.bulk_group " + box + ", [$0];", cons, args);
  }
  // byval, so that the driver copies the 128 bytes into the parameter
  // space; grid_constant, so that the kernel reads them there (the address
  // is a cvta.param'd generic one) instead of in a local copy.
  void tensor_map_param(llvm::Function& fn, unsigned i) const override {
    llvm::LLVMContext& ctx = fn.getContext();
    fn.addParamAttr(i, llvm::Attribute::getWithByValType(ctx, llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx), 128)));
    fn.addParamAttr(i, llvm::Attribute::getWithAlignment(ctx, llvm::Align(64)));
    fn.addParamAttr(i, llvm::Attribute::get(ctx, "nvvm.grid_constant"));
  }
  void tma_store_commit(llvm::IRBuilder<>& b) const override { asm_call(b, "cp.async.bulk.commit_group;", "", {}); }
  void tma_store_wait(llvm::IRBuilder<>& b, bool read_only) const override {
    asm_call(b, std::string("cp.async.bulk.wait_group") + (read_only ? ".read" : "") + " 0;", "", {});
  }
  void cap_registers(llvm::Function& fn, int regs) const override {
    fn.addFnAttr("nvvm.maxnreg", std::to_string(regs));
  }
  void set_registers(llvm::IRBuilder<>& b, int regs, bool more) const override {
    b.CreateIntrinsic(more ? llvm::Intrinsic::nvvm_setmaxnreg_inc_sync_aligned_u32
                           : llvm::Intrinsic::nvvm_setmaxnreg_dec_sync_aligned_u32,
                      {b.getInt32(regs)});
  }
  bool named_barrier(llvm::IRBuilder<>& b, llvm::Value* id, int threads, bool arrive) const override {
    b.CreateIntrinsic(arrive ? llvm::Intrinsic::nvvm_barrier_cta_arrive_aligned_count
                             : llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count,
                      {id, b.getInt32(threads)});
    return true;
  }

  void barrier(llvm::IRBuilder<>& b) const override {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {b.getInt32(0)});
  }
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v32, int mask) const override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
                             {b.getInt32(-1), v32, b.getInt32(mask), b.getInt32(0x1f)});
  }

  // The access's PTX qualifier: .volatile, else an L1 eviction priority
  // (.L1::evict_last, ...), else a cache operator (.cg, .cs, ...); PTX has
  // no form that combines them.
  static std::string qualifier(const MemoryHints& hints) {
    if (hints.is_volatile) return ".volatile";
    if (!hints.evict.empty()) return ".L1::" + hints.evict;
    return hints.cache;
  }

  // Global accesses are predicated PTX instructions (`@p ld.global.v4.b32`),
  // not branches: consecutive loads of a thread then issue back to back.
  // The value travels as 32-bit words (16-bit for 2-byte accesses; a
  // 1-byte access goes through a 16-bit register as PTX requires).
  llvm::Value* load(llvm::IRBuilder<>& b, llvm::Type* ty, llvm::Value* ptr, llvm::Value* mask, llvm::Value* other,
                    const MemoryHints& hints) const override {
    Words w = words_of(b, ty);
    std::string op = "ld.global" + qualifier(hints) + w.suffix;
    // Outputs $0..$n-1, then the address, the predicate, the `other` words.
    // The outputs are written (by the movs) before the inputs are all read:
    // they must be early-clobber, or they may share an input's register.
    std::string text, cons;
    for (int i = 0; i < w.count; ++i) cons += std::string(i ? "," : "") + "=&" + w.constraint;
    cons += ",l";
    int addr = w.count, pred = w.count + 1, first_other = w.count + (mask ? 2 : 1);
    if (mask) cons += ",b";
    for (int i = 0; i < w.count; ++i) {
      cons += std::string(",") + w.constraint;
      text += "mov." + w.mov + " $" + std::to_string(i) + ", $" + std::to_string(first_other + i) + ";\n\t";
    }
    text += (mask ? "@$" + std::to_string(pred) + " " : "") + op + " " + w.list(0) + ", [$" + std::to_string(addr) + "];";
    std::vector<llvm::Type*> outs(w.count, w.word);
    llvm::Type* ret = w.count == 1 ? w.word : static_cast<llvm::Type*>(llvm::StructType::get(b.getContext(), outs));
    std::vector<llvm::Value*> args = {ptr};
    std::vector<llvm::Type*> arg_types = {ptr->getType()};
    if (mask) args.push_back(mask), arg_types.push_back(b.getInt1Ty());
    for (llvm::Value* o : w.split(b, other)) args.push_back(o), arg_types.push_back(w.word);
    // The asm reads memory: it must stay ordered with the stores and
    // atomics around it. Without a side effect LLVM's machine passes
    // treat it as pure (its operands are registers), merge a load after a
    // store into the load before it (MachineCSE) and hoist it out of loops
    // that write its addresses (MachineLICM). Stores and atomics are
    // side-effecting and clobber memory, so marking loads side-effecting
    // keeps program order between them; ptxas still schedules the loads.
    auto* fty = llvm::FunctionType::get(ret, arg_types, false);
    llvm::Value* r = b.CreateCall(llvm::InlineAsm::get(fty, text, cons, /*hasSideEffects=*/true), args);
    std::vector<llvm::Value*> parts;
    for (int i = 0; i < w.count; ++i) parts.push_back(w.count == 1 ? r : b.CreateExtractValue(r, unsigned(i)));
    return w.join(b, parts, ty);
  }
  void store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr, llvm::Value* mask,
             const MemoryHints& hints) const override {
    Words w = words_of(b, value->getType());
    std::string op = "st.global" + qualifier(hints) + w.suffix;
    // Inputs: the address $0, the words $1..$n, the predicate.
    std::string cons = "l";
    for (int i = 0; i < w.count; ++i) cons += std::string(",") + w.constraint;
    if (mask) cons += ",b";
    std::string text = (mask ? "@$" + std::to_string(w.count + 1) + " " : "") + op + " [$0], " + w.list(1) + ";";
    std::vector<llvm::Value*> args = {ptr};
    for (llvm::Value* v : w.split(b, value)) args.push_back(v);
    if (mask) args.push_back(mask);
    std::vector<llvm::Type*> arg_types;
    for (auto* a : args) arg_types.push_back(a->getType());
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), arg_types, false);
    b.CreateCall(llvm::InlineAsm::get(fty, text, cons + ",~{memory}", /*hasSideEffects=*/true), args);
  }

  llvm::SyncScope::ID sync_scope(llvm::LLVMContext& ctx, MemScope scope) const override {
    if (scope == MemScope::sys) return llvm::SyncScope::System;
    return ctx.getOrInsertSyncScopeID(scope == MemScope::cta ? "block" : "device");
  }

  // LLVM 22's NVPTX back end lowers each atomicrmw that PTX has as one
  // instruction without its order and scope (an acq_rel atomicrmw becomes
  // a relaxed atom.global.add; llvm-project #179553, after 22, fixes it).
  // Those are emitted here as `atom.<sem>.<scope>.global.<op>.<type>` asm
  // that reads and writes memory. The other forms (float min and max,
  // 8- and 16-bit add, min, max and exchange, bf16 add before sm_90) LLVM
  // expands into cmpxchg loops, and its cmpxchg keeps order and scope.
  // 8- and 16-bit and/or/xor LLVM would widen to a 32-bit atomic of the
  // aligned word, losing the order again: they are widened here.
  llvm::Value* atomic_rmw(llvm::IRBuilder<>& b, llvm::AtomicRMWInst::BinOp op, llvm::Value* ptr,
                          llvm::Value* value, MemOrder order, MemScope scope) const override {
    using B = llvm::AtomicRMWInst::BinOp;
    llvm::Type* ty = value->getType();
    unsigned bits = ty->getPrimitiveSizeInBits();
    bool word = ty->isIntegerTy() && (bits == 32 || bits == 64);
    std::string n = std::to_string(bits), form;
    switch (op) {
      case B::Add: if (word) form = "add.u" + n; break;
      case B::Max: case B::Min: if (word) form = std::string(op == B::Max ? "max" : "min") + ".s" + n; break;
      case B::UMax: case B::UMin: if (word) form = std::string(op == B::UMax ? "max" : "min") + ".u" + n; break;
      case B::And: case B::Or: case B::Xor:
        if (ty->isIntegerTy() && bits < 32) return widened_bitwise(b, op, ptr, value, order, scope);
        form = std::string(op == B::And ? "and" : op == B::Or ? "or" : "xor") + ".b" + n;
        break;
      case B::Xchg: if (bits == 32 || bits == 64) form = "exch.b" + n; break;
      case B::FAdd:
        if (ty->isFloatTy() || ty->isDoubleTy()) form = "add.f" + n;
        if (ty->isHalfTy()) form = "add.noftz.f16";
        if (ty->isBFloatTy() && sm_ >= 90) form = "add.noftz.bf16";
        break;
      default: break;
    }
    if (form.empty()) return Target::atomic_rmw(b, op, ptr, value, order, scope);
    return atom(b, form, ptr, value, order, scope);
  }
  // One `atom` on a 16-, 32- or 64-bit value; the asm has side effects and
  // clobbers memory, so LLVM keeps it in order with every other access.
  static llvm::Value* atom(llvm::IRBuilder<>& b, const std::string& form, llvm::Value* ptr, llvm::Value* value,
                           MemOrder order, MemScope scope) {
    static const char* sems[] = {".relaxed", ".acquire", ".release", ".acq_rel"};
    static const char* scopes[] = {".cta", ".gpu", ".sys"};
    unsigned bits = value->getType()->getPrimitiveSizeInBits();
    llvm::Type* it = b.getIntNTy(bits);
    std::string c = bits == 16 ? "h" : bits == 32 ? "r" : "l";
    std::string text = std::string("atom") + sems[int(order)] + scopes[int(scope)] + ".global." + form + " $0, [$1], $2;";
    auto* fty = llvm::FunctionType::get(it, {ptr->getType(), it}, false);
    llvm::Value* old = b.CreateCall(llvm::InlineAsm::get(fty, text, "=" + c + ",l," + c + ",~{memory}", true),
                                    {ptr, b.CreateBitCast(value, it)});
    return b.CreateBitCast(old, value->getType());
  }
  // An 8- or 16-bit and/or/xor as one on its aligned 32-bit word: the
  // other bytes are and-ed with ones, or or-ed / xor-ed with zeros.
  static llvm::Value* widened_bitwise(llvm::IRBuilder<>& b, llvm::AtomicRMWInst::BinOp op, llvm::Value* ptr,
                                      llvm::Value* value, MemOrder order, MemScope scope) {
    using B = llvm::AtomicRMWInst::BinOp;
    llvm::Type* ty = value->getType();
    llvm::Value* addr = b.CreatePtrToInt(ptr, b.getInt64Ty());
    llvm::Value* word_ptr = b.CreateIntToPtr(b.CreateAnd(addr, ~uint64_t(3)), ptr->getType());
    llvm::Value* shift = b.CreateTrunc(b.CreateShl(b.CreateAnd(addr, 3), 3), b.getInt32Ty());
    llvm::Value* v = b.CreateShl(b.CreateZExt(value, b.getInt32Ty()), shift);
    if (op == B::And) {
      uint32_t ones = uint32_t((uint64_t(1) << ty->getPrimitiveSizeInBits()) - 1);
      v = b.CreateOr(v, b.CreateNot(b.CreateShl(b.getInt32(ones), shift)));
    }
    const char* name = op == B::And ? "and.b32" : op == B::Or ? "or.b32" : "xor.b32";
    llvm::Value* old = atom(b, name, word_ptr, v, order, scope);
    return b.CreateTrunc(b.CreateLShr(old, shift), ty);
  }

  llvm::Value* fast_math(llvm::IRBuilder<>& b, ir::OpKind op, llvm::Value* x) const override {
    switch (op) {
      case ir::OpKind::Log2: return b.CreateIntrinsic(llvm::Intrinsic::nvvm_lg2_approx_f, {x});
      case ir::OpKind::Rsqrt: return b.CreateIntrinsic(llvm::Intrinsic::nvvm_rsqrt_approx_f, {x});
      case ir::OpKind::Sin: return b.CreateIntrinsic(llvm::Intrinsic::nvvm_sin_approx_f, {x});
      case ir::OpKind::Cos: return b.CreateIntrinsic(llvm::Intrinsic::nvvm_cos_approx_f, {x});
      case ir::OpKind::Tanh: {
        auto* fty = llvm::FunctionType::get(b.getFloatTy(), {b.getFloatTy()}, false);
        return b.CreateCall(llvm::InlineAsm::get(fty, "tanh.approx.f32 $0, $1;", "=f,f", false), {x});
      }
      default: return nullptr;  // exp2 lowers to ex2.approx; the rest expand
    }
  }

  // div.full.f32 (within 2 ulp over the full range), what Triton's `/`
  // on f32 compiles to: a few instructions instead of div.rn's dozen.
  llvm::Value* fast_divide(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) const override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_div_full, {x, y});
  }

  std::vector<llvm::Value*> matrix_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr,
                                            const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                            const std::vector<llvm::Value*>& c) const override {
    return nvptx::mma_multiply(b, instr, a, bv, c);
  }
  llvm::Value* warpgroup_operand(llvm::IRBuilder<>& b, llvm::Value* addr, int64_t row_bytes, int64_t panel_bytes,
                                 bool k_major) const override {
    return nvptx::wgmma_descriptor(b, addr, row_bytes, panel_bytes, k_major);
  }
  std::vector<llvm::Value*> warpgroup_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr, const WarpgroupA& a,
                                               const SmemOperand& b_op, bool trans_b,
                                               const std::vector<llvm::Value*>& c, bool accumulate) const override {
    return nvptx::wgmma_multiply(b, instr, a, b_op, trans_b, c, accumulate);
  }
  void warpgroup_fence(llvm::IRBuilder<>& b) const override { nvptx::wgmma_fence(b); }
  void warpgroup_commit(llvm::IRBuilder<>& b) const override { nvptx::wgmma_commit(b); }
  std::vector<llvm::Value*> warpgroup_wait(llvm::IRBuilder<>& b, int pending, const std::vector<llvm::Value*>& acc,
                                           bool pinned) const override {
    return nvptx::wgmma_wait(b, pending, acc, pinned);
  }
  void async_proxy_fence(llvm::IRBuilder<>& b) const override { nvptx::fence_proxy_async(b); }
  // Empty inline assembly a 32-bit register at a time (`v` a multiple of
  // 32 bits; else `v` itself): ptxas sees nothing.
  llvm::Value* opaque(llvm::IRBuilder<>& b, llvm::Value* v) const override {
    const llvm::DataLayout& dl = b.GetInsertBlock()->getModule()->getDataLayout();
    uint64_t bits = dl.getTypeSizeInBits(v->getType()).getFixedValue();
    if (bits == 0 || bits % 32) return v;
    llvm::Value* words = b.CreateBitCast(v, llvm::FixedVectorType::get(b.getInt32Ty(), unsigned(bits / 32)));
    auto* barrier =
        llvm::InlineAsm::get(llvm::FunctionType::get(b.getInt32Ty(), {b.getInt32Ty()}, false), "", "=r,0", false);
    for (unsigned k = 0; k < bits / 32; ++k)
      words = b.CreateInsertElement(words, b.CreateCall(barrier, {b.CreateExtractElement(words, k)}), k);
    return b.CreateBitCast(words, v->getType());
  }
  std::vector<llvm::Value*> load_matrix_8x8(llvm::IRBuilder<>& b, llvm::Value* row_ptr, int count,
                                            bool trans) const override {
    return nvptx::ldmatrix(b, row_ptr, count, trans);
  }
  void async_copy(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, int bytes,
                  llvm::Value* pred) const override {
    nvptx::cp_async(b, dst, src, bytes, pred);
  }
  void async_commit(llvm::IRBuilder<>& b) const override { nvptx::cp_async_commit(b); }
  void async_wait(llvm::IRBuilder<>& b, int pending) const override { nvptx::cp_async_wait(b, pending); }

  void print(llvm::IRBuilder<>& b, const std::string& format, const std::vector<llvm::Value*>& args) const override {
    llvm::Module* m = b.GetInsertBlock()->getModule();
    llvm::FunctionCallee vprintf =
        m->getOrInsertFunction("vprintf", llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(), b.getPtrTy()}, false));
    // Arguments are packed in a local buffer, each at its natural alignment.
    std::vector<llvm::Type*> fields;
    for (auto* a : args) fields.push_back(a->getType());
    auto* st = llvm::StructType::get(b.getContext(), fields);
    llvm::IRBuilder<> entry(&b.GetInsertBlock()->getParent()->getEntryBlock(),
                            b.GetInsertBlock()->getParent()->getEntryBlock().begin());
    llvm::Value* buf = entry.CreateAlloca(st);
    for (size_t i = 0; i < args.size(); ++i) b.CreateStore(args[i], b.CreateStructGEP(st, buf, unsigned(i)));
    llvm::Value* fmt = b.CreateGlobalString(format, "fmt", 1);
    b.CreateCall(vprintf, {b.CreateAddrSpaceCast(fmt, b.getPtrTy()), b.CreateAddrSpaceCast(buf, b.getPtrTy())});
  }
  void assert_fail(llvm::IRBuilder<>& b, const std::string& message, const std::string& file,
                   int line) const override {
    print(b, file + ":" + std::to_string(line) + ": device_assert failed: " + message + "\n", {b.getInt32(0)});
    b.CreateIntrinsic(llvm::Intrinsic::trap, {});
  }

  void optimize(llvm::Module& m) const override {
    machines_.with([&](llvm::TargetMachine& tm) { optimize_module(m, tm); });
  }
  std::string emit_assembly(llvm::Module& m) const override {
    return machines_.with([&](llvm::TargetMachine& tm) { return avoid_neg16(emit_assembly_text(m, tm)); });
  }
  std::vector<uint8_t> emit_binary(llvm::Module&) const override { return {}; }

 private:
  std::string arch_;
  int sm_;  // 80, 86, 89, 90
  TargetMachinePool machines_;
};

}  // namespace

// Shared memory per block (opt-in maximum): 163 KiB on sm_80, 99 KiB on
// sm_86/sm_89, 227 KiB on sm_90.
void register_nvptx_targets() {
  struct Arch {
    const char* name;
    int shared_kib;
  };
  for (Arch a : {Arch{"sm_80", 163}, Arch{"sm_86", 99}, Arch{"sm_89", 99}, Arch{"sm_90", 227}, Arch{"sm_90a", 227}})
    register_target(a.name, [a] { return std::make_unique<NvptxTarget>(a.name, a.shared_kib); });
}

}  // namespace tl::codegen
