// Lowering GPU IR to LLVM IR, shared by every target: the driver (run),
// the op dispatch, the layout arithmetic and layout conversions.
//
// A tile value becomes one LLVM value per register of its layout: register
// r of a thread holds the element at layout(r, lane, warp). Elementwise ops
// work register by register (lower_elementwise.cpp); loads and stores group
// the registers that the layout makes contiguous and axis analysis proved
// aligned into vector accesses (lower_memory.cpp); reductions and scans
// combine registers, then lanes (shuffles), then warps (shared memory;
// lower_reduce.cpp); loops and branches are lower_control.cpp, dots
// lower_dot.cpp. A layout mismatch is a register permutation or a round
// trip through shared memory. Scalars are one value held by every thread.
// Everything target-specific goes through the Target interface.
#include "codegen/lowerer.h"

#include <algorithm>
#include <bit>
#include <limits>

#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

namespace tl::codegen {
namespace lowering {

LoweredKernel Lowerer::run(const ir::Function& fn, const std::string& name) {
  if (!fn.attrs.count("barriers"))
    throw Error("@" + fn.name + ": the lowering expects GPU IR whose barriers insert-barriers placed (attribute "
                "'barriers'), found none");
  auto module = std::make_unique<llvm::Module>(name, ctx_);
  m_ = module.get();
  t_.init_module(*m_);

  std::vector<llvm::Type*> params;
  for (const auto& a : fn.body.args) params.push_back(value_type(a->type));
  collect_tensor_maps(fn, params);
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  // A warp_specialize (the function's last op) adds its partitions' warps;
  // a thread's registers at entry are what the block's share out evenly,
  // which each partition then changes.
  int threads = plan_.num_warps * plan_.warp_size;
  const Op* ws = fn.body.ops.empty() ? nullptr : fn.body.ops.back().get();
  if (ws && ws->kind != OpKind::WarpSpecialize) ws = nullptr;
  if (ws) {
    threads = 0;
    for (int64_t w : ws->attr_ints("warps")) threads += partition_warps(int(w)) * plan_.warp_size;
    if (!t_.has_warp_specialization)
      unsupported(*ws, "needs partitions of warps with registers of their own, which " + t_.name +
                           " does not have (sm_90a)");
    if (threads > 1024) unsupported(*ws, "of " + std::to_string(threads) + " threads (at most 1024)");
  }
  // Under warp specialization (setmaxnreg moves registers between the
  // partitions within the block's), or where programs_per_sm asks for more
  // than one block a multiprocessor: a thread's registers capped at its share.
  if (ws || plan_.programs_per_sm > 1) register_cap_ = t_.register_cap(threads, plan_.programs_per_sm);
  entry_threads_ = threads;
  t_.init_kernel(*fn_, threads);
  if (register_cap_) t_.cap_registers(*fn_, register_cap_);
  if (plan_.num_ctas > 1) start_cluster(fn);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
  // f32 subnormals flushed (the target picks its flushing instructions).
  if (plan_.flush_denormals) fn_->addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");
  if (plan_.fp_fusion) {
    llvm::FastMathFlags contract;
    contract.setAllowContract(true);
    b_.setFastMathFlags(contract);
  }

  smem_ = new llvm::GlobalVariable(*m_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false,
                                   llvm::GlobalValue::ExternalLinkage, nullptr, "tl_shared_memory", nullptr,
                                   llvm::GlobalValue::NotThreadLocal, t_.shared_address_space());
  // Buffers start at 128-byte boundaries (bank rows), warpgroup
  // instructions' operands at theirs.
  uint64_t align = 128;
  for (const auto& [dot, d] : plan_.dots)
    if (d.instr) align = std::max<uint64_t>(align, uint64_t(d.instr->operand_align));
  smem_->setAlignment(llvm::Align(align));

  llvm::Value* tid = t_.thread_id(b_);
  lane_ = b_.CreateAnd(tid, plan_.warp_size - 1, "lane");
  warp_ = b_.CreateLShr(tid, ilog2(plan_.warp_size), "warp");
  block_ = plan_.num_ctas > 1 ? t_.cluster_rank(b_) : b_.getInt32(0);
  tid_ = tid;
  if (plan_.num_ctas > 1) init_cluster_exchange();
  for (size_t i = 0; i < fn.body.args.size(); ++i) vals_[fn.body.args[i].get()] = {fn_->getArg(unsigned(i))};
  for (size_t k = 0; k < tensor_map_ops_.size(); ++k) {
    unsigned i = unsigned(fn.body.args.size() + k);
    t_.tensor_map_param(*fn_, i);
    vals_[tensor_map_ops_[k]->result()] = {fn_->getArg(i)};
  }

  lower_region(fn.body);
  b_.CreateRetVoid();

  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*m_, &os)) throw Error("internal: the lowered LLVM module is invalid: " + err);
  if (smem_bytes_ > t_.max_shared_bytes)
    throw Error("kernel '" + name + "' needs " + std::to_string(smem_bytes_) + " bytes of shared memory, the target has " +
                std::to_string(t_.max_shared_bytes));
  return {std::move(module), threads, int(smem_bytes_), tensor_maps_};
}

