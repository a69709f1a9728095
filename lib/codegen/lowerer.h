// The lowering's state and steps (private to lib/codegen): one Lowerer
// walks a function of GPU IR and emits LLVM IR for one target. Its parts
// live in one file per concern:
//   lower_llvm.cpp     values, layouts and conversions, the entry point;
//                      the table of every op's lowering (Lowerer::pattern)
//                      and the leaves', constants' and shape ops'
//   lower_elementwise.cpp  elementwise ops and casts
//   lower_memory.cpp   loads, stores, atomics; shared-memory buffers,
//                      asynchronous copies and their waits
//   lower_reduce.cpp   reductions and scans
//   lower_dot.cpp      dot: matrix instructions, shared-memory operands
//   lower_control.cpp  loops and conditionals
// LLVM-facing: include only from those files.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <unordered_map>

#include <llvm/IR/Intrinsics.h>

#include "codegen/lower_llvm.h"
#include "codegen/pipeline_plan.h"
#include "codegen/select_dot_instructions.h"
#include "codegen/swizzled_tile.h"
#include "codegen/shared_sizes.h"

namespace tl::codegen::lowering {

using ir::Op;
using ir::OpKind;
using llvm::IRBuilder;
using Regs = std::vector<llvm::Value*>;

[[noreturn]] inline void unsupported(const Op& op, const std::string& what) {
  throw Error(op.loc.str() + ": '" + std::string(op.name()) + "' " + what);
}

inline int ilog2(int64_t v) { return std::countr_zero(uint64_t(v)); }

inline bool is_f8(DType d) { return d == DType::f8e4m3 || d == DType::f8e5m2; }

// A swizzled tile in shared memory (swizzled_tile.h) at `base`, seen
// possibly transposed.
struct SmemTile : SwizzledTile {
  llvm::Value* base = nullptr;  // first byte (i8 pointer in shared memory)
  bool transposed = false;      // the value is the transpose of what is stored

  SmemTile() = default;
  SmemTile(const SwizzledTile& t) : SwizzledTile(t) {}  // NOLINT: a tile at no base yet
  static SmemTile plan(int64_t d0, int64_t d1, int contiguous, int elem_bytes) {
    return SwizzledTile::plan(d0, d1, contiguous, elem_bytes);
  }
};

class Lowerer {
 public:
  // Loops are pipelined as their schedule says (schedule_loops.h).
  Lowerer(llvm::LLVMContext& ctx, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, const Target& target)
      : ctx_(ctx), plan_(plan), axis_(axis), t_(target), b_(ctx) {}

  LoweredKernel run(const ir::Function& fn, const std::string& name);

 private:

  // ------------------------------------------------------------------ types
  llvm::Type* elem_type(DType d, bool is_ptr = false);
  llvm::Type* value_type(const ir::Type& t) { return elem_type(t.dtype, t.is_ptr); }
  // In memory an i1 is a byte.
  llvm::Type* memory_type(DType d) { return d == DType::i1 ? b_.getInt8Ty() : elem_type(d); }

  // ------------------------------------------------------------ layout math
  std::vector<llvm::Value*> hw_coords_of(const LinearLayout& l, const std::string& in);  // lane or warp
  std::vector<llvm::Value*> hw_coords(const LinearLayout& l);
  static LinearLayout::Coords reg_coords(const LinearLayout& l, int r) { return l.apply({{kReg, r}}); }
  std::vector<int> run_leaders(const ir::Value* v);
  void start_cluster(const ir::Function& fn);
  void init_cluster_exchange();
  llvm::Value* cluster_bar(int k);
  llvm::Value* coord(const LinearLayout& l, int d, llvm::Value* hw, int32_t reg);
  int num_regs(const LinearLayout& l) { return l.in_size(kReg); }
  llvm::Value* flat_index(const std::vector<llvm::Value*>& hw, const LinearLayout::Coords& reg,
                          const std::vector<int64_t>& shape);
  llvm::Value* owner_predicate(const LinearLayout& l, bool within_cta = false);
  std::vector<bool> duplicate_regs(const LinearLayout& l);

