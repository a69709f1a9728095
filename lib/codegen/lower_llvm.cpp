// Lowering GPU IR to LLVM IR, shared by every target.
//
// A tile value becomes one LLVM value per register of its layout: register
// r of a thread holds the element at layout(r, lane, warp). Elementwise ops
// work register by register; loads and stores group the registers that the
// layout makes contiguous and axis analysis proved aligned into vector
// accesses; reductions combine registers, then lanes (shuffles), then warps
// (shared memory); a layout mismatch is a register permutation or a round
// trip through shared memory. Scalars are one value held by every thread.
// Everything target-specific goes through the Target interface.
#include "codegen/lowerer.h"
#include "codegen/math_emitter.h"
#include "codegen/math_expansions.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

namespace tl::codegen {
namespace lowering {

LoweredKernel Lowerer::run(const ir::Function& fn, const std::string& name) {
  auto module = std::make_unique<llvm::Module>(name, ctx_);
  m_ = module.get();
  t_.init_module(*m_);

  std::vector<llvm::Type*> params;
  for (const auto& a : fn.body.args) params.push_back(value_type(a->type));
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
  int threads = plan_.num_warps * plan_.warp_size;
  t_.init_kernel(*fn_, threads);
  if (plan_.num_ctas > 1) start_cluster(fn);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
  if (plan_.fp_fusion) {
    llvm::FastMathFlags contract;
    contract.setAllowContract(true);
    b_.setFastMathFlags(contract);
  }

  smem_ = new llvm::GlobalVariable(*m_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false,
                                   llvm::GlobalValue::ExternalLinkage, nullptr, "tl_shared_memory", nullptr,
                                   llvm::GlobalValue::NotThreadLocal, t_.shared_address_space());
  smem_->setAlignment(llvm::Align(1024));  // swizzled tiles of warpgroup instructions

  llvm::Value* tid = t_.thread_id(b_);
  lane_ = b_.CreateAnd(tid, plan_.warp_size - 1, "lane");
  warp_ = b_.CreateLShr(tid, ilog2(plan_.warp_size), "warp");
  block_ = plan_.num_ctas > 1 ? t_.cluster_rank(b_) : b_.getInt32(0);
  tid_ = tid;
  if (plan_.num_ctas > 1) init_cluster_exchange();
  for (size_t i = 0; i < fn.body.args.size(); ++i) vals_[fn.body.args[i].get()] = {fn_->getArg(unsigned(i))};

  lower_region(fn.body);
  b_.CreateRetVoid();

  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*m_, &os)) throw Error("internal: the lowered LLVM module is invalid: " + err);
  if (smem_bytes_ > t_.max_shared_bytes())
    throw SharedMemoryOverflow("kernel '" + name + "' needs " + std::to_string(smem_bytes_) + " bytes of shared memory, the target has " +
                std::to_string(t_.max_shared_bytes()));
  return {std::move(module), threads, int(smem_bytes_)};
}