// The LLVM type of one element as held in registers (f8: its bits in i8).
llvm::Type* Lowerer::elem_type(DType d, bool is_ptr) {
  if (is_ptr) return b_.getPtrTy(t_.global_address_space());
  switch (d) {
    case DType::i1: return b_.getInt1Ty();
    case DType::i8: case DType::u8: case DType::f8e4m3: case DType::f8e5m2: return b_.getInt8Ty();
    case DType::i16: case DType::u16: return b_.getInt16Ty();
    case DType::i32: case DType::u32: return b_.getInt32Ty();
    case DType::i64: case DType::u64: return b_.getInt64Ty();
    case DType::f16: return b_.getHalfTy();
    case DType::bf16: return b_.getBFloatTy();
    case DType::f32: return b_.getFloatTy();
    case DType::f64: return b_.getDoubleTy();
  }
  return nullptr;
}

// A program on a cluster of num_ctas CTAs (CompileOptions::num_ctas, 2, 4
// or 8 as tl::compile checked): the target must have clusters, the kernel
// only dots split over the CTAs along M (on warpgroup instructions,
// dot_layout.h); the cluster exchange area takes the start of shared
// memory.
void Lowerer::start_cluster(const ir::Function& fn) {
  int n = plan_.num_ctas;
  if (n > t_.max_cluster_ctas) t_.set_cluster_size(*fn_, n);  // the target says what it lacks
  std::function<void(const ir::Region&)> check = [&](const ir::Region& r) {
    for (const auto& o : r.ops) {
      if (o->kind == OpKind::Dot)
        if (std::string why = cluster_dot_refusal(*o, plan_.dots.at(o.get()), n); !why.empty()) unsupported(*o, why);
      for (const auto& sub : o->regions) check(*sub);
    }
  };
  check(fn.body);
  t_.set_cluster_size(*fn_, n);
  smem_bytes_ = std::max(smem_bytes_, kClusterExchangeBytes);
}

// The cluster exchange's two transaction barriers, initialized by thread 0
// and visible to the whole cluster before anyone sends (a cluster barrier),
// and the phases each waits for first (0).
void Lowerer::init_cluster_exchange() {
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  for (int k = 0; k < 2; ++k) {
    cluster_phase_[k] = entry.CreateAlloca(b_.getInt32Ty(), nullptr, "cluster.phase");
    b_.CreateStore(b_.getInt32(0), cluster_phase_[k]);
  }
  guarded(b_.CreateICmpEQ(tid_, b_.getInt32(0)), [&]() -> llvm::Value* {
    for (int k = 0; k < 2; ++k) t_.mbarrier_init(b_, cluster_bar(k), 1);
    t_.fence_barrier_init(b_);
    return nullptr;
  }, nullptr);
  t_.cluster_barrier(b_);
}

// The shared address (i32) of the cluster exchange's barrier k.
llvm::Value* Lowerer::cluster_bar(int k) {
  return b_.CreatePtrToInt(b_.CreateGEP(b_.getInt8Ty(), smem_, b_.getInt64(2 * kClusterSlotBytes + 8 * k)),
                           b_.getInt32Ty());
}

// Runtime coordinates contributed by one hardware input (lane, warp, or
// the CTA's rank in its cluster).
std::vector<llvm::Value*> Lowerer::hw_coords_of(const LinearLayout& l, const std::string& in) {
  std::vector<llvm::Value*> c(l.out_dims().size(), b_.getInt32(0));
  llvm::Value* idx = in == kLane ? lane_ : in == kWarp ? warp_ : block_;
  for (const auto& d : l.in_dims()) {
    if (d.name != in) continue;
    for (size_t bit = 0; bit < d.bases.size(); ++bit) {
      llvm::Value* set = b_.CreateAnd(b_.CreateLShr(idx, uint64_t(bit)), 1);
      for (size_t k = 0; k < c.size(); ++k)
        if (d.bases[bit][k]) c[k] = b_.CreateXor(c[k], b_.CreateMul(set, b_.getInt32(d.bases[bit][k])));
    }
    // A repeat's digit t (the index above the bits) adds t * stride, above
    // every bit along that output (linear_layout.h): XOR is that sum.
    if (d.repeat > 1) {
      llvm::Value* t = b_.CreateLShr(idx, uint64_t(d.bases.size()));
      for (size_t k = 0; k < c.size(); ++k)
        if (d.repeat_stride[k]) c[k] = b_.CreateXor(c[k], b_.CreateMul(t, b_.getInt32(d.repeat_stride[k])));
    }
  }
  return c;
}



