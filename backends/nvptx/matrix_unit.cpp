// mma.sync for dot on sm_80 and later, wgmma on sm_90a (see matrix_unit.h).
//
// Fragment layouts, (register, lane) -> coordinates, with g = lane / 4 and
// t = lane % 4 (PTX ISA, "Matrix Fragments for mma.m16n8k*"):
//   m16n8k16 (bf16, f16)  A[m][k]: a0,a1 (g, 2t+{0,1}), a2,a3 (g+8, ..),
//                                  a4..a7 as a0..a3 with k + 8
//                         B[k][n]: b0,b1 (2t+{0,1}, g), b2,b3 (k + 8)
//   m16n8k8 (tf32)        A: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
//                         B: b0 (t, g), b1 (t+4, g)
//   m16n8k32 (f8, s8, u8) A: a0..a3 (g, 4t+{0..3}), a4..a7 (g+8, ..),
//                            a8..a15 as a0..a7 with k + 16
//                         B: b0..b3 (4t+{0..3}, g), b4..b7 (k + 16)
//   C[m][n] (all)         c0,c1 (g, 2t+{0,1}), c2,c3 (g+8, ..)
// As linear layouts each is a handful of basis vectors.
#include "nvptx/matrix_unit.h"

#include <llvm/IR/InlineAsm.h>

namespace tl::codegen::nvptx {

namespace {
using L = LinearLayout;

L frag(std::vector<L::Coords> reg, std::vector<L::Coords> lane, int rows, int cols) {
  return L({{kReg, std::move(reg)}, {kLane, std::move(lane)}}, {{dim_name(0), rows}, {dim_name(1), cols}});
}

// g = lane bits 2..4 walk rows; t = lane bits 0..1 walk columns in steps of `t_step`.
L c_frag() { return frag({{0, 1}, {8, 0}}, {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}}, 16, 8); }
// A of m16n8k16 (bf16, f16).
L a_frag_16bit() { return frag({{0, 1}, {8, 0}, {0, 8}}, {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}}, 16, 16); }

std::string ptx_type(DType d) {
  switch (d) {
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f32: return "tf32";
    case DType::f8e4m3: return "e4m3";
    case DType::f8e5m2: return "e5m2";
    case DType::i8: return "s8";
    case DType::u8: return "u8";
    default: return "";
  }
}
}  // namespace

std::optional<MatrixInstr> mma_instr(DType in, bool allow_tf32, int sm) {
  MatrixInstr mi;
  mi.in = in;
  mi.acc = DType::f32;
  mi.m = 16;
  mi.n = 8;
  mi.c = c_frag();
  switch (in) {
    case DType::bf16:
    case DType::f16:
      mi.k = 16;
      mi.a = a_frag_16bit();
      mi.b = frag({{1, 0}, {8, 0}}, {{2, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 4}}, 16, 8);
      break;
    case DType::f32:
      if (!allow_tf32) return std::nullopt;
      mi.k = 8;
      mi.a = frag({{8, 0}, {0, 4}}, {{0, 1}, {0, 2}, {1, 0}, {2, 0}, {4, 0}}, 16, 8);
      mi.b = frag({{4, 0}}, {{1, 0}, {2, 0}, {0, 1}, {0, 2}, {0, 4}}, 8, 8);
      break;
    case DType::f8e4m3:
    case DType::f8e5m2:
    case DType::i8:
    case DType::u8:
      if ((in == DType::f8e4m3 || in == DType::f8e5m2) && sm < 89) return std::nullopt;
      if (in == DType::i8 || in == DType::u8) mi.acc = DType::i32;
      mi.k = 32;
      mi.a = frag({{0, 1}, {0, 2}, {8, 0}, {0, 16}}, {{0, 4}, {0, 8}, {1, 0}, {2, 0}, {4, 0}}, 16, 32);
      mi.b = frag({{1, 0}, {2, 0}, {16, 0}}, {{4, 0}, {8, 0}, {0, 1}, {0, 2}, {0, 4}}, 32, 8);
      break;
    default:
      return std::nullopt;
  }
  std::string acc = mi.acc == DType::i32 ? "s32" : "f32";
  mi.name = "mma.sync.aligned.m16n8k" + std::to_string(mi.k) + ".row.col." + acc + "." + ptx_type(in) + "." +
            ptx_type(in) + "." + acc;
  return mi;
}