// The LLVM type of one element as held in registers (f8: its bits in i8).
llvm::Type* Lowerer::elem_type(DType d, bool is_ptr) {
  if (is_ptr) return b_.getPtrTy(t_.global_address_space());
  switch (d) {
    case DType::i1: return b_.getInt1Ty();
    case DType::i8: case DType::u8: case DType::f8e4m3: case DType::f8e5m2: return b_.getInt8Ty();
    case DType::i16: return b_.getInt16Ty();
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
// no dots (their layouts are not split yet); the cluster exchange area
// takes the start of shared memory.
void Lowerer::start_cluster(const ir::Function& fn) {
  int n = plan_.num_ctas;
  if (n > t_.max_cluster_ctas()) t_.set_cluster_size(*fn_, n);  // the target says what it lacks
  std::function<void(const ir::Region&)> check = [&](const ir::Region& r) {
    for (const auto& o : r.ops) {
      if (o->kind == OpKind::Dot) unsupported(*o, "with num_ctas > 1 (dots are not split over a cluster yet)");
      for (const auto& sub : o->regions) check(*sub);
    }
  };
  check(fn.body);
  t_.set_cluster_size(*fn_, n);
  scratch_base_ = kClusterBytes;
  need_smem(0);
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
    for (int k = 0; k < 2; ++k) t_.init_tx_barrier(b_, cluster_bar(k));
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
  }
  return c;
}

// Whether two layouts put the same elements in the same lanes and warps
// (a conversion between them only permutes registers).
namespace {
std::vector<LinearLayout::Coords> bases_of(const LinearLayout& l, const std::string& in) {
  for (const auto& d : l.in_dims())
    if (d.name == in) return d.bases;
  return {};
}
}  // namespace

bool Lowerer::same_threads(const LinearLayout& a, const LinearLayout& b) {
  for (const auto& in : {kLane, kWarp, kBlock})
    if (bases_of(a, in) != bases_of(b, in)) return false;
  return true;
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
  for (const auto& in : l.in_dims())
    for (const auto& b : in.bases) (in.name == kReg ? reg_bits : hw_bits) |= b[d];
  if ((reg_bits & hw_bits) == 0) return b_.CreateAdd(hw, b_.getInt32(reg), "", /*HasNUW=*/true, /*HasNSW=*/true);
  return b_.CreateXor(hw, b_.getInt32(reg));
}

// Row-major flat index of coordinates (hw ^ reg) in `shape`.
llvm::Value* Lowerer::flat_index(const std::vector<llvm::Value*>& hw, const LinearLayout::Coords& reg,
                        const std::vector<int64_t>& shape) {
  llvm::Value* flat = b_.getInt32(0);
  for (size_t d = 0; d < shape.size(); ++d) {
    llvm::Value* c = b_.CreateXor(hw[d], b_.getInt32(reg[d]));
    flat = b_.CreateOr(b_.CreateShl(flat, uint64_t(ilog2(shape[d]))), c);
  }
  return flat;
}

// True for the one thread and register that owns each element: lanes and
// warps whose layout bits replicate data are not owners.
llvm::Value* Lowerer::owner_predicate(const LinearLayout& l) {
  llvm::Value* p = b_.getTrue();
  uint32_t lane_mask = l.broadcast_mask(kLane), warp_mask = l.broadcast_mask(kWarp);
  if (lane_mask) p = b_.CreateAnd(p, b_.CreateICmpEQ(b_.CreateAnd(lane_, lane_mask), b_.getInt32(0)));
  if (warp_mask) p = b_.CreateAnd(p, b_.CreateICmpEQ(b_.CreateAnd(warp_, warp_mask), b_.getInt32(0)));
  // Bits of the block beyond the layout's warps (more warps than the
  // layout names) also replicate.
  int warp_bits = l.in_bits(kWarp);
  if ((1 << warp_bits) < plan_.num_warps)
    p = b_.CreateAnd(p, b_.CreateICmpULT(warp_, b_.getInt32(1 << warp_bits)));
  // Likewise the CTAs of a cluster that hold copies.
  if (plan_.num_ctas > 1) {
    if (uint32_t block_mask = l.broadcast_mask(kBlock))
      p = b_.CreateAnd(p, b_.CreateICmpEQ(b_.CreateAnd(block_, block_mask), b_.getInt32(0)));
    int block_bits = l.in_bits(kBlock);
    if ((1 << block_bits) < plan_.num_ctas)
      p = b_.CreateAnd(p, b_.CreateICmpULT(block_, b_.getInt32(1 << block_bits)));
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

// Shared memory is allocated by lifetime. Lifetimes nest in structured IR:
// a pipeline's buffers live while its loop runs, scratch (conversions,
// reductions, staged dot operands) only within one op. So a stack is the
// allocator: a loop's buffers go at scratch_base_, which moves past them
// for the loop and back after it (loops in sequence reuse the bytes,
// nested ones stack), and every scratch user starts at scratch_base_.
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
  scratch_read(-1);
  return ty->isIntegerTy(1) ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
}

int64_t Lowerer::alloc_size(llvm::Type* ty) {
  return int64_t(m_->getDataLayout().getTypeAllocSize(ty->isIntegerTy(1) ? b_.getInt8Ty() : ty));
}

Regs Lowerer::convert(const Regs& regs, const LinearLayout& from, const LinearLayout& to, const std::vector<int64_t>& shape,
             llvm::Type* ty) {
  if (from == to) return regs;
  // Same lanes, warps and CTAs: only registers move.
  if (from.out_dims().size() == to.out_dims().size() && same_threads(from, to)) {
    std::map<LinearLayout::Coords, int> where;
    for (int r = 0; r < num_regs(from); ++r) where.emplace(reg_coords(from, r), r);
    Regs out;
    bool ok = true;
    for (int r = 0; r < num_regs(to) && ok; ++r) {
      auto it = where.find(reg_coords(to, r));
      if (it == where.end()) ok = false;
      else out.push_back(regs[it->second]);
    }
    if (ok) return out;
  }
  // Through shared memory: every thread writes what it holds, then reads
  // what it needs. The leading barrier protects the previous user. Within
  // a CTA only: each must hold what it needs (its part, or all of it).
  if (from.in_bits(kBlock) > 0 || to.in_bits(kBlock) > 0) {
    auto fb = bases_of(from, kBlock);
    bool replicated = std::all_of(fb.begin(), fb.end(), [](const auto& c) {
      return std::all_of(c.begin(), c.end(), [](int32_t x) { return x == 0; });
    });
    if (!replicated && fb != bases_of(to, kBlock))
      throw Error("num_ctas > 1: this kernel moves tile elements between the CTAs of a cluster (a layout "
                  "conversion across CTAs), which is not supported yet; use num_ctas = 1");
  }
  int64_t numel = 1;
  for (auto s : shape) numel *= s;
  need_smem(numel * alloc_size(ty));
  barrier();
  auto dup = duplicate_regs(from);
  auto hw = hw_coords(from);
  for (int r = 0; r < num_regs(from); ++r)
    if (!dup[r]) smem_store(regs[r], flat_index(hw, reg_coords(from, r), shape), ty);
  barrier();
  auto hw_to = hw_coords(to);
  Regs out;
  for (int r = 0; r < num_regs(to); ++r) out.push_back(smem_load(ty, flat_index(hw_to, reg_coords(to, r), shape)));
  return out;
}

// Operand i of `op`, in the layout the op needs.
Regs Lowerer::operand(const Op& op, int i) {
  const ir::Value* v = op.operands[i];
  const Regs& regs = get(v);
  if (!v->type.is_tile()) return regs;
  auto req = required_operand_layout(op, i, plan_);
  if (!req) return regs;
  if (is_uniform(v)) return Regs(num_regs(*req), regs[0]);
  return convert_or_remat(v, regs, *req);
}

Regs Lowerer::convert_or_remat(const ir::Value* v, const Regs& regs, const LinearLayout& to) {
  const LinearLayout& from = plan_.of(v);
  if (from == to) return regs;
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

// A splat or constant holds one value in every register of any layout:
// it is rematerialized, never converted.
bool Lowerer::is_uniform(const ir::Value* v) {
  return v->def && (v->def->kind == OpKind::Splat || v->def->kind == OpKind::Constant);
}

// A value converted to `to` (for loop-carried values and if results).
Regs Lowerer::in_layout(const ir::Value* v, const ir::Value* like) {
  if (!v->type.is_tile()) return get(v);
  if (is_uniform(v)) return Regs(num_regs(plan_.of(like)), get(v)[0]);
  return convert_or_remat(v, get(v), plan_.of(like));
}

const Regs& Lowerer::get(const ir::Value* v) {
  auto it = vals_.find(v);
  if (it == vals_.end()) throw Error("internal: value of type " + v->type.str() + " used before it was lowered");
  return it->second;
}

void Lowerer::lower_region(const ir::Region& r) {
  for (const auto& op : r.ops) {
    if (op->kind == OpKind::Yield) continue;  // read by the parent op
    if (skip_.count(op.get())) continue;      // lives in shared memory (pipelined)
    b_.SetCurrentDebugLocation(llvm::DebugLoc());
    // A broken invariant of the lowering still names the user's op.
    try {
      lower_op(*op);
    } catch (const Error& e) {
      if (!std::string_view(e.what()).starts_with("internal: ")) throw;
      unsupported(*op, std::string("hit a compiler bug (") + e.what() + ")");
    }
    if (op.get() == refill_after_) refill_();
  }
}

void Lowerer::lower_op(const Op& op) {
  switch (op.kind) {
    case OpKind::Constant: return lower_constant(op);
    case OpKind::ProgramId:
    case OpKind::NumPrograms: {
      // A program is a cluster of num_ctas CTAs along x.
      int axis = int(op.attr_int("axis"));
      llvm::Value* v = op.kind == OpKind::ProgramId ? t_.program_id(b_, axis) : t_.num_programs(b_, axis);
      if (axis == 0 && plan_.num_ctas > 1) v = b_.CreateLShr(v, uint64_t(ilog2(plan_.num_ctas)));
      vals_[op.result()] = {v};
      return;
    }
    case OpKind::Arange: {
      const auto& l = plan_.of(op.result());
      auto hw = hw_coords(l);
      int64_t start = op.attr_int("start");
      Regs out;
      for (int r = 0; r < num_regs(l); ++r)
        out.push_back(b_.CreateAdd(coord(l, 0, hw[0], reg_coords(l, r)[0]), b_.getInt32(int32_t(start))));
      vals_[op.result()] = out;
      return;
    }
    case OpKind::Splat:
      vals_[op.result()] = Regs(width_of(op.result()), get(op.operands[0])[0]);
      return;
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Trans:
    case OpKind::Reshape:
      // Their operand layouts are derived from the result's with the same
      // registers: the values pass through unchanged.
      vals_[op.result()] = operand(op, 0);
      return;
    case OpKind::Join: {
      // Both operands in the first one's layout, side by side along a new
      // top register bit; then into the layout the result's users asked
      // for (a dot operand through a reshape, say).
      const ir::Value* res = op.result();
      if (!op.operands[0]->type.is_tile()) {  // two scalars: a [2] tile every thread holds
        Regs ab = {get(op.operands[0])[0], get(op.operands[1])[0]};
        LinearLayout line = line_layout(res->type.shape, 0, plan_.num_warps, plan_.warp_size, plan_.num_ctas);
        vals_[res] = convert(ab, line, plan_.of(res), res->type.shape, value_type(res->type));
        return;
      }
      Regs a = in_layout(op.operands[0], op.operands[0]);
      Regs c = in_layout(op.operands[1], op.operands[0]);
      a.insert(a.end(), c.begin(), c.end());
      vals_[res] = convert(a, join_layout(plan_.of(op.operands[0])), plan_.of(res), res->type.shape,
                           value_type(res->type));
      return;
    }
    case OpKind::Split: {
      // The operand arrives in the join of the first result's layout.
      Regs all = operand(op, 0);
      size_t half = all.size() / 2;
      vals_[op.result(0)] = Regs(all.begin(), all.begin() + half);
      Regs hi(all.begin() + half, all.end());
      const ir::Value* r1 = op.result(1);
      if (r1->type.is_tile())
        hi = convert(hi, plan_.of(op.result(0)), plan_.of(r1), r1->type.shape, value_type(r1->type));
      vals_[r1] = hi;
      return;
    }
    case OpKind::Reduce: return lower_reduce(op);
    case OpKind::Scan: return lower_scan(op);
    case OpKind::Dot: return lower_dot(op);
    case OpKind::Load: return lower_load(op);
    case OpKind::Store: return lower_store(op);
    case OpKind::AtomicRmw:
    case OpKind::AtomicCas: return lower_atomic(op);
    case OpKind::Assert: return lower_assert(op);
    case OpKind::Print: return lower_print(op);
    case OpKind::For: return lower_for(op);
    case OpKind::If: return lower_if(op);
    case OpKind::Yield: return;
    default:
      if (ir::op_is_elementwise(op.kind)) return lower_elementwise(op);
      unsupported(op, "has no GPU lowering");
  }
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

void Lowerer::lower_elementwise(const Op& op) {
  std::vector<Regs> ins;
  for (size_t i = 0; i < op.operands.size(); ++i) ins.push_back(operand(op, int(i)));
  int n = width_of(op.result());
  Regs out;
  // An f32 tile divided by one value (a row's sum, say), where the target
  // divides approximately anyway: one division a thread, then multiplies.
  // Adds at most half an ulp to the approximate division's error.
  if (op.kind == OpKind::Div && op.result()->type.dtype == DType::f32 && n > 1 &&
      std::all_of(ins[1].begin(), ins[1].end(), [&](llvm::Value* v) { return v == ins[1][0]; }))
    if (llvm::Value* inv = t_.fast_divide(b_, llvm::ConstantFP::get(b_.getFloatTy(), 1.0), ins[1][0])) {
      for (int r = 0; r < n; ++r) out.push_back(b_.CreateFMul(ins[0].size() == 1 ? ins[0][0] : ins[0][r], inv));
      vals_[op.result()] = out;
      return;
    }
  // Registers axis analysis proves equal (a mask over whole vectors)
  // share their run's first: one compare a vector, not one an element.
  std::vector<int> lead = n > 1 ? run_leaders(op.result()) : std::vector<int>(n, 0);
  out.resize(n);
  for (int r = 0; r < n; ++r) {
    if (lead[r] != r) continue;
    std::vector<llvm::Value*> args;
    for (auto& in : ins) args.push_back(in.size() == 1 ? in[0] : in[r]);
    out[r] = scalar_op(op, args);
  }
  for (int r = 0; r < n; ++r) out[r] = out[lead[r]];
  vals_[op.result()] = out;
}

// For each register of tile `v`, the register holding the first element
// of its run of equal values (axis analysis' constancy), or itself. Runs
// start at multiples of their length, so along a dimension where no lane
// or warp bit moves below the run length, clearing the low coordinate
// bits of a register lands on its run's first element.
std::vector<int> Lowerer::run_leaders(const ir::Value* v) {
  const LinearLayout& l = plan_.of(v);
  int n = num_regs(l);
  std::vector<int> lead(n);
  for (int r = 0; r < n; ++r) lead[r] = r;
  const transforms::AxisInfo& info = axis_.get(v);
  if (info.rank() != int(v->type.shape.size())) return lead;
  std::vector<int32_t> low(info.rank());  // coordinate bits within a run, per dimension
  bool any = false;
  for (int d = 0; d < info.rank(); ++d) {
    int64_t c = std::min<int64_t>(info.constancy[d], l.out_size(dim_name(d)));
    if (c < 1 || (c & (c - 1))) c = 1;  // runs of a power of two only
    for (const auto& in : l.in_dims())
      if (in.name != kReg)
        for (const auto& basis : in.bases)
          while (c > 1 && (basis[d] & (c - 1))) c /= 2;
    low[d] = int32_t(c - 1);
    any = any || c > 1;
  }
  if (!any) return lead;
  std::map<LinearLayout::Coords, int> at;
  for (int r = n - 1; r >= 0; --r) at[reg_coords(l, r)] = r;
  for (int r = 0; r < n; ++r) {
    auto c = reg_coords(l, r);
    for (int d = 0; d < info.rank(); ++d) c[d] &= ~low[d];
    if (auto it = at.find(c); it != at.end()) lead[r] = it->second;
  }
  return lead;
}

// One element of an elementwise op (also the body of combine regions).
llvm::Value* Lowerer::scalar_op(const Op& op, std::vector<llvm::Value*> a) {
  const ir::Type& rt = op.result()->type;
  DType in = op.operands.empty() ? rt.dtype : op.operands[op.kind == OpKind::Select ? 1 : 0]->type.dtype;
  bool in_ptr = !op.operands.empty() && op.operands[0]->type.is_ptr;
  switch (op.kind) {
    case OpKind::Cast: return cast(a[0], op.operands[0]->type.dtype, rt.dtype, op);
    case OpKind::Bitcast: return b_.CreateBitCast(a[0], value_type(rt));
    case OpKind::AddPtr: {
      DType off = op.operands[1]->type.dtype;
      llvm::Value* idx = is_unsigned(off) ? b_.CreateZExt(a[1], b_.getInt64Ty()) : b_.CreateSExt(a[1], b_.getInt64Ty());
      return b_.CreateGEP(memory_type(rt.dtype), a[0], idx);
    }
    case OpKind::Select: return b_.CreateSelect(a[0], a[1], a[2]);
    default: break;
  }
  if (in_ptr && op.kind == OpKind::Cmp) {
    a[0] = b_.CreatePtrToInt(a[0], b_.getInt64Ty());
    a[1] = b_.CreatePtrToInt(a[1], b_.getInt64Ty());
    return int_op(op, a, DType::u64);
  }
  if (!is_float(in)) return int_op(op, a, in);
  // Floats: f8 computes in f32; bf16/f16 math in f32; arithmetic native.
  bool widen = is_f8(in) || (bit_width(in) == 16 && is_math(op.kind));
  if (widen) {
    // bf16 % bf16 widens through the bits: from fpext operands LLVM would
    // shrink the f32 frem back to a bf16 one, which AMDGPU instruction
    // selection cannot lower (a fatal "no libcall available for frem").
    auto widen_bits = [&](llvm::Value* v) {
      llvm::Value* bits = b_.CreateZExt(b_.CreateBitCast(v, b_.getInt16Ty()), b_.getInt32Ty());
      return b_.CreateBitCast(b_.CreateShl(bits, 16), b_.getFloatTy());
    };
    for (auto& v : a) v = in == DType::bf16 && op.kind == OpKind::Rem ? widen_bits(v) : to_f32(v, in);
    llvm::Value* r = float_op(op, a, DType::f32);
    if (op.kind == OpKind::Cmp) return r;
    return from_f32(r, rt.dtype);
  }
  return float_op(op, a, in);
}

bool Lowerer::is_math(OpKind k) {
  switch (k) {
    case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt:
    case OpKind::Rsqrt: case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh: case OpKind::Erf:
    case OpKind::Rem: return true;
    default: return false;
  }
}

llvm::Value* Lowerer::int_op(const Op& op, const std::vector<llvm::Value*>& a, DType d) {
  bool s = !is_unsigned(d) && d != DType::i1;
  unsigned bits = a[0]->getType()->getIntegerBitWidth();
  switch (op.kind) {
    case OpKind::Add: return b_.CreateAdd(a[0], a[1]);
    case OpKind::Sub: return b_.CreateSub(a[0], a[1]);
    case OpKind::Mul: return b_.CreateMul(a[0], a[1]);
    case OpKind::Div: return s ? b_.CreateSDiv(a[0], a[1]) : b_.CreateUDiv(a[0], a[1]);
    case OpKind::Rem: return s ? b_.CreateSRem(a[0], a[1]) : b_.CreateURem(a[0], a[1]);
    case OpKind::And: return b_.CreateAnd(a[0], a[1]);
    case OpKind::Or: return b_.CreateOr(a[0], a[1]);
    case OpKind::Xor: return b_.CreateXor(a[0], a[1]);
    case OpKind::Shl:
    case OpKind::Shr: {
      // Counts at or past the width give 0 (or -1 for an arithmetic shift
      // of a negative value), never LLVM's poison.
      llvm::Value* big = b_.CreateICmpUGE(a[1], llvm::ConstantInt::get(a[1]->getType(), bits));
      llvm::Value* amt = b_.CreateSelect(big, llvm::ConstantInt::get(a[1]->getType(), bits - 1), a[1]);
      if (op.kind == OpKind::Shl) return b_.CreateSelect(big, llvm::ConstantInt::get(a[0]->getType(), 0), b_.CreateShl(a[0], amt));
      if (s) return b_.CreateAShr(a[0], amt);
      return b_.CreateSelect(big, llvm::ConstantInt::get(a[0]->getType(), 0), b_.CreateLShr(a[0], amt));
    }
    case OpKind::Minimum: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a[0], a[1]);
    case OpKind::Maximum: return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a[0], a[1]);
    case OpKind::Cmp: return b_.CreateICmp(int_pred(op.attr_str("pred"), s), a[0], a[1]);
    case OpKind::Fma: return b_.CreateAdd(b_.CreateMul(a[0], a[1]), a[2]);
    case OpKind::Neg: return b_.CreateNeg(a[0]);
    case OpKind::Not: return b_.CreateNot(a[0]);
    case OpKind::Abs:
      return s ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a[0], b_.getFalse()) : a[0];
    default: unsupported(op, "is not defined on integers");
  }
}

llvm::CmpInst::Predicate Lowerer::int_pred(const std::string& p, bool s) {
  using P = llvm::CmpInst::Predicate;
  if (p == "eq") return P::ICMP_EQ;
  if (p == "ne") return P::ICMP_NE;
  if (p == "lt") return s ? P::ICMP_SLT : P::ICMP_ULT;
  if (p == "le") return s ? P::ICMP_SLE : P::ICMP_ULE;
  if (p == "gt") return s ? P::ICMP_SGT : P::ICMP_UGT;
  return s ? P::ICMP_SGE : P::ICMP_UGE;
}

// f64 transcendental functions: the expansions of math_expansions.h, the
// same on every target (no vendor math library at run time).
static llvm::Value* math_f64(IRBuilder<>& b, const Target& t, OpKind k, llvm::Value* x) {
  MathEmitter e(b, t.global_address_space());
  MathEmitter::V v = e.wrap(x);
  switch (k) {
    case OpKind::Exp: return math::exp(e, v).v;
    case OpKind::Exp2: return math::exp2(e, v).v;
    case OpKind::Log: return math::log(e, v).v;
    case OpKind::Log2: return math::log2(e, v).v;
    case OpKind::Rsqrt: return math::rsqrt(e, v).v;
    case OpKind::Sin: return math::sin(e, v).v;
    case OpKind::Cos: return math::cos(e, v).v;
    case OpKind::Tanh: return math::tanh(e, v).v;
    case OpKind::Erf: return math::erf(e, v).v;
    default: throw Error("internal: no f64 expansion for " + std::string(ir::op_name(k)));
  }
}

llvm::Value* Lowerer::float_op(const Op& op, const std::vector<llvm::Value*>& a, DType d) {
  using P = llvm::CmpInst::Predicate;
  switch (op.kind) {
    case OpKind::Add: return b_.CreateFAdd(a[0], a[1]);
    case OpKind::Sub: return b_.CreateFSub(a[0], a[1]);
    case OpKind::Mul: return b_.CreateFMul(a[0], a[1]);
    case OpKind::Div:
      if (d == DType::f32)
        if (llvm::Value* fast = t_.fast_divide(b_, a[0], a[1])) return fast;
      return b_.CreateFDiv(a[0], a[1]);
    case OpKind::Rem: return b_.CreateFRem(a[0], a[1]);
    case OpKind::Minimum: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a[0], a[1]);
    case OpKind::Maximum: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a[0], a[1]);
    case OpKind::Fma: return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a[0]->getType()}, {a[0], a[1], a[2]});
    case OpKind::Neg: return b_.CreateFNeg(a[0]);
    case OpKind::Abs: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a[0]);
    case OpKind::Floor: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, a[0]);
    case OpKind::Ceil: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, a[0]);
    case OpKind::Sqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a[0]);
    case OpKind::Cmp: {
      const std::string& p = op.attr_str("pred");
      P pred = p == "eq" ? P::FCMP_OEQ : p == "ne" ? P::FCMP_UNE : p == "lt" ? P::FCMP_OLT
             : p == "le" ? P::FCMP_OLE : p == "gt" ? P::FCMP_OGT : P::FCMP_OGE;
      return b_.CreateFCmp(pred, a[0], a[1]);
    }
    default: break;
  }
  if (!is_math(op.kind)) unsupported(op, "is not defined on floats");
  if (d == DType::f64) return math_f64(b_, t_, op.kind, a[0]);
  if (d != DType::f32) unsupported(op, "on " + std::string(dtype_name(d)) + " is not lowered for GPU targets (f64, f32, f16, bf16 are)");
  return math_f32(op.kind, a[0]);
}

