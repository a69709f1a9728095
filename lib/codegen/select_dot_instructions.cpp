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

void select(ir::Region& r, const TargetInfo& t, int num_warps) {
  for (auto& op : r.ops) {
    for (auto& sub : op->regions) select(*sub, t, num_warps);
    if (op->kind != ir::OpKind::Dot) continue;
    bool a_regs = false;
    auto mi = pick(*op, t, num_warps, a_regs);
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
