// The target interface: everything the shared LLVM lowering needs to know
// about a GPU, answered by a back end under backends/: its capability
// record (target_info.h) and the hooks that emit its instructions. If the
// lowering ever has to ask "which vendor?", a hook is missing here.
//
// LLVM-facing: include only from the files that lower to LLVM IR.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/dot_layout.h"
#include "codegen/target_info.h"
#include "tiledsl/detail/ir_types.h"

namespace tl::codegen {

struct MemoryHints {
  std::string cache;   // "", ".ca", ".cg", ".cs", ".lu", ".cv" (load); ".wb", ".cg", ".cs", ".wt" (store)
  std::string evict;   // "", "evict_first", "evict_last", "evict_normal"
  bool is_volatile = false;
};

// An atomic's memory order and scope: the `sem` and `scope` attributes of
// atomic_rmw / atomic_cas (ops.def), as in Triton and the PTX memory model.
enum class MemOrder : uint8_t { relaxed, acquire, release, acq_rel };
enum class MemScope : uint8_t { cta, gpu, sys };

inline llvm::AtomicOrdering llvm_ordering(MemOrder o) {
  switch (o) {
    case MemOrder::relaxed: return llvm::AtomicOrdering::Monotonic;
    case MemOrder::acquire: return llvm::AtomicOrdering::Acquire;
    case MemOrder::release: return llvm::AtomicOrdering::Release;
    case MemOrder::acq_rel: break;
  }
  return llvm::AtomicOrdering::AcquireRelease;
}

// An operand of a warpgroup instruction in shared memory: the descriptor
// of a base address (warpgroup_operand) and a constant byte offset from it
// (a multiple of 16) that the instruction adds. The K steps of a product
// share one base: a descriptor each would be a live 64-bit register each
// (a loop-invariant operand's are hoisted out of its loop).
struct SmemOperand {
  llvm::Value* desc = nullptr;
  int64_t offset = 0;
};

// Operand A of a warpgroup instruction: in shared memory (`smem.desc` set;
// `trans`: stored M-major instead of K-major), or, when `smem.desc` is
// null, in registers: this thread's elements of instr.a's fragment, in its
// register order.
struct WarpgroupA {
  SmemOperand smem;
  bool trans = false;
  std::vector<llvm::Value*> elems;
};

class Target : public TargetInfo {
 public:
  virtual ~Target() = default;
  virtual unsigned global_address_space() const = 0;
  virtual unsigned shared_address_space() const = 0;

  // The module's triple and data layout, and the kernel's attributes.
  virtual void init_module(llvm::Module& m) const = 0;
  virtual void init_kernel(llvm::Function& fn, int threads) const = 0;

  // Hardware indices (i32).
  virtual llvm::Value* thread_id(llvm::IRBuilder<>& b) const = 0;
  virtual llvm::Value* program_id(llvm::IRBuilder<>& b, int axis) const = 0;
  virtual llvm::Value* num_programs(llvm::IRBuilder<>& b, int axis) const = 0;

  // Block-wide barrier (also orders shared memory).
  virtual void barrier(llvm::IRBuilder<>& b) const = 0;
  // Exchanges a 32-bit value with lane (lane ^ mask) of the same warp.
  virtual llvm::Value* shuffle_xor(llvm::IRBuilder<>& b, llvm::Value* v32, int mask) const = 0;

  // Global memory. `ptr` points to the first element of a vector of type
  // `ty` (a scalar or a fixed vector); `mask` is an i1 or null.
  // Masked-off loads yield `other` (same type as `ty`) and touch no memory.
  virtual llvm::Value* load(llvm::IRBuilder<>& b, llvm::Type* ty, llvm::Value* ptr, llvm::Value* mask,
                            llvm::Value* other, const MemoryHints& hints) const = 0;
  virtual void store(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* ptr, llvm::Value* mask,
                     const MemoryHints& hints) const = 0;