// f32 transcendental functions: the target's fast instruction when it has
// one, else an expansion every target lowers.
llvm::Value* Lowerer::math_f32(OpKind k, llvm::Value* x) {
  if (llvm::Value* fast = t_.fast_math(b_, k, x)) return fast;
  auto f = [&](double v) { return llvm::ConstantFP::get(b_.getFloatTy(), v); };
  switch (k) {
    case OpKind::Exp: return math_f32(OpKind::Exp2, b_.CreateFMul(x, f(std::numbers::log2e)));
    case OpKind::Log: return b_.CreateFMul(math_f32(OpKind::Log2, x), f(std::numbers::ln2));
    case OpKind::Exp2: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp2, x);
    case OpKind::Log2: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::log2, x);
    case OpKind::Rsqrt: return b_.CreateFDiv(f(1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case OpKind::Sqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case OpKind::Sin: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sin, x);
    case OpKind::Cos: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::cos, x);
    case OpKind::Tanh: {
      // tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|).
      llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
      llvm::Value* e = math_f32(OpKind::Exp2, b_.CreateFMul(ax, f(-2.0 * std::numbers::log2e)));
      llvm::Value* r = b_.CreateFDiv(b_.CreateFSub(f(1.0), e), b_.CreateFAdd(f(1.0), e));
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
    }
    case OpKind::Erf: {
      // erfc(|x|) = t exp(-x^2 + P(t)), t = 1 / (1 + |x|/2): a Chebyshev
      // fit with relative error below 1.2e-7 everywhere.
      static const double c[] = {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                                 0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277};
      llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
      llvm::Value* t = b_.CreateFDiv(f(1.0), b_.CreateFAdd(f(1.0), b_.CreateFMul(f(0.5), ax)));
      llvm::Value* p = f(c[9]);
      for (int i = 8; i >= 0; --i) p = b_.CreateFAdd(f(c[i]), b_.CreateFMul(t, p));
      llvm::Value* arg = b_.CreateFSub(p, b_.CreateFMul(ax, ax));
      llvm::Value* erfc = b_.CreateFMul(t, math_f32(OpKind::Exp, arg));
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b_.CreateFSub(f(1.0), erfc), x);
    }
    default: throw Error("internal: no f32 expansion for " + std::string(ir::op_name(k)));
  }
}

