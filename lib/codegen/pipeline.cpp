// The GPU pass list (see pipeline.h): each pass as the compile runs it, and
// the plan of GPU IR read back from the IR for a pass run on its own.
#include "codegen/pipeline.h"

#include <algorithm>
#include <cstdlib>

#include "codegen/allocate_shared.h"
#include "codegen/async_dots.h"
#include "codegen/defer_store_waits.h"
#include "codegen/dump.h"
#include "codegen/prefetch_tile_copies.h"
#include "codegen/convert_layouts.h"
#include "codegen/dump.h"
#include "codegen/expand_conversions.h"
#include "codegen/expand_pipelines.h"
#include "codegen/insert_barriers.h"
#include "codegen/overlap_dots.h"
#include "codegen/peel_last_iteration.h"
#include "codegen/prescale_accumulator.h"
#include "codegen/schedule_loops.h"
#include "codegen/select_dot_instructions.h"
#include "codegen/target_info.h"
#include "codegen/tma_descriptors.h"
#include "codegen/warp_specialize.h"
#include "ir/verifier.h"
#include "transforms/passes.h"

namespace tl::codegen {

namespace {

// Tiles with a dimension that is not a power of two (ir::is_tile_dim takes
// c x 2^k) are laid out with a repeat in registers (blocked_layout); the
// ops whose lowering reads layouts through apply and the thread's
// coordinates take them: creation, elementwise ops, broadcasts, loads and
// stores (tensor copies into buffers with one repeat), control flow,
// reductions (a repeat along the axis combined as its bits are),
// transposes, reshapes that add or drop unit dims, and dots on warpgroup
// instructions (n160, three warpgroups). So do the ops on any tile when num_warps
// is 3 times a power of two (12: the layouts repeat their warps). The first
// other op on such a tile, a tile with two such dimensions (registers carry
// one repeat), or a cluster is refused here, naming the op and its line, not
// lowered wrong.
void refuse_tiles_not_lowered(ir::Function& fn, const GpuContext& c) {
  auto odd_dims = [](const ir::Type& ty) {
    return std::count_if(ty.shape.begin(), ty.shape.end(), [](int64_t d) { return !is_pow2_dim(d); });
  };
  auto lowered = [&](const ir::Op& op) {
    if (op.kind == ir::OpKind::Reshape)  // one that adds or drops unit dims keeps the others' coordinates
      return reshapes_unit_dims_only(op.operands[0]->type.shape, op.result()->type.shape);
    switch (op.kind) {
      case ir::OpKind::Constant:
      case ir::OpKind::Arange:
      case ir::OpKind::Splat:
      case ir::OpKind::Broadcast:
      case ir::OpKind::ExpandDims:
      case ir::OpKind::Load:
      case ir::OpKind::Store:
      case ir::OpKind::DescriptorLoad:   // masked loads, or tensor copies into buffers with a repeat
      case ir::OpKind::DescriptorStore:
      case ir::OpKind::Dot:  // on warpgroup instructions only (select-dot-instructions says so)
      case ir::OpKind::Trans:    // a permutation of the coordinates
      case ir::OpKind::Reduce:   // registers, lanes and warps as the layout has them (lower_reduce)
      case ir::OpKind::For:
      case ir::OpKind::If:
      case ir::OpKind::While:
      case ir::OpKind::Yield:
        return true;
      default:
        return ir::op_is_elementwise(op.kind);
    }
  };
  // num_warps 12 repeats the warps of every tile's layout.
  const bool odd_warps = !is_pow2_dim(c.num_warps);
  auto odd = [&](const ir::Type& ty) { return odd_dims(ty) > 0 || (odd_warps && ty.is_tile() && !ty.is_scalar()); };
  ir::walk(fn.body, [&](ir::Op* op) {
    const ir::Value* v = nullptr;
    for (const auto& r : op->results)
      if (!v && odd(r->type)) v = r.get();
    for (const ir::Value* o : op->operands)
      if (!v && odd(o->type)) v = o;
    if (!v) return;
    const std::string what = odd_warps ? "on " + std::to_string(c.num_warps) + " warps" : "whose dims are not powers of two";
    // Registers repeat one dimension, warps (12) another (default_layout).
    auto layable = [&](const ir::Type& ty) {
      try {
        default_layout(ty.shape, 1, c.num_warps, c.target.warp_size, -1, 1);
        return true;
      } catch (const Error&) {
        return false;
      }
    };
    std::string why = c.num_ctas > 1       ? what + " in one CTA only (num_ctas = 1), so far"
                      : !layable(v->type) ? std::string("with at most one dim that is not a power of two, so far "
                                                            "(a second only on 12 or 24 warps, where that dim's odd "
                                                            "factor is a multiple of 3: the three warpgroups split it)")
                      : !lowered(*op)  ? what + " for creation, elementwise ops, broadcasts, loads, stores, "
                                              "reductions, transposes, reshapes of unit dims and warpgroup dots only, so far"
                                            : "";
    if (!why.empty())
      throw Error(op->loc.str() + ": '" + std::string(op->name()) + "' on " + v->type.str() + ": " + c.target.name +
                  " lowers tiles " + why + " (the interpreter runs them all)");
  });
}

// The passes that turn Tile IR into GPU IR refuse GPU IR, and tiles they
// cannot lower.
void expect_tile_ir(const GpuContext& c, const char* pass) {
  if (c.fn.is_gpu())
    throw Error(std::string(pass) + ": expected Tile IR (a function without layouts), found GPU IR in @" + c.fn.name);
  refuse_tiles_not_lowered(c.fn, c);
}

// Tensor descriptors' blocks as masked loads and stores, simplified as the
// tracer's own code is; on targets with tensor copies, the loads that can
// be copies stay (tma_descriptors.h).
void lower_descriptors_pass(GpuContext& c) {
  expect_tile_ir(c, "lower-descriptors");
  std::function<bool(const ir::Op&)> keep;
  std::optional<transforms::AxisAnalysis> axis;
  if (c.target.has_tma) {
    axis.emplace(c.fn, c.args);
    keep = [&](const ir::Op& op) {
      std::string why = tensor_copy_refusal(c.fn, op, *axis);
      const bool load = op.kind == ir::OpKind::DescriptorLoad;
      c.notes.push_back(op.loc.str() + ": " + std::string(op.name()) + ": " +
                        (!why.empty() ? std::string("the masked ") + (load ? "load" : "store") + ", not a tensor copy: " + why
                         : load       ? "a tensor copy"
                                      : "a tensor copy where its coordinates are all non-negative"));
      return why.empty();
    };
  }
  bool lowered = transforms::lower_descriptors(c.fn, keep);
  if (squeeze_tensor_copies(c.fn) || lowered) transforms::simplify(c.fn);
}

void select_dot_instructions_pass(GpuContext& c) {
  expect_tile_ir(c, "select-dot-instructions");
  select_dot_instructions(c.fn, c.target, c.num_warps);
}

// A loop's first product of a chain issued an iteration early.
void overlap_dots_pass(GpuContext& c) {
  expect_tile_ir(c, "overlap-dots");
  if (overlap_dots(c.fn, c.target, c.num_warps)) transforms::dce(c.fn);
}

// Tile IR to GPU IR, valid after it as after every pass: the layouts, and
// the conversions between them.
void assign_layouts_pass(GpuContext& c) {
  expect_tile_ir(c, "assign-layouts");
  c.axis.emplace(c.fn, c.args);
  c.plan = assign_layouts(c.fn, *c.axis, c.num_warps, c.target.warp_size,
                          [&c](const ir::Op& dot) { return chosen_instr(dot, c.target, c.num_warps); }, c.num_ctas);
  c.plan->num_stages = c.num_stages;
  c.plan->fp_fusion = c.fp_fusion;
  c.plan->flush_denormals = c.flush_denormals;
  c.plan->programs_per_sm = c.programs_per_sm;
  // Kernel options the target cannot take, at the kernel's line.
  const std::string kernel = c.fn.loc.str() + ": kernel '" + c.fn.name + "': ";
  if (c.programs_per_sm > 1 && !c.target.block_registers)
    throw Error(kernel + "programs_per_sm = " + std::to_string(c.programs_per_sm) + " is not supported on " +
                c.target.name + " yet (NVIDIA targets only: expected programs_per_sm = 1)");
  if (c.num_ctas > c.target.max_cluster_ctas)
    throw Error(kernel + "num_ctas = " + std::to_string(c.num_ctas) + " needs thread-block clusters of that many CTAs, " +
                c.target.name + " has " + (c.target.max_cluster_ctas > 1 ? "clusters of at most " +
                std::to_string(c.target.max_cluster_ctas) : std::string("none")) +
                " (they are on sm_90 and later; expected num_ctas = 1 here)");
  // The kernel options the lowering reads, so that the text is all it needs.
  c.fn.attrs["num_stages"] = int64_t(c.num_stages);
  c.fn.attrs["fp_fusion"] = int64_t(c.fp_fusion);
  if (c.flush_denormals) c.fn.attrs["flush_denormals"] = int64_t(1);
  if (c.programs_per_sm > 1) c.fn.attrs["programs_per_sm"] = int64_t(c.programs_per_sm);
  convert_layouts(c.fn, *c.plan, c.target.has_matrix_load_8x8);
  c.axis.emplace(c.fn, c.args);  // the conversions' values too
}

// The passes over GPU IR: on GPU IR read from text the plan and the axis
// facts come from the IR.
void expect_gpu_ir(GpuContext& c, const char* pass) {
  if (!c.fn.is_gpu())
    throw Error(std::string(pass) + ": expected GPU IR (a function with layouts: run assign-layouts first), found Tile IR in @" +
                c.fn.name);
  if (!c.plan) c.plan = plan_from_ir(c.fn, c.target);
  if (!c.axis) c.axis.emplace(c.fn, c.args);
}

// The software-pipelining schedule of each loop.
void schedule_loops_pass(GpuContext& c) {
  expect_gpu_ir(c, "schedule-loops");
  const TargetInfo& t = c.target;
  schedule_loops(c.fn, *c.plan, *c.axis,
                 {t.name, t.has_async_copy, t.has_matrix_load_8x8, int(t.shared_bytes_for(c.plan->programs_per_sm)),
                  t.thread_register_limit(c.plan->num_warps * c.plan->warp_size, c.plan->programs_per_sm)});
}

// Conversions through shared memory as buffers and barriers.
void expand_conversions_pass(GpuContext& c) {
  expect_gpu_ir(c, "expand-conversions");
  expand_conversions(c.fn, *c.plan, *c.axis, c.target.has_matrix_load_8x8);
  c.axis.emplace(c.fn, c.args);  // the new ops' values too
}

// Where each buffer and each op's scratch go in shared memory.
void allocate_shared_pass(GpuContext& c) {
  expect_gpu_ir(c, "allocate-shared");
  const int programs = c.plan->programs_per_sm;
  allocate_shared(c.fn, *c.plan,
                  programs > 1 ? c.target.name + " (a program's share at programs_per_sm = " + std::to_string(programs) + ")"
                               : c.target.name,
                  c.target.shared_bytes_for(programs));
}

// Each scheduled loop's pipeline as buffers, copies and waits.
void expand_pipelines_pass(GpuContext& c) {
  expect_gpu_ir(c, "expand-pipelines");
  expand_pipelines(c.fn, *c.plan, *c.axis, c.target.has_matrix_load_8x8);
  // What only the loads used (the current iteration's addresses, carried
  // around the loop beside the lead ones) is dead now.
  transforms::dce(c.fn);
  c.axis.emplace(c.fn, c.args);  // the new ops' values too
}

// Descriptor loads no pipeline took, each as one tensor copy.
void tma_descriptors_pass(GpuContext& c) {
  expect_gpu_ir(c, "tma-descriptors");
  tma_descriptors(c.fn, *c.plan);
  c.axis.emplace(c.fn, c.args);  // the new ops' values too
}

// Loops' warpgroup dots issued without waiting for themselves.
void async_dots_pass(GpuContext& c) {
  expect_gpu_ir(c, "async-dots");
  async_dots(c.fn, *c.plan);
}

// A loop of tensor copies feeding an asynchronous dot as a producer and
// consumers on warps of their own.
void warp_specialize_pass(GpuContext& c) {
  expect_gpu_ir(c, "warp-specialize");
  warp_specialize(c.fn, *c.plan, c.target, c.warp_specialize);
  c.axis.emplace(c.fn, c.args);  // the new ops' values too
}

// An overlapped loop's last iteration after it, without the product past
// the end.
void peel_last_iteration_pass(GpuContext& c) {
  expect_gpu_ir(c, "peel-last-iteration");
  if (peel_last_iteration(c.fn, *c.plan)) c.axis.emplace(c.fn, c.args);  // the new ops' values too
}

// A peeled loop's accumulator carried already updated for the next step.
void prescale_accumulator_pass(GpuContext& c) {
  expect_gpu_ir(c, "prescale-accumulator");
  if (prescale_accumulator(c.fn)) {
    transforms::dce(c.fn);
    c.axis.emplace(c.fn, c.args);  // the new ops' values too
  }
}

// A persistent program's next tile's one-shot copies issued while a tile ends.
void prefetch_tile_copies_pass(GpuContext& c) {
  expect_gpu_ir(c, "prefetch-tile-copies");
  prefetch_tile_copies(c.fn, *c.plan, c.target.shared_bytes_for(c.plan->programs_per_sm));
  c.axis.emplace(c.fn, c.args);  // the new ops' values too
}

// A persistent program's tensor stores waited for where the next tile
// writes their buffers.
void defer_store_waits_pass(GpuContext& c) {
  expect_gpu_ir(c, "defer-store-waits");
  defer_store_waits(c.fn, *c.plan, c.target.shared_bytes_for(c.plan->programs_per_sm));
}

// Barriers where shared-memory accesses need them.
void insert_barriers_pass(GpuContext& c) {
  expect_gpu_ir(c, "insert-barriers");
  insert_barriers(c.fn, *c.plan);
}

// A dot's layouts from its `instr` and its result's layout (the one choice
// the instruction leaves, whether warps share rows, shows there).
DotLayouts dot_layouts_of(const ir::Op& dot, const TargetInfo& t, const LayoutPlan& p) {
  const auto &as = dot.operands[0]->type.shape, &bs = dot.operands[1]->type.shape;
  int64_t M = as[0], K = as[1], N = bs[1];
  std::vector<DotLayouts> options;
  if (auto mi = chosen_instr(dot, t, p.num_warps)) {
    int ctas = split_ctas(*mi, M, N, K, p.num_warps, p.num_ctas);
    for (bool along_m : {false, true})
      options.push_back(matrix_dot_layouts(*mi, M, N, K, p.num_warps, along_m, a_in_registers(dot), ctas));
  } else {
    options.push_back(fma_dot_layouts(M, N, K, p.num_warps, p.warp_size));
  }
  for (const DotLayouts& d : options)
    if (d.c == p.of(dot.result())) return d;
  throw Error(dot.loc.str() + ": 'dot' expects a result in a layout its instruction '" + dot.attr_str("instr") +
              "' gives, found " + dot.result()->type.str());
}

}  // namespace

const std::vector<GpuPass>& gpu_passes() {
  static const std::vector<GpuPass> passes = {
      {"lower-descriptors", &lower_descriptors_pass},
      {"select-dot-instructions", &select_dot_instructions_pass},
      {"overlap-dots", &overlap_dots_pass, true},
      {"assign-layouts", &assign_layouts_pass},
      {"schedule-loops", &schedule_loops_pass},
      {"expand-conversions", &expand_conversions_pass},
      {"expand-pipelines", &expand_pipelines_pass},
      {"tma-descriptors", &tma_descriptors_pass},
      {"async-dots", &async_dots_pass, true},
      {"warp-specialize", &warp_specialize_pass, true},
      {"peel-last-iteration", &peel_last_iteration_pass, true},
      {"prescale-accumulator", &prescale_accumulator_pass, true},
      {"prefetch-tile-copies", &prefetch_tile_copies_pass, true},
      {"defer-store-waits", &defer_store_waits_pass, true},
      {"allocate-shared", &allocate_shared_pass},
      {"insert-barriers", &insert_barriers_pass},
  };
  return passes;
}

const GpuPass* find_gpu_pass(std::string_view name) {
  for (const GpuPass& p : gpu_passes())
    if (p.name == name) return &p;
  return nullptr;
}

GpuContext gpu_context(ir::Function& fn, const std::string& target) { return GpuContext(fn, get_target_info(target)); }

void run_gpu_pass(GpuContext& ctx, const GpuPass& pass) {
  pass.run(ctx);
  try {
    ir::verify(ctx.fn);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "\n(after GPU pass '" + std::string(pass.name) + "' on @" + ctx.fn.name + ")");
  }
}