namespace {
// One PTX statement with no operands, ordered with memory accesses.
void asm_statement(llvm::IRBuilder<>& b, const std::string& text) {
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {}, false);
  b.CreateCall(llvm::InlineAsm::get(fty, text, "~{memory}", true), {});
}

// Packs consecutive elements into 32-bit words (tf32: each f32 rounded to
// tf32 with cvt.rna, as the interpreter rounds).
std::vector<llvm::Value*> pack(llvm::IRBuilder<>& b, DType in, const std::vector<llvm::Value*>& elems) {
  std::vector<llvm::Value*> words;
  if (in == DType::f32) {
    auto* fty = llvm::FunctionType::get(b.getInt32Ty(), {b.getFloatTy()}, false);
    auto* cvt = llvm::InlineAsm::get(fty, "cvt.rna.tf32.f32 $0, $1;", "=r,f", false);
    for (auto* e : elems) words.push_back(b.CreateCall(cvt, {e}));
    return words;
  }
  size_t per = 32 / elems[0]->getType()->getPrimitiveSizeInBits();
  auto* vty = llvm::FixedVectorType::get(elems[0]->getType(), unsigned(per));
  for (size_t i = 0; i < elems.size(); i += per) {
    llvm::Value* v = llvm::UndefValue::get(vty);
    for (size_t k = 0; k < per; ++k) v = b.CreateInsertElement(v, elems[i + k], uint64_t(k));
    words.push_back(b.CreateBitCast(v, b.getInt32Ty()));
  }
  return words;
}
}  // namespace

std::vector<llvm::Value*> mma_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr,
                                       const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                       const std::vector<llvm::Value*>& c) {
  std::vector<llvm::Value*> aw = pack(b, instr.in, a), bw = pack(b, instr.in, bv);
  bool int_acc = instr.acc == DType::i32;
  llvm::Type* acc_ty = int_acc ? b.getInt32Ty() : b.getFloatTy();
  std::string acc_cons = int_acc ? "r" : "f";
  // Operands: $0..$3 the results, then A, B, and C tied to the results.
  std::string cons, text = instr.name + " {$0, $1, $2, $3}, {";
  int next = 4;
  for (int i = 0; i < 4; ++i) cons += (i ? ",=" : "=") + acc_cons;
  auto list = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      s += (i ? ", $" : "$") + std::to_string(next++);
      cons += ",r";
    }
    return s;
  };
  // (Separate statements: the operand numbers depend on the call order.)
  text += list(aw.size());
  text += "}, {";
  text += list(bw.size());
  text += "}, {$" + std::to_string(next) + ", $" + std::to_string(next + 1) + ", $" + std::to_string(next + 2) +
          ", $" + std::to_string(next + 3) + "};";
  cons += ",0,1,2,3";
  std::vector<llvm::Value*> args(aw);
  args.insert(args.end(), bw.begin(), bw.end());
  args.insert(args.end(), c.begin(), c.end());
  std::vector<llvm::Type*> arg_types;
  for (auto* v : args) arg_types.push_back(v->getType());
  auto* ret = llvm::StructType::get(b.getContext(), std::vector<llvm::Type*>(4, acc_ty));
  auto* fty = llvm::FunctionType::get(ret, arg_types, false);
  llvm::Value* r = b.CreateCall(llvm::InlineAsm::get(fty, text, cons, false), args);
  std::vector<llvm::Value*> out;
  for (unsigned i = 0; i < 4; ++i) out.push_back(b.CreateExtractValue(r, i));
  return out;
}