llvm::Value* Lowerer::to_f32(llvm::Value* v, DType from) {
  if (from == DType::f8e4m3 || from == DType::f8e5m2) return decode_f8(v, from);
  if (from == DType::f32) return v;
  return b_.CreateFPCast(v, b_.getFloatTy());
}

llvm::Value* Lowerer::from_f32(llvm::Value* v, DType to) {
  if (to == DType::f8e4m3 || to == DType::f8e5m2) return encode_f8(v, to);
  if (to == DType::f32) return v;
  return b_.CreateFPCast(v, elem_type(to));
}

// f8 -> f32 through the bit fields (exact).
llvm::Value* Lowerer::decode_f8(llvm::Value* bits8, DType d) {
  bool e4 = d == DType::f8e4m3;
  int mbits = e4 ? 3 : 2, bias = e4 ? 7 : 15, ebits = e4 ? 4 : 5;
  llvm::Value* x = b_.CreateZExt(bits8, b_.getInt32Ty());
  llvm::Value* sign = b_.CreateShl(b_.CreateLShr(x, 7), 31);
  llvm::Value* exp = b_.CreateAnd(b_.CreateLShr(x, mbits), (1 << ebits) - 1);
  llvm::Value* man = b_.CreateAnd(x, (1 << mbits) - 1);
  llvm::Value* normal = b_.CreateOr(b_.CreateShl(b_.CreateAdd(exp, b_.getInt32(127 - bias)), 23),
                                    b_.CreateShl(man, 23 - mbits));
  llvm::Value* normal_f = b_.CreateBitCast(normal, b_.getFloatTy());
  llvm::Value* sub_f = b_.CreateFMul(b_.CreateUIToFP(man, b_.getFloatTy()),
                                     llvm::ConstantFP::get(b_.getFloatTy(), std::ldexp(1.0, 1 - bias - mbits)));
  llvm::Value* mag = b_.CreateSelect(b_.CreateICmpEQ(exp, b_.getInt32(0)), sub_f, normal_f);
  llvm::Value* special;
  if (e4) {  // S.1111.111 is NaN; no infinities
    special = b_.CreateICmpEQ(b_.CreateAnd(x, 0x7f), b_.getInt32(0x7f));
    mag = b_.CreateSelect(special, llvm::ConstantFP::getNaN(b_.getFloatTy()), mag);
  } else {   // exponent all ones: inf or NaN
    special = b_.CreateICmpEQ(exp, b_.getInt32(31));
    llvm::Value* infnan = b_.CreateBitCast(b_.CreateOr(b_.getInt32(0x7f800000), b_.CreateShl(man, 21)), b_.getFloatTy());
    mag = b_.CreateSelect(special, infnan, mag);
  }
  llvm::Value* magbits = b_.CreateBitCast(mag, b_.getInt32Ty());
  return b_.CreateBitCast(b_.CreateOr(magbits, sign), b_.getFloatTy());
}

