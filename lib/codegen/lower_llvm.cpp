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
#include "codegen/lower_llvm.h"

#include "codegen/pipeline_plan.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <numbers>
#include <set>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using llvm::IRBuilder;
using Regs = std::vector<llvm::Value*>;

namespace {

[[noreturn]] void unsupported(const Op& op, const std::string& what) {
  throw Error(op.loc.str() + ": '" + std::string(op.name()) + "' " + what);
}

int ilog2(int64_t v) { return std::countr_zero(uint64_t(v)); }

bool is_f8(DType d) { return d == DType::f8e4m3 || d == DType::f8e5m2; }

// A 2-D tile in shared memory, stored with rows of its contiguous
// dimension in 16-byte chunks whose order within a row is XOR-swizzled by
// the row index (bank-conflict-free 8-row matrix loads), seen possibly
// transposed.
struct SmemTile {
  llvm::Value* base = nullptr;  // first byte (i8 pointer in shared memory)
  int64_t shape[2] = {0, 0};    // stored shape
  int contiguous = 1;           // stored dimension that is contiguous
  int elem_bytes = 2;
  int vec = 8;                  // elements per 16-byte chunk
  int per_phase = 1, max_phase = 1;
  bool transposed = false;      // the value is the transpose of what is stored

  static SmemTile plan(int64_t d0, int64_t d1, int contiguous, int elem_bytes) {
    SmemTile t;
    t.shape[0] = d0, t.shape[1] = d1;
    t.contiguous = contiguous;
    t.elem_bytes = elem_bytes;
    int64_t row_bytes = t.shape[contiguous] * elem_bytes;
    t.vec = int(std::min<int64_t>(16 / elem_bytes, t.shape[contiguous]));
    t.per_phase = int(std::max<int64_t>(1, 128 / row_bytes));
    t.max_phase = int(std::max<int64_t>(1, std::min<int64_t>(row_bytes / 16, 8)));
    return t;
  }
  int64_t bytes() const { return shape[0] * shape[1] * elem_bytes; }
};

class Lowerer {
 public:
  Lowerer(llvm::LLVMContext& ctx, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, const Target& target)
      : ctx_(ctx), plan_(plan), axis_(axis), t_(target), b_(ctx) {}

  LoweredKernel run(const ir::Function& fn, const std::string& name) {
    auto module = std::make_unique<llvm::Module>(name, ctx_);
    m_ = module.get();
    t_.init_module(*m_);

    std::vector<llvm::Type*> params;
    for (const auto& a : fn.body.args) params.push_back(value_type(a->type));
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
    int threads = plan_.num_warps * plan_.warp_size;
    t_.init_kernel(*fn_, threads);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));

    smem_ = new llvm::GlobalVariable(*m_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false,
                                     llvm::GlobalValue::ExternalLinkage, nullptr, "tl_shared_memory", nullptr,
                                     llvm::GlobalValue::NotThreadLocal, t_.shared_address_space());
    smem_->setAlignment(llvm::Align(16));

    llvm::Value* tid = t_.thread_id(b_);
    lane_ = b_.CreateAnd(tid, plan_.warp_size - 1, "lane");
    warp_ = b_.CreateLShr(tid, ilog2(plan_.warp_size), "warp");
    tid_ = tid;
    for (size_t i = 0; i < fn.body.args.size(); ++i) vals_[fn.body.args[i].get()] = {fn_->getArg(unsigned(i))};

    lower_region(fn.body);
    b_.CreateRetVoid();