  // Atomics on one element at `ptr` (global memory); each returns the old
  // value. sync_scope names the LLVM sync scope of a memory scope. The
  // defaults emit LLVM's atomicrmw and cmpxchg (integer operands) with the
  // order and that scope; a back end whose LLVM drops either overrides.
  virtual llvm::SyncScope::ID sync_scope(llvm::LLVMContext& ctx, MemScope scope) const = 0;
  virtual llvm::Value* atomic_rmw(llvm::IRBuilder<>& b, llvm::AtomicRMWInst::BinOp op, llvm::Value* ptr,
                                  llvm::Value* value, MemOrder order, MemScope scope) const {
    return b.CreateAtomicRMW(op, ptr, value, llvm::MaybeAlign(), llvm_ordering(order),
                             sync_scope(b.getContext(), scope));
  }
  virtual llvm::Value* atomic_cas(llvm::IRBuilder<>& b, llvm::Value* ptr, llvm::Value* cmp, llvm::Value* value,
                                  MemOrder order, MemScope scope) const {
    // A failed compare stores nothing: it keeps only the acquire half.
    llvm::AtomicOrdering failure = order == MemOrder::acquire || order == MemOrder::acq_rel
                                       ? llvm::AtomicOrdering::Acquire
                                       : llvm::AtomicOrdering::Monotonic;
    auto* x = b.CreateAtomicCmpXchg(ptr, cmp, value, llvm::MaybeAlign(), llvm_ordering(order), failure,
                                    sync_scope(b.getContext(), scope));
    return b.CreateExtractValue(x, 0);
  }

  // f32 math the target has a fast instruction for; null means "use the
  // generic expansion". `op` is one of the unary math OpKinds.
  virtual llvm::Value* fast_math(llvm::IRBuilder<>& b, ir::OpKind op, llvm::Value* x) const = 0;
  // f32 division x / y as the target's Triton-compatible full-range
  // division (within 2 ulp), or null for the correctly rounded one.
  virtual llvm::Value* fast_divide(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) const { return nullptr; }

  // ---- Matrix units (dot): the instructions matrix_instr and
  // warpgroup_instr (target_info.h) chose.
  // One instruction: returns c + a x b. `a`, `b`, `c` hold one element per
  // register of instr's fragment layouts, in their register order (a and b
  // in instr.in's register type, c in instr.acc's); the result like c.
  virtual std::vector<llvm::Value*> matrix_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr,
                                                    const std::vector<llvm::Value*>& a,
                                                    const std::vector<llvm::Value*>& bv,
                                                    const std::vector<llvm::Value*>& c) const {
    throw Error("internal: target " + name + " has no matrix instructions");
  }