// Runtime coordinates contributed by this thread's lane and warp (and its
// CTA's rank in a cluster).
std::vector<llvm::Value*> Lowerer::hw_coords(const LinearLayout& l) {
  auto c = hw_coords_of(l, kLane), w = hw_coords_of(l, kWarp);
  for (size_t k = 0; k < c.size(); ++k) c[k] = b_.CreateXor(c[k], w[k]);
  if (l.in_bits(kBlock) > 0) {
    auto k_ = hw_coords_of(l, kBlock);
    for (size_t k = 0; k < c.size(); ++k) c[k] = b_.CreateXor(c[k], k_[k]);
  }
  return c;
}

// Coordinate `d` of a register: the thread's part XOR the register's.
// When no register bit moves a coordinate bit a lane or warp bit moves,
// the XOR is an addition, which LLVM folds into address offsets.
llvm::Value* Lowerer::coord(const LinearLayout& l, int d, llvm::Value* hw, int32_t reg) {
  int32_t reg_bits = 0, hw_bits = 0;
  for (const auto& in : l.in_dims()) {
    int32_t& bits = in.name == kReg ? reg_bits : hw_bits;
    for (const auto& b : in.bases) bits |= b[d];
    for (int32_t t = 1; t < in.repeat; ++t) bits |= t * in.repeat_stride[size_t(d)];
  }
  if ((reg_bits & hw_bits) == 0) return b_.CreateAdd(hw, b_.getInt32(reg), "", /*HasNUW=*/true, /*HasNSW=*/true);
  return b_.CreateXor(hw, b_.getInt32(reg));
}

// Row-major flat index of coordinates (hw ^ reg) in `shape`.
llvm::Value* Lowerer::flat_index(const std::vector<llvm::Value*>& hw, const LinearLayout::Coords& reg,
                        const std::vector<int64_t>& shape) {
  llvm::Value* flat = b_.getInt32(0);
  for (size_t d = 0; d < shape.size(); ++d) {
    llvm::Value* c = b_.CreateXor(hw[d], b_.getInt32(reg[d]));
    if (std::has_single_bit(uint64_t(shape[d]))) flat = b_.CreateOr(b_.CreateShl(flat, uint64_t(ilog2(shape[d]))), c);
    else flat = b_.CreateAdd(b_.CreateMul(flat, b_.getInt32(int32_t(shape[d])), "", true, true), c, "", true, true);
  }
  return flat;
}

// True for the one thread and register that owns each element: lanes and
// warps whose layout bits replicate data are not owners. `within_cta`: one
// owner in each CTA of a cluster (a write to the CTA's own shared memory,
// which every CTA holding the element needs), else one in the cluster.
llvm::Value* Lowerer::owner_predicate(const LinearLayout& l, bool within_cta) {
  llvm::Value* p = b_.getTrue();
  uint32_t lane_mask = l.broadcast_mask(kLane), warp_mask = l.broadcast_mask(kWarp);
  if (lane_mask) p = b_.CreateAnd(p, b_.CreateICmpEQ(b_.CreateAnd(lane_, lane_mask), b_.getInt32(0)));
  if (warp_mask) p = b_.CreateAnd(p, b_.CreateICmpEQ(b_.CreateAnd(warp_, warp_mask), b_.getInt32(0)));
  // A warp repeat that replicates: the warps above its bits hold copies.
  for (const auto& d : l.in_dims())
    if (d.name == kWarp && d.repeat > 1 && std::all_of(d.repeat_stride.begin(), d.repeat_stride.end(), [](int32_t x) { return x == 0; }))
      p = b_.CreateAnd(p, b_.CreateICmpULT(warp_, b_.getInt32(int32_t(1) << l.in_bits(kWarp))));
  // Bits of the block beyond the layout's warps (more warps than the
  // layout names) also replicate.
  if (int32_t warps = l.in_size(kWarp); warps < plan_.num_warps)
    p = b_.CreateAnd(p, b_.CreateICmpULT(warp_, b_.getInt32(warps)));
  // Likewise the CTAs of a cluster that hold copies.
  if (plan_.num_ctas > 1 && !within_cta) {
    if (uint32_t block_mask = l.broadcast_mask(kBlock))
      p = b_.CreateAnd(p, b_.CreateICmpEQ(b_.CreateAnd(block_, block_mask), b_.getInt32(0)));
    if (int32_t blocks = l.in_size(kBlock); blocks < plan_.num_ctas)
      p = b_.CreateAnd(p, b_.CreateICmpULT(block_, b_.getInt32(blocks)));
  }
  return p;
}

