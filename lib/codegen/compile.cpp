// The GPU compile driver: the target registry, the pipeline from a traced
// kernel to assembly, stage dumps (TILEDSL_DUMP), and this library's
// registration with the runtime (runtime/compiler.h).
#include "codegen/compile.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>

#include <llvm/Support/raw_ostream.h>

#include "codegen/assign_layouts.h"
#include "codegen/convert_layouts.h"
#include "codegen/dump.h"
#include "codegen/lower_llvm.h"
#include "codegen/pipeline.h"
#include "codegen/target.h"
#include "ir/printer.h"
#include "runtime/compiler.h"

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

const TargetInfo& get_target_info(const std::string& name) { return get_target(name); }


// ---------------------------------------------------------------- pipeline
namespace {

std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

// tl::compile checked num_warps against every target (a power of two, at
// most 32); a block has at most 1024 threads on each, which on 64-lane
// targets allows fewer warps.
void check_num_warps(const detail::KernelImpl& k, const Target& t) {
  int threads = k.options.num_warps * t.warp_size;
  if (threads > 1024)
    throw Error((k.fn && k.fn->loc.known() ? k.fn->loc.str() + ": " : std::string()) + "kernel '" + k.name + "': num_warps must be at most " +
                std::to_string(1024 / t.warp_size) + " on " + t.name + " (1024 threads of " +
                std::to_string(t.warp_size) + " lanes), found " + std::to_string(k.options.num_warps));
}

// Milliseconds between laps (a compile's stages, for CompileStats).
struct StageClock {
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return ms;
  }
};

// GPU IR to an optimized LLVM module.
LoweredKernel lower_optimized(llvm::LLVMContext& ctx, const ir::Function& gpu, const LayoutPlan& plan,
                              const transforms::AxisAnalysis& axis, const Target& t,
                              CompiledKernel::Times* times = nullptr) {
  StageClock clock;
  LoweredKernel l = lower_to_llvm(ctx, gpu, plan, axis, t, gpu.name);
  double lower_ms = clock.lap();
  t.optimize(*l.module);
  if (times) times->lower = lower_ms, times->optimize = clock.lap();
  return l;
}

// The text of a lowered module at Stage::Llvm or Stage::Asm.
std::string lowered_text(llvm::Module& m, Stage stage, const Target& t) {
  return stage == Stage::Llvm ? module_text(m) : t.emit_assembly(m);
}

// The GPU stage of one compile: its own copy of the kernel's Tile IR (the
// kernel is compiled for other targets and specializations too), through
// the GPU passes (pipeline.h), then lowered.
struct Pipeline {
  const detail::KernelImpl& kernel;
  const Target& target;
  std::unique_ptr<ir::Function> gpu;
  GpuContext ctx;

  Pipeline(const detail::KernelImpl& k, const Specialization& spec, const Target& t, const std::string& target_name)
      : kernel(k), target(t), gpu(ir::clone(*k.fn)), ctx(*gpu, t) {
    ctx.args = spec.args;
    ctx.num_warps = k.options.num_warps;
    ctx.num_ctas = k.options.num_ctas;
    ctx.num_stages = k.options.num_stages;
    ctx.fp_fusion = k.options.fp_fusion;
    ctx.flush_denormals = k.options.flush_denormals;
    ctx.programs_per_sm = k.options.programs_per_sm;
    ctx.warp_specialize = k.options.warp_specialize ? int(*k.options.warp_specialize) : -1;
    run_gpu_passes(ctx, [&](const GpuPass& p) {
      dump(k.name, target_name, "after-" + std::string(p.name), [&] { return ir::print(*gpu); });
    });
  }

  LoweredKernel lower(llvm::LLVMContext& llvm_ctx, CompiledKernel::Times* times = nullptr) const {
    return lower_optimized(llvm_ctx, *gpu, *ctx.plan, *ctx.axis, target, times);
  }

  // The passes' notes and the GPU IR, where TILEDSL_DUMP asks for them.
  void dump_passes(const std::string& target_name) const {
    if (!ctx.notes.empty())
      dump(kernel.name, target_name, "notes", [&] {
        std::string text;
        for (const auto& n : ctx.notes) text += n + "\n";
        return text;
      });
    dump(kernel.name, target_name, "gpu", [&] { return ir::print(*gpu); });
  }
};

}  // namespace