// f32 -> f8, rounding to nearest even once (as dtype.h does).
llvm::Value* Lowerer::encode_f8(llvm::Value* f, DType d) {
  bool e4 = d == DType::f8e4m3;
  int mbits = e4 ? 3 : 2, bias = e4 ? 7 : 15;
  int drop = 23 - mbits;
  llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
  llvm::Value* sign = b_.CreateTrunc(b_.CreateLShr(bits, 24), b_.getInt8Ty());
  sign = b_.CreateAnd(sign, 0x80);
  llvm::Value* a = b_.CreateAnd(bits, 0x7fffffff);
  // Normal range: rebias the exponent, round the mantissa to nearest even.
  llvm::Value* rebased = b_.CreateSub(a, b_.getInt32((127 - bias) << 23));
  llvm::Value* odd = b_.CreateAnd(b_.CreateLShr(rebased, drop), 1);
  llvm::Value* normal = b_.CreateLShr(b_.CreateAdd(rebased, b_.CreateAdd(b_.getInt32((1 << (drop - 1)) - 1), odd)), drop);
  // Subnormal range: a multiple of the smallest subnormal, rounded even.
  llvm::Value* af = b_.CreateBitCast(a, b_.getFloatTy());
  llvm::Value* scaled = b_.CreateFMul(af, llvm::ConstantFP::get(b_.getFloatTy(), std::ldexp(1.0, bias - 1 + mbits)));
  llvm::Value* sub = b_.CreateFPToUI(b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, scaled), b_.getInt32Ty());
  llvm::Value* tiny = b_.CreateICmpULT(a, b_.getInt32((127 - bias + 1) << 23));
  llvm::Value* mag = b_.CreateSelect(tiny, sub, normal);
  llvm::Value* nan = b_.CreateICmpUGT(a, b_.getInt32(0x7f800000));
  if (e4) {
    // Past 448 (and inf) the fn format has only NaN.
    mag = b_.CreateSelect(b_.CreateOr(nan, b_.CreateICmpUGT(mag, b_.getInt32(0x7f))), b_.getInt32(0x7f), mag);
  } else {
    mag = b_.CreateSelect(b_.CreateICmpUGT(mag, b_.getInt32(0x7c)), b_.getInt32(0x7c), mag);
    mag = b_.CreateSelect(nan, b_.getInt32(0x7e), mag);
  }
  return b_.CreateOr(b_.CreateTrunc(mag, b_.getInt8Ty()), sign);
}

