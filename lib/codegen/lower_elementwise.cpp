// Lowering of elementwise ops, math functions and casts (see lowerer.h):
// register by register, registers that axis analysis proves equal computed
// once; f32 math through the target's fast instructions or the shared
// expansions (math_expansions.h), f64 math through the expansions; casts
// to narrow floats rounded once (through a round-to-odd f32).
#include <llvm/IR/InlineAsm.h>

#include "codegen/lowerer.h"
#include "codegen/math_emitter.h"
#include "codegen/math_expansions.h"

namespace tl::codegen::lowering {

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
  // f32 to bf16 or f16, two registers at a time: one packed conversion
  // (cvt.rn.bf16x2.f32 on NVIDIA) instead of two, whose pair a 4-byte
  // store takes as it is, wherever the store is (an accumulator's
  // epilogue read as 16-bit values counts against asynchronous dots).
  const DType from = op.operands.empty() ? DType::f32 : op.operands[0]->type.dtype;
  if (op.kind == OpKind::Cast && from == DType::f32 && bit_width(op.result()->type.dtype) == 16 &&
      is_float(op.result()->type.dtype) && n % 2 == 0 && int(ins[0].size()) == n) {
    auto* pair = llvm::FixedVectorType::get(b_.getFloatTy(), 2);
    auto* narrow = llvm::FixedVectorType::get(elem_type(op.result()->type.dtype), 2);
    for (int r = 0; r < n; r += 2) {
      llvm::Value* v = b_.CreateInsertElement(llvm::PoisonValue::get(pair), ins[0][size_t(r)], uint64_t(0));
      v = b_.CreateFPTrunc(b_.CreateInsertElement(v, ins[0][size_t(r + 1)], uint64_t(1)), narrow);
      out.push_back(b_.CreateExtractElement(v, uint64_t(0)));
      out.push_back(b_.CreateExtractElement(v, uint64_t(1)));
    }
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

// Per `pack` registers one call of the target's text (ops.def): 16-bit
// floats travel as i16 (inline-assembly constraints take integers of
// their width), packed groups as one integer of the group's width. Text
// with several outputs returns them as one struct, each packed alike.
void Lowerer::lower_inline_asm(const Op& op) {
  const std::string& lang = t_.asm_language;
  if (!op.has_attr(lang))
    unsupported(op, "has no " + lang + " text for " + t_.name + " (give tl::InlineAsm ." + lang + ")");
  const std::string text = op.attr_str(lang);
  const int pack = int(op.attr_int_or("pack", 1));
  // A thread's elements need not fill whole calls: how many it holds
  // follows its layout, which follows the launch's alignment facts (vector
  // loads give it more). The last call's missing elements are zeros and
  // its extra results are dropped (Triton pads with undef).
  const int n = width_of(op.result());
  auto wire = [&](DType d) -> llvm::Type* {
    int bits = bit_width(d) == 1 ? 8 : bit_width(d);
    if (pack > 1) return b_.getIntNTy(unsigned(bits * pack));
    return is_float(d) && bits == 16 ? b_.getInt16Ty() : elem_type(d);
  };
  // Element type of a packed group's vector: i1 travels as a byte.
  auto lane = [&](DType d) -> llvm::Type* { return bit_width(d) == 1 ? b_.getInt8Ty() : elem_type(d); };
  auto to_wire = [&](const Regs& regs, DType d, int r) -> llvm::Value* {
    auto at = [&](int k) { return regs.size() == 1 ? regs[0] : regs[size_t(r + k)]; };
    if (pack == 1) return wire(d) == elem_type(d) ? at(0) : b_.CreateBitCast(at(0), wire(d));
    // Padding lanes are zeros, not poison: a bitcast of a vector with a
    // poison lane would make the whole packed integer poison.
    auto* vty = llvm::FixedVectorType::get(lane(d), unsigned(pack));
    llvm::Value* v = r + pack > n ? llvm::Constant::getNullValue(vty) : llvm::PoisonValue::get(vty);
    for (int k = 0; k < pack && r + k < n; ++k) {
      llvm::Value* e = bit_width(d) == 1 ? b_.CreateZExt(at(k), lane(d)) : at(k);
      v = b_.CreateInsertElement(v, e, uint64_t(k));
    }
    return b_.CreateBitCast(v, wire(d));
  };
  auto from_wire = [&](llvm::Value* v, DType d, Regs& out) {
    if (pack == 1) {
      out.push_back(wire(d) == elem_type(d) ? v : b_.CreateBitCast(v, elem_type(d)));
      return;
    }
    llvm::Value* vec = b_.CreateBitCast(v, llvm::FixedVectorType::get(lane(d), unsigned(pack)));
    for (int k = 0; k < pack; ++k) {
      llvm::Value* e = b_.CreateExtractElement(vec, uint64_t(k));
      out.push_back(bit_width(d) == 1 ? b_.CreateICmpNE(e, llvm::ConstantInt::get(lane(d), 0)) : e);
    }
  };
  const size_t num_results = op.results.size();
  std::vector<llvm::Type*> arg_types, result_types;
  std::vector<Regs> ins;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    ins.push_back(operand(op, int(i)));
    arg_types.push_back(wire(op.operands[i]->type.dtype));
  }
  for (const auto& r : op.results) result_types.push_back(wire(r->type.dtype));
  llvm::Type* ret = num_results == 1 ? result_types[0] : llvm::StructType::get(b_.getContext(), result_types);
  auto* fty = llvm::FunctionType::get(ret, arg_types, false);
  const std::string cons = op.attr_str(lang + "_constraints");
  if (llvm::Error e = llvm::InlineAsm::verify(fty, cons)) {
    llvm::consumeError(std::move(e));
    unsupported(op, "has constraints \"" + cons + "\" that do not fit " + std::to_string(num_results) +
                        (num_results == 1 ? " result" : " results") + " and " + std::to_string(op.operands.size()) +
                        " operands");
  }
  auto* asm_fn = llvm::InlineAsm::get(fty, text, cons, op.attr_int_or("pure", 1) == 0);
  std::vector<Regs> outs(num_results);
  for (int r = 0; r < n; r += pack) {
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < ins.size(); ++i) args.push_back(to_wire(ins[i], op.operands[i]->type.dtype, r));
    llvm::Value* v = b_.CreateCall(asm_fn, args);
    for (size_t j = 0; j < num_results; ++j)
      from_wire(num_results == 1 ? v : b_.CreateExtractValue(v, unsigned(j)), op.results[j]->type.dtype, outs[j]);
  }
  for (size_t j = 0; j < num_results; ++j) {
    outs[j].resize(size_t(n));  // the padding's results
    vals_[op.result(int(j))] = std::move(outs[j]);
  }
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
    case OpKind::Bitcast: return b_.CreateBitOrPointerCast(a[0], value_type(rt));  // a pointer to or from i64 too
    case OpKind::Hint: return a[0];  // facts for the analysis; the values as they are
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
    // shrink the f32 frem back to a bf16 one, which not every back end's
    // instruction selection lowers (a fatal "no libcall available for frem").
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
    case OpKind::MulHi: {
      // The product at twice the width (the back ends select their
      // multiply-high instructions from it).
      llvm::Type* wide = b_.getIntNTy(2 * bits);
      auto ext = [&](llvm::Value* v) { return s ? b_.CreateSExt(v, wide) : b_.CreateZExt(v, wide); };
      return b_.CreateTrunc(b_.CreateLShr(b_.CreateMul(ext(a[0]), ext(a[1])), uint64_t(bits)), a[0]->getType());
    }
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
    case OpKind::Rem:
      // fmod: the result takes the dividend's sign, zero included. A back
      // end may expand frem as x - trunc(x / y) * y, which gives +0 for
      // -x % x; the copysign restores -0 (and costs one logic op).
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b_.CreateFRem(a[0], a[1]), a[0]);
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
  if (is_float(to)) {  // int -> float
    bool s = !is_unsigned(from) && from != DType::i1;
    // To a narrow format: rounded once. Integers of at most 16 bits are
    // exact in f32; wider ones go through a round-to-odd f32.
    if (bit_width(to) < 32) {
      if (bit_width(from) > 16) return from_f32(int_to_f32_odd(v, from), to);
      return from_f32(s ? b_.CreateSIToFP(v, b_.getFloatTy()) : b_.CreateUIToFP(v, b_.getFloatTy()), to);
    }
    return s ? b_.CreateSIToFP(v, ty) : b_.CreateUIToFP(v, ty);
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

}  // namespace tl::codegen::lowering