// Registers that repeat an earlier register's element.
std::vector<bool> Lowerer::duplicate_regs(const LinearLayout& l) {
  std::set<LinearLayout::Coords> seen;
  std::vector<bool> dup(num_regs(l));
  for (int r = 0; r < num_regs(l); ++r) dup[r] = !seen.insert(reg_coords(l, r)).second;
  return dup;
}

// Shared memory is where allocate-shared put it (allocate_shared.h): the
// op being lowered has its scratch from scratch_base_, its `scratch`, and
// may use what scratch_bound allows.
void Lowerer::need_smem(int64_t bytes) {
  if (bytes > 0) {
    if (!scratch_user_) throw Error("internal: scratch shared memory used outside any op");
    if (!scratch_placed_)
      throw Error(scratch_user_->loc.str() + ": '" + std::string(scratch_user_->name()) +
                  "' expects attribute 'scratch' (allocate-shared gives it), found none");
    int64_t bound = scratch_bound(*scratch_user_, plan_, {});  // buffers read in place are smem<...> by now
    if (bytes > bound)
      throw Error("internal: " + std::to_string(bytes) + " bytes of scratch shared memory exceed the " +
                  std::to_string(bound) + " that scratch_bound allows '" + std::string(scratch_user_->name()) + "'");
  }
  smem_bytes_ = std::max<int64_t>(smem_bytes_, scratch_base_ + bytes);
}

// Lowering `op` (or, for a loop's entry, `at`): its scratch is where its
// `scratch` says.
void Lowerer::place_scratch(const Op& op, const Op& at) {
  scratch_user_ = &op;
  scratch_placed_ = at.has_attr("scratch");
  if (scratch_placed_) scratch_base_ = at.attr_int("scratch");
}

llvm::Value* Lowerer::smem_ptr(llvm::Value* byte_offset) {
  return b_.CreateGEP(b_.getInt8Ty(), smem_, b_.CreateAdd(byte_offset, b_.getInt64(scratch_base_)));
}

void Lowerer::smem_store(llvm::Value* v, llvm::Value* elem_index, llvm::Type* ty, int64_t base) {
  llvm::Value* stored = v->getType()->isIntegerTy(1) ? b_.CreateZExt(v, b_.getInt8Ty()) : v;
  llvm::Type* st = stored->getType();
  int64_t size = int64_t(m_->getDataLayout().getTypeAllocSize(st));
  llvm::Value* off = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(elem_index, b_.getInt64Ty()), b_.getInt64(size)),
                                  b_.getInt64(base));
  b_.CreateStore(stored, smem_ptr(off));
  (void)ty;
}

llvm::Value* Lowerer::smem_load(llvm::Type* ty, llvm::Value* elem_index, int64_t base) {
  llvm::Type* lt = ty->isIntegerTy(1) ? b_.getInt8Ty() : ty;
  int64_t size = int64_t(m_->getDataLayout().getTypeAllocSize(lt));
  llvm::Value* off = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(elem_index, b_.getInt64Ty()), b_.getInt64(size)),
                                  b_.getInt64(base));
  llvm::Value* v = b_.CreateLoad(lt, smem_ptr(off));
  return ty->isIntegerTy(1) ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
}

int64_t Lowerer::alloc_size(llvm::Type* ty) {
  return int64_t(m_->getDataLayout().getTypeAllocSize(ty->isIntegerTy(1) ? b_.getInt8Ty() : ty));
}

Regs Lowerer::convert(const Regs& regs, const LinearLayout& from, const LinearLayout& to, const std::vector<int64_t>& shape,
             llvm::Type* ty) {
  if (from == to) return regs;
  // Each thread holds what it needs already: only registers move.
  if (permutes_registers(from, to)) {
    std::map<LinearLayout::Coords, int> where;
    for (int r = 0; r < num_regs(from); ++r) where.emplace(reg_coords(from, r), r);
    Regs out;
    for (int r = 0; r < num_regs(to); ++r) out.push_back(regs[where.at(reg_coords(to, r))]);
    return out;
  }
  // Through shared memory: every thread writes what it holds, then reads
  // what it needs (after the op's earlier use of its scratch, if any).
  check_within_ctas(from, to);
  scratch_fence();
  store_row_major(regs, from, shape, ty);
  barrier();
  return load_row_major(to, shape, ty);
}

// Elements move through shared memory within a CTA only: each must hold
// what it needs (its part, or all of it).
void Lowerer::check_within_ctas(const LinearLayout& from, const LinearLayout& to) {
  if (crosses_ctas(from, to))
    throw Error("num_ctas > 1: this kernel moves tile elements between the CTAs of a cluster (a layout "
                "conversion across CTAs), which is not supported yet; use num_ctas = 1");
}