// wgmma.mma_async.m64nNk16: a warpgroup (4 warps) multiplies a 64 x 16
// tile of A by a 16 x N tile of B. Warp w of the group holds rows
// 16w .. 16w + 15 of the accumulator, each warp like mma.sync's C
// fragment repeated along N: registers 4j .. 4j + 3 are columns 8j ...
std::optional<MatrixInstr> wgmma_instr(DType in, int64_t M, int64_t N, int64_t K, int num_warps,
                                       const std::string& arch) {
  if (arch != "sm_90a" || (in != DType::bf16 && in != DType::f16)) return std::nullopt;
  if (num_warps % 4 != 0 || M % (64 * (num_warps / 4)) != 0 || K % 16 != 0) return std::nullopt;
  // N: a multiple of 16 (32-byte rows: the smallest swizzled layout), one
  // instruction up to 256 columns (160 = 5 x 32 one n160 instruction, its
  // accumulator's column chunks a repeat), or repeats of 256.
  if (N < 16 || N % 16 != 0 || (N > 256 && N % 256 != 0)) return std::nullopt;
  int n = int(std::min<int64_t>(N, 256));
  MatrixInstr mi;
  mi.in = in;
  mi.acc = DType::f32;
  mi.m = 64;
  mi.n = n;
  mi.k = 16;
  mi.warps = 4;
  mi.operands_in_smem = true;
  mi.operand_align = 1024;  // descriptors address whole 8-row swizzle patterns of 128-byte rows
  mi.c = c_frag() * L::repeat(kReg, n / 8, dim_name(1)) * L::identity(kWarp, 4, dim_name(0));
  // A in registers: warp w of the group holds rows 16w .. 16w + 15 of the
  // 64 x 16 tile, each warp as mma.sync's m16n8k16 A fragment; that is C's
  // layout, two 8-column fragments a K step, so a product's accumulators
  // (rounded to 16 bits) are the next product's A as they are.
  mi.a = a_frag_16bit() * L::identity(kWarp, 4, dim_name(0));
  mi.name = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." + ptx_type(in) + "." + ptx_type(in);
  return mi;
}