  // What a warpgroup instruction takes for an operand in shared memory:
  // its first element at `addr` (a shared address, i32) in a tile of
  // swizzled panels `row_bytes` wide (32, 64 or 128 bytes, SmemTile in
  // lowerer.h), `panel_bytes` apart; `k_major`: K runs along the panels'
  // rows.
  virtual llvm::Value* warpgroup_operand(llvm::IRBuilder<>& b, llvm::Value* addr, int64_t row_bytes,
                                         int64_t panel_bytes, bool k_major) const {
    throw Error("internal: target " + name + " has no warpgroup instructions");
  }
  // Issues a warpgroup instruction: c + A x B (A x B when not
  // `accumulate`: c's registers are then only where the result goes) with
  // B described by a shared-memory descriptor (warpgroup_operand) and A by
  // one too or by this thread's registers (WarpgroupA); `trans_b`: B is
  // stored N-major instead of K-major. The result is only valid after
  // warpgroup_wait, which takes and returns the accumulators.
  virtual std::vector<llvm::Value*> warpgroup_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr,
                                                       const WarpgroupA& a, const SmemOperand& b_op, bool trans_b,
                                                       const std::vector<llvm::Value*>& c, bool accumulate) const {
    throw Error("internal: target " + name + " has no warpgroup instructions");
  }
  // Before the first warpgroup instruction that reads registers written
  // since; after the instructions: commit them as a group.
  virtual void warpgroup_fence(llvm::IRBuilder<>& b) const {}
  virtual void warpgroup_commit(llvm::IRBuilder<>& b) const {}
  // Waits until at most `pending` groups are in flight; `acc` passes
  // through, so that nothing reads it earlier. `pinned`: where it stands,
  // not moved earlier by the target's assembler (warp_specialize.h).
  virtual std::vector<llvm::Value*> warpgroup_wait(llvm::IRBuilder<>& b, int pending,
                                                   const std::vector<llvm::Value*>& acc, bool pinned = false) const {
    return acc;
  }
  // Makes this thread's shared-memory writes (stores, async copies that
  // have landed) visible to the asynchronous proxy the warpgroup
  // instructions read through; a barrier then extends that to the block.
  virtual void async_proxy_fence(llvm::IRBuilder<>& b) const {}
  // `v` through an instruction the optimizer cannot see into and that
  // emits nothing (an empty inline assembly statement): a value it must
  // not rewrite in terms of what it was made from. Default: `v` itself.
  virtual llvm::Value* opaque(llvm::IRBuilder<>& b, llvm::Value* v) const { return v; }

  // ---- Shared memory helpers for matrix operands and pipelining.
  // Loads `count` (1, 2 or 4) 8x8 matrices of 16-bit elements from shared
  // memory: lane l passes the address of row l % 8 of matrix l / 8 (each row
  // 16 contiguous bytes). Lane l receives, per matrix, one 32-bit word with
  // elements (l / 4, 2 (l % 4) + {0, 1}), or with `trans` the elements
  // (2 (l % 4) + {0, 1}, l / 4). Empty when the target has no such load
  // (has_matrix_load_8x8).
  virtual std::vector<llvm::Value*> load_matrix_8x8(llvm::IRBuilder<>& b, llvm::Value* row_ptr, int count,
                                                    bool trans) const {
    return {};
  }
  // Asynchronous copies from global to shared memory: `bytes` (4, 8 or 16)
  // from `src` to `dst`, or zeros when `pred` is false (reading nothing).
  // Copies issued since the last commit form a group; wait(n) returns when
  // at most n groups are still in flight (this thread's copies; a barrier
  // then makes them visible to the block). Targets with has_async_copy.
  virtual void async_copy(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, int bytes, llvm::Value* pred) const {
    throw Error("internal: target " + name + " has no asynchronous copies");
  }
  virtual void async_commit(llvm::IRBuilder<>& b) const {}
  virtual void async_wait(llvm::IRBuilder<>& b, int pending) const {}

  // Thread-block clusters (max_cluster_ctas): the kernel's cluster size,
  // this CTA's rank in its cluster, a barrier of every thread of the
  // cluster; send writes a 4- or 8-byte value at address `at` in the shared
  // memory of CTA `rank` and counts it on that CTA's mbarrier `bar`
  // (addresses as in this CTA).
  [[noreturn]] void no_clusters() const { throw Error("internal: target " + name + " has no clusters"); }
  virtual void set_cluster_size(llvm::Function& fn, int ctas) const {
    throw Error("target " + name + " has no thread-block clusters (num_ctas > 1)");
  }
  virtual llvm::Value* cluster_rank(llvm::IRBuilder<>& b) const { return b.getInt32(0); }
  // `aligned`: every thread of a warp runs it together (the cheaper form).
  virtual void cluster_barrier(llvm::IRBuilder<>& b, bool aligned = true) const {}
  virtual void send_to_cta(llvm::IRBuilder<>& b, llvm::Value* at, llvm::Value* value, llvm::Value* bar,
                           llvm::Value* rank) const {
    no_clusters();
  }

  // ---- Transaction mbarriers (clusters' exchanges, has_tma): `bar` is
  // the shared address (i32) of a 64-bit mbarrier. One thread initializes
  // it for `count` arrivals a phase, then fences the initialization
  // (fence_barrier_init) before another thread or CTA may use it;
  // expect_bytes is one arrival that also makes the current phase wait
  // for `bytes` (i32) bytes of transactions; arrive is one arrival of the
  // thread; barrier_done tests whether the phase of parity `parity` (i32,
  // 0 or 1) has completed.
  [[noreturn]] void no_mbarriers() const { throw Error("internal: target " + name + " has no transaction mbarriers"); }
  virtual void mbarrier_init(llvm::IRBuilder<>& b, llvm::Value* bar, int count) const { no_mbarriers(); }
  virtual void fence_barrier_init(llvm::IRBuilder<>& b) const { no_mbarriers(); }
  // Ends the mbarrier at `bar` (its bytes may then be initialized again).
  virtual void mbarrier_inval(llvm::IRBuilder<>& b, llvm::Value* bar) const { no_mbarriers(); }
  virtual void expect_bytes(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* bytes) const { no_mbarriers(); }
  // `only` (i1, optional): the threads that arrive, the others doing
  // nothing, without a branch (a branch after a warpgroup wait makes the
  // assembler serialize the loop's warpgroup multiplies).
  virtual void mbarrier_arrive(llvm::IRBuilder<>& b, llvm::Value* bar, int count, llvm::Value* only = nullptr) const {
    no_mbarriers();
  }
  virtual llvm::Value* barrier_done(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* parity) const {
    no_mbarriers();
  }
  // One arrival on the mbarrier at `bar` (an address in this CTA) in CTA
  // `rank` (i32) of the cluster, released at cluster scope; `only` as for
  // mbarrier_arrive.
  virtual void mbarrier_arrive_remote(llvm::IRBuilder<>& b, llvm::Value* bar, llvm::Value* rank,
                                      llvm::Value* only = nullptr) const {
    no_clusters();
  }

  // ---- Tensor copies (has_tma), issued by one thread. `map` is the
  // generic address (i64) of a 128-byte tensor map in global, constant or
  // kernel-parameter memory; `coords` (i32) are the box's first element,
  // innermost dimension first; `smem` the shared address (i32) of the box
  // as the map's swizzle stores it. A load's bytes count against `bar`'s
  // current phase; a store is done when store_wait returns: its shared
  // memory read, and (unless `read_only`) its global writes visible.
  // `multicast` (i16, optional): the CTAs of the cluster whose shared
  // memory (at `smem`) the box lands in, each counting it on its mbarrier
  // at `bar`, one bit a rank.
  virtual void tma_load(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* smem, llvm::Value* bar,
                        const std::vector<llvm::Value*>& coords, llvm::Value* multicast = nullptr) const {
    no_mbarriers();
  }
  virtual void tma_store(llvm::IRBuilder<>& b, llvm::Value* map, llvm::Value* smem,
                         const std::vector<llvm::Value*>& coords) const {
    no_mbarriers();
  }
  // Closes the group of the tensor stores this thread issued since the last.
  virtual void tma_store_commit(llvm::IRBuilder<>& b) const { no_mbarriers(); }
  // Until every group this thread closed has read its shared memory
  // (`read_only`) or also written global memory.
  virtual void tma_store_wait(llvm::IRBuilder<>& b, bool read_only) const { no_mbarriers(); }
  // Makes parameter `i` of `fn` (a pointer) a tensor map passed by value:
  // 128 bytes, 64-byte aligned, which the kernel reads in place (its
  // address is what tma_load takes).
  virtual void tensor_map_param(llvm::Function& fn, unsigned i) const { no_mbarriers(); }

  // ---- Warp specialization (has_warp_specialization): the registers a
  // thread of `fn` has at its entry, and those of the warpgroups that
  // then run set_registers (all their threads alike): more, or fewer
  // (`more` false) than they had.
  virtual void cap_registers(llvm::Function& fn, int regs) const {
    throw Error("internal: target " + name + " has no warp specialization");
  }
  virtual void set_registers(llvm::IRBuilder<>& b, int regs, bool more) const {
    throw Error("internal: target " + name + " has no warp specialization");
  }

  // A barrier of the `threads` threads (a multiple of the warp size) that
  // reach barrier `id` (1-15, an i32 the same in each warp); with `arrive`
  // the thread counts itself in and goes on without waiting. False when
  // the target has none.
  virtual bool named_barrier(llvm::IRBuilder<>& b, llvm::Value* id, int threads, bool arrive = false) const {
    return false;
  }

  // Device-side printf (format, args) and assertion failure (message,
  // file, line). Printing may be unsupported: then throw tl::Error.
  virtual void print(llvm::IRBuilder<>& b, const std::string& format, const std::vector<llvm::Value*>& args) const = 0;
  virtual void assert_fail(llvm::IRBuilder<>& b, const std::string& message, const std::string& file,
                           int line) const = 0;

  // Runs the target's optimization pipeline (O3) over the lowered module.
  virtual void optimize(llvm::Module& m) const = 0;

  // Back end: optimized module to assembly text, and to a loadable binary
  // (empty when the driver loads the assembly itself).
  virtual std::string emit_assembly(llvm::Module& m) const = 0;
  virtual std::vector<uint8_t> emit_binary(llvm::Module& m) const = 0;
};

// Back ends register their targets once; lookups throw tl::Error listing
// what exists.
using TargetFactory = std::function<std::unique_ptr<Target>()>;
void register_target(const std::string& name, TargetFactory factory);
const Target& get_target(const std::string& name);

// Defined in backends/: registers every target of this build.
void register_builtin_targets();

}  // namespace tl::codegen