// Registers of `l` running along the last (contiguous) dimension of a
// row-major buffer from an aligned start: one vector access of up to 16
// bytes each, not left to LLVM to combine (it could not prove the
// alignment in the persistent gemm's epilogue: 16-bit stores, for which
// the assembler serialized the warpgroup dots, and 16-bit loads).
int Lowerer::row_major_run(const LinearLayout& l, const std::vector<int64_t>& shape, llvm::Type* ty) {
  const int last = int(shape.size()) - 1;
  if (ty->isIntegerTy(1)) return 1;
  int run = std::max(1, std::min<int>(l.contiguous_run(kReg, last), int(16 / alloc_size(ty))));
  for (const auto& in : l.in_dims())
    for (const auto& b : in.bases)
      if (in.name != kReg && (b[size_t(last)] & (run - 1))) return 1;
  return run;
}

// The address (in shared memory) of register `r` of `l` in a row-major
// buffer of `shape`.
llvm::Value* Lowerer::row_major_ptr(const std::vector<llvm::Value*>& hw, const LinearLayout& l, int r,
                                    const std::vector<int64_t>& shape, llvm::Type* ty) {
  llvm::Value* at = b_.CreateMul(b_.CreateZExt(flat_index(hw, reg_coords(l, r), shape), b_.getInt64Ty()),
                                 b_.getInt64(alloc_size(ty)));
  return smem_ptr(at);
}

// This thread's coordinates in `l` within its CTA's part of a tile of
// `shape` (the part: `part`, cta_shape; the CTA bits are the top ones).
std::vector<llvm::Value*> Lowerer::part_coords(const LinearLayout& l, const std::vector<int64_t>& shape,
                                               const std::vector<int64_t>& part) {
  auto hw = hw_coords(l);
  for (size_t d = 0; d < hw.size(); ++d)
    if (part[d] < shape[d]) hw[d] = b_.CreateAnd(hw[d], b_.getInt32(int32_t(part[d] - 1)));
  return hw;
}

// A tile in layout `from` written row-major at the scratch base, each
// element by one of the threads that hold it; and read back in layout `to`.
// On a cluster each CTA writes and reads its own part of it (the layouts
// split it alike: check_within_ctas).
void Lowerer::store_row_major(const Regs& regs, const LinearLayout& from, const std::vector<int64_t>& tile_shape,
                              llvm::Type* ty) {
  const std::vector<int64_t> shape = cta_shape(from, tile_shape);
  need_smem(cta_numel(from, tile_shape) * alloc_size(ty));
  auto dup = duplicate_regs(from);
  auto hw = part_coords(from, tile_shape, shape);
  const int run = row_major_run(from, shape, ty);
  for (int r = 0; r < num_regs(from); r += run) {
    bool whole = true;
    for (int k = 0; k < run; ++k) whole = whole && !dup[r + k];
    if (run == 1 || !whole) {
      for (int k = 0; k < run; ++k)
        if (!dup[r + k]) smem_store(regs[r + k], flat_index(hw, reg_coords(from, r + k), shape), ty);
      continue;
    }
    llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(ty, unsigned(run)));
    for (int k = 0; k < run; ++k) vec = b_.CreateInsertElement(vec, regs[r + k], uint64_t(k));
    b_.CreateAlignedStore(vec, row_major_ptr(hw, from, r, shape, ty), llvm::Align(uint64_t(run * alloc_size(ty))));
  }
}

Regs Lowerer::load_row_major(const LinearLayout& to, const std::vector<int64_t>& tile_shape, llvm::Type* ty) {
  const std::vector<int64_t> shape = cta_shape(to, tile_shape);
  auto hw_to = part_coords(to, tile_shape, shape);
  const int run = row_major_run(to, shape, ty);
  Regs out;
  for (int r = 0; r < num_regs(to); r += run) {
    if (run == 1) {
      out.push_back(smem_load(ty, flat_index(hw_to, reg_coords(to, r), shape)));
      continue;
    }
    llvm::Type* vt = llvm::FixedVectorType::get(ty, unsigned(run));
    llvm::Value* vec = b_.CreateAlignedLoad(vt, row_major_ptr(hw_to, to, r, shape, ty),
                                            llvm::Align(uint64_t(run * alloc_size(ty))));
    for (int k = 0; k < run; ++k) out.push_back(b_.CreateExtractElement(vec, uint64_t(k)));
  }
  return out;
}