llvm::Value* Lowerer::cast(llvm::Value* v, DType from, DType to, const Op& op) {
  if (from == to) return v;
  llvm::Type* ty = elem_type(to);
  if (to == DType::i1) {
    if (is_float(from)) return b_.CreateFCmpUNE(to_f32_or_native(v, from), llvm::ConstantFP::get(to_f32_or_native(v, from)->getType(), 0.0));
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (is_float(from) && is_float(to)) {
    // f8 has no LLVM type, and bf16 <-> f16 (one width, neither contains the
    // other) no single LLVM cast: both go through f32, which holds each exactly.
    // f64 to a narrow format: through f32 with round-to-odd, so once rounded.
    if (from == DType::f64 && bit_width(to) < 32) return from_f32(f64_to_f32_odd(v), to);
    if (is_f8(from) || is_f8(to) || bit_width(from) == bit_width(to)) return from_f32(to_f32(v, from), to);
    return b_.CreateFPCast(v, ty);
  }
  if (is_float(from)) {  // float -> int: truncate, saturate, NaN -> 0
    llvm::Value* x = is_f8(from) ? to_f32(v, from) : v;
    auto id = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return b_.CreateIntrinsic(id, {ty, x->getType()}, {x});
  }
  if (is_float(to) && bit_width(to) < 32) return from_f32(int_to_f32_odd(v, from), to);  // rounded once
  if (is_float(to)) {  // int -> float
    bool s = !is_unsigned(from) && from != DType::i1;
    llvm::Type* target = is_f8(to) ? b_.getFloatTy() : ty;
    llvm::Value* r = s ? b_.CreateSIToFP(v, target) : b_.CreateUIToFP(v, target);
    return is_f8(to) ? encode_f8(r, to) : r;
  }
  bool s = !is_unsigned(from) && from != DType::i1;
  (void)op;
  return b_.CreateIntCast(v, ty, s);
}

llvm::Value* Lowerer::f64_to_f32_odd(llvm::Value* v) {
  llvm::Value* f = b_.CreateFPTrunc(v, b_.getFloatTy());
  llvm::Value* back = b_.CreateFPExt(f, b_.getDoubleTy());
  llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
  // Inexact (NaN stays as it is): one step toward zero where f rounded
  // away from it, then the last bit set.
  llvm::Value* inexact = b_.CreateFCmpONE(back, v);
  llvm::Value* away = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                       b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v));
  llvm::Value* toward = b_.CreateSub(bits, b_.CreateZExt(away, b_.getInt32Ty()));
  llvm::Value* odd = b_.CreateOr(toward, b_.getInt32(1));
  return b_.CreateBitCast(b_.CreateSelect(inexact, odd, bits), b_.getFloatTy());
}

llvm::Value* Lowerer::int_to_f32_odd(llvm::Value* v, DType from) {
  // The magnitude as 64 bits, its top 24 bits kept (the rest a sticky last
  // bit), converted exactly and scaled back by a power of two.
  bool s = !is_unsigned(from) && from != DType::i1;
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Value* x = b_.CreateIntCast(v, i64, s);
  llvm::Value* neg = s ? b_.CreateICmpSLT(x, b_.getInt64(0)) : b_.getFalse();
  llvm::Value* mag = b_.CreateSelect(neg, b_.CreateNeg(x), x);
  llvm::Value* lz = b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, b_.CreateOr(mag, b_.getInt64(1)), b_.getTrue());
  llvm::Value* top = b_.CreateSub(b_.getInt64(63), lz);
  llvm::Value* shift = b_.CreateSelect(b_.CreateICmpUGT(top, b_.getInt64(23)), b_.CreateSub(top, b_.getInt64(23)),
                                       b_.getInt64(0));
  llvm::Value* kept = b_.CreateLShr(mag, shift);
  llvm::Value* dropped = b_.CreateAnd(mag, b_.CreateSub(b_.CreateShl(b_.getInt64(1), shift), b_.getInt64(1)));
  kept = b_.CreateOr(kept, b_.CreateZExt(b_.CreateICmpNE(dropped, b_.getInt64(0)), i64));
  llvm::Value* f = b_.CreateUIToFP(b_.CreateTrunc(kept, b_.getInt32Ty()), b_.getFloatTy());  // < 2^24: exact
  // 2^shift (shift <= 40) as a float: exponent bits only.
  llvm::Value* scale = b_.CreateBitCast(
      b_.CreateShl(b_.CreateAdd(b_.CreateTrunc(shift, b_.getInt32Ty()), b_.getInt32(127)), 23), b_.getFloatTy());
  f = b_.CreateFMul(f, scale);  // exact: a power of two, no overflow
  return b_.CreateSelect(neg, b_.CreateFNeg(f), f);
}

MemoryHints Lowerer::hints(const Op& op) {
  return {op.attr_str_or("cache", ""), op.attr_str_or("evict", ""), op.attr_int_or("volatile", 0) != 0};
}

void Lowerer::lower_load(const Op& op) {
  const ir::Type& rt = op.result()->type;
  llvm::Type* mt = memory_type(rt.dtype);
  if (!rt.is_tile()) {
    llvm::Value* mask = op.operands.size() > 1 ? get(op.operands[1])[0] : nullptr;
    llvm::Value* other = op.operands.size() > 2 ? to_memory(get(op.operands[2])[0]) : llvm::Constant::getNullValue(mt);
    vals_[op.result()] = {from_memory(t_.load(b_, mt, get(op.operands[0])[0], mask, other, hints(op)), rt.dtype)};
    return;
  }
  if (auto it = buffer_reads_.find(&op); it != buffer_reads_.end()) return read_buffer(op, it->second);
  // Loaded by the previous iteration (register prefetch, lower_control.cpp).
  auto pre = prefetched_.find(&op);
  vals_[op.result()] = unpack_chunks(pre != prefetched_.end() ? pre->second : load_chunks(op, operand(op, 0), nullptr),
                                     rt.dtype);
}