std::vector<llvm::Value*> wgmma_multiply(llvm::IRBuilder<>& b, const MatrixInstr& instr, const WarpgroupA& a,
                                         const SmemOperand& b_op, bool trans_b, const std::vector<llvm::Value*>& c,
                                         bool accumulate) {
  // Operands: $0 .. $(n-1) the accumulators (results, tied to the inputs
  // after A, B's descriptor and scale-d: 1 for D = A x B + D, 0 for D = A x
  // B, where the inputs are undefined: no registers set to zero). A is
  // a descriptor, or its fragment packed into 32-bit words; an A in
  // registers is K-major by definition (no trans-a immediate). A
  // descriptor's constant offset is added to its address field (the low
  // 14 bits, in 16-byte units) in the statement: a shared address stays
  // below 2^18 bytes, so the field never carries into the next.
  size_t n = c.size();
  const bool a_smem = a.smem.desc != nullptr;
  std::vector<llvm::Value*> args = a_smem ? std::vector<llvm::Value*>{a.smem.desc} : pack(b, instr.in, a.elems);
  size_t na = args.size();
  auto arg = [](size_t i) { return "$" + std::to_string(i); };
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, " + arg(n + na + 1) + ", 0;\n";
  // The descriptor operand `x` moved by `offset` bytes: `x` itself, or a
  // local register `name` set here.
  auto moved = [&](const std::string& x, int64_t offset, const std::string& name) {
    if (offset == 0) return x;
    if (offset % 16 != 0 || offset < 0 || offset >= (int64_t(1) << 18))
      throw Error("internal: wgmma descriptor offset " + std::to_string(offset) + " is not a multiple of 16 below 2^18");
    text += ".reg .b64 " + name + ";\n.reg .b32 " + name + "_lo, " + name + "_hi;\nmov.b64 {" + name + "_lo, " + name +
            "_hi}, " + x + ";\nadd.s32 " + name + "_lo, " + name + "_lo, " + std::to_string(offset >> 4) +
            ";\nmov.b64 " + name + ", {" + name + "_lo, " + name + "_hi};\n";
    return name;
  };
  std::string a_text = a_smem ? moved(arg(n), a.smem.offset, "da") : "";
  std::string b_text = moved(arg(n + na), b_op.offset, "db");
  text += instr.name + " {";
  std::string cons;
  for (size_t i = 0; i < n; ++i) {
    text += (i ? ", " : "") + arg(i);
    cons += i ? ",=f" : "=f";
  }
  text += "}, ";
  if (a_smem) {
    text += a_text;
    cons += ",l";
  } else {
    text += "{";
    for (size_t i = 0; i < na; ++i) {
      text += (i ? ", " : "") + arg(n + i);
      cons += ",r";
    }
    text += "}";
  }
  text += ", " + b_text + ", p, 1, 1, " + (a_smem ? std::string(a.trans ? "1, " : "0, ") : std::string()) +
          (trans_b ? "1" : "0") + ";\n}";
  cons += ",l,r";
  for (size_t i = 0; i < n; ++i) cons += "," + std::to_string(i);
  args.push_back(b_op.desc);
  args.push_back(b.getInt32(accumulate ? 1 : 0));
  for (llvm::Value* v : c) args.push_back(accumulate ? v : llvm::UndefValue::get(v->getType()));
  std::vector<llvm::Type*> arg_types;
  for (auto* v : args) arg_types.push_back(v->getType());
  auto* ret = llvm::StructType::get(b.getContext(), std::vector<llvm::Type*>(n, b.getFloatTy()));
  auto* fty = llvm::FunctionType::get(ret, arg_types, false);
  llvm::Value* r = b.CreateCall(llvm::InlineAsm::get(fty, text, cons + ",~{memory}", true), args);
  std::vector<llvm::Value*> out;
  for (unsigned i = 0; i < n; ++i) out.push_back(b.CreateExtractValue(r, i));
  return out;
}

void wgmma_fence(llvm::IRBuilder<>& b) { asm_statement(b, "wgmma.fence.sync.aligned;"); }
void wgmma_commit(llvm::IRBuilder<>& b) { asm_statement(b, "wgmma.commit_group.sync.aligned;"); }
void fence_proxy_async(llvm::IRBuilder<>& b) { asm_statement(b, "fence.proxy.async.shared::cta;"); }

// The panels of 32, 64 or 128-byte rows are wgmma's 32B/64B/128B-swizzled
// canonical layout: 8-row groups of one panel are 8 rows apart (the stride
// offset), panels a panel apart (the leading offset, used when the operand
// is stored M/N-major; K-major swizzled tiles ignore it, encoded as 1).
// Bits: start address >> 4 at 0 (14 bits), leading offset >> 4 at 16,
// stride offset >> 4 at 32, swizzle mode at 62 (1: 128B, 2: 64B, 3: 32B).
llvm::Value* wgmma_descriptor(llvm::IRBuilder<>& b, llvm::Value* addr, int64_t row_bytes, int64_t panel_bytes,
                              bool k_major) {
  int64_t lead = k_major ? 16 : panel_bytes, stride = 8 * row_bytes;
  uint64_t mode = row_bytes == 128 ? 1 : row_bytes == 64 ? 2 : 3;
  uint64_t fixed = (uint64_t(lead >> 4) << 16) | (uint64_t(stride >> 4) << 32) | (mode << 62);
  llvm::Value* start = b.CreateZExt(b.CreateAnd(b.CreateLShr(addr, b.getInt32(4)), b.getInt32(0x3FFF)), b.getInt64Ty());
  return b.CreateOr(start, b.getInt64(fixed));
}

