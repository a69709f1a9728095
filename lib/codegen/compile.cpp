// The GPU compile driver: the target registry, the pipeline from a traced
// kernel to assembly, stage dumps (TILEDSL_DUMP), argument specialization.
#include "codegen/compile.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>

#include <llvm/Support/raw_ostream.h>

#include "codegen/assign_layouts.h"
#include "codegen/convert_layouts.h"
#include "codegen/lower_llvm.h"
#include "codegen/target.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace tl::codegen {

// ---------------------------------------------------------------- registry
namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, TargetFactory> factories;
  std::map<std::string, std::unique_ptr<Target>> made;
};
Registry& raw_registry() {
  static Registry r;
  return r;
}
// The registry with the built-in back ends registered.
Registry& registry() {
  static std::once_flag once;
  std::call_once(once, [] { register_builtin_targets(); });
  return raw_registry();
}
}  // namespace

void register_target(const std::string& name, TargetFactory factory) {
  Registry& r = raw_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> available_targets() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, f] : r.factories) names.push_back(name);
  return names;
}

bool is_known_target(const std::string& target) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.factories.count(target) != 0;
}

const Target& get_target(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto it = r.made.find(name); it != r.made.end()) return *it->second;
  auto f = r.factories.find(name);
  if (f == r.factories.end()) {
    std::string known;
    for (const auto& [n, fac] : r.factories) known += (known.empty() ? "" : ", ") + n;
    throw Error("unknown target '" + name + "' (this build knows: " + known + ")");
  }
  return *r.made.emplace(name, f->second()).first->second;
}

// ---------------------------------------------------------- specialization
std::string Specialization::key() const {
  std::string k;
  for (const auto& a : args) {
    if (!k.empty()) k += ",";
    k += a.value ? 'v' : 'd';
    k += std::to_string(a.value ? *a.value : a.divisibility);
  }
  return k;
}

transforms::ArgFacts int_arg_facts(int64_t value) {
  transforms::ArgFacts f;
  if (value == 1) f.value = 1;
  else if (value % 16 == 0) f.divisibility = 16;
  return f;
}

transforms::ArgFacts pointer_arg_facts(uint64_t address) {
  transforms::ArgFacts f;
  if (address % 16 == 0) f.divisibility = 16;
  return f;
}

bool parse_stage(const std::string& name, Stage& out) {
  static const std::map<std::string, Stage> names = {
      {"tile", Stage::Tile}, {"gpu", Stage::Gpu}, {"llvm", Stage::Llvm}, {"asm", Stage::Asm}};
  auto it = names.find(name);
  if (it == names.end()) return false;
  out = it->second;
  return true;
}

// ---------------------------------------------------------------- pipeline
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

// The GPU stage of one compile: its own copy of the kernel's Tile IR (the
// kernel is compiled for other targets and specializations too), which
// layout assignment turns into GPU IR and convert_layouts completes with
// the conversions between layouts, verified before it is lowered.
struct Pipeline {
  const detail::KernelImpl& kernel;
  const Target& target;
  std::unique_ptr<ir::Function> gpu;
  transforms::AxisAnalysis axis;
  LayoutPlan plan;

  Pipeline(const detail::KernelImpl& k, const Specialization& spec, const Target& t)
      : kernel(k), target(t), gpu(ir::clone(*k.fn)), axis(*gpu, spec.args),
        plan(assign_layouts(*gpu, axis, k.options.num_warps, t.warp_size(), [&t, &k](const ir::Op& dot) {
          return pick_instr(t, dot, k.options.num_warps);
        }, k.options.num_ctas)) {
    plan.num_stages = k.options.num_stages;
    plan.fp_fusion = k.options.fp_fusion;
    convert_layouts(*gpu, plan);
    ir::verify(*gpu);
    axis = transforms::AxisAnalysis(*gpu, spec.args);  // the conversions' values too
  }

  LoweredKernel lower(llvm::LLVMContext& ctx) const {
    LoweredKernel l = lower_to_llvm(ctx, *gpu, plan, axis, target, kernel.name);
    target.optimize(*l.module);
    return l;
  }
};

std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

// Whether `item` is in a comma list.
bool listed(const char* list, const std::string& item) {
  return (std::string(",") + list + ",").find("," + item + ",") != std::string::npos;
}

// TILEDSL_DUMP=tile,gpu,llvm,asm prints those stages of every compile to
// stderr, or writes <kernel>.<target>.<stage> files into TILEDSL_DUMP_DIR;
// TILEDSL_DUMP_KERNEL=name[,name...] keeps the dumps of those kernels only.
void dump(const std::string& kernel, const std::string& target, const char* stage, const std::string& text) {
  const char* want = std::getenv("TILEDSL_DUMP");
  if (!want) return;
  if (!listed(want, stage) && !listed(want, "all")) return;
  if (const char* only = std::getenv("TILEDSL_DUMP_KERNEL"); only && *only && !listed(only, kernel)) return;
  if (const char* dir = std::getenv("TILEDSL_DUMP_DIR")) {
    std::filesystem::create_directories(dir);
    std::ofstream(std::filesystem::path(dir) / (kernel + "." + target + "." + stage)) << text;
  } else {
    std::cerr << "// ----- " << kernel << " [" << target << "] " << stage << "\n" << text << "\n";
  }
}

// tl::compile checked num_warps against every target (a power of two, at
// most 32); a block has at most 1024 threads on each, which on 64-lane
// targets allows fewer warps.
void check_num_warps(const detail::KernelImpl& k, const Target& t) {
  int threads = k.options.num_warps * t.warp_size();
  if (threads > 1024)
    throw Error((k.fn && k.fn->loc.known() ? k.fn->loc.str() + ": " : std::string()) + "kernel '" + k.name + "': num_warps must be at most " +
                std::to_string(1024 / t.warp_size()) + " on " + t.name() + " (1024 threads of " +
                std::to_string(t.warp_size()) + " lanes), found " + std::to_string(k.options.num_warps));
}

}  // namespace

CompiledKernel compile(const detail::KernelImpl& kernel, const Specialization& spec, const std::string& target) {
  const Target& t = get_target(target);
  check_num_warps(kernel, t);
  Pipeline p(kernel, spec, t);
  dump(kernel.name, target, "tile", ir::print(*kernel.fn));
  dump(kernel.name, target, "gpu", ir::print(*p.gpu));
  llvm::LLVMContext ctx;
  LoweredKernel l = p.lower(ctx);
  dump(kernel.name, target, "llvm", module_text(*l.module));
  CompiledKernel out;
  out.target = target;
  out.entry = kernel.name;
  out.assembly = t.emit_assembly(*l.module);
  dump(kernel.name, target, "asm", out.assembly);
  out.binary = t.emit_binary(*l.module);
  out.threads = l.threads;
  out.shared_bytes = l.shared_bytes;
  out.params = kernel.params;
  return out;
}

std::string emit_stage(const detail::KernelImpl& kernel, const Specialization& spec, const std::string& target,
                       Stage stage) {
  if (stage == Stage::Tile) return ir::print(*kernel.fn);
  const Target& t = get_target(target);
  check_num_warps(kernel, t);
  Pipeline p(kernel, spec, t);
  if (stage == Stage::Gpu) return ir::print(*p.gpu);
  llvm::LLVMContext ctx;
  LoweredKernel l = p.lower(ctx);
  if (stage == Stage::Llvm) return module_text(*l.module);
  return t.emit_assembly(*l.module);
}

}  // namespace tl::codegen
