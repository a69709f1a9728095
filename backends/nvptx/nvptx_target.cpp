// NVIDIA targets (sm_80 … sm_90a) for the shared lowering: special
// registers, barriers, warp shuffles, fast f32 math, vprintf, and PTX
// emission through LLVM's NVPTX back end. The driver JIT-links the PTX.
#include <mutex>

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/lower_llvm.h"
#include "codegen/target.h"

namespace tl::codegen {
namespace {

using llvm::Intrinsic::ID;

class NvptxTarget final : public Target {
 public:
  NvptxTarget(std::string arch, int shared_kib) : arch_(std::move(arch)), shared_bytes_(shared_kib * 1024) {
    static std::once_flag once;
    std::call_once(once, [] {
      LLVMInitializeNVPTXTargetInfo();
      LLVMInitializeNVPTXTarget();
      LLVMInitializeNVPTXTargetMC();
      LLVMInitializeNVPTXAsmPrinter();
    });
    llvm::Triple triple("nvptx64-nvidia-cuda");
    std::string err;
    const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!t) throw Error("the NVPTX back end is missing from this LLVM: " + err);
    // PTX 8.6: accepted by ptxas 13 and by the 580 driver; sm_90a needs the
    // CPU name itself to print ".target sm_90a".
    tm_.reset(t->createTargetMachine(triple, arch_, "+ptx86", llvm::TargetOptions(), std::nullopt, std::nullopt,
                                     llvm::CodeGenOptLevel::Aggressive));
  }

  std::string name() const override { return arch_; }
  int warp_size() const override { return 32; }
  unsigned global_address_space() const override { return 1; }
  unsigned shared_address_space() const override { return 3; }
  int max_shared_bytes() const override { return shared_bytes_; }

  void init_module(llvm::Module& m) const override {
    m.setTargetTriple(tm_->getTargetTriple());
    m.setDataLayout(tm_->createDataLayout());
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

  void barrier(llvm::IRBuilder<>& b) const override {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {b.getInt32(0)});
  }
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v32, int mask) const override {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
                             {b.getInt32(-1), v32, b.getInt32(mask), b.getInt32(0x1f)});
  }

  llvm::Value* load(llvm::IRBuilder<>& b, llvm::Type* ty, llvm::Value* ptr, llvm::Value* mask, llvm::Value* other,
                    const MemoryHints& hints) const override {
    return branch_masked_load(b, ty, ptr, mask, other, hints.is_volatile);
  }
  void store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr, llvm::Value* mask,
             const MemoryHints& hints) const override {
    branch_masked_store(b, value, ptr, mask, hints.is_volatile);
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
    std::lock_guard<std::mutex> lock(mu_);
    optimize_module(m, *tm_);
  }
  std::string emit_assembly(llvm::Module& m) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return emit_assembly_text(m, *tm_);
  }
  std::vector<uint8_t> emit_binary(llvm::Module&) const override { return {}; }

 private:
  std::string arch_;
  int shared_bytes_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  mutable std::mutex mu_;
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