// The elements of vector accesses (as loaded from memory), in order.
Regs Lowerer::unpack_chunks(const Regs& chunks, DType d) {
  Regs out;
  for (llvm::Value* c : chunks) {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(c->getType());
    for (unsigned k = 0; k < (vt ? vt->getNumElements() : 1); ++k)
      out.push_back(from_memory(vt ? b_.CreateExtractElement(c, uint64_t(k)) : c, d));
  }
  return out;
}

// A tile load's vector accesses from `ptrs` (one a vector_width of
// registers), `other` where the mask (and `live`, when given) is off.
Regs Lowerer::load_chunks(const Op& op, const Regs& ptrs, llvm::Value* live) {
  DType d = op.result()->type.dtype;
  llvm::Type* mt = memory_type(d);
  Regs mask = op.operands.size() > 1 ? operand(op, 1) : Regs{};
  Regs other = op.operands.size() > 2 ? operand(op, 2) : Regs{};
  int vec = vector_width(op, plan_.of(op.result()), d);
  llvm::Type* ty = vec == 1 ? mt : llvm::FixedVectorType::get(mt, vec);
  Regs chunks;
  for (size_t r = 0; r < ptrs.size(); r += vec) {
    llvm::Value* dflt = llvm::Constant::getNullValue(ty);
    if (!other.empty()) {
      dflt = vec == 1 ? to_memory(other[r]) : llvm::UndefValue::get(ty);
      for (int k = 0; k < vec && vec > 1; ++k) dflt = b_.CreateInsertElement(dflt, to_memory(other[r + k]), uint64_t(k));
    }
    llvm::Value* pred = mask.empty() ? live : live ? b_.CreateAnd(live, mask[r]) : mask[r];
    chunks.push_back(t_.load(b_, ty, ptrs[r], pred, dflt, hints(op)));
  }
  return chunks;
}

llvm::Value* Lowerer::from_memory(llvm::Value* v, DType d) {
  return d == DType::i1 ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
}

void Lowerer::lower_store(const Op& op) {
  const ir::Value* ptr = op.operands[0];
  DType d = op.operands[1]->type.dtype;
  if (!ptr->type.is_tile()) {
    // One thread (of the cluster's first CTA) stores a scalar.
    llvm::Value* pred = b_.CreateICmpEQ(b_.CreateOr(tid_, block_), b_.getInt32(0));
    if (op.operands.size() > 2) pred = b_.CreateAnd(pred, get(op.operands[2])[0]);
    t_.store(b_, to_memory(get(op.operands[1])[0]), get(ptr)[0], pred, hints(op));
    return;
  }
  const LinearLayout* lp = &plan_.of(ptr);
  Regs ptrs, val, mask;
  // A value computed in another layout (a dot's accumulator, say) is
  // stored from where it is when its addresses and mask are cheap to
  // recompute there: no round trip through shared memory.
  const ir::Value* value = op.operands[1];
  if (value->type.is_tile() && !is_uniform(value) && !same_threads(plan_.of(value), *lp)) {
    const LinearLayout& lv = plan_.of(value);
    int budget = 32;
    auto p = remat(ptr, lv, budget);
    std::optional<Regs> m;
    if (p && op.operands.size() > 2) m = remat(op.operands[2], lv, budget);
    if (p && (op.operands.size() <= 2 || m)) {
      lp = &lv;
      ptrs = std::move(*p);
      val = get(value);
      if (m) mask = std::move(*m);
    }
  }
  if (ptrs.empty()) {
    ptrs = get(ptr);
    val = operand(op, 1);
    mask = op.operands.size() > 2 ? operand(op, 2) : Regs{};
  }
  const LinearLayout& l = *lp;
  int vec = vector_width(op, l, d);
  llvm::Value* owner = owner_predicate(l);
  auto dup = duplicate_regs(l);
  for (size_t r = 0; r < ptrs.size(); r += vec) {
    if (dup[r]) continue;
    llvm::Value* v;
    if (vec == 1) {
      v = to_memory(val[r]);
    } else {
      v = llvm::UndefValue::get(llvm::FixedVectorType::get(memory_type(d), vec));
      for (int k = 0; k < vec; ++k) v = b_.CreateInsertElement(v, to_memory(val[r + k]), uint64_t(k));
    }
    llvm::Value* pred = owner;
    if (!mask.empty()) pred = b_.CreateAnd(pred, mask[r]);
    t_.store(b_, v, ptrs[r], pred, hints(op));
  }
}

// Runs `body` only where `pred` holds; returns the phi of its value and
// `otherwise` (body may return null for no value).
llvm::Value* Lowerer::guarded(llvm::Value* pred, const std::function<llvm::Value*()>& body, llvm::Value* otherwise) {
  llvm::BasicBlock* from = b_.GetInsertBlock();
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "guarded", fn_);
  auto* join_bb = llvm::BasicBlock::Create(ctx_, "guarded.end", fn_);
  b_.CreateCondBr(pred, then_bb, join_bb);
  b_.SetInsertPoint(then_bb);
  llvm::Value* v = body();
  llvm::BasicBlock* then_end = b_.GetInsertBlock();
  b_.CreateBr(join_bb);
  b_.SetInsertPoint(join_bb);
  if (!v) return nullptr;
  auto* phi = b_.CreatePHI(v->getType(), 2);
  phi->addIncoming(v, then_end);
  phi->addIncoming(otherwise, from);
  return phi;
}

