// MFMA and WMMA for dot on AMD GPUs (see matrix_unit.h).
//
// Instructions, per target (one 16 x 16 output tile per wave):
//   gfx90a  (CDNA2, wave64)  v_mfma_f32_16x16x16bf16_1k, v_mfma_f32_16x16x16f16,
//                            v_mfma_i32_16x16x16i8, v_mfma_f32_16x16x4f32
//   gfx942  (CDNA3, wave64)  v_mfma_f32_16x16x16_bf16, v_mfma_f32_16x16x16_f16,
//                            v_mfma_i32_16x16x32_i8, v_mfma_f32_16x16x4_f32
//   gfx1100 (RDNA3, wave32)  v_wmma_f32_16x16x16_bf16, v_wmma_f32_16x16x16_f16,
//                            v_wmma_i32_16x16x16_iu8 (i8 and u8)
// f32 inputs use the full-precision f32 MFMA when tf32 is allowed (tf32 only
// permits less precision; gfx942's xf32 would be faster but rounds its
// inputs in a way no reference here reproduces). Exact "ieee" f32, f64, f8
// (CDNA3's f8 is the FNUZ encoding, not the OCP e4m3/e5m2 of tiledsl), u8
// on MFMA and anything on other parts take the FMA form.
//
// Fragment layouts, (register, lane) -> coordinates, l = lane:
//   MFMA 16x16xK, wave64, kw = K / 4 elements per lane and operand
//     A[m][k]  register j of lane l: m = l % 16, k = kw (l / 16) + j
//     B[k][n]  register j of lane l: n = l % 16, k = kw (l / 16) + j
//     C[m][n]  register i of lane l: n = l % 16, m = 4 (l / 16) + i  (4 registers)
//   WMMA 16x16x16, wave32 (RDNA3: lanes 16-31 must hold copies of lanes 0-15
//   for A and B, a zero lane basis vector)
//     A[m][k]  register j of lane l: m = l % 16, k = j                (16 registers)
//     B[k][n]  register j of lane l: n = l % 16, k = j
//     C[m][n]  register i of lane l: n = l % 16, m = 2 i + l / 16     (8 f32 registers)
// Register j is element j of the intrinsic's operand vector (for packed
// 8-bit operands, byte j of the little-endian word).
//
// No AMD GPU is reachable where this was written, so the layouts could not
// be run; each was checked against independent sources instead:
//   - Triton, lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp:
//     AMDMfmaEncodingAttr::toLinearLayout (16x16 C), mfmaDotToLinearLayout
//     (16x16 operands, kWidth = kw), AMDWmmaEncodingAttr version 1 (RDNA3 C);
//   - IREE, compiler/.../Codegen/Dialect/GPU/IR/IREEGPUAttrs.cpp:
//     getSingleSubgroupLayout, mfmaLhs16xK / mfmaRhsKx16 / mfmaAcc16x16 and
//     WMMAR3_* (A and B: 16 lanes with a zero stride above, 16 elements of K;
//     C: 8 outer rows, lane bit 4 the odd row);
//   - AMD's RDNA3 WMMA sample (GPUOpen "How to accelerate AI applications on
//     RDNA 3 using WMMA", also GPUOpen Orochi Test/WMMA/wmma_test_kernel.h):
//     a_frag[e] = A[lane % 16][e], b_frag[e] = B[e][lane % 16],
//     C[2 e + lane / 16][lane % 16] from accumulator element e.
// Operand types follow LLVM 22's IntrinsicsAMDGPU.td: MFMA takes (a, b, c,
// cbsz, abid, blgp) with <4 x half>, <4 x i16> (bf16_1k), i32 / i64 (4 / 8
// packed i8) or float operands and a <4 x float> / <4 x i32> accumulator;
// WMMA takes <16 x half> / <16 x i16> (bf16) operands and a <8 x float>
// accumulator, the iu8 form (a_signed, <4 x i32>, b_signed, <4 x i32>,
// <8 x i32>, clamp).
#include "amdgpu/matrix_unit.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include "tiledsl/detail/ir_types.h"  // tl::Error

