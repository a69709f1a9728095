// The IRBuilder emitter of lib/codegen/math_expansions.h: each operation of
// an expansion becomes one LLVM instruction (or intrinsic) on scalar f64 and
// i64 values, so that the GPU runs what the host test measured. While it
// lives the builder allows no contraction: a multiply feeding an add stays
// two roundings, as in the host's plain doubles (fp_fusion would otherwise
// fuse them and change the error-free transformations). LLVM-facing:
// include only from files that include LLVM.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace tl::codegen {

class MathEmitter {
 public:
  MathEmitter(llvm::IRBuilder<>& b, unsigned global_address_space)
      : b_(b), guard_(b), global_as_(global_address_space) {
    b_.setFastMathFlags(llvm::FastMathFlags());
  }

  struct V;
  struct I;
  struct B {
    llvm::IRBuilder<>* b;
    llvm::Value* v;
    friend B operator&(B x, B y) { return {x.b, x.b->CreateAnd(x.v, y.v)}; }
    friend B operator|(B x, B y) { return {x.b, x.b->CreateOr(x.v, y.v)}; }
    friend B operator^(B x, B y) { return {x.b, x.b->CreateXor(x.v, y.v)}; }
    B operator!() const { return {b, b->CreateNot(v)}; }
  };
  struct V {
    llvm::IRBuilder<>* b;
    llvm::Value* v;
    V c(double d) const { return {b, llvm::ConstantFP::get(b->getDoubleTy(), d)}; }
#define TL_MATH_BINARY(op, create)                                         \
  friend V operator op(V x, V y) { return {x.b, x.b->create(x.v, y.v)}; } \
  friend V operator op(V x, double y) { return x op x.c(y); }             \
  friend V operator op(double x, V y) { return y.c(x) op y; }
    TL_MATH_BINARY(+, CreateFAdd)
    TL_MATH_BINARY(-, CreateFSub)
    TL_MATH_BINARY(*, CreateFMul)
    TL_MATH_BINARY(/, CreateFDiv)
#undef TL_MATH_BINARY
    V operator-() const { return {b, b->CreateFNeg(v)}; }
#define TL_MATH_COMPARE(op, create)                                        \
  friend B operator op(V x, V y) { return {x.b, x.b->create(x.v, y.v)}; } \
  friend B operator op(V x, double y) { return x op x.c(y); }
    TL_MATH_COMPARE(<, CreateFCmpOLT)
    TL_MATH_COMPARE(<=, CreateFCmpOLE)
    TL_MATH_COMPARE(>, CreateFCmpOGT)
    TL_MATH_COMPARE(>=, CreateFCmpOGE)
    TL_MATH_COMPARE(==, CreateFCmpOEQ)
    TL_MATH_COMPARE(!=, CreateFCmpUNE)
#undef TL_MATH_COMPARE
  };
  struct I {
    llvm::IRBuilder<>* b;
    llvm::Value* v;
    I c(int64_t d) const { return {b, b->getInt64(uint64_t(d))}; }
#define TL_MATH_INT(op, create)                                             \
  friend I operator op(I x, I y) { return {x.b, x.b->create(x.v, y.v)}; }  \
  friend I operator op(I x, int64_t y) { return x op x.c(y); }
    TL_MATH_INT(+, CreateAdd)
    TL_MATH_INT(-, CreateSub)
    TL_MATH_INT(&, CreateAnd)
    TL_MATH_INT(|, CreateOr)
#undef TL_MATH_INT
    I operator~() const { return {b, b->CreateNot(v)}; }
    I operator<<(int s) const { return {b, b->CreateShl(v, uint64_t(s))}; }
    I operator>>(int s) const { return {b, b->CreateAShr(v, uint64_t(s))}; }
  };

  V c(double d) { return {&b_, llvm::ConstantFP::get(b_.getDoubleTy(), d)}; }
  I i(int64_t d) { return {&b_, b_.getInt64(uint64_t(d))}; }
  V wrap(llvm::Value* v) { return {&b_, v}; }

