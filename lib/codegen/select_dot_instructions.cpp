// Dot instruction selection (see select_dot_instructions.h).
#include "codegen/select_dot_instructions.h"

#include "codegen/target_info.h"

namespace tl::codegen {

namespace {

// Whether operand `i` of a dot is a tile (possibly transposed) loaded
// next to it, in its own region, or a tensor copy's block (a descriptor
// load lower-descriptors kept) anywhere: one a warpgroup instruction reads
// from shared memory as it lands. Others are read from registers: a dot's
// result feeding the next, or a pointer load before the dot's loop, which
// would be stored again every iteration.
bool loaded_here(const ir::Op& dot, int i) {
  const ir::Op* def = dot.operands[i]->def;
  if (def && def->kind == ir::OpKind::Trans) def = def->operands[0]->def;
  if (def && def->kind == ir::OpKind::DescriptorLoad) return true;
  return def && def->kind == ir::OpKind::Load && def->parent == dot.parent;
}

struct Shape {
  int64_t m, n, k;
};
Shape shape_of(const ir::Op& dot) {
  const auto &as = dot.operands[0]->type.shape, &bs = dot.operands[1]->type.shape;
  return {as[0], bs[1], as[1]};
}
bool allows_tf32(const ir::Op& dot) { return dot.attr_str_or("input_precision", "tf32") == "tf32"; }

// The instruction for a dot: a warpgroup one where it fits (`a_regs`: with
// A from registers), else the target's register-operand one, if it tiles
// the dot.
std::optional<MatrixInstr> pick(const ir::Op& dot, const TargetInfo& t, int num_warps, bool& a_regs) {
  DType in = dot.operands[0]->type.dtype;
  Shape s = shape_of(dot);
  std::optional<MatrixInstr> mi;
  a_regs = false;
  if (loaded_here(dot, 1)) {
    mi = t.warpgroup_instr(in, s.m, s.n, s.k, num_warps);
    a_regs = mi && !loaded_here(dot, 0);
    if (a_regs && mi->a.in_dims().empty()) mi.reset();
  }
  if (!mi) {
    a_regs = false;
    mi = t.matrix_instr(in, allows_tf32(dot));
  }
  if (mi && !fits(*mi, s.m, s.n, s.k)) mi.reset();
  return mi;
}

// f8 operands where the target has no matrix instruction for them but one
// for f16 that tiles the dot: every e4m3 and e5m2 value is exact in f16,
// and an f16 unit forms exact products and sums them in f32, so the
// operands are widened (casts before the dot) and the dot runs there rather
// than on fused multiply-adds, which for a [64, 128] x [128, 64] product is
// a megabyte of code and a minute of compiling.
void widen_f8_operands(ir::Region& r, ir::Op& dot, const TargetInfo& t) {
  DType in = dot.operands[0]->type.dtype;
  if (in != DType::f8e4m3 && in != DType::f8e5m2) return;
  if (t.matrix_instr(in, false)) return;
  auto f16 = t.matrix_instr(DType::f16, false);
  Shape s = shape_of(dot);
  if (!f16 || !fits(*f16, s.m, s.n, s.k)) return;
  ir::Builder b(&r);
  b.set_insertion_before(&dot);
  b.loc = dot.loc;
  for (int i : {0, 1}) {
    ir::Type wide = dot.operands[size_t(i)]->type;
    wide.dtype = DType::f16;
    dot.operands[size_t(i)] = b.create1(ir::OpKind::Cast, {dot.operands[size_t(i)]}, wide);
  }
}

void select(ir::Region& r, const TargetInfo& t, int num_warps) {
  for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
    auto& op = *it;
    for (auto& sub : op->regions) select(*sub, t, num_warps);
    if (op->kind != ir::OpKind::Dot) continue;
    widen_f8_operands(r, *op, t);
    bool a_regs = false;
    auto mi = pick(*op, t, num_warps, a_regs);
    // Dims c x 2^k and 12 warps have layouts on warpgroup instructions only.
    bool odd = !is_pow2_dim(num_warps);
    for (const auto* v : {op->operands[0], op->operands[1], op->operands[2]})
      for (int64_t d : v->type.shape) odd = odd || !is_pow2_dim(d);
    if (odd && (!mi || mi->warps == 1))
      throw Error(op->loc.str() + ": 'dot' on " + op->result()->type.str() + " with " + std::to_string(num_warps) +
                  " warps: " + t.name + " lowers a dot whose dims are not powers of two, or on 12 warps, on warpgroup " +
                  "instructions only, so far (sm_90a's wgmma: B loaded beside it, M a multiple of 64 a warpgroup, N of 16)");
    op->attrs["instr"] = mi ? mi->name : std::string("fma");
    if (mi && a_regs) op->attrs["a_in"] = std::string("registers");
    else op->attrs.erase("a_in");
  }
}

}  // namespace

void select_dot_instructions(ir::Function& fn, const TargetInfo& t, int num_warps) { select(fn.body, t, num_warps); }

std::optional<MatrixInstr> chosen_instr(const ir::Op& dot, const TargetInfo& t, int num_warps) {
  std::string name = dot.attr_str_or("instr", "");
  if (name.empty())
    throw Error(dot.loc.str() + ": 'dot' expects attribute 'instr' (select-dot-instructions gives it), found none");
  if (name == "fma") return std::nullopt;
  DType in = dot.operands[0]->type.dtype;
  Shape s = shape_of(dot);
  for (auto mi : {t.warpgroup_instr(in, s.m, s.n, s.k, num_warps), t.matrix_instr(in, allows_tf32(dot))})
    if (mi && mi->name == name && fits(*mi, s.m, s.n, s.k)) return mi;
  throw Error(dot.loc.str() + ": 'dot' expects an instruction " + t.name + " has for this dot, found '" + name + "'");
}

bool a_in_registers(const ir::Op& dot) { return dot.attr_str_or("a_in", "") == "registers"; }

std::optional<MatrixInstr> matrix_instr_named(const TargetInfo& t, DType in, const std::string& name) {
  for (bool tf32 : {false, true})
    if (auto mi = t.matrix_instr(in, tf32); mi && mi->name == name) return mi;
  return std::nullopt;
}

}  // namespace tl::codegen