void Lowerer::lower_atomic(const Op& op) {
  const ir::Value* ptr = op.operands[0];
  bool cas = op.kind == OpKind::AtomicCas;
  DType d = op.result()->type.dtype;
  llvm::Type* ty = elem_type(d);
  bool tile = ptr->type.is_tile();
  Regs ptrs = get(ptr);
  std::vector<Regs> args;
  for (size_t i = 1; i < op.operands.size(); ++i) args.push_back(tile ? operand(op, int(i)) : get(op.operands[i]));
  const LinearLayout* l = tile ? &plan_.of(ptr) : nullptr;
  // Each CTA of a cluster must perform its own elements' atomics and see
  // their old values: replicated ones are not supported yet.
  if (plan_.num_ctas > 1 && (!tile || l->broadcast_mask(kBlock) || (1 << l->in_bits(kBlock)) < plan_.num_ctas))
    unsupported(op, "with num_ctas > 1 on a value every CTA of the cluster holds (a scalar or a replicated tile)");
  llvm::Value* owner = tile ? owner_predicate(*l) : b_.CreateICmpEQ(tid_, b_.getInt32(0));
  std::vector<bool> dup = tile ? duplicate_regs(*l) : std::vector<bool>{false};
  MemOrder order = mem_order(op);
  MemScope scope = mem_scope(op);
  // No GPU adds or orders f8 numbers atomically (a loop of compare-and-swap
  // would; none is emitted yet).
  if (!cas && is_f8(d) && op.attr_str("kind") != "xchg")
    unsupported(op, op.attr_str("kind") + " on " + std::string(dtype_name(d)) +
                        " is not supported on GPU targets (xchg and atomic_cas are; f16, bf16 and f32 add, max and "
                        "min are)");
  // A bool is a byte (0 or 1) in memory: its atomics are byte atomics, and
  // add (mod 2) is xor.
  llvm::Type* mem_ty = d == DType::i1 ? b_.getInt8Ty() : ty;
  auto to_mem = [&](llvm::Value* v) { return d == DType::i1 ? b_.CreateZExt(v, mem_ty) : v; };
  auto from_mem = [&](llvm::Value* v) { return d == DType::i1 ? b_.CreateTrunc(v, ty) : v; };
  Regs old(ptrs.size(), llvm::Constant::getNullValue(ty));
  for (size_t r = 0; r < ptrs.size(); ++r) {
    if (dup[r]) continue;
    llvm::Value* pred = owner;
    if (!cas && args.size() > 1) pred = b_.CreateAnd(pred, args[1][r]);
    old[r] = guarded(pred, [&]() -> llvm::Value* {
      if (cas) {
        llvm::Type* it = b_.getIntNTy(mem_ty->getPrimitiveSizeInBits());
        llvm::Value* cmp = b_.CreateBitCast(to_mem(args[0][r]), it);
        llvm::Value* val = b_.CreateBitCast(to_mem(args[1][r]), it);
        return from_mem(b_.CreateBitCast(t_.atomic_cas(b_, ptrs[r], cmp, val, order, scope), mem_ty));
      }
      auto kind = rmw_kind(op, d);
      if (d == DType::i1 && kind == llvm::AtomicRMWInst::Add) kind = llvm::AtomicRMWInst::Xor;
      return from_mem(t_.atomic_rmw(b_, kind, ptrs[r], to_mem(args[0][r]), order, scope));
    }, llvm::Constant::getNullValue(ty));
  }
  // Old values reach every thread that holds the element (duplicates and,
  // for a scalar, all threads) through shared memory.
  if (tile) {
    int64_t numel = ptr->type.numel();
    need_smem(numel * alloc_size(ty));
    barrier();
    auto hw = hw_coords(*l);
    for (size_t r = 0; r < ptrs.size(); ++r)
      if (!dup[r]) guarded(owner, [&]() -> llvm::Value* {
          smem_store(old[r], flat_index(hw, reg_coords(*l, int(r)), ptr->type.shape), ty);
          return nullptr;
        }, nullptr);
    barrier();
    Regs out;
    for (size_t r = 0; r < ptrs.size(); ++r) out.push_back(smem_load(ty, flat_index(hw, reg_coords(*l, int(r)), ptr->type.shape)));
    vals_[op.result()] = out;
  } else {
    need_smem(alloc_size(ty));
    barrier();
    guarded(owner, [&]() -> llvm::Value* { smem_store(old[0], b_.getInt32(0), ty); return nullptr; }, nullptr);
    barrier();
    vals_[op.result()] = {smem_load(ty, b_.getInt32(0))};
  }
}

// The verifier admits only these names; absent means Triton's default.
MemOrder Lowerer::mem_order(const Op& op) {
  std::string s = op.attr_str_or("sem", "acq_rel");
  if (s == "relaxed") return MemOrder::relaxed;
  if (s == "acquire") return MemOrder::acquire;
  if (s == "release") return MemOrder::release;
  if (s == "acq_rel") return MemOrder::acq_rel;
  unsupported(op, "has an unknown memory order '" + s + "'");
}
MemScope Lowerer::mem_scope(const Op& op) {
  std::string s = op.attr_str_or("scope", "gpu");
  if (s == "cta") return MemScope::cta;
  if (s == "gpu") return MemScope::gpu;
  if (s == "sys") return MemScope::sys;
  unsupported(op, "has an unknown memory scope '" + s + "'");
}

llvm::AtomicRMWInst::BinOp Lowerer::rmw_kind(const Op& op, DType d) {
  using B = llvm::AtomicRMWInst::BinOp;
  const std::string& k = op.attr_str("kind");
  bool f = is_float(d), s = !is_unsigned(d);
  if (k == "add") return f ? B::FAdd : B::Add;
  if (k == "max") return f ? B::FMax : s ? B::Max : B::UMax;
  if (k == "min") return f ? B::FMin : s ? B::Min : B::UMin;
  if (k == "xchg") return B::Xchg;
  if (k == "and") return B::And;
  if (k == "or") return B::Or;
  if (k == "xor") return B::Xor;
  unsupported(op, "has an unknown kind '" + k + "'");
}

void Lowerer::lower_assert(const Op& op) {
  Regs c = get(op.operands[0]);
  llvm::Value* all = b_.getTrue();
  for (auto* v : c) all = b_.CreateAnd(all, v);
  guarded(b_.CreateNot(all), [&]() -> llvm::Value* {
    t_.assert_fail(b_, op.attr_str_or("msg", "device_assert failed"), op.loc.file, op.loc.line);
    return nullptr;
  }, nullptr);
}

void Lowerer::lower_print(const Op& op) {
  std::string prefix = op.attr_str_or("prefix", "");
  for (const ir::Value* v : op.operands) {
    Regs regs = get(v);
    for (size_t r = 0; r < regs.size(); ++r) {
      llvm::Value* x = regs[r];
      std::string fmt;
      if (is_float(v->type.dtype)) {
        // printf takes doubles; an f64 is one already (through f32 it would round).
        if (v->type.dtype != DType::f64) x = b_.CreateFPExt(to_f32(x, v->type.dtype), b_.getDoubleTy());
        fmt = "%f";
      } else if (v->type.is_ptr) {
        fmt = "%p";
      } else {
        x = b_.CreateIntCast(x, b_.getInt64Ty(), !is_unsigned(v->type.dtype) && v->type.dtype != DType::i1);
        fmt = "%lld";
      }
      std::vector<llvm::Value*> args = {t_.program_id(b_, 0), t_.program_id(b_, 1), t_.program_id(b_, 2), tid_,
                                        b_.getInt32(int32_t(r)), x};
      // A target that cannot print says why; the error names the op's line.
      try {
        t_.print(b_, "pid (%d, %d, %d) thread %d reg %d " + prefix + " " + fmt + "\n", args);
      } catch (const Error& e) {
        unsupported(op, std::string("cannot be lowered: ") + e.what());
      }
    }
  }
}

}  // namespace lowering

LoweredKernel lower_to_llvm(llvm::LLVMContext& ctx, const ir::Function& fn, const LayoutPlan& plan,
                            const transforms::AxisAnalysis& axis, const Target& target, const std::string& name) {
  // Loads pipelined into registers take shared memory the body's scratch
  // might have needed: if the kernel does not fit, lower it again without
  // them (dots' pipelines stay; they were there before such loads were).
  try {
    return lowering::Lowerer(ctx, plan, axis, target, true).run(fn, name);
  } catch (const lowering::SharedMemoryOverflow&) {
    return lowering::Lowerer(ctx, plan, axis, target, false).run(fn, name);
  }
}

}  // namespace tl::codegen
