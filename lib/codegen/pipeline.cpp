// The GPU pass list (see pipeline.h): each pass as the compile runs it, and
// the plan of GPU IR read back from the IR for a pass run on its own.
#include "codegen/pipeline.h"

#include "codegen/convert_layouts.h"
#include "codegen/target.h"
#include "ir/verifier.h"

namespace tl::codegen {

namespace {

// Whether a dot's operands are tiles (possibly transposed) loaded next to
// it, in its own region: those a warpgroup instruction reads from shared
// memory as they land. Others keep the register-operand instruction: a
// dot's result feeding the next, or an operand loaded before the dot's
// loop (attention's Q), which would be stored again every iteration.
bool operands_loaded(const ir::Op& dot) {
  for (int i = 0; i < 2; ++i) {
    const ir::Op* def = dot.operands[i]->def;
    if (def && def->kind == ir::OpKind::Trans) def = def->operands[0]->def;
    if (!def || def->kind != ir::OpKind::Load || def->parent != dot.parent) return false;
  }
  return true;
}

// The instruction for a dot: a warpgroup one where it fits, else the
// target's register-operand one.
std::optional<MatrixInstr> pick_instr(const Target& t, const ir::Op& dot, int num_warps) {
  DType in = dot.operands[0]->type.dtype;
  const auto &as = dot.operands[0]->type.shape, &bs = dot.operands[1]->type.shape;
  if (operands_loaded(dot))
    if (auto wg = t.warpgroup_instr(in, as[0], bs[1], as[1], num_warps)) return wg;
  return t.matrix_instr(in, dot.attr_str_or("input_precision", "tf32") == "tf32");
}

// Tile IR to GPU IR, valid after it as after every pass: the layouts, and
// the conversions between them.
void assign_layouts_pass(GpuContext& c) {
  if (c.fn.is_gpu())
    throw Error("assign-layouts: expected Tile IR (a function without layouts), found GPU IR in @" + c.fn.name);
  c.axis.emplace(c.fn, c.args);
  c.plan = assign_layouts(c.fn, *c.axis, c.num_warps, c.target.warp_size(),
                          [&c](const ir::Op& dot) { return pick_instr(c.target, dot, c.num_warps); }, c.num_ctas);
  c.plan->num_stages = c.num_stages;
  c.plan->fp_fusion = c.fp_fusion;
  // The kernel options the lowering reads, so that the text is all it needs.
  c.fn.attrs["num_stages"] = int64_t(c.num_stages);
  c.fn.attrs["fp_fusion"] = int64_t(c.fp_fusion);
  convert_layouts(c.fn, *c.plan);
  c.axis.emplace(c.fn, c.args);  // the conversions' values too
}

// A dot's layouts from its `instr` and its result's layout (the one choice
// the instruction leaves, whether warps share rows, shows there).
DotLayouts dot_layouts_of(const ir::Op& dot, const Target& t, const LayoutPlan& p) {
  const auto &as = dot.operands[0]->type.shape, &bs = dot.operands[1]->type.shape;
  int64_t M = as[0], K = as[1], N = bs[1];
  std::string name = dot.attr_str_or("instr", "");
  if (name.empty()) throw Error(dot.loc.str() + ": 'dot' expects attribute 'instr' in GPU IR, found none");
  const LinearLayout& c = p.of(dot.result());
  std::vector<DotLayouts> options;
  if (name == "fma") {
    options.push_back(fma_dot_layouts(M, N, K, p.num_warps, p.warp_size));
  } else {
    DType in = dot.operands[0]->type.dtype;
    std::vector<MatrixInstr> instrs;
    if (auto w = t.warpgroup_instr(in, M, N, K, p.num_warps)) instrs.push_back(*w);
    if (auto m = t.matrix_instr(in, dot.attr_str_or("input_precision", "tf32") == "tf32")) instrs.push_back(*m);
    for (const MatrixInstr& mi : instrs)
      if (mi.name == name)
        for (bool along_m : {false, true}) options.push_back(matrix_dot_layouts(mi, M, N, K, p.num_warps, along_m));
  }
  for (const DotLayouts& d : options)
    if (d.c == c) return d;
  throw Error(dot.loc.str() + ": 'dot' expects an instruction " + t.name() +
              " has for this dot, giving its result's layout, found '" + name + "'");
}

}  // namespace

const std::vector<GpuPass>& gpu_passes() {
  static const std::vector<GpuPass> passes = {
      {"assign-layouts", &assign_layouts_pass},
  };
  return passes;
}

const GpuPass* find_gpu_pass(std::string_view name) {
  for (const GpuPass& p : gpu_passes())
    if (p.name == name) return &p;
  return nullptr;
}

GpuContext gpu_context(ir::Function& fn, const std::string& target) { return GpuContext(fn, get_target(target)); }

void run_gpu_pass(GpuContext& ctx, const GpuPass& pass) {
  pass.run(ctx);
  try {
    ir::verify(ctx.fn);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "\n(after GPU pass '" + std::string(pass.name) + "' on @" + ctx.fn.name + ")");
  }
}

void run_gpu_passes(GpuContext& ctx, const std::function<void(const GpuPass&)>& after) {
  for (const GpuPass& p : gpu_passes()) {
    run_gpu_pass(ctx, p);
    if (after) after(p);
  }
}

LayoutPlan plan_from_ir(const ir::Function& fn, const Target& t) {
  if (!fn.is_gpu()) throw Error("expected GPU IR (a function with layouts), found Tile IR in @" + fn.name);
  LayoutPlan p;
  p.fn = &fn;
  p.num_warps = int(std::get<int64_t>(fn.attrs.at("num_warps")));
  p.warp_size = int(std::get<int64_t>(fn.attrs.at("warp_size")));
  p.num_ctas = int(std::get<int64_t>(fn.attrs.at("num_ctas")));
  auto option = [&](const char* key, int dflt) {
    auto it = fn.attrs.find(key);
    if (it == fn.attrs.end()) return dflt;
    if (!std::holds_alternative<int64_t>(it->second))
      throw Error("@" + fn.name + ": expected an integer attribute '" + key + "', found another kind");
    return int(std::get<int64_t>(it->second));
  };
  p.num_stages = option("num_stages", p.num_stages);
  p.fp_fusion = option("fp_fusion", p.fp_fusion) != 0;
  if (p.warp_size != t.warp_size())
    throw Error("@" + fn.name + ": expected GPU IR for the " + std::to_string(t.warp_size()) + "-lane warps of " + t.name() +
                ", found warp_size = " + std::to_string(p.warp_size));
  std::function<void(const ir::Region&)> walk = [&](const ir::Region& r) {
    for (const auto& op : r.ops) {
      if (op->kind == ir::OpKind::Dot) p.dots.emplace(op.get(), dot_layouts_of(*op, t, p));
      for (const auto& sub : op->regions) walk(*sub);
    }
  };
  walk(fn.body);
  return p;
}

}  // namespace tl::codegen