CompiledKernel compile(const detail::KernelImpl& kernel, const Specialization& spec, const std::string& target) {
  const Target& t = get_target(target);
  check_num_warps(kernel, t);
  dump(kernel.name, target, "tile", [&] { return ir::print(*kernel.fn); });
  CompiledKernel out;
  StageClock clock;
  Pipeline p(kernel, spec, t, target);
  out.times.passes = clock.lap();
  p.dump_passes(target);
  llvm::LLVMContext ctx;
  LoweredKernel l = p.lower(ctx, &out.times);
  dump(kernel.name, target, "llvm", [&] { return module_text(*l.module); });
  out.target = target;
  out.entry = kernel.name;
  clock.lap();
  out.assembly = t.emit_assembly(*l.module);
  out.times.emit = clock.lap();
  dump(kernel.name, target, "asm", [&] { return out.assembly; });
  clock.lap();
  out.binary = t.emit_binary(*l.module);
  out.times.emit += clock.lap();
  out.threads = l.threads;
  out.shared_bytes = l.shared_bytes;
  out.params = kernel.params;
  out.tensor_maps = l.tensor_maps;
  return out;
}

// The stages it goes through are dumped as a compile's are (TILEDSL_DUMP:
// the inspector, a machine without a GPU, shows them too).
std::string emit_stage(const detail::KernelImpl& kernel, const Specialization& spec, const std::string& target,
                       Stage stage) {
  dump(kernel.name, target, "tile", [&] { return ir::print(*kernel.fn); });
  if (stage == Stage::Tile) return ir::print(*kernel.fn);
  const Target& t = get_target(target);
  check_num_warps(kernel, t);
  Pipeline p(kernel, spec, t, target);
  p.dump_passes(target);
  if (stage == Stage::Gpu) return ir::print(*p.gpu);
  llvm::LLVMContext ctx;
  LoweredKernel l = p.lower(ctx);
  dump(kernel.name, target, "llvm", [&] { return module_text(*l.module); });
  std::string text = lowered_text(*l.module, stage, t);
  if (stage == Stage::Asm) dump(kernel.name, target, "asm", [&] { return text; });
  return text;
}

namespace {
// GPU IR read back: its plan and axis facts from the IR and `spec`.
LoweredKernel lower_read_back(llvm::LLVMContext& ctx, ir::Function& gpu, const Specialization& spec, const Target& t) {
  LayoutPlan plan = plan_from_ir(gpu, t);
  check_layouts(gpu, plan);
  transforms::AxisAnalysis axis(gpu, spec.args);
  return lower_optimized(ctx, gpu, plan, axis, t);
}
}  // namespace

std::string lower_gpu_ir(ir::Function& gpu, const Specialization& spec, const std::string& target, Stage stage) {
  if (stage != Stage::Llvm && stage != Stage::Asm) throw Error("lower_gpu_ir: expected the llvm or asm stage");
  const Target& t = get_target(target);
  llvm::LLVMContext ctx;
  LoweredKernel l = lower_read_back(ctx, gpu, spec, t);
  return lowered_text(*l.module, stage, t);
}

CompiledKernel compile_gpu_ir(ir::Function& gpu, const Specialization& spec, const std::string& target) {
  const Target& t = get_target(target);
  llvm::LLVMContext ctx;
  LoweredKernel l = lower_read_back(ctx, gpu, spec, t);
  CompiledKernel out;
  out.target = target;
  out.entry = gpu.name;
  out.assembly = t.emit_assembly(*l.module);
  out.binary = t.emit_binary(*l.module);
  out.threads = l.threads;
  out.shared_bytes = l.shared_bytes;
  for (const auto& a : gpu.body.args) out.params.push_back(a->type);
  out.tensor_maps = l.tensor_maps;
  return out;
}

// Registers this library with the runtime (runtime/compiler.h) when it is
// loaded, before main: the runtime library's devices compile through it.
namespace {
[[maybe_unused]] const bool registered = [] {
  runtime::register_compiler({.compile = compile,
                              .emit_stage = emit_stage,
                              .available_targets = available_targets,
                              .is_known_target = is_known_target,
                              .version = runtime::build_identity(reinterpret_cast<const void*>(&compile))});
  return true;
}();
}  // namespace

}  // namespace tl::codegen