// Operand i of `op`, which convert_layouts put in the layout the op needs.
Regs Lowerer::operand(const Op& op, int i) {
  const ir::Value* v = op.operands[i];
  const Regs& regs = get(v);
  if (!v->type.is_tile()) return regs;
  auto req = required_operand_layout(op, i, plan_);
  if (req && !(*req == plan_.of(v)))
    throw Error("internal: operand #" + std::to_string(i) + " of '" + std::string(op.name()) +
                "' is not in the layout the op needs (convert_layouts did not convert it)");
  return regs;
}

// A result of `op` made in layout `own`, which convert_layouts gave it.
void Lowerer::check_own_layout(const Op& op, const ir::Value* res, const LinearLayout& own) {
  if (!(plan_.of(res) == own))
    throw Error("internal: a result of '" + std::string(op.name()) +
                "' is not in the layout the op makes it in (convert_layouts did not move it)");
}

// A layout conversion (convert_layouts.h), as its `move` says: the value
// recomputed in the new layout from its producers, or moved there
// (registers permuted within each thread, or a round trip through shared
// memory).
void Lowerer::lower_convert_layout(const Op& op) {
  const ir::Value* v = op.operands[0];
  const LinearLayout& to = plan_.of(op.result());
  if (is_uniform(v)) {
    vals_[op.result()] = Regs(num_regs(to), get(v)[0]);
  } else if (op.attr_str_or("move", "") == "matrix_loads") {
    lower_matrix_loads(op);
  } else if (op.attr_str_or("move", "") == "remat") {
    int budget = std::numeric_limits<int>::max();
    auto r = remat(v, to, budget);
    if (!r) throw Error("internal: a convert_layout {move = \"remat\"} of a value that cannot be recomputed");
    vals_[op.result()] = std::move(*r);
  } else {  // "registers" or "shared": convert() tells them apart by the same rule
    vals_[op.result()] = convert(get(v), plan_.of(v), to, v->type.shape, value_type(v->type));
  }
}

Regs Lowerer::convert_or_remat(const ir::Value* v, const Regs& regs, const LinearLayout& to) {
  const LinearLayout& from = plan_.of(v);
  if (from == to) return regs;
  if (is_uniform(v)) return Regs(num_regs(to), regs[0]);
  if (!same_threads(from, to)) {
    int budget = 24;
    if (auto r = remat(v, to, budget)) return *r;
  }
  return convert(regs, from, to, v->type.shape, value_type(v->type));
}

// Recomputes a cheap value (index arithmetic and masks built from aranges,
// scalars, broadcasts and elementwise ops) directly in layout `l`: a few
// integer ops per register instead of a round trip through shared memory
// with two barriers. nullopt when the value is not that cheap (`budget`
// counts the ops it may take).
std::optional<Regs> Lowerer::remat(const ir::Value* v, const LinearLayout& l, int& budget) {
  if (!v->type.is_tile()) return get(v);
  if (const ir::Value* src = moved_from(v)) return remat(src, l, budget);  // the same values
  const Op* d = v->def;
  if (!d || --budget < 0) return std::nullopt;
  int n = num_regs(l);
  switch (d->kind) {
    case OpKind::Constant:
    case OpKind::Splat:
      return Regs(n, get(v)[0]);
    case OpKind::Arange: {
      auto hw = hw_coords(l);
      Regs out;
      for (int r = 0; r < n; ++r)
        out.push_back(b_.CreateAdd(coord(l, 0, hw[0], reg_coords(l, r)[0]),
                                   b_.getInt32(int32_t(d->attr_int("start")))));
      return out;
    }
    case OpKind::ExpandDims:
      return remat(d->operands[0], expand_dims_operand_layout(l, int(d->attr_int("axis"))), budget);
    case OpKind::Broadcast:
      return remat(d->operands[0], broadcast_operand_layout(l, d->operands[0]->type.shape), budget);
    default:
      break;
  }
  if (!ir::op_is_elementwise(d->kind) || d->results.size() != 1 || !d->regions.empty()) return std::nullopt;
  std::vector<Regs> ins;
  for (const ir::Value* x : d->operands) {
    auto r = remat(x, l, budget);
    if (!r) return std::nullopt;
    ins.push_back(std::move(*r));
  }
  Regs out;
  for (int r = 0; r < n; ++r) {
    std::vector<llvm::Value*> args;
    for (auto& in : ins) args.push_back(in.size() == 1 ? in[0] : in[r]);
    out.push_back(scalar_op(*d, args));
  }
  return out;
}

// `v`, which convert_layouts put in the layout of `like` (a loop's
// carried values, an if's results, a join's first operand).
Regs Lowerer::in_layout(const ir::Value* v, const ir::Value* like) {
  if (v->type.is_tile() && !(plan_.of(v) == plan_.of(like)))
    throw Error("internal: a value is not in the layout it is carried or joined in (convert_layouts did not convert it)");
  return get(v);
}

