// AMD targets (gfx90a, gfx942: CDNA, wave64; gfx1100: RDNA3, wave32) for the
// shared lowering: work-item and work-group ids, the grid size from the HSA
// dispatch packet, workgroup barriers with the LDS fences LLVM needs, cross-
// lane exchanges (DPP where one instruction does it, else ds_bpermute), dot
// on the matrix units (MFMA, WMMA: matrix_unit.h), and emission of AMDGCN
// assembly and of a loadable code object: LLVM's AMDGPU back end writes a
// relocatable object, which lld (linked into this library, run in-process)
// turns into the ELF shared object that the HIP runtime loads.
//
// No AMD GPU is reachable from where this is developed: the code objects are
// checked by reading their ELF headers, kernel descriptors and disassembly
// (tests/unit/test_amdgpu.cpp).
#include <fstream>
#include <iterator>
#include <mutex>

#include <lld/Common/Driver.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "amdgpu/matrix_unit.h"
#include "codegen/lower_llvm.h"
#include "codegen/target.h"

LLD_HAS_DRIVER(elf)

namespace tl::codegen {
namespace {

// Address spaces of the AMDGPU back end.
constexpr unsigned kGlobalAS = 1;
constexpr unsigned kLocalAS = 3;     // LDS ("shared memory")
constexpr unsigned kConstantAS = 4;  // where the dispatch packet lives

// Offsets in hsa_kernel_dispatch_packet_t (HSA runtime spec, 2.9.6): u16
// workgroup_size_{x,y,z} at 4, 6, 8 and u32 grid_size_{x,y,z} at 12, 16, 20.
// The grid size counts work-items, not work-groups.
constexpr int kPacketWorkgroupSize = 4;
constexpr int kPacketGridSize = 12;

// DPP controls (AMD ISA manuals, "DPP_CTRL"): quad_perm selects, for each
// lane of a group of four, the lane it reads: lane i reads field i (2 bits).
// row_xmask:m (gfx10+) reads lane (i ^ m) within a row of 16 lanes.
constexpr int quad_perm(int l0, int l1, int l2, int l3) { return l0 | l1 << 2 | l2 << 4 | l3 << 6; }
constexpr int kDppQuadXor1 = quad_perm(1, 0, 3, 2);  // 0xB1
constexpr int kDppQuadXor2 = quad_perm(2, 3, 0, 1);  // 0x4E
constexpr int kDppRowXmask0 = 0x160;

class AmdgpuTarget final : public Target {
 public:
  AmdgpuTarget(std::string arch, int wave_size) : arch_(std::move(arch)), wave_size_(wave_size) {
    // The capability record. No LDS matrix load and no asynchronous copies
    // yet: the shared lowering converts operands with plain LDS stores and
    // loads.
    name = arch_;
    asm_language = "amdgcn";
    device = "hip";
    warp_size = wave_size;
    max_shared_bytes = 64 * 1024;  // LDS per work-group on CDNA2/CDNA3 and RDNA3
    matrix_instr = [arch = arch_](DType in, bool allow_tf32) { return amdgpu::matrix_instr(arch, in, allow_tf32); };
    static std::once_flag once;
    std::call_once(once, [] {
      LLVMInitializeAMDGPUTargetInfo();
      LLVMInitializeAMDGPUTarget();
      LLVMInitializeAMDGPUTargetMC();
      LLVMInitializeAMDGPUAsmPrinter();
      LLVMInitializeAMDGPUAsmParser();  // inline assembly (tl::inline_asm_elementwise) in code objects
    });
    llvm::Triple triple("amdgcn-amd-amdhsa");
    std::string err;
    const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!t) throw Error("the AMDGPU back end is missing from this LLVM: " + err);
    // gfx10+ parts run wave32 unless asked for wave64; CDNA parts are wave64
    // only. Spell the choice out so the lowering's warp size and the
    // hardware's agree whatever LLVM's default becomes.
    std::string features = wave_size == 32 ? "+wavefrontsize32" : "";
    if (wave_size == 32 && arch_.rfind("gfx9", 0) == 0) throw Error("internal: " + arch_ + " has no wave32 mode");
    machines_.init([t, triple, arch = arch_, features] {
      std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
          triple, arch, features, llvm::TargetOptions(), std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
      if (!tm) throw Error("LLVM cannot create a target machine for " + arch);
      return tm;
    });
  }

  unsigned global_address_space() const override { return kGlobalAS; }
  unsigned shared_address_space() const override { return kLocalAS; }

  void init_module(llvm::Module& m) const override {
    m.setTargetTriple(machines_.info().getTargetTriple());
    m.setDataLayout(machines_.info().createDataLayout());
    // LLVM 22 writes code object V6 by default; V5 is what current ROCm
    // releases load (the V5 kernel descriptor and implicit-argument layout).
    m.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", 500);
  }
  void init_kernel(llvm::Function& fn, int threads) const override {
    fn.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
    // The launch always uses blocks of exactly `threads` work-items; LLVM
    // sizes registers (and the occupancy it aims for) from this bound.
    fn.addFnAttr("amdgpu-flat-work-group-size", "1," + std::to_string(threads));
    // Grids are whole numbers of blocks (hipModuleLaunchKernel takes block
    // counts), so no work-group is partial.
    fn.addFnAttr("uniform-work-group-size", "true");
  }