// `pinned`: a CTA fence before the wait, which ptxas does not move the wait
// above (it otherwise issues it where the block, or the one after the
// back edge, first writes registers the waited-for product reads: the
// softmax's top in attention's loop; docs/perf.md run 91).
std::vector<llvm::Value*> wgmma_wait(llvm::IRBuilder<>& b, int pending, const std::vector<llvm::Value*>& acc,
                                     bool pinned) {
  std::string cons;
  for (size_t i = 0; i < acc.size(); ++i) cons += i ? ",=f" : "=f";
  for (size_t i = 0; i < acc.size(); ++i) cons += "," + std::to_string(i);
  std::vector<llvm::Type*> types(acc.size(), b.getFloatTy());
  auto* ret = llvm::StructType::get(b.getContext(), types);
  auto* fty = llvm::FunctionType::get(ret, types, false);
  llvm::Value* r = b.CreateCall(
      llvm::InlineAsm::get(fty,
                           std::string(pinned ? "fence.acq_rel.cta;\n\t" : "") + "wgmma.wait_group.sync.aligned " +
                               std::to_string(pending) + ";",
                           cons + ",~{memory}",
                           true),
      acc);
  std::vector<llvm::Value*> out;
  for (unsigned i = 0; i < acc.size(); ++i) out.push_back(b.CreateExtractValue(r, i));
  return out;
}

std::vector<llvm::Value*> ldmatrix(llvm::IRBuilder<>& b, llvm::Value* row_ptr, int count, bool trans) {
  std::string text = "ldmatrix.sync.aligned.m8n8.x" + std::to_string(count) + (trans ? ".trans" : "") +
                     ".shared.b16 {";
  std::string cons;
  for (int i = 0; i < count; ++i) {
    text += (i ? ", $" : "$") + std::to_string(i);
    cons += i ? ",=r" : "=r";
  }
  text += "}, [$" + std::to_string(count) + "];";
  cons += ",r";
  // Shared addresses are 32-bit in PTX.
  llvm::Value* addr = b.CreatePtrToInt(row_ptr, b.getInt32Ty());
  llvm::Type* ret = count == 1 ? b.getInt32Ty()
                               : static_cast<llvm::Type*>(llvm::StructType::get(
                                     b.getContext(), std::vector<llvm::Type*>(size_t(count), b.getInt32Ty())));
  auto* fty = llvm::FunctionType::get(ret, {b.getInt32Ty()}, false);
  // Reads memory another thread's cp.async filled: must stay after the
  // barrier, hence a side effect.
  llvm::Value* r = b.CreateCall(llvm::InlineAsm::get(fty, text, cons + ",~{memory}", true), {addr});
  std::vector<llvm::Value*> out;
  for (int i = 0; i < count; ++i) out.push_back(count == 1 ? r : b.CreateExtractValue(r, unsigned(i)));
  return out;
}

void cp_async(llvm::IRBuilder<>& b, llvm::Value* dst, llvm::Value* src, int bytes, llvm::Value* pred) {
  // .cg (L2 only) exists for 16 bytes; smaller copies use .ca. The source
  // size operand is 0 when `pred` is false: nothing is read, zeros land.
  std::string text = std::string("cp.async.") + (bytes == 16 ? "cg" : "ca") + ".shared.global [$0], [$1], " +
                     std::to_string(bytes) + ", $2;";
  llvm::Value* addr = b.CreatePtrToInt(dst, b.getInt32Ty());
  llvm::Value* size = pred ? b.CreateSelect(pred, b.getInt32(bytes), b.getInt32(0)) : b.getInt32(bytes);
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty(), src->getType(), b.getInt32Ty()}, false);
  b.CreateCall(llvm::InlineAsm::get(fty, text, "r,l,r,~{memory}", true), {addr, src, size});
}

void cp_async_commit(llvm::IRBuilder<>& b) { asm_statement(b, "cp.async.commit_group;"); }

void cp_async_wait(llvm::IRBuilder<>& b, int pending) {
  asm_statement(b, "cp.async.wait_group " + std::to_string(pending) + ";");
}

}  // namespace tl::codegen::nvptx