const Regs& Lowerer::get(const ir::Value* v) {
  auto it = vals_.find(v);
  if (it == vals_.end()) throw Error("internal: value of type " + v->type.str() + " used before it was lowered");
  return it->second;
}

void Lowerer::lower_region(const ir::Region& r) {
  for (const auto& op : r.ops) {
    if (op->kind == OpKind::Yield) continue;  // read by the parent op
    b_.SetCurrentDebugLocation(llvm::DebugLoc());
    // A broken invariant of the lowering still names the user's op.
    try {
      lower_op(*op);
    } catch (const Error& e) {
      if (!std::string_view(e.what()).starts_with("internal: ")) throw;
      unsupported(*op, std::string("hit a compiler bug (") + e.what() + ")");
    }
  }
}

// An op that exchanges values through its scratch has a barrier of its
// own between its writes and its reads, as insert-barriers assumed
// (lowerer.h), even where its lowering found no need to go through shared
// memory.
void Lowerer::lower_op(const Op& op) {
  const int outer_barriers = op_barriers_;
  op_barriers_ = 0;
  lower_op_itself(op);
  if (exchanges_through_scratch(op) && op_barriers_ == 0) barrier();
  op_barriers_ += outer_barriers;
}

void Lowerer::lower_op_itself(const Op& op) {
  PlacementScope user(*this);
  place_scratch(op, op);
  Pattern p = pattern(op.kind);
  if (!p) unsupported(op, "has no GPU lowering");
  (this->*p)(op);
}

// ---- the table of every op's lowering, and leaves, constants and shapes --

// One lowering per op kind, in the file of its family (lowerer.h): this
// one for leaves, constants and shape ops. Null: not lowered.
Lowerer::Pattern Lowerer::pattern(OpKind k) {
  switch (k) {
    case OpKind::Constant: return &Lowerer::lower_constant;
    case OpKind::ProgramId:
    case OpKind::NumPrograms: return &Lowerer::lower_program_id;
    case OpKind::Arange: return &Lowerer::lower_arange;
    case OpKind::Splat: return &Lowerer::lower_splat;
    case OpKind::Trans: return &Lowerer::lower_trans;
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape: return &Lowerer::lower_same_registers;
    case OpKind::Join: return &Lowerer::lower_join;
    case OpKind::Split: return &Lowerer::lower_split;
    case OpKind::Reduce: return &Lowerer::lower_reduce;
    case OpKind::Scan: return &Lowerer::lower_scan;
    case OpKind::Dot: return &Lowerer::lower_dot;
    case OpKind::Load: return &Lowerer::lower_load;
    case OpKind::Store: return &Lowerer::lower_store;
    case OpKind::AtomicRmw:
    case OpKind::AtomicCas: return &Lowerer::lower_atomic;
    case OpKind::Assert: return &Lowerer::lower_assert;
    case OpKind::Assume: return &Lowerer::lower_assume;
    case OpKind::InlineAsm: return &Lowerer::lower_inline_asm;
    case OpKind::Print: return &Lowerer::lower_print;
    case OpKind::For: return &Lowerer::lower_for;
    case OpKind::If: return &Lowerer::lower_if;
    case OpKind::While: return &Lowerer::lower_while;
    case OpKind::WarpSpecialize: return &Lowerer::lower_warp_specialize;
    case OpKind::Yield: return &Lowerer::lower_yield;
    case OpKind::ConvertLayout: return &Lowerer::lower_convert_layout;
    case OpKind::LocalAlloc: return &Lowerer::lower_local_alloc;
    case OpKind::LocalSlot: return &Lowerer::lower_local_slot;
    case OpKind::LocalLoad: return &Lowerer::lower_local_load;
    case OpKind::LocalStore: return &Lowerer::lower_local_store;
    case OpKind::AsyncCopy: return &Lowerer::lower_async_copy;
    case OpKind::AsyncCommit:
    case OpKind::AsyncWait:
    case OpKind::FenceAsyncShared: return &Lowerer::lower_async_sync;
    case OpKind::Barrier: return &Lowerer::lower_barrier;
    case OpKind::DotWait: return &Lowerer::lower_dot_wait;
    case OpKind::MbarrierInit:
    case OpKind::MbarrierInval:
    case OpKind::MbarrierExpectTx:
    case OpKind::MbarrierArrive:
    case OpKind::MbarrierWait: return &Lowerer::lower_mbarrier;
    case OpKind::TmaLoad:
    case OpKind::TmaStore: return &Lowerer::lower_tma_copy;
    case OpKind::TmaStoreWait: return &Lowerer::lower_tma_store_wait;
    case OpKind::NamedBarrier: return &Lowerer::lower_named_barrier;
    case OpKind::TensorMap: return &Lowerer::lower_tensor_map;
    default: return ir::op_is_elementwise(k) ? &Lowerer::lower_elementwise : nullptr;
  }
}