  // ----------------------------------------------------------- shared memory
  // Every block-wide barrier goes through here, counted per op: an op that
  // exchanges values through its scratch (exchanges_through_scratch)
  // writes, waits at a barrier, reads. insert-barriers puts the barrier
  // before its first writes where one is needed; one before a later
  // exchange of the same op is scratch_fence's. lower_op keeps the promise
  // the pass relies on: such an op has a barrier of its own, after its last
  // writes.
  void barrier();
  void sync_threads();  // the same barrier, not counted as the op's exchange
  void scratch_fence() {
    if (op_barriers_ > 0) barrier();
  }
  void reduce_across_ctas(const Op& op, const LinearLayout& s, const std::vector<int>& block_bits,
                          std::vector<std::vector<llvm::Value*>>& acc, const std::vector<int64_t>& rshape);
  llvm::Value* smem_ptr(llvm::Value* byte_offset);
  // `bytes` of scratch from the scratch base, for the op being lowered
  // (within its scratch_bound, shared_sizes.h).
  void need_smem(int64_t bytes);
  void check_within_ctas(const LinearLayout& from, const LinearLayout& to);
  void store_row_major(const Regs& regs, const LinearLayout& from, const std::vector<int64_t>& shape, llvm::Type* ty);
  Regs load_row_major(const LinearLayout& to, const std::vector<int64_t>& shape, llvm::Type* ty);
  std::vector<llvm::Value*> part_coords(const LinearLayout& l, const std::vector<int64_t>& shape,
                                        const std::vector<int64_t>& part);
  int row_major_run(const LinearLayout& l, const std::vector<int64_t>& shape, llvm::Type* ty);
  llvm::Value* row_major_ptr(const std::vector<llvm::Value*>& hw, const LinearLayout& l, int r,
                             const std::vector<int64_t>& shape, llvm::Type* ty);
  void lower_local_alloc(const Op& op);
  void lower_local_slot(const Op& op);
  void lower_local_load(const Op& op);
  void lower_local_store(const Op& op);
  int buffer_vector(const LinearLayout& l, const LinearLayout& buffer, DType d);
  void lower_buffer_trans(const Op& op);
  void lower_async_copy(const Op& op);
  void lower_async_sync(const Op& op);
  // mbarriers, tensor copies, named barriers (lower_tma.cpp).
  llvm::Value* shared_address(const Op& op, int i);
  void wait_mbarrier(llvm::Value* bar, llvm::Value* parity);
  void lower_mbarrier(const Op& op);
  void lower_tma_copy(const Op& op);
  void lower_tma_store_wait(const Op& op);
  void lower_named_barrier(const Op& op);
  void collect_tensor_maps(const ir::Function& fn, std::vector<llvm::Type*>& params);
  void lower_tensor_map(const Op& op);
  llvm::Value* buffer_ptr(const SmemTile& t, const LinearLayout& l, const std::vector<llvm::Value*>& hw, int r);
  void smem_store(llvm::Value* v, llvm::Value* elem_index, llvm::Type* ty, int64_t base = 0);
  llvm::Value* smem_load(llvm::Type* ty, llvm::Value* elem_index, int64_t base = 0);
  int64_t alloc_size(llvm::Type* ty);

  // ------------------------------------------------------------ conversions
  Regs convert(const Regs& regs, const LinearLayout& from, const LinearLayout& to, const std::vector<int64_t>& shape,
               llvm::Type* ty);
  Regs operand(const Op& op, int i);
  void lower_convert_layout(const Op& op);
  void check_own_layout(const Op& op, const ir::Value* res, const LinearLayout& own);
  Regs convert_or_remat(const ir::Value* v, const Regs& regs, const LinearLayout& to);
  std::optional<Regs> remat(const ir::Value* v, const LinearLayout& l, int& budget);
  Regs in_layout(const ir::Value* v, const ir::Value* like);
  const Regs& get(const ir::Value* v);
  int width_of(const ir::Value* v) { return v->type.is_tile() ? num_regs(plan_.of(v)) : 1; }

  // ---------------------------------------------------------------- regions
  void lower_region(const ir::Region& r);
  void lower_op(const Op& op);
  void lower_op_itself(const Op& op);
  // Each op kind's lowering (lower_llvm.cpp); null: none.
  using Pattern = void (Lowerer::*)(const Op&);
  static Pattern pattern(OpKind k);

  // ---------------------------------------------------- leaves and shapes
  void lower_constant(const Op& op);
  void lower_program_id(const Op& op);
  void lower_arange(const Op& op);
  void lower_splat(const Op& op);
  void lower_trans(const Op& op);
  void lower_same_registers(const Op& op);
  void lower_join(const Op& op);
  void lower_split(const Op& op);
  void lower_yield(const Op&) {}  // read by the parent op
  void lower_barrier(const Op& op);