  V fma(V a, V x, V y) { return {&b_, b_.CreateIntrinsic(llvm::Intrinsic::fma, {f64()}, {a.v, x.v, y.v})}; }
  V sqrt(V x) { return unary(llvm::Intrinsic::sqrt, x); }
  V rint(V x) { return unary(llvm::Intrinsic::rint, x); }
  V fmin(V x, V y) { return {&b_, b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x.v, y.v)}; }
  V fmax(V x, V y) { return {&b_, b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x.v, y.v)}; }
  V sel(B c, V x, V y) { return {&b_, b_.CreateSelect(c.v, x.v, y.v)}; }
  I sel(B c, I x, I y) { return {&b_, b_.CreateSelect(c.v, x.v, y.v)}; }
  I bits(V x) { return {&b_, b_.CreateBitCast(x.v, b_.getInt64Ty())}; }
  V from_bits(I x) { return {&b_, b_.CreateBitCast(x.v, f64())}; }
  I to_int(V x) { return {&b_, b_.CreateFPToSI(x.v, b_.getInt64Ty())}; }
  V to_double(I x) { return {&b_, b_.CreateSIToFP(x.v, f64())}; }
  B eq(I x, I y) { return {&b_, b_.CreateICmpEQ(x.v, y.v)}; }
  B ilt(I x, I y) { return {&b_, b_.CreateICmpSLT(x.v, y.v)}; }
  B ult(I x, I y) { return {&b_, b_.CreateICmpULT(x.v, y.v)}; }
  I mul_lo(I x, I y) { return {&b_, b_.CreateMul(x.v, y.v)}; }
  I umul_hi(I x, I y) {
    llvm::Type* i128 = b_.getInt128Ty();
    llvm::Value* p = b_.CreateMul(b_.CreateZExt(x.v, i128), b_.CreateZExt(y.v, i128));
    return {&b_, b_.CreateTrunc(b_.CreateLShr(p, 64), b_.getInt64Ty())};
  }
  I shl(I x, I s) { return {&b_, b_.CreateShl(x.v, s.v)}; }
  I lshr(I x, I s) { return {&b_, b_.CreateLShr(x.v, s.v)}; }

  // words[index], from a constant array in global memory (one per module
  // and name).
  template <size_t N>
  I table(const char* table_name, const uint64_t (&words)[N], I index) {
    llvm::Module* m = b_.GetInsertBlock()->getModule();
    std::string name = std::string("tl_math_") + table_name;
    auto* ty = llvm::ArrayType::get(b_.getInt64Ty(), N);
    auto* g = m->getNamedGlobal(name);
    if (!g) {
      std::vector<llvm::Constant*> init;
      for (uint64_t w : words) init.push_back(b_.getInt64(w));
      g = new llvm::GlobalVariable(*m, ty, true, llvm::GlobalValue::PrivateLinkage, llvm::ConstantArray::get(ty, init),
                                   name, nullptr, llvm::GlobalValue::NotThreadLocal, global_as_);
      g->setAlignment(llvm::Align(8));
    }
    llvm::Value* p = b_.CreateInBoundsGEP(ty, g, {b_.getInt64(0), index.v});
    return {&b_, b_.CreateAlignedLoad(b_.getInt64Ty(), p, llvm::Align(8))};
  }

  // then_fn()'s values where cond holds, else_values elsewhere: a branch
  // around then_fn's code.
  template <class F, size_t N>
  std::array<V, N> if_(B cond, F then_fn, std::array<V, N> else_values) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* then_bb = llvm::BasicBlock::Create(b_.getContext(), "math.rare", fn);
    auto* join_bb = llvm::BasicBlock::Create(b_.getContext(), "math.join", fn);
    b_.CreateCondBr(cond.v, then_bb, join_bb);
    b_.SetInsertPoint(then_bb);
    std::array<V, N> got = then_fn();
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(join_bb);
    b_.SetInsertPoint(join_bb);
    std::array<V, N> out;
    for (size_t k = 0; k < N; ++k) {
      llvm::PHINode* phi = b_.CreatePHI(f64(), 2);
      phi->addIncoming(got[k].v, then_end);
      phi->addIncoming(else_values[k].v, from);
      out[k] = {&b_, phi};
    }
    return out;
  }

 private:
  llvm::Type* f64() { return b_.getDoubleTy(); }
  V unary(llvm::Intrinsic::ID id, V x) { return {&b_, b_.CreateUnaryIntrinsic(id, x.v)}; }

  llvm::IRBuilder<>& b_;
  llvm::IRBuilder<>::FastMathFlagGuard guard_;
  unsigned global_as_;
};

}  // namespace tl::codegen