// A program is a cluster of num_ctas CTAs along x.
void Lowerer::lower_program_id(const Op& op) {
  int axis = int(op.attr_int("axis"));
  llvm::Value* v = op.kind == OpKind::ProgramId ? t_.program_id(b_, axis) : t_.num_programs(b_, axis);
  if (axis == 0 && plan_.num_ctas > 1) v = b_.CreateLShr(v, uint64_t(ilog2(plan_.num_ctas)));
  vals_[op.result()] = {v};
}

void Lowerer::lower_arange(const Op& op) {
  const auto& l = plan_.of(op.result());
  auto hw = hw_coords(l);
  int64_t start = op.attr_int("start");
  Regs out;
  for (int r = 0; r < num_regs(l); ++r)
    out.push_back(b_.CreateAdd(coord(l, 0, hw[0], reg_coords(l, r)[0]), b_.getInt32(int32_t(start))));
  vals_[op.result()] = out;
}

void Lowerer::lower_splat(const Op& op) { vals_[op.result()] = Regs(width_of(op.result()), get(op.operands[0])[0]); }

// A trans of a buffer is a view of it; one only a dot reads is left to the
// dot's staging (convert_layouts): its operand may come in another layout.
void Lowerer::lower_trans(const Op& op) {
  if (op.operands[0]->type.is_shared()) return lower_buffer_trans(op);
  if (auto req = required_operand_layout(op, 0, plan_); req && !(*req == plan_.of(op.operands[0]))) {
    const ir::Value* v = op.operands[0];
    vals_[op.result()] = convert_or_remat(v, get(v), *req);
    return;
  }
  lower_same_registers(op);
}

// Ops whose operand layout is derived from the result's with the same
// registers: the values pass through unchanged.
void Lowerer::lower_same_registers(const Op& op) { vals_[op.result()] = operand(op, 0); }

// Both operands in the first one's layout, side by side along a new top
// register bit (convert_layouts moves the result on where its users asked
// for another layout: a dot operand through a reshape).
void Lowerer::lower_join(const Op& op) {
  const ir::Value* res = op.result();
  if (!op.operands[0]->type.is_tile()) {  // two scalars: a [2] tile every thread holds
    check_own_layout(op, res, line_layout(res->type.shape, 0, plan_.num_warps, plan_.warp_size, plan_.num_ctas));
    vals_[res] = {get(op.operands[0])[0], get(op.operands[1])[0]};
    return;
  }
  Regs a = in_layout(op.operands[0], op.operands[0]);
  Regs c = in_layout(op.operands[1], op.operands[0]);
  a.insert(a.end(), c.begin(), c.end());
  check_own_layout(op, res, join_layout(plan_.of(op.operands[0])));
  vals_[res] = a;
}

// The operand arrives in the join of the first result's layout.
void Lowerer::lower_split(const Op& op) {
  Regs all = operand(op, 0);
  size_t half = all.size() / 2;
  vals_[op.result(0)] = Regs(all.begin(), all.begin() + half);
  const ir::Value* r1 = op.result(1);
  if (r1->type.is_tile()) check_own_layout(op, r1, plan_.of(op.result(0)));
  vals_[r1] = Regs(all.begin() + half, all.end());
}

void Lowerer::lower_constant(const Op& op) {
  const ir::Type& t = op.result()->type;
  llvm::Type* ty = value_type(t);
  const ir::Attr& a = op.attrs.at("value");
  llvm::Value* c;
  if (is_f8(t.dtype)) {
    double v = std::holds_alternative<double>(a) ? std::get<double>(a) : double(std::get<int64_t>(a));
    c = b_.getInt8(t.dtype == DType::f8e4m3 ? f8e4m3(float(v)).bits : f8e5m2(float(v)).bits);
  } else if (ty->isFloatingPointTy()) {
    double v = std::holds_alternative<double>(a) ? std::get<double>(a) : double(std::get<int64_t>(a));
    c = llvm::ConstantFP::get(ty, v);
  } else {
    int64_t v = std::holds_alternative<int64_t>(a) ? std::get<int64_t>(a) : int64_t(std::get<double>(a));
    c = llvm::ConstantInt::get(ty, uint64_t(v), true);
  }
  vals_[op.result()] = Regs(width_of(op.result()), c);
}

}  // namespace lowering

LoweredKernel lower_to_llvm(llvm::LLVMContext& ctx, const ir::Function& fn, const LayoutPlan& plan,
                            const transforms::AxisAnalysis& axis, const Target& target, const std::string& name) {
  return lowering::Lowerer(ctx, plan, axis, target).run(fn, name);
}

}  // namespace tl::codegen