  // ------------------------------------------------------------ elementwise
  void lower_elementwise(const Op& op);
  void lower_inline_asm(const Op& op);
  llvm::Value* scalar_op(const Op& op, std::vector<llvm::Value*> a);
  static bool is_math(OpKind k);
  llvm::Value* int_op(const Op& op, const std::vector<llvm::Value*>& a, DType d);
  static llvm::CmpInst::Predicate int_pred(const std::string& p, bool s);
  llvm::Value* float_op(const Op& op, const std::vector<llvm::Value*>& a, DType d);
  llvm::Value* math_f32(OpKind k, llvm::Value* x);

  // ------------------------------------------------------------------ casts
  llvm::Value* to_f32(llvm::Value* v, DType from);
  llvm::Value* from_f32(llvm::Value* v, DType to);
  llvm::Value* decode_f8(llvm::Value* bits8, DType d);
  llvm::Value* encode_f8(llvm::Value* f, DType d);
  llvm::Value* cast(llvm::Value* v, DType from, DType to, const Op& op);
  // f32 with round-to-odd from f64 or an integer, for narrow results
  // rounded once (ops.def cast; dtype.h to_float_odd).
  llvm::Value* f64_to_f32_odd(llvm::Value* v);
  llvm::Value* int_to_f32_odd(llvm::Value* v, DType from);
  llvm::Value* to_f32_or_native(llvm::Value* v, DType d) { return is_f8(d) ? to_f32(v, d) : v; }

  // ----------------------------------------------------------------- memory
  MemoryHints hints(const Op& op);

  // Elements per vector access for a tile memory op in layout `l`.
  int vector_width(const Op& op, const LinearLayout& l, DType d) { return access_width(op, l, d, axis_); }
  void lower_load(const Op& op);
  Regs load_chunks(const Op& op, const Regs& ptrs, llvm::Value* live);
  Regs unpack_chunks(const Regs& chunks, DType d);
  llvm::Value* to_memory(llvm::Value* v) { return v->getType()->isIntegerTy(1) ? b_.CreateZExt(v, b_.getInt8Ty()) : v; }
  llvm::Value* from_memory(llvm::Value* v, DType d);
  void lower_store(const Op& op);
  llvm::Value* guarded(llvm::Value* pred, const std::function<llvm::Value*()>& body, llvm::Value* otherwise);
  void lower_atomic(const Op& op);
  llvm::AtomicRMWInst::BinOp rmw_kind(const Op& op, DType d);
  static MemOrder mem_order(const Op& op);
  static MemScope mem_scope(const Op& op);
  void lower_assert(const Op& op);
  void lower_assume(const Op& op);
  void lower_print(const Op& op);

  // ------------------------------------------------------------ reductions
  std::vector<llvm::Value*> combine(const ir::Region& region, const std::vector<llvm::Value*>& lhs,
                                    const std::vector<llvm::Value*>& rhs);
  std::vector<llvm::Value*> tree(const ir::Region& region, std::vector<std::vector<llvm::Value*>> items);
  llvm::Value* shuffle(llvm::Value* v, int mask);
  void lower_reduce(const Op& op);
  void lower_scan(const Op& op);

  // -------------------------------------------------------------------- dot
  void lower_dot(const Op& op);
  void lower_dot_wait(const Op& op);
  std::optional<SmemTile> smem_source(const Op& dot, int i, int64_t& staged);

  // ------------------------------------------------ dot operands in smem
  // Whether the operands of `dot` can be read from shared memory with 8x8
  // matrix loads: 16-bit elements on a k = 16 instruction.
  bool matrix_loadable(const Op& dot) { return t_.has_matrix_load_8x8 && matrix_loadable_dot(dot, plan_); }
  Regs dot_operand(const Op& dot, int i);
  Regs all_fragments(const SmemTile& t, const OperandFragments& f, llvm::Type* ety);
  void lower_matrix_loads(const Op& conv);
  llvm::Value* tile_offset(const SmemTile& t, llvm::Value* v0, llvm::Value* v1);
  llvm::Value* tile_ptr(const SmemTile& t, llvm::Value* v0, llvm::Value* v1);