std::string gpu_pass_changes() {
  const char* env = std::getenv("TILEDSL_GPU_PASSES");
  return env ? env : "";
}

namespace {
// Whether each pass runs, as TILEDSL_GPU_PASSES leaves them.
std::vector<bool> passes_on() {
  const std::vector<GpuPass>& passes = gpu_passes();
  std::vector<bool> on;
  for (const GpuPass& p : passes) on.push_back(p.on_by_default);
  const std::string changes = gpu_pass_changes();
  for (size_t at = 0; at <= changes.size();) {
    size_t end = std::min(changes.find(',', at), changes.size());
    std::string item = changes.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    const GpuPass* pass = find_gpu_pass(std::string_view(item).substr(1));
    if ((item[0] != '-' && item[0] != '+') || !pass || !pass->optional) {
      std::string optional;
      for (const GpuPass& p : passes)
        if (p.optional) optional += std::string(optional.empty() ? "" : ", ") + std::string(p.name);
      throw Error("TILEDSL_GPU_PASSES: expected -name or +name of an optional GPU pass (" + optional + "), found '" +
                  item + "'");
    }
    on[size_t(pass - passes.data())] = item[0] == '+';
  }
  return on;
}

}  // namespace

void run_gpu_passes(GpuContext& ctx, const std::function<void(const GpuPass&)>& after) {
  if (const char* want = std::getenv("TILEDSL_DUMP")) {
    static const std::vector<std::string_view> names = [] {
      std::vector<std::string_view> n;
      for (const GpuPass& p : gpu_passes()) n.push_back(p.name);
      return n;
    }();
    warn_unknown_dump_items(want, &names);
  }
  const std::vector<bool> on = passes_on();
  for (size_t k = 0; k < gpu_passes().size(); ++k) {
    if (!on[k]) continue;
    run_gpu_pass(ctx, gpu_passes()[k]);
    if (after) after(gpu_passes()[k]);
  }
}

LayoutPlan plan_from_ir(const ir::Function& fn, const TargetInfo& t) {
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
  p.flush_denormals = option("flush_denormals", p.flush_denormals) != 0;
  p.programs_per_sm = option("programs_per_sm", p.programs_per_sm);
  if (p.warp_size != t.warp_size)
    throw Error("@" + fn.name + ": expected GPU IR for the " + std::to_string(t.warp_size) + "-lane warps of " + t.name +
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