namespace tl::codegen::amdgpu {

namespace {
using L = LinearLayout;

enum class Unit { Mfma, Wmma };

// One instruction of the table below.
struct Instruction {
  const char* arch;
  const char* mnemonic;  // MatrixInstr::name: what the disassembly shows
  llvm::Intrinsic::ID intrinsic;
  Unit unit;
  DType in, acc;
  int k;
};

const Instruction kInstructions[] = {
    {"gfx90a", "v_mfma_f32_16x16x16bf16_1k", llvm::Intrinsic::amdgcn_mfma_f32_16x16x16bf16_1k, Unit::Mfma,
     DType::bf16, DType::f32, 16},
    {"gfx90a", "v_mfma_f32_16x16x16f16", llvm::Intrinsic::amdgcn_mfma_f32_16x16x16f16, Unit::Mfma, DType::f16,
     DType::f32, 16},
    {"gfx90a", "v_mfma_i32_16x16x16i8", llvm::Intrinsic::amdgcn_mfma_i32_16x16x16i8, Unit::Mfma, DType::i8,
     DType::i32, 16},
    {"gfx90a", "v_mfma_f32_16x16x4f32", llvm::Intrinsic::amdgcn_mfma_f32_16x16x4f32, Unit::Mfma, DType::f32,
     DType::f32, 4},
    // CDNA3 spells the same instructions with an underscore before the type
    // (the bf16 "_1k" form is its only bf16 form) and widens i8 to K = 32.
    {"gfx942", "v_mfma_f32_16x16x16_bf16", llvm::Intrinsic::amdgcn_mfma_f32_16x16x16bf16_1k, Unit::Mfma,
     DType::bf16, DType::f32, 16},
    {"gfx942", "v_mfma_f32_16x16x16_f16", llvm::Intrinsic::amdgcn_mfma_f32_16x16x16f16, Unit::Mfma, DType::f16,
     DType::f32, 16},
    {"gfx942", "v_mfma_i32_16x16x32_i8", llvm::Intrinsic::amdgcn_mfma_i32_16x16x32_i8, Unit::Mfma, DType::i8,
     DType::i32, 32},
    {"gfx942", "v_mfma_f32_16x16x4_f32", llvm::Intrinsic::amdgcn_mfma_f32_16x16x4f32, Unit::Mfma, DType::f32,
     DType::f32, 4},
    {"gfx1100", "v_wmma_f32_16x16x16_bf16", llvm::Intrinsic::amdgcn_wmma_f32_16x16x16_bf16, Unit::Wmma,
     DType::bf16, DType::f32, 16},
    {"gfx1100", "v_wmma_f32_16x16x16_f16", llvm::Intrinsic::amdgcn_wmma_f32_16x16x16_f16, Unit::Wmma, DType::f16,
     DType::f32, 16},
    {"gfx1100", "v_wmma_i32_16x16x16_iu8", llvm::Intrinsic::amdgcn_wmma_i32_16x16x16_iu8, Unit::Wmma, DType::i8,
     DType::i32, 16},
    {"gfx1100", "v_wmma_i32_16x16x16_iu8", llvm::Intrinsic::amdgcn_wmma_i32_16x16x16_iu8, Unit::Wmma, DType::u8,
     DType::i32, 16},
};

L frag(std::vector<L::Coords> reg, std::vector<L::Coords> lane, int rows, int cols) {
  return L({{kReg, std::move(reg)}, {kLane, std::move(lane)}}, {{dim_name(0), rows}, {dim_name(1), cols}});
}

// Basis vectors that walk `count` (a power of two) positions 0, start,
// 2 start, ... along dimension `dim` of a 2-D layout: log2(count) vectors.
std::vector<L::Coords> walk(int dim, int start, int count) {
  std::vector<L::Coords> bases;
  for (int s = start; s < start * count; s *= 2) bases.push_back(dim == 0 ? L::Coords{s, 0} : L::Coords{0, s});
  return bases;
}

std::vector<L::Coords> concat(std::vector<L::Coords> a, const std::vector<L::Coords>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// MFMA 16x16xK on 64 lanes: lanes 0-15 walk the M (A, C) or N (B, C) rows,
// lane bits 4-5 the four groups of K (operands) or of C rows.
void mfma_layouts(MatrixInstr& mi) {
  const int kw = mi.k / 4;
  mi.a = frag(walk(1, 1, kw), concat(walk(0, 1, 16), walk(1, kw, 4)), 16, mi.k);
  mi.b = frag(walk(0, 1, kw), concat(walk(1, 1, 16), walk(0, kw, 4)), mi.k, 16);
  mi.c = frag(walk(0, 1, 4), concat(walk(1, 1, 16), walk(0, 4, 4)), 16, 16);
}

// WMMA 16x16x16 on 32 lanes: A and B whole rows / columns of K per lane,
// lane bit 4 a copy; C rows interleaved between the two half-waves.
void wmma_layouts(MatrixInstr& mi) {
  const L::Coords copy{0, 0};
  mi.a = frag(walk(1, 1, 16), concat(walk(0, 1, 16), {copy}), 16, 16);
  mi.b = frag(walk(0, 1, 16), concat(walk(1, 1, 16), {copy}), 16, 16);
  mi.c = frag(walk(0, 2, 8), concat(walk(1, 1, 16), {{1, 0}}), 16, 16);
}

const Instruction& find(const MatrixInstr& mi) {
  for (const Instruction& i : kInstructions)
    if (mi.name == i.mnemonic && mi.in == i.in) return i;
  throw Error("internal: '" + mi.name + "' is not an AMD matrix instruction");
}

// Elements of one lane's operand, in register order, as the vector type the
// intrinsic takes: <n x half>, <n x i16> for bf16, whole 32/64-bit words of
// packed 8-bit integers, or a scalar float.
llvm::Value* pack(llvm::IRBuilderBase& b, const std::vector<llvm::Value*>& elems, llvm::Type* want) {
  if (elems.size() == 1 && !want->isVectorTy() && elems[0]->getType() == want) return elems[0];
  llvm::Type* elem = elems[0]->getType();
  auto* vty = llvm::FixedVectorType::get(elem, unsigned(elems.size()));
  llvm::Value* v = llvm::PoisonValue::get(vty);
  for (size_t i = 0; i < elems.size(); ++i) v = b.CreateInsertElement(v, elems[i], uint64_t(i));
  // Same size in bits: bfloat -> i16 lanes, i8 lanes -> i32 / i64 words.
  return v->getType() == want ? v : b.CreateBitCast(v, want);
}

llvm::Type* operand_type(llvm::IRBuilderBase& b, const Instruction& ins, size_t count) {
  auto vec = [&](llvm::Type* t, size_t n) -> llvm::Type* { return llvm::FixedVectorType::get(t, unsigned(n)); };
  switch (ins.in) {
    case DType::f16: return vec(b.getHalfTy(), count);
    case DType::bf16: return vec(b.getInt16Ty(), count);
    case DType::f32: return b.getFloatTy();
    case DType::i8:
    case DType::u8:
      // MFMA: one word per lane (i32 for 4 bytes, i64 for 8); WMMA: <4 x i32>.
      if (ins.unit == Unit::Wmma) return vec(b.getInt32Ty(), count / 4);
      return b.getIntNTy(unsigned(8 * count));
    default: throw Error("internal: no AMD matrix operand of type " + std::string(dtype_name(ins.in)));
  }
}
}  // namespace

std::optional<MatrixInstr> matrix_instr(const std::string& arch, DType in, bool allow_tf32) {
  if (in == DType::f32 && !allow_tf32) return std::nullopt;  // exact f32: FMAs, as the interpreter adds
  for (const Instruction& ins : kInstructions) {
    if (arch != ins.arch || in != ins.in) continue;
    MatrixInstr mi;
    mi.name = ins.mnemonic;
    mi.m = 16;
    mi.n = 16;
    mi.k = ins.k;
    mi.in = ins.in;
    mi.acc = ins.acc;
    if (ins.unit == Unit::Mfma) mfma_layouts(mi);
    else wmma_layouts(mi);
    return mi;
  }
  return std::nullopt;
}

std::vector<llvm::Value*> matrix_multiply(llvm::IRBuilderBase& b, const MatrixInstr& instr,
                                          const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                          const std::vector<llvm::Value*>& c) {
  const Instruction& ins = find(instr);
  if (a.size() != size_t(instr.a.in_size(kReg)) || bv.size() != size_t(instr.b.in_size(kReg)) ||
      c.size() != size_t(instr.c.in_size(kReg)))
    throw Error("internal: " + instr.name + " called with " + std::to_string(a.size()) + "/" +
                std::to_string(bv.size()) + "/" + std::to_string(c.size()) + " registers");
  llvm::Type* op_ty = operand_type(b, ins, a.size());
  llvm::Type* acc_elem = ins.acc == DType::i32 ? b.getInt32Ty() : b.getFloatTy();
  auto* acc_ty = llvm::FixedVectorType::get(acc_elem, unsigned(c.size()));
  llvm::Value* av = pack(b, a, op_ty);
  llvm::Value* bw = pack(b, bv, op_ty);
  llvm::Value* cv = pack(b, c, acc_ty);
  llvm::Value* d;
  if (ins.unit == Unit::Mfma) {
    // cbsz, abid, blgp = 0: no broadcast between blocks, B lanes as loaded.
    d = b.CreateIntrinsic(ins.intrinsic, {}, {av, bw, cv, b.getInt32(0), b.getInt32(0), b.getInt32(0)});
  } else if (ins.acc == DType::i32) {
    // Signedness per operand; no clamp (the i32 sum wraps, as the interpreter's does).
    llvm::Value* is_signed = b.getInt1(ins.in == DType::i8);
    d = b.CreateIntrinsic(ins.intrinsic, {acc_ty, op_ty}, {is_signed, av, is_signed, bw, cv, b.getFalse()});
  } else {
    d = b.CreateIntrinsic(ins.intrinsic, {acc_ty, op_ty}, {av, bw, cv});
  }
  std::vector<llvm::Value*> out;
  for (size_t i = 0; i < c.size(); ++i) out.push_back(b.CreateExtractElement(d, uint64_t(i)));
  return out;
}

}  // namespace tl::codegen::amdgpu