  llvm::Value* thread_id(llvm::IRBuilder<>& b) const override {
    return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_workitem_id_x, {});
  }
  llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) const override {
    static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::amdgcn_workgroup_id_x,
                                              llvm::Intrinsic::amdgcn_workgroup_id_y,
                                              llvm::Intrinsic::amdgcn_workgroup_id_z};
    return b.CreateIntrinsic(ids[axis], {});
  }
  // The hardware has no "number of work-groups" register: the dispatch
  // packet holds the grid size in work-items and the work-group size, so
  // the count is ceil(grid / group) (exact for our uniform grids; the
  // rounding keeps it right for a partial last group too).
  llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) const override {
    llvm::Value* packet = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_dispatch_ptr, {});
    auto invariant_load = [&](llvm::Type* ty, int offset, int align) {
      llvm::Value* p = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), packet, uint64_t(offset));
      llvm::LoadInst* ld = b.CreateAlignedLoad(ty, p, llvm::Align(align));
      // The packet does not change during the dispatch.
      ld->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b.getContext(), {}));
      return ld;
    };
    llvm::Value* grid = invariant_load(b.getInt32Ty(), kPacketGridSize + 4 * axis, 4);
    llvm::Value* group = b.CreateZExt(invariant_load(b.getInt16Ty(), kPacketWorkgroupSize + 2 * axis, 2), b.getInt32Ty());
    return b.CreateUDiv(b.CreateAdd(grid, b.CreateSub(group, b.getInt32(1))), group, "num_programs");
  }

  // A work-group barrier does not order LDS by itself in LLVM's memory model:
  // the release fence makes this wave's LDS (and global) writes visible to
  // the work-group before it arrives, the acquire fence keeps later reads
  // after it.
  void barrier(llvm::IRBuilder<>& b) const override {
    llvm::SyncScope::ID workgroup = b.getContext().getOrInsertSyncScopeID("workgroup");
    b.CreateFence(llvm::AtomicOrdering::Release, workgroup);
    b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {});
    b.CreateFence(llvm::AtomicOrdering::Acquire, workgroup);
  }

  // Lane (lane ^ mask) of the same wave. DPP moves within a row in one VALU
  // instruction: quad_perm covers masks 1 and 2 on every part, row_xmask
  // every mask below 16 on gfx10+. Other masks go through ds_bpermute, which
  // addresses any lane of the wave (all 64 on wave64) by byte: lane * 4.
  llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v32, int mask) const override {
    if (mask <= 0 || mask >= wave_size_)
      throw Error("internal: shuffle_xor mask " + std::to_string(mask) + " outside a wave of " +
                  std::to_string(wave_size_));
    int dpp = -1;
    if (mask == 1) dpp = kDppQuadXor1;
    else if (mask == 2) dpp = kDppQuadXor2;
    else if (mask < 16 && has_row_xmask()) dpp = kDppRowXmask0 + mask;
    if (dpp >= 0) {
      // All rows and banks write; every source lane exists within the row.
      return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_update_dpp, {b.getInt32Ty()},
                               {llvm::PoisonValue::get(b.getInt32Ty()), v32, b.getInt32(dpp), b.getInt32(0xf),
                                b.getInt32(0xf), b.getFalse()});
    }
    llvm::Value* source = b.CreateXor(lane_id(b), b.getInt32(mask));
    return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {}, {b.CreateShl(source, 2), v32});
  }

  llvm::Value* load(llvm::IRBuilder<>& b, llvm::Type* ty, llvm::Value* ptr, llvm::Value* mask, llvm::Value* other,
                    const MemoryHints& hints) const override {
    return branch_masked_load(b, ty, ptr, mask, other, hints.is_volatile);
  }
  void store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr, llvm::Value* mask,
             const MemoryHints& hints) const override {
    branch_masked_store(b, value, ptr, mask, hints.is_volatile);
  }

  // Atomics are LLVM's atomicrmw / cmpxchg (the AMDGPU back end lowers
  // order and scope itself): the AMDGPU memory model's sync scopes.
  llvm::SyncScope::ID sync_scope(llvm::LLVMContext& ctx, MemScope scope) const override {
    if (scope == MemScope::sys) return llvm::SyncScope::System;
    return ctx.getOrInsertSyncScopeID(scope == MemScope::cta ? "workgroup" : "agent");
  }

  // dot: MFMA (gfx90a, gfx942) or WMMA (gfx1100), operands through LDS
  // (amdgpu/matrix_unit.cpp).
  std::vector<llvm::Value*> matrix_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr,
                                            const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                            const std::vector<llvm::Value*>& c) const override {
    return amdgpu::matrix_multiply(b, instr, a, bv, c);
  }

  // LLVM's AMDGPU lowering of llvm.exp2/log2/sqrt/sin/cos is native
  // (v_exp_f32, v_log_f32, v_sqrt_f32, v_sin_f32, v_cos_f32, with denormal
  // scaling), so the generic path suits them; llvm.tanh has no lowering and
  // the shared expansion through exp2 covers it.
  llvm::Value* fast_math(llvm::IRBuilder<>&, ir::OpKind, llvm::Value*) const override { return nullptr; }

  void print(llvm::IRBuilder<>&, const std::string&, const std::vector<llvm::Value*>&) const override {
    throw Error("device_print is not supported on AMD targets yet (" + arch_ +
                "): the HIP printf buffer protocol is not implemented; run the kernel on the interp device to print");
  }
  // No message (that needs the printf buffer): the trap stops the dispatch
  // and the runtime reports a queue error.
  void assert_fail(llvm::IRBuilder<>& b, const std::string&, const std::string&, int) const override {
    b.CreateIntrinsic(llvm::Intrinsic::trap, {});
  }

  void optimize(llvm::Module& m) const override {
    machines_.with([&](llvm::TargetMachine& tm) { optimize_module(m, tm); });
  }
  // Code generation rewrites the IR it runs on (LDS and kernel-argument
  // lowering), and the driver asks for assembly and binary from the same
  // module: each emission works on its own copy.
  std::string emit_assembly(llvm::Module& m) const override {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
    return machines_.with([&](llvm::TargetMachine& tm) { return emit_assembly_text(*copy, tm); });
  }
  std::vector<uint8_t> emit_binary(llvm::Module& m) const override {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
    std::vector<uint8_t> object = machines_.with([&](llvm::TargetMachine& tm) { return emit_object_file(*copy, tm); });
    return link_code_object(object, m.getName().str());
  }

 private:
  bool has_row_xmask() const { return arch_.rfind("gfx9", 0) != 0; }

  // This lane's index in its wave: the number of lanes below it.
  llvm::Value* lane_id(llvm::IRBuilder<>& b) const {
    llvm::Value* lo = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_lo, {}, {b.getInt32(-1), b.getInt32(0)});
    if (wave_size_ == 32) return lo;
    return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_hi, {}, {b.getInt32(-1), lo});
  }

  // The relocatable object -> a code object (an ELF shared object), linked by
  // lld in this process. lld reads and writes files, so both go through
  // temporary files; its state is global, so links are serialized. lldMain
  // (rather than lld::elf::link) resets that state after every link, which
  // is what makes a second link in the same process work.
  static std::vector<uint8_t> link_code_object(const std::vector<uint8_t>& object, const std::string& kernel) {
    static std::mutex lld_mu;
    llvm::SmallString<128> in_path, out_path;
    int in_fd = -1;
    if (auto ec = llvm::sys::fs::createTemporaryFile("tiledsl-" + kernel, "o", in_fd, in_path))
      throw Error("cannot create a temporary file for the AMDGPU link: " + ec.message());
    llvm::FileRemover remove_in(in_path);
    {
      llvm::raw_fd_ostream os(in_fd, /*shouldClose=*/true);
      os.write(reinterpret_cast<const char*>(object.data()), object.size());
      os.close();
      if (os.has_error()) throw Error("cannot write " + in_path.str().str() + ": " + os.error().message());
    }
    if (auto ec = llvm::sys::fs::createTemporaryFile("tiledsl-" + kernel, "hsaco", out_path))
      throw Error("cannot create a temporary file for the AMDGPU link: " + ec.message());
    llvm::FileRemover remove_out(out_path);

    std::vector<const char*> args = {"ld.lld", "-flavor", "gnu", "-m", "elf64_amdgpu", "-shared", "--no-undefined",
                                     "--threads=1", "-o", out_path.c_str(), in_path.c_str()};
    std::string log;
    llvm::raw_string_ostream log_os(log);
    lld::Result r;
    {
      std::lock_guard<std::mutex> lock(lld_mu);
      r = lld::lldMain(args, log_os, log_os, {{lld::Gnu, &lld::elf::link}});
    }
    if (r.retCode != 0 || !r.canRunAgain)
      throw Error("lld could not link the AMDGPU code object of kernel '" + kernel + "' (exit " +
                  std::to_string(r.retCode) + "): " + log);
    std::ifstream f(out_path.c_str(), std::ios::binary);
    std::vector<uint8_t> code_object((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (code_object.empty()) throw Error("lld wrote an empty AMDGPU code object for kernel '" + kernel + "'");
    return code_object;
  }

  std::string arch_;
  int wave_size_;
  TargetMachinePool machines_;
};

}  // namespace

void register_amdgpu_targets() {
  struct Arch {
    const char* name;
    int wave_size;
  };
  for (Arch a : {Arch{"gfx90a", 64}, Arch{"gfx942", 64}, Arch{"gfx1100", 32}})
    register_target(a.name, [a] { return std::make_unique<AmdgpuTarget>(a.name, a.wave_size); });
}

}  // namespace tl::codegen