    std::string err;
    llvm::raw_string_ostream os(err);
    if (llvm::verifyModule(*m_, &os)) throw Error("internal: the lowered LLVM module is invalid: " + err);
    if (smem_bytes_ > t_.max_shared_bytes())
      throw Error("kernel '" + name + "' needs " + std::to_string(smem_bytes_) + " bytes of shared memory, the target has " +
                  std::to_string(t_.max_shared_bytes()));
    return {std::move(module), threads, int(smem_bytes_)};
  }

 private:
  // ------------------------------------------------------------------ types
  // The LLVM type of one element as held in registers (f8: its bits in i8).
  llvm::Type* elem_type(DType d, bool is_ptr = false) {
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
  llvm::Type* value_type(const ir::Type& t) { return elem_type(t.dtype, t.is_ptr); }
  // In memory an i1 is a byte.
  llvm::Type* memory_type(DType d) { return d == DType::i1 ? b_.getInt8Ty() : elem_type(d); }

  // ------------------------------------------------------------ layout math
  // Runtime coordinates contributed by this thread's lane and warp.
  std::vector<llvm::Value*> hw_coords(const LinearLayout& l) {
    auto c = hw_coords_of(l, kLane), w = hw_coords_of(l, kWarp);
    for (size_t k = 0; k < c.size(); ++k) c[k] = b_.CreateXor(c[k], w[k]);
    return c;
  }
  static LinearLayout::Coords reg_coords(const LinearLayout& l, int r) { return l.apply({{kReg, r}}); }
  // Coordinate `d` of a register: the thread's part XOR the register's.
  // When no register bit moves a coordinate bit a lane or warp bit moves,
  // the XOR is an addition, which LLVM folds into address offsets.
  llvm::Value* coord(const LinearLayout& l, int d, llvm::Value* hw, int32_t reg) {
    int32_t reg_bits = 0, hw_bits = 0;
    for (const auto& in : l.in_dims())
      for (const auto& b : in.bases) (in.name == kReg ? reg_bits : hw_bits) |= b[d];
    if ((reg_bits & hw_bits) == 0) return b_.CreateAdd(hw, b_.getInt32(reg), "", /*HasNUW=*/true, /*HasNSW=*/true);
    return b_.CreateXor(hw, b_.getInt32(reg));
  }
  int num_regs(const LinearLayout& l) { return l.in_size(kReg); }

  // Row-major flat index of coordinates (hw ^ reg) in `shape`.
  llvm::Value* flat_index(const std::vector<llvm::Value*>& hw, const LinearLayout::Coords& reg,
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
  llvm::Value* owner_predicate(const LinearLayout& l) {
    llvm::Value* p = b_.getTrue();
    uint32_t lane_mask = l.broadcast_mask(kLane), warp_mask = l.broadcast_mask(kWarp);
    if (lane_mask) p = b_.CreateAnd(p, b_.CreateICmpEQ(b_.CreateAnd(lane_, lane_mask), b_.getInt32(0)));
    if (warp_mask) p = b_.CreateAnd(p, b_.CreateICmpEQ(b_.CreateAnd(warp_, warp_mask), b_.getInt32(0)));
    // Bits of the block beyond the layout's warps (more warps than the
    // layout names) also replicate.
    int warp_bits = l.in_bits(kWarp);
    if ((1 << warp_bits) < plan_.num_warps)
      p = b_.CreateAnd(p, b_.CreateICmpULT(warp_, b_.getInt32(1 << warp_bits)));
    return p;
  }
  // Registers that repeat an earlier register's element.
  std::vector<bool> duplicate_regs(const LinearLayout& l) {
    std::set<LinearLayout::Coords> seen;
    std::vector<bool> dup(num_regs(l));
    for (int r = 0; r < num_regs(l); ++r) dup[r] = !seen.insert(reg_coords(l, r)).second;
    return dup;
  }

  // ----------------------------------------------------------- shared memory
  // Scratch users (conversions, reductions) share one region that starts
  // past the buffers live pipelines hold (scratch_base_).
  llvm::Value* smem_ptr(llvm::Value* byte_offset) {
    return b_.CreateGEP(b_.getInt8Ty(), smem_, b_.CreateAdd(byte_offset, b_.getInt64(scratch_base_)));
  }
  void need_smem(int64_t bytes) { smem_bytes_ = std::max<int64_t>(smem_bytes_, scratch_base_ + bytes); }
  void smem_store(llvm::Value* v, llvm::Value* elem_index, llvm::Type* ty, int64_t base = 0) {
    llvm::Value* stored = v->getType()->isIntegerTy(1) ? b_.CreateZExt(v, b_.getInt8Ty()) : v;
    llvm::Type* st = stored->getType();
    int64_t size = int64_t(m_->getDataLayout().getTypeAllocSize(st));
    llvm::Value* off = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(elem_index, b_.getInt64Ty()), b_.getInt64(size)),
                                    b_.getInt64(base));
    b_.CreateStore(stored, smem_ptr(off));
    (void)ty;
  }
  llvm::Value* smem_load(llvm::Type* ty, llvm::Value* elem_index, int64_t base = 0) {
    llvm::Type* lt = ty->isIntegerTy(1) ? b_.getInt8Ty() : ty;
    int64_t size = int64_t(m_->getDataLayout().getTypeAllocSize(lt));
    llvm::Value* off = b_.CreateAdd(b_.CreateMul(b_.CreateZExt(elem_index, b_.getInt64Ty()), b_.getInt64(size)),
                                    b_.getInt64(base));
    llvm::Value* v = b_.CreateLoad(lt, smem_ptr(off));
    return ty->isIntegerTy(1) ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
  }
  int64_t alloc_size(llvm::Type* ty) {
    return int64_t(m_->getDataLayout().getTypeAllocSize(ty->isIntegerTy(1) ? b_.getInt8Ty() : ty));
  }

  // ------------------------------------------------------------ conversions
  Regs convert(const Regs& regs, const LinearLayout& from, const LinearLayout& to, const std::vector<int64_t>& shape,
               llvm::Type* ty) {
    if (from == to) return regs;
    // Same lanes and warps: only registers move.
    bool same_threads = from.out_dims().size() == to.out_dims().size();
    for (const auto& in : {kLane, kWarp}) {
      if (!same_threads) break;
      auto a = from.in_dims(), bdims = to.in_dims();
      auto fa = std::find_if(a.begin(), a.end(), [&](const auto& d) { return d.name == in; });
      auto fb = std::find_if(bdims.begin(), bdims.end(), [&](const auto& d) { return d.name == in; });
      bool ea = fa == a.end() || fa->bases.empty(), eb = fb == bdims.end() || fb->bases.empty();
      if (ea != eb || (!ea && fa->bases != fb->bases)) same_threads = false;
    }
    if (same_threads) {
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
    // what it needs. The leading barrier protects the previous user.
    int64_t numel = 1;
    for (auto s : shape) numel *= s;
    need_smem(numel * alloc_size(ty));
    t_.barrier(b_);
    auto dup = duplicate_regs(from);
    auto hw = hw_coords(from);
    for (int r = 0; r < num_regs(from); ++r)
      if (!dup[r]) smem_store(regs[r], flat_index(hw, reg_coords(from, r), shape), ty);
    t_.barrier(b_);
    auto hw_to = hw_coords(to);
    Regs out;
    for (int r = 0; r < num_regs(to); ++r) out.push_back(smem_load(ty, flat_index(hw_to, reg_coords(to, r), shape)));
    return out;
  }

  // Operand i of `op`, in the layout the op needs.
  Regs operand(const Op& op, int i) {
    const ir::Value* v = op.operands[i];
    const Regs& regs = get(v);
    if (!v->type.is_tile()) return regs;
    auto req = required_operand_layout(op, i, plan_);
    if (!req) return regs;
    if (is_uniform(v)) return Regs(num_regs(*req), regs[0]);
    return convert_or_remat(v, regs, *req);
  }
  Regs convert_or_remat(const ir::Value* v, const Regs& regs, const LinearLayout& to) {
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
  std::optional<Regs> remat(const ir::Value* v, const LinearLayout& l, int& budget) {
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
  static bool is_uniform(const ir::Value* v) {
    return v->def && (v->def->kind == OpKind::Splat || v->def->kind == OpKind::Constant);
  }
  // A value converted to `to` (for loop-carried values and if results).
  Regs in_layout(const ir::Value* v, const ir::Value* like) {
    if (!v->type.is_tile()) return get(v);
    if (is_uniform(v)) return Regs(num_regs(plan_.of(like)), get(v)[0]);
    return convert_or_remat(v, get(v), plan_.of(like));
  }

  const Regs& get(const ir::Value* v) {
    auto it = vals_.find(v);
    if (it == vals_.end()) throw Error("internal: value of type " + v->type.str() + " used before it was lowered");
    return it->second;
  }
  int width_of(const ir::Value* v) { return v->type.is_tile() ? num_regs(plan_.of(v)) : 1; }

  // ---------------------------------------------------------------- regions
  void lower_region(const ir::Region& r) {
    for (const auto& op : r.ops) {
      if (op->kind == OpKind::Yield) continue;  // read by the parent op
      if (skip_.count(op.get())) continue;      // lives in shared memory (pipelined)
      b_.SetCurrentDebugLocation(llvm::DebugLoc());
      lower_op(*op);
    }
  }

  void lower_op(const Op& op) {
    switch (op.kind) {
      case OpKind::Constant: return lower_constant(op);
      case OpKind::ProgramId:
        vals_[op.result()] = {t_.program_id(b_, int(op.attr_int("axis")))};
        return;
      case OpKind::NumPrograms:
        vals_[op.result()] = {t_.num_programs(b_, int(op.attr_int("axis")))};
        return;
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
        Regs a = get(op.operands[0]);
        Regs c = in_layout(op.operands[1], op.operands[0]);
        a.insert(a.end(), c.begin(), c.end());
        vals_[op.result()] = a;
        return;
      }
      case OpKind::Split: {
        Regs all = operand(op, 0);
        size_t half = all.size() / 2;
        vals_[op.result(0)] = Regs(all.begin(), all.begin() + half);
        vals_[op.result(1)] = Regs(all.begin() + half, all.end());
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

  void lower_constant(const Op& op) {
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

  // ------------------------------------------------------------ elementwise
  void lower_elementwise(const Op& op) {
    std::vector<Regs> ins;
    for (size_t i = 0; i < op.operands.size(); ++i) ins.push_back(operand(op, int(i)));
    int n = width_of(op.result());
    Regs out;
    for (int r = 0; r < n; ++r) {
      std::vector<llvm::Value*> args;
      for (auto& in : ins) args.push_back(in.size() == 1 ? in[0] : in[r]);
      out.push_back(scalar_op(op, args));
    }
    vals_[op.result()] = out;
  }

  // One element of an elementwise op (also the body of combine regions).
  llvm::Value* scalar_op(const Op& op, std::vector<llvm::Value*> a) {
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
      for (auto& v : a) v = to_f32(v, in);
      llvm::Value* r = float_op(op, a, DType::f32);
      if (op.kind == OpKind::Cmp) return r;
      return from_f32(r, rt.dtype);
    }
    return float_op(op, a, in);
  }

  static bool is_math(OpKind k) {
    switch (k) {
      case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt:
      case OpKind::Rsqrt: case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh: case OpKind::Erf:
      case OpKind::Rem: return true;
      default: return false;
    }
  }

  llvm::Value* int_op(const Op& op, const std::vector<llvm::Value*>& a, DType d) {
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

  static llvm::CmpInst::Predicate int_pred(const std::string& p, bool s) {
    using P = llvm::CmpInst::Predicate;
    if (p == "eq") return P::ICMP_EQ;
    if (p == "ne") return P::ICMP_NE;
    if (p == "lt") return s ? P::ICMP_SLT : P::ICMP_ULT;
    if (p == "le") return s ? P::ICMP_SLE : P::ICMP_ULE;
    if (p == "gt") return s ? P::ICMP_SGT : P::ICMP_UGT;
    return s ? P::ICMP_SGE : P::ICMP_UGE;
  }

  llvm::Value* float_op(const Op& op, const std::vector<llvm::Value*>& a, DType d) {
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
    if (d != DType::f32) unsupported(op, "on " + std::string(dtype_name(d)) + " is not lowered for GPU targets yet (f32, f16, bf16 are)");
    return math_f32(op.kind, a[0]);
  }

  // f32 transcendental functions: the target's fast instruction when it has
  // one, else an expansion every target lowers.
  llvm::Value* math_f32(OpKind k, llvm::Value* x) {
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

  // ------------------------------------------------------------------ casts
  llvm::Value* to_f32(llvm::Value* v, DType from) {
    if (from == DType::f8e4m3 || from == DType::f8e5m2) return decode_f8(v, from);
    if (from == DType::f32) return v;
    return b_.CreateFPCast(v, b_.getFloatTy());
  }
  llvm::Value* from_f32(llvm::Value* v, DType to) {
    if (to == DType::f8e4m3 || to == DType::f8e5m2) return encode_f8(v, to);
    if (to == DType::f32) return v;
    return b_.CreateFPCast(v, elem_type(to));
  }

  // f8 -> f32 through the bit fields (exact).
  llvm::Value* decode_f8(llvm::Value* bits8, DType d) {
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
  llvm::Value* encode_f8(llvm::Value* f, DType d) {
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

  llvm::Value* cast(llvm::Value* v, DType from, DType to, const Op& op) {
    if (from == to) return v;
    llvm::Type* ty = elem_type(to);
    if (to == DType::i1) {
      if (is_float(from)) return b_.CreateFCmpUNE(to_f32_or_native(v, from), llvm::ConstantFP::get(to_f32_or_native(v, from)->getType(), 0.0));
      return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (is_float(from) && is_float(to)) {
      if (is_f8(from) || is_f8(to)) return from_f32(to_f32(v, from), to);
      return b_.CreateFPCast(v, ty);
    }
    if (is_float(from)) {  // float -> int: truncate, saturate, NaN -> 0
      llvm::Value* x = is_f8(from) ? to_f32(v, from) : v;
      auto id = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
      return b_.CreateIntrinsic(id, {ty, x->getType()}, {x});
    }
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
  llvm::Value* to_f32_or_native(llvm::Value* v, DType d) { return is_f8(d) ? to_f32(v, d) : v; }

  // ----------------------------------------------------------------- memory
  MemoryHints hints(const Op& op) {
    return {op.attr_str_or("cache", ""), op.attr_str_or("evict", ""), op.attr_int_or("volatile", 0) != 0};
  }

  // Elements per vector access for a tile memory op in layout `l`.
  int vector_width(const Op& op, const LinearLayout& l, DType d) { return access_width(op, l, d, axis_); }

  void lower_load(const Op& op) {
    const ir::Type& rt = op.result()->type;
    llvm::Type* mt = memory_type(rt.dtype);
    if (!rt.is_tile()) {
      llvm::Value* mask = op.operands.size() > 1 ? get(op.operands[1])[0] : nullptr;
      llvm::Value* other = op.operands.size() > 2 ? to_memory(get(op.operands[2])[0]) : llvm::Constant::getNullValue(mt);
      vals_[op.result()] = {from_memory(t_.load(b_, mt, get(op.operands[0])[0], mask, other, hints(op)), rt.dtype)};
      return;
    }
    const auto& l = plan_.of(op.result());
    Regs ptrs = operand(op, 0);
    Regs mask = op.operands.size() > 1 ? operand(op, 1) : Regs{};
    Regs other = op.operands.size() > 2 ? operand(op, 2) : Regs{};
    int vec = vector_width(op, l, rt.dtype);
    Regs out(ptrs.size());
    for (size_t r = 0; r < ptrs.size(); r += vec) {
      llvm::Type* ty = vec == 1 ? mt : llvm::FixedVectorType::get(mt, vec);
      llvm::Value* dflt = llvm::Constant::getNullValue(ty);
      if (!other.empty()) {
        dflt = vec == 1 ? to_memory(other[r]) : llvm::UndefValue::get(ty);
        for (int k = 0; k < vec && vec > 1; ++k) dflt = b_.CreateInsertElement(dflt, to_memory(other[r + k]), uint64_t(k));
      }
      llvm::Value* v = t_.load(b_, ty, ptrs[r], mask.empty() ? nullptr : mask[r], dflt, hints(op));
      for (int k = 0; k < vec; ++k)
        out[r + k] = from_memory(vec == 1 ? v : b_.CreateExtractElement(v, uint64_t(k)), rt.dtype);
    }
    vals_[op.result()] = out;
  }
  llvm::Value* to_memory(llvm::Value* v) { return v->getType()->isIntegerTy(1) ? b_.CreateZExt(v, b_.getInt8Ty()) : v; }
  llvm::Value* from_memory(llvm::Value* v, DType d) {
    return d == DType::i1 ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
  }

  void lower_store(const Op& op) {
    const ir::Value* ptr = op.operands[0];
    DType d = op.operands[1]->type.dtype;
    if (!ptr->type.is_tile()) {
      // One thread stores a scalar.
      llvm::Value* pred = b_.CreateICmpEQ(tid_, b_.getInt32(0));
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
  llvm::Value* guarded(llvm::Value* pred, const std::function<llvm::Value*()>& body, llvm::Value* otherwise) {
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

  void lower_atomic(const Op& op) {
    const ir::Value* ptr = op.operands[0];
    bool cas = op.kind == OpKind::AtomicCas;
    DType d = op.result()->type.dtype;
    llvm::Type* ty = elem_type(d);
    bool tile = ptr->type.is_tile();
    Regs ptrs = get(ptr);
    std::vector<Regs> args;
    for (size_t i = 1; i < op.operands.size(); ++i) args.push_back(tile ? operand(op, int(i)) : get(op.operands[i]));
    const LinearLayout* l = tile ? &plan_.of(ptr) : nullptr;
    llvm::Value* owner = tile ? owner_predicate(*l) : b_.CreateICmpEQ(tid_, b_.getInt32(0));
    std::vector<bool> dup = tile ? duplicate_regs(*l) : std::vector<bool>{false};
    Regs old(ptrs.size(), llvm::Constant::getNullValue(ty));
    for (size_t r = 0; r < ptrs.size(); ++r) {
      if (dup[r]) continue;
      llvm::Value* pred = owner;
      if (!cas && args.size() > 1) pred = b_.CreateAnd(pred, args[1][r]);
      old[r] = guarded(pred, [&]() -> llvm::Value* {
        if (cas) {
          llvm::Type* it = b_.getIntNTy(ty->getPrimitiveSizeInBits());
          llvm::Value* cmp = b_.CreateBitCast(args[0][r], it);
          llvm::Value* val = b_.CreateBitCast(args[1][r], it);
          auto* x = b_.CreateAtomicCmpXchg(ptrs[r], cmp, val, llvm::MaybeAlign(), llvm::AtomicOrdering::Monotonic,
                                           llvm::AtomicOrdering::Monotonic);
          return b_.CreateBitCast(b_.CreateExtractValue(x, 0), ty);
        }
        return b_.CreateAtomicRMW(rmw_kind(op, d), ptrs[r], args[0][r], llvm::MaybeAlign(),
                                  llvm::AtomicOrdering::Monotonic);
      }, llvm::Constant::getNullValue(ty));
    }
    // Old values reach every thread that holds the element (duplicates and,
    // for a scalar, all threads) through shared memory.
    if (tile) {
      int64_t numel = ptr->type.numel();
      need_smem(numel * alloc_size(ty));
      t_.barrier(b_);
      auto hw = hw_coords(*l);
      for (size_t r = 0; r < ptrs.size(); ++r)
        if (!dup[r]) guarded(owner, [&]() -> llvm::Value* {
            smem_store(old[r], flat_index(hw, reg_coords(*l, int(r)), ptr->type.shape), ty);
            return nullptr;
          }, nullptr);
      t_.barrier(b_);
      Regs out;
      for (size_t r = 0; r < ptrs.size(); ++r) out.push_back(smem_load(ty, flat_index(hw, reg_coords(*l, int(r)), ptr->type.shape)));
      vals_[op.result()] = out;
    } else {
      need_smem(alloc_size(ty));
      t_.barrier(b_);
      guarded(owner, [&]() -> llvm::Value* { smem_store(old[0], b_.getInt32(0), ty); return nullptr; }, nullptr);
      t_.barrier(b_);
      vals_[op.result()] = {smem_load(ty, b_.getInt32(0))};
    }
  }

  llvm::AtomicRMWInst::BinOp rmw_kind(const Op& op, DType d) {
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

  void lower_assert(const Op& op) {
    Regs c = get(op.operands[0]);
    llvm::Value* all = b_.getTrue();
    for (auto* v : c) all = b_.CreateAnd(all, v);
    guarded(b_.CreateNot(all), [&]() -> llvm::Value* {
      t_.assert_fail(b_, op.attr_str_or("msg", "device_assert failed"), op.loc.file, op.loc.line);
      return nullptr;
    }, nullptr);
  }

  void lower_print(const Op& op) {
    std::string prefix = op.attr_str_or("prefix", "");
    for (const ir::Value* v : op.operands) {
      Regs regs = get(v);
      for (size_t r = 0; r < regs.size(); ++r) {
        llvm::Value* x = regs[r];
        std::string fmt;
        if (is_float(v->type.dtype)) {
          x = b_.CreateFPExt(to_f32(x, v->type.dtype), b_.getDoubleTy());
          fmt = "%f";
        } else if (v->type.is_ptr) {
          fmt = "%p";
        } else {
          x = b_.CreateIntCast(x, b_.getInt64Ty(), !is_unsigned(v->type.dtype) && v->type.dtype != DType::i1);
          fmt = "%lld";
        }
        std::vector<llvm::Value*> args = {t_.program_id(b_, 0), t_.program_id(b_, 1), t_.program_id(b_, 2), tid_,
                                          b_.getInt32(int32_t(r)), x};
        t_.print(b_, "pid (%d, %d, %d) thread %d reg %d " + prefix + " " + fmt + "\n", args);
      }
    }
  }

  // ------------------------------------------------------------ reductions
  // Applies a combine region to (lhs..., rhs...) scalars.
  std::vector<llvm::Value*> combine(const ir::Region& region, const std::vector<llvm::Value*>& lhs,
                                    const std::vector<llvm::Value*>& rhs) {
    size_t n = lhs.size();
    for (size_t i = 0; i < n; ++i) {
      vals_[region.args[i].get()] = {lhs[i]};
      vals_[region.args[n + i].get()] = {rhs[i]};
    }
    lower_region(region);
    std::vector<llvm::Value*> out;
    for (const ir::Value* y : region.terminator()->operands) out.push_back(get(y)[0]);
    return out;
  }

  // Pairwise (balanced tree) combination of a list of tuples.
  std::vector<llvm::Value*> tree(const ir::Region& region, std::vector<std::vector<llvm::Value*>> items) {
    while (items.size() > 1) {
      std::vector<std::vector<llvm::Value*>> next;
      for (size_t i = 0; i + 1 < items.size(); i += 2) next.push_back(combine(region, items[i], items[i + 1]));
      if (items.size() % 2) next.push_back(items.back());
      items = std::move(next);
    }
    return items[0];
  }

  // 32-bit pieces of a value, for shuffles.
  llvm::Value* shuffle(llvm::Value* v, int mask) {
    llvm::Type* ty = v->getType();
    if (ty->isPointerTy()) return b_.CreateIntToPtr(shuffle(b_.CreatePtrToInt(v, b_.getInt64Ty()), mask), ty);
    unsigned bits = unsigned(m_->getDataLayout().getTypeSizeInBits(ty));
    llvm::Value* as_int = b_.CreateBitCast(v, b_.getIntNTy(bits));
    if (bits == 64) {
      llvm::Value* lo = b_.CreateTrunc(as_int, b_.getInt32Ty());
      llvm::Value* hi = b_.CreateTrunc(b_.CreateLShr(as_int, 32), b_.getInt32Ty());
      lo = t_.shuffle_xor(b_, lo, mask);
      hi = t_.shuffle_xor(b_, hi, mask);
      llvm::Value* r = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()), b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
      return b_.CreateBitCast(r, ty);
    }
    llvm::Value* wide = bits == 32 ? as_int : b_.CreateZExt(as_int, b_.getInt32Ty());
    llvm::Value* got = t_.shuffle_xor(b_, wide, mask);
    return b_.CreateBitCast(bits == 32 ? got : b_.CreateTrunc(got, b_.getIntNTy(bits)), ty);
  }

  void lower_reduce(const Op& op) {
    int axis = int(op.attr_int("axis"));
    size_t n = op.operands.size();
    const ir::Region& region = *op.regions[0];
    std::vector<Regs> in;
    for (size_t i = 0; i < n; ++i) in.push_back(operand(op, int(i)));
    auto req = required_operand_layout(op, 0, plan_);
    LinearLayout l = req ? *req : plan_.of(op.operands[0]);
    const auto& shape = op.operands[0]->type.shape;
    bool scalar = shape.size() == 1;
    LinearLayout s = l.slice(axis);
    int out_regs = scalar ? 1 : num_regs(s);

    // 1. Within a thread: registers that differ only along the axis.
    std::vector<std::vector<llvm::Value*>> acc(out_regs);
    auto dup = duplicate_regs(l);
    for (int j = 0; j < out_regs; ++j) {
      LinearLayout::Coords want = scalar ? LinearLayout::Coords{} : reg_coords(s, j);
      std::vector<std::pair<int32_t, int>> members;  // (axis coordinate, register)
      for (int r = 0; r < num_regs(l); ++r) {
        if (dup[r]) continue;
        auto c = reg_coords(l, r);
        int32_t along = c[axis];
        c.erase(c.begin() + axis);
        if (c == want) members.push_back({along, r});
      }
      std::sort(members.begin(), members.end());
      std::vector<std::vector<llvm::Value*>> items;
      for (auto [along, r] : members) {
        std::vector<llvm::Value*> t;
        for (size_t i = 0; i < n; ++i) t.push_back(in[i][r]);
        items.push_back(t);
      }
      acc[j] = tree(region, items);
    }
    // 2. Across lanes whose bits move along the axis.
    for (const auto& d : l.in_dims()) {
      if (d.name != kLane) continue;
      for (size_t bit = 0; bit < d.bases.size(); ++bit) {
        if (d.bases[bit][axis] == 0) continue;
        for (auto& a : acc) {
          std::vector<llvm::Value*> other;
          for (auto* v : a) other.push_back(shuffle(v, 1 << bit));
          a = combine(region, a, other);
        }
      }
    }
    // 3. Across warps: each writes its partials, then every thread combines
    // the partials of the warps along the axis in order.
    std::vector<int> warp_bits;
    for (const auto& d : l.in_dims())
      if (d.name == kWarp)
        for (size_t bit = 0; bit < d.bases.size(); ++bit)
          if (d.bases[bit][axis] != 0) warp_bits.push_back(int(bit));
    if (!warp_bits.empty()) {
      std::vector<int64_t> rshape = shape;
      rshape.erase(rshape.begin() + axis);
      int64_t slots = 1;
      for (auto x : rshape) slots *= x;
      int groups = 1 << warp_bits.size();
      std::vector<int64_t> base(n);
      int64_t total = 0;
      for (size_t i = 0; i < n; ++i) {
        base[i] = total;
        total += groups * slots * alloc_size(acc[0][i]->getType());
        total = (total + 15) / 16 * 16;
      }
      need_smem(total);
      // This warp's index among the warps along the axis.
      llvm::Value* group = b_.getInt32(0);
      for (size_t k = 0; k < warp_bits.size(); ++k)
        group = b_.CreateOr(group, b_.CreateShl(b_.CreateAnd(b_.CreateLShr(warp_, warp_bits[k]), 1), uint64_t(k)));
      auto hw = scalar ? std::vector<llvm::Value*>{} : hw_coords(s);
      auto slot = [&](int j) -> llvm::Value* {
        return scalar ? static_cast<llvm::Value*>(b_.getInt32(0)) : flat_index(hw, reg_coords(s, j), rshape);
      };
      t_.barrier(b_);
      for (int j = 0; j < out_regs; ++j)
        for (size_t i = 0; i < n; ++i)
          smem_store(acc[j][i], b_.CreateAdd(b_.CreateMul(group, b_.getInt32(int32_t(slots))), slot(j)),
                     acc[j][i]->getType(), base[i]);
      t_.barrier(b_);
      // When the low lane bits replicate the result (a reduction to a
      // scalar, say), lane l reads the partial of warp group (l mod groups)
      // and shuffles across those bits combine the groups: one read per
      // lane instead of one per warp. Otherwise every lane reads them all.
      bool lanes_replicate = groups <= plan_.warp_size &&
                             (scalar || (s.broadcast_mask(kLane) & uint32_t(groups - 1)) == uint32_t(groups - 1));
      for (int j = 0; j < out_regs && !lanes_replicate; ++j) {
        std::vector<std::vector<llvm::Value*>> items;
        for (int g = 0; g < groups; ++g) {
          std::vector<llvm::Value*> t;
          for (size_t i = 0; i < n; ++i)
            t.push_back(smem_load(acc[j][i]->getType(), b_.CreateAdd(b_.getInt32(int32_t(g * slots)), slot(j)), base[i]));
          items.push_back(t);
        }
        acc[j] = tree(region, items);
      }
      llvm::Value* mine = b_.CreateAnd(lane_, groups - 1);
      for (int j = 0; j < out_regs && lanes_replicate; ++j) {
        std::vector<llvm::Value*> v;
        for (size_t i = 0; i < n; ++i)
          v.push_back(smem_load(acc[j][i]->getType(),
                                b_.CreateAdd(b_.CreateMul(mine, b_.getInt32(int32_t(slots))), slot(j)), base[i]));
        for (int bit = 1; bit < groups; bit <<= 1) {
          std::vector<llvm::Value*> other;
          for (auto* x : v) other.push_back(shuffle(x, bit));
          v = combine(region, v, other);
        }
        acc[j] = v;
      }
    }
    // The results are in the sliced layout; users may have asked for another.
    for (size_t i = 0; i < n; ++i) {
      Regs out;
      for (int j = 0; j < out_regs; ++j) out.push_back(acc[j][i]);
      const ir::Value* res = op.result(int(i));
      if (!scalar) out = convert(out, s, plan_.of(res), res->type.shape, value_type(res->type));
      vals_[res] = out;
    }
  }

  void lower_scan(const Op& op) {
    // The operand arrives in a line layout: register bits 0..k-1 walk the
    // axis, so each thread scans its lines sequentially.
    int axis = int(op.attr_int("axis"));
    bool reverse = op.attr_int_or("reverse", 0) != 0;
    size_t n = op.operands.size();
    std::vector<Regs> in;
    for (size_t i = 0; i < n; ++i) in.push_back(operand(op, int(i)));
    int64_t len = op.operands[0]->type.shape[axis];
    std::vector<Regs> out(n, Regs(in[0].size()));
    for (size_t base = 0; base < in[0].size(); base += len) {
      std::vector<llvm::Value*> acc;
      for (int64_t k = 0; k < len; ++k) {
        size_t r = base + (reverse ? len - 1 - k : k);
        std::vector<llvm::Value*> cur;
        for (size_t i = 0; i < n; ++i) cur.push_back(in[i][r]);
        acc = k == 0 ? cur : combine(*op.regions[0], acc, cur);
        for (size_t i = 0; i < n; ++i) out[i][r] = acc[i];
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const ir::Value* res = op.result(int(i));
      vals_[res] = convert(out[i], *required_operand_layout(op, int(i), plan_), plan_.of(res), res->type.shape,
                           value_type(res->type));
    }
  }

  // -------------------------------------------------------------------- dot
  // A x B + C on the target's matrix instruction: for each (m, n) fragment
  // of this warp, walk K through the instruction, picking each fragment's
  // registers out of the tile layouts (dot_layout.h).
  // Operands in shared memory are read one K step at a time, right before
  // the instructions of that step, which keeps few fragments live.
  void lower_dot(const Op& op) {
    const DotLayouts& d = plan_.dots.at(&op);
    DType acc = op.result()->type.dtype;
    Regs c = operand(op, 2);
    if (!d.instr) {
      vals_[op.result()] = fma_dot(op, d, dot_operand(op, 0), dot_operand(op, 1), c);
      return;
    }
    std::optional<SmemTile> tile[2];
    Regs regs[2];
    int64_t staged = 0;
    for (int i = 0; i < 2; ++i) {
      tile[i] = smem_source(op, i, staged);
      if (!tile[i]) regs[i] = dot_operand(op, i);
    }
    if (staged) t_.barrier(b_);  // staged tiles are written
    const MatrixInstr& mi = *d.instr;
    for (auto*& v : c) v = cast(v, acc, mi.acc, op);
    int na = mi.a.in_size(kReg), nb = mi.b.in_size(kReg), nc = mi.c.in_size(kReg);
    // The fragments of step s + 1 are read before the instructions of step
    // s, so their shared-memory latency overlaps the multiplies.
    Regs next[2];
    for (int i = 0; i < 2; ++i)
      if (tile[i]) next[i] = load_fragments(*tile[i], op, i, 0);
    for (int s = 0; s < d.reps_k; ++s) {
      for (int i = 0; i < 2; ++i)
        if (tile[i]) {
          regs[i] = next[i];
          if (s + 1 < d.reps_k) next[i] = load_fragments(*tile[i], op, i, s + 1);
        }
      for (int i = 0; i < d.reps_m; ++i)
        for (int j = 0; j < d.reps_n; ++j) {
          Regs af(na), bf(nb), cf(nc);
          for (int r = 0; r < na; ++r) af[r] = regs[0][d.a_reg(i, s, r)];
          for (int r = 0; r < nb; ++r) bf[r] = regs[1][d.b_reg(s, j, r)];
          for (int r = 0; r < nc; ++r) cf[r] = c[d.c_reg(i, j, r)];
          cf = t_.matrix_multiply(b_, mi, af, bf, cf);
          for (int r = 0; r < nc; ++r) c[d.c_reg(i, j, r)] = cf[r];
        }
    }
    for (auto*& v : c) v = cast(v, mi.acc, acc, op);
    vals_[op.result()] = c;
  }

  // Where operand `i` of a matrix-unit dot can be read with matrix loads:
  // a pipeline's buffer, or a scratch tile it is written to now (at byte
  // `staged` of the scratch region, which advances; the caller emits the
  // barrier). nullopt: the operand comes in registers.
  std::optional<SmemTile> smem_source(const Op& dot, int i, int64_t& staged) {
    const ir::Value* v = dot.operands[i];
    if (auto it = smem_vals_.find(v); it != smem_vals_.end()) return it->second;
    if (hoisted_.count({&dot, i}) || !matrix_loadable(dot) || is_uniform(v)) return std::nullopt;
    const DotLayouts& d = plan_.dots.at(&dot);
    const LinearLayout& from = plan_.of(v);
    if (from == (i == 0 ? d.a : d.b) || same_threads(from, i == 0 ? d.a : d.b)) return std::nullopt;
    if (staged == 0) t_.barrier(b_);  // the previous scratch user is done
    SmemTile t = write_tile(get(v), from, v->type, staged);
    staged += (t.bytes() + 127) / 128 * 128;
    return t;
  }

  // ------------------------------------------------ dot operands in smem
  // Whether the operands of `dot` can be read from shared memory with 8x8
  // matrix loads: 16-bit elements on a k = 16 instruction.
  bool matrix_loadable(const Op& dot) { return t_.has_matrix_load_8x8() && matrix_loadable_dot(dot, plan_); }

  // Operand `i` of a dot in its fragment layout: from shared memory when a
  // pipeline left it there, from before the loop when it was hoisted, else
  // written to shared memory and read back with matrix loads (or converted
  // generically).
  Regs dot_operand(const Op& dot, int i) {
    const ir::Value* v = dot.operands[i];
    const DotLayouts& d = plan_.dots.at(&dot);
    if (auto it = hoisted_.find({&dot, i}); it != hoisted_.end()) return it->second;
    int64_t staged = 0;
    if (auto t = smem_source(dot, i, staged)) {
      if (staged) t_.barrier(b_);
      Regs out(num_regs(i == 0 ? d.a : d.b));
      for (int s = 0; s < d.reps_k; ++s) {
        Regs part = load_fragments(*t, dot, i, s);
        for (size_t r = 0; r < out.size(); ++r)
          if (part[r]) out[r] = part[r];
      }
      return out;
    }
    // Registers already in the fragment layout's threads (a dot's result
    // feeding the next) are only permuted.
    return operand(dot, i);
  }

  static bool same_threads(const LinearLayout& a, const LinearLayout& b) {
    auto bases = [](const LinearLayout& l, const std::string& in) {
      for (const auto& d : l.in_dims())
        if (d.name == in) return d.bases;
      return std::vector<LinearLayout::Coords>{};
    };
    return bases(a, kLane) == bases(b, kLane) && bases(a, kWarp) == bases(b, kWarp);
  }

  // Byte offset in a tile of the element at (runtime) coordinates of the
  // value's view.
  llvm::Value* tile_offset(const SmemTile& t, llvm::Value* v0, llvm::Value* v1) {
    llvm::Value* s0 = t.transposed ? v1 : v0;
    llvm::Value* s1 = t.transposed ? v0 : v1;
    llvm::Value* row = t.contiguous == 1 ? s0 : s1;
    llvm::Value* col = t.contiguous == 1 ? s1 : s0;
    int64_t cols = t.shape[t.contiguous];
    llvm::Value* phase = b_.CreateURem(b_.CreateUDiv(row, b_.getInt32(t.per_phase)), b_.getInt32(t.max_phase));
    llvm::Value* chunk = b_.CreateXor(b_.CreateUDiv(col, b_.getInt32(t.vec)), phase);
    llvm::Value* elem = b_.CreateAdd(b_.CreateMul(row, b_.getInt32(int32_t(cols))),
                                     b_.CreateAdd(b_.CreateMul(chunk, b_.getInt32(t.vec)),
                                                  b_.CreateURem(col, b_.getInt32(t.vec))));
    return b_.CreateMul(elem, b_.getInt32(t.elem_bytes));
  }
  llvm::Value* tile_ptr(const SmemTile& t, llvm::Value* v0, llvm::Value* v1) {
    return b_.CreateGEP(b_.getInt8Ty(), t.base, b_.CreateZExt(tile_offset(t, v0, v1), b_.getInt64Ty()));
  }

  // The stored layout for a value in layout `l`: contiguous along the
  // dimension its registers run along (so stores vectorize).
  static int contiguous_dim(const LinearLayout& l) { return stored_contiguous_dim(l); }

  // Writes a register tile to scratch shared memory (swizzled) at byte
  // `offset` of the scratch region; readers need a barrier after it.
  SmemTile write_tile(const Regs& regs, const LinearLayout& l, const ir::Type& type, int64_t offset) {
    int bytes = byte_size(type.dtype);
    int cd = contiguous_dim(l);
    SmemTile t = SmemTile::plan(type.shape[0], type.shape[1], cd, bytes);
    need_smem(offset + t.bytes());
    t.base = smem_ptr(b_.getInt64(offset));
    auto hw = hw_coords(l);
    auto dup = duplicate_regs(l);
    int run = std::max(1, std::min<int>(l.contiguous_run(kReg, cd), t.vec));
    llvm::Type* ety = value_type(type);
    for (int r = 0; r < num_regs(l); r += run) {
      if (dup[r]) continue;
      auto c = reg_coords(l, r);
      llvm::Value* v0 = b_.CreateXor(hw[0], b_.getInt32(c[0]));
      llvm::Value* v1 = b_.CreateXor(hw[1], b_.getInt32(c[1]));
      llvm::Value* val = regs[r];
      if (run > 1) {
        val = llvm::UndefValue::get(llvm::FixedVectorType::get(ety, run));
        for (int k = 0; k < run; ++k) val = b_.CreateInsertElement(val, regs[r + k], uint64_t(k));
      }
      b_.CreateStore(val, tile_ptr(t, v0, v1));
    }
    return t;
  }

  // Operand `i` of `dot` read from a tile with 8x8 matrix loads, in the
  // fragment layout. Lane l addresses row l % 8 of matrix l / 8; a matrix
  // row runs along the stored contiguous dimension; when that is not the
  // fragment's K the load transposes.
  // Only the fragments of K step `s` are read (the other registers stay
  // null).
  Regs load_fragments(const SmemTile& t, const Op& dot, int i, int s) {
    const DotLayouts& d = plan_.dots.at(&dot);
    const LinearLayout& l = i == 0 ? d.a : d.b;
    int k_dim = i == 0 ? 1 : 0;
    int view_contig = t.transposed ? 1 - t.contiguous : t.contiguous;
    bool trans = view_contig != k_dim;
    int walk = 1 - view_contig;  // lane % 8 walks the stored rows
    // This lane's coordinates within a fragment group: the warp's origin,
    // the matrix's corner, the row.
    auto warp_origin = hw_coords_of(l, kWarp);
    llvm::Value* q = b_.CreateLShr(lane_, 3);
    llvm::Value* r8 = b_.CreateAnd(lane_, 7);
    // Matrix q's corner: for A (m + 8 (q & 1), k + 8 (q >> 1)); for B
    // (k + 8 (q & 1), n + 8 (q >> 1)) spanning two n fragments.
    llvm::Value* lo = b_.CreateMul(b_.CreateAnd(q, 1), b_.getInt32(8));
    llvm::Value* hi = b_.CreateMul(b_.CreateLShr(q, 1), b_.getInt32(8));
    llvm::Value* base0 = b_.CreateAdd(warp_origin[0], lo);
    llvm::Value* base1 = b_.CreateAdd(warp_origin[1], hi);
    if (walk == 0) base0 = b_.CreateAdd(base0, r8);
    else base1 = b_.CreateAdd(base1, r8);
    Regs out(num_regs(l));
    llvm::Type* ety = value_type(dot.operands[0]->type);
    auto unpack = [&](llvm::Value* word, int reg0, int reg1) {
      llvm::Value* v = b_.CreateBitCast(word, llvm::FixedVectorType::get(ety, 2));
      out[reg0] = b_.CreateExtractElement(v, uint64_t(0));
      out[reg1] = b_.CreateExtractElement(v, uint64_t(1));
    };
    int outer = i == 0 ? d.reps_m : d.reps_n;
    for (int o = 0; o < outer; o += (i == 0 ? 1 : 2)) {
        int reg0 = i == 0 ? d.a_reg(o, s, 0) : d.b_reg(s, o, 0);
        auto corner = reg_coords(l, reg0);
        llvm::Value* p = tile_ptr(t, b_.CreateAdd(base0, b_.getInt32(corner[0])),
                                  b_.CreateAdd(base1, b_.getInt32(corner[1])));
        bool pair = i == 1 && o + 1 < outer;
        int count = i == 0 || pair ? 4 : 2;
        Regs words = t_.load_matrix_8x8(b_, p, count, trans);
        for (int w = 0; w < count; ++w) {
          int frag = i == 0 ? o : o + (w >> 1);
          int r = i == 0 ? 2 * w : 2 * (w & 1);
          int reg = i == 0 ? d.a_reg(o, s, r) : d.b_reg(s, frag, r);
          unpack(words[w], reg, reg + 1);
        }
      }
    return out;
  }

  // Runtime coordinates contributed by one hardware input (lane or warp).
  std::vector<llvm::Value*> hw_coords_of(const LinearLayout& l, const std::string& in) {
    std::vector<llvm::Value*> c(l.out_dims().size(), b_.getInt32(0));
    llvm::Value* idx = in == kLane ? lane_ : warp_;
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

  // Without a matrix instruction: every thread owns its C elements and
  // holds the rows of A and columns of B they need; products accumulate in
  // K order with fused multiply-adds (f32, or f64 for f64 inputs).
  Regs fma_dot(const Op& op, const DotLayouts& d, const Regs& a, const Regs& bm, Regs c) {
    DType in = op.operands[0]->type.dtype, acc = op.result()->type.dtype;
    int64_t K = op.operands[0]->type.shape[1];
    bool int_dot = !is_float(in);
    DType work = int_dot ? DType::i32 : in == DType::f64 || acc == DType::f64 ? DType::f64 : DType::f32;
    std::map<LinearLayout::Coords, int> a_at, b_at;
    for (int r = 0; r < num_regs(d.a); ++r) a_at.emplace(reg_coords(d.a, r), r);
    for (int r = 0; r < num_regs(d.b); ++r) b_at.emplace(reg_coords(d.b, r), r);
    for (int r = 0; r < num_regs(d.c); ++r) {
      auto mn = reg_coords(d.c, r);
      llvm::Value* sum = cast(c[r], acc, work, op);
      for (int32_t k = 0; k < K; ++k) {
        llvm::Value* x = cast(a[a_at.at({mn[0], k})], in, work, op);
        llvm::Value* y = cast(bm[b_at.at({k, mn[1]})], in, work, op);
        sum = int_dot ? b_.CreateAdd(b_.CreateMul(x, y), sum)
                      : b_.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, sum});
      }
      c[r] = cast(sum, work, acc, op);
    }
    return c;
  }

  // ------------------------------------------------------------ control flow
  // Pipelined loops (pipeline_plan.h says which and what runs ahead): the
  // prologue issues the copies of the first `stages - 1` iterations; each
  // iteration waits for its own, reads them from shared memory, and issues
  // those of iteration i + stages - 1 into the slot iteration i - 1 read.
  // Lowers the lead ops for iteration `iv_lead` with the lead carried
  // values, issues the loads' copies into `slot`, commits them as one group
  // and returns the lead carried values of the next iteration.
  std::vector<Regs> issue_stage(const Op& loop, const PipelinePlan& p, const std::vector<SmemTile>& tiles,
                                const std::vector<Regs>& lead, llvm::Value* iv_lead, llvm::Value* slot) {
    const ir::Region& body = *loop.regions[0];
    vals_[body.args[0].get()] = {iv_lead};
    for (size_t j = 0; j < p.lead_args.size(); ++j) vals_[body.args[p.lead_args[j] + 1].get()] = lead[j];
    for (const Op* o : p.lead_ops) lower_op(*o);
    llvm::Value* hi = get(loop.operands[1])[0];
    bool s = !is_unsigned(loop.operands[0]->type.dtype);
    llvm::Value* live = s ? b_.CreateICmpSLT(iv_lead, hi) : b_.CreateICmpULT(iv_lead, hi);
    for (size_t li = 0; li < p.loads.size(); ++li) {
      const Op& ld = *p.loads[li];
      const ir::Value* v = ld.result();
      const LinearLayout& l = plan_.of(v);
      SmemTile t = tiles[li];
      t.base = b_.CreateGEP(b_.getInt8Ty(), t.base, b_.CreateMul(b_.CreateZExt(slot, b_.getInt64Ty()),
                                                                  b_.getInt64(t.bytes())));
      Regs ptrs = operand(ld, 0);
      Regs mask = ld.operands.size() > 1 ? operand(ld, 1) : Regs{};
      int vec = vector_width(ld, l, v->type.dtype);
      auto hw = hw_coords(l);
      auto dup = duplicate_regs(l);
      for (int r = 0; r < num_regs(l); r += vec) {
        if (dup[r]) continue;
        auto c = reg_coords(l, r);
        llvm::Value* dst = tile_ptr(t, b_.CreateXor(hw[0], b_.getInt32(c[0])), b_.CreateXor(hw[1], b_.getInt32(c[1])));
        llvm::Value* pred = mask.empty() ? live : b_.CreateAnd(live, mask[r]);
        t_.async_copy(b_, dst, ptrs[r], vec * byte_size(v->type.dtype), pred);
      }
    }
    t_.async_commit(b_);
    const Op* yield = body.terminator();
    std::vector<Regs> next;
    for (size_t k : p.lead_args) next.push_back(in_layout(yield->operands[k], body.args[k + 1].get()));
    return next;
  }

  // Dot operands defined before the loop are brought to their fragment
  // layout once, before it.
  void hoist_dot_operands(const ir::Region& body) {
    for (const auto& o : body.ops)
      if (o->kind == OpKind::Dot)
        for (int i = 0; i < 2; ++i)
          if (!ir::defined_in(o->operands[i], body) && o->operands[i]->type.is_tile() && !hoisted_.count({o.get(), i}))
            hoisted_[{o.get(), i}] = dot_operand(*o, i);
  }

  void lower_for(const Op& op) {
    const ir::Region& body = *op.regions[0];
    llvm::Value* lo = get(op.operands[0])[0];
    llvm::Value* hi = get(op.operands[1])[0];
    llvm::Value* step = get(op.operands[2])[0];
    bool s = !is_unsigned(op.operands[0]->type.dtype);
    size_t nc = op.results.size();
    std::vector<Regs> init;
    for (size_t k = 0; k < nc; ++k) init.push_back(in_layout(op.operands[3 + k], body.args[k + 1].get()));
    hoist_dot_operands(body);

    // Pipeline buffers: `stages` slots per load, below the scratch region.
    auto pipe = t_.has_async_copy() && t_.has_matrix_load_8x8() ? plan_pipeline(op, plan_, axis_) : std::nullopt;
    std::vector<SmemTile> tiles;
    int64_t saved_scratch = scratch_base_;
    std::vector<Regs> lead;
    if (pipe) {
      for (const Op* ld : pipe->loads) {
        const auto& sh = ld->result()->type.shape;
        SmemTile t = SmemTile::plan(sh[0], sh[1], 1, byte_size(ld->result()->type.dtype));
        t.base = b_.CreateGEP(b_.getInt8Ty(), smem_, b_.getInt64(scratch_base_));
        scratch_base_ += (t.bytes() * pipe->stages + 127) / 128 * 128;
        tiles.push_back(t);
      }
      need_smem(0);
      // The buffers overlap scratch that earlier users (a hoisted operand's
      // matrix loads, say) may still be reading.
      t_.barrier(b_);
      // Prologue: iterations 0 .. stages-2 into slots 0 .. stages-2.
      for (size_t k : pipe->lead_args) lead.push_back(init[k]);
      llvm::Value* iv_lead = lo;
      for (int j = 0; j + 1 < pipe->stages; ++j) {
        lead = issue_stage(op, *pipe, tiles, lead, iv_lead, b_.getInt32(j));
        iv_lead = b_.CreateAdd(iv_lead, step);
      }
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
    auto lead_phis = make_phis(lead);
    llvm::PHINode* slot = nullptr;
    if (pipe) {
      slot = b_.CreatePHI(b_.getInt32Ty(), 2, "slot");
      slot->addIncoming(b_.getInt32(0), pre);
    }
    auto bind_carried = [&] {
      for (size_t k = 0; k < nc; ++k) vals_[body.args[k + 1].get()] = Regs(phis[k].begin(), phis[k].end());
      vals_[body.args[0].get()] = {iv};
    };
    bind_carried();
    for (size_t k = 0; k < nc; ++k) vals_[op.results[k].get()] = Regs(phis[k].begin(), phis[k].end());
    llvm::Value* go = s ? b_.CreateICmpSLT(iv, hi) : b_.CreateICmpULT(iv, hi);
    b_.CreateCondBr(go, body_bb, exit);

    b_.SetInsertPoint(body_bb);
    std::vector<Regs> lead_next;
    llvm::Value* slot_next = nullptr;
    if (pipe) {
      // This iteration's copies have landed (and every thread is past the
      // previous iteration's reads of the slot refilled below).
      t_.async_wait(b_, pipe->stages - 2);
      t_.barrier(b_);
      for (size_t li = 0; li < pipe->loads.size(); ++li) {
        SmemTile t = tiles[li];
        t.base = b_.CreateGEP(b_.getInt8Ty(), t.base,
                              b_.CreateMul(b_.CreateZExt(slot, b_.getInt64Ty()), b_.getInt64(t.bytes())));
        smem_vals_[pipe->loads[li]->result()] = t;
        for (const Op* o : pipe->skip)
          if (o->kind == OpKind::Trans && o->operands[0] == pipe->loads[li]->result()) {
            SmemTile tt = t;
            tt.transposed = true;
            smem_vals_[o->result()] = tt;
          }
      }
      skip_ = pipe->skip;
    }
    lower_region(body);
    skip_.clear();
    const Op* yield = body.terminator();
    std::vector<Regs> next;
    for (size_t k = 0; k < nc; ++k) next.push_back(in_layout(yield->operands[k], body.args[k + 1].get()));
    if (pipe) {
      // The copies for iteration i + stages - 1 go into the slot iteration
      // i - 1 read, issued after this iteration's multiplies so that those
      // start right after the barrier.
      llvm::Value* last = b_.getInt32(pipe->stages - 1);
      llvm::Value* fill = b_.CreateSelect(b_.CreateICmpEQ(slot, b_.getInt32(0)), last,
                                          b_.CreateSub(slot, b_.getInt32(1)));
      llvm::Value* iv_lead =
          b_.CreateAdd(iv, b_.CreateMul(step, llvm::ConstantInt::get(iv->getType(), pipe->stages - 1)));
      std::vector<Regs> cur;
      for (auto& ph : lead_phis) cur.emplace_back(ph.begin(), ph.end());
      lead_next = issue_stage(op, *pipe, tiles, cur, iv_lead, fill);
      slot_next = b_.CreateSelect(b_.CreateICmpEQ(slot, last), b_.getInt32(0), b_.CreateAdd(slot, b_.getInt32(1)));
    }
    llvm::Value* iv_next = b_.CreateAdd(iv, step);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    b_.CreateBr(header);
    iv->addIncoming(iv_next, latch);
    for (size_t k = 0; k < nc; ++k)
      for (size_t r = 0; r < phis[k].size(); ++r) phis[k][r]->addIncoming(next[k][r], latch);
    for (size_t k = 0; k < lead_phis.size(); ++k)
      for (size_t r = 0; r < lead_phis[k].size(); ++r) lead_phis[k][r]->addIncoming(lead_next[k][r], latch);
    if (slot) slot->addIncoming(slot_next, latch);
    b_.SetInsertPoint(exit);
    if (pipe) {
      // Copies past the end still write zeros: drain them before the
      // buffers become scratch again.
      t_.async_wait(b_, 0);
      t_.barrier(b_);
      for (const Op* o : pipe->skip) smem_vals_.erase(o->result());
      scratch_base_ = saved_scratch;
    }
    for (const auto& o : body.ops)
      for (int i = 0; i < 2; ++i) hoisted_.erase({o.get(), i});
  }

  void lower_if(const Op& op) {
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

  llvm::LLVMContext& ctx_;
  const LayoutPlan& plan_;
  const transforms::AxisAnalysis& axis_;
  const Target& t_;
  IRBuilder<> b_;
  llvm::Module* m_ = nullptr;
  llvm::Function* fn_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  llvm::Value *lane_ = nullptr, *warp_ = nullptr, *tid_ = nullptr;
  int64_t smem_bytes_ = 0;
  int64_t scratch_base_ = 0;
  // Dot operands that live in shared memory (pipelined loads, their trans).
  std::unordered_map<const ir::Value*, SmemTile> smem_vals_;
  // Dot operands converted once before a loop that uses them.
  std::map<std::pair<const Op*, int>, Regs> hoisted_;
  std::set<const Op*> skip_;
  std::unordered_map<const ir::Value*, Regs> vals_;
};

}  // namespace

LoweredKernel lower_to_llvm(llvm::LLVMContext& ctx, const ir::Function& fn, const LayoutPlan& plan,
                            const transforms::AxisAnalysis& axis, const Target& target, const std::string& name) {
  return Lowerer(ctx, plan, axis, target).run(fn, name);
}

}  // namespace tl::codegen