  // The stored layout for a value in layout `l`: contiguous along the
  // dimension its registers run along (so stores vectorize).
  static int contiguous_dim(const LinearLayout& l) { return stored_contiguous_dim(l); }
  SmemTile write_tile(const Regs& regs, const LinearLayout& l, const ir::Type& type, int64_t offset);
  Regs load_fragments(const SmemTile& t, const OperandFragments& f, int s, llvm::Type* ety);
  Regs fma_dot(const Op& op, const DotLayouts& d, const Regs& a, const Regs& bm, Regs c);
  Regs warpgroup_dot(const Op& op, const DotLayouts& d, Regs c);
  static bool k_major(const SmemTile& t, int i);
  SmemOperand operand_descriptor(const SmemTile& t, int i, llvm::Value* mn0, int64_t mn0_c, int64_t k0);

  // ------------------------------------------------------------ control flow
  Regs pack_narrow(const Regs& regs, int f);
  Regs unpack_narrow(const Regs& packed, int f);
  // A loop's carried values as phis at its header (narrow ones packed).
  struct CarriedPhis {
    llvm::BasicBlock* pre = nullptr;  // the block entering the header
    llvm::PHINode* iv = nullptr;
    std::vector<int> pack;
    std::vector<std::vector<llvm::PHINode*>> phis;
  };
  CarriedPhis open_carried(const Op& loop, llvm::BasicBlock* header, llvm::Value* iv_init = nullptr);
  void close_carried(const Op& loop, const CarriedPhis& c);
  void lower_for(const Op& op);
  void lower_while(const Op& op);
  void lower_if(const Op& op);
  void lower_warp_specialize(const Op& op);

  llvm::LLVMContext& ctx_;
  const LayoutPlan& plan_;
  const transforms::AxisAnalysis& axis_;
  const Target& t_;
  IRBuilder<> b_;
  llvm::Module* m_ = nullptr;
  llvm::Function* fn_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  llvm::Value *lane_ = nullptr, *warp_ = nullptr, *tid_ = nullptr;
  // The partition of a warp_specialize being lowered (threads 0: none):
  // its first thread, its threads, the id of its barriers.
  struct Partition {
    int first = 0, threads = 0, barrier_id = 0;
  } partition_;
  // True for the thread that does what one thread of the program (or of
  // the partition) does.
  llvm::Value* leader() { return b_.CreateICmpEQ(tid_, b_.getInt32(partition_.first)); }
  int register_cap_ = 0;  // a thread's registers at entry, under warp specialization
  int entry_threads_ = 0;  // the block's threads, every partition's
  // The warps a partition of `warps` takes: whole warpgroups.
  int partition_warps(int warps) const {
    int group = 128 / plan_.warp_size;
    return (warps + group - 1) / group * group;
  }
  llvm::Value* block_ = nullptr;  // this CTA's rank in its cluster (0 without clusters)
  int64_t smem_bytes_ = 0;
  int64_t scratch_base_ = 0;          // the first byte of scratch_user_'s scratch
  const Op* scratch_user_ = nullptr;  // the op whose scratch need_smem counts
  bool scratch_placed_ = false;       // whether the IR placed it
  void place_scratch(const Op& op, const Op& at);
  struct PlacementScope {  // restores the scratch placement of the op around
    Lowerer& l;
    const Op* user = l.scratch_user_;
    int64_t base = l.scratch_base_;
    bool placed = l.scratch_placed_;
    explicit PlacementScope(Lowerer& lw) : l(lw) {}
    ~PlacementScope() { l.scratch_user_ = user, l.scratch_base_ = base, l.scratch_placed_ = placed; }
  };
  // Buffers local_alloc wrote: where, and the layout of the tile written.
  struct Buffer {
    int64_t at;
    const LinearLayout* from;
  };
  std::unordered_map<const ir::Value*, Buffer> buffers_;
  // Buffers of swizzled tiles (a pipeline's, expand_pipelines.h) and their
  // slots and views, which dots read in place; buffers of several slots.
  std::unordered_map<const ir::Value*, SmemTile> smem_vals_;
  std::unordered_map<const ir::Value*, SmemTile> slotted_;

  std::unordered_map<const ir::Value*, Regs> vals_;
  int op_barriers_ = 0;  // barriers in the op being lowered
  std::vector<const Op*> tensor_map_ops_;    // the kernel's tensor_map ops, in parameter order
  std::vector<TensorMapParam> tensor_maps_;  // what each describes
  // The cluster exchange at the start of shared memory (shared_sizes.h):
  // the phase each of its barriers waits for next is cluster_phase_.
  llvm::Value* cluster_phase_[2] = {nullptr, nullptr};  // allocas: mem2reg makes them SSA
};

}  // namespace tl::codegen::lowering
