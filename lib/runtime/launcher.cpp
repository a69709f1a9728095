// The launch path the GPU devices share (see launcher.h): specialization,
// cache key, compile, kernel cache and the driver's load, once per key, with
// the compile statistics.
#include "runtime/launcher.h"

#include <chrono>
#include <cstring>

#include "runtime/compiler.h"
#include "runtime/precompiled.h"

namespace tl::runtime {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// One launch argument into `slot`, at the width of its parameter type.
void marshal(const detail::LaunchArg& a, uint8_t* slot, std::string_view device) {
  std::memset(slot, 0, 8);
  const DType t = a.type.dtype;
  if (a.type.is_ptr) {
    std::memcpy(slot, &a.address, 8);
  } else if (is_int(t)) {
    uint64_t v = uint64_t(a.i);  // little-endian: the low byte_size(t) bytes (i1 is a byte)
    std::memcpy(slot, &v, size_t(byte_size(t)));
  } else if (t == DType::f64) {
    std::memcpy(slot, &a.f, 8);
  } else if (t == DType::f32) {
    float v = float(a.f);
    std::memcpy(slot, &v, 4);
  } else if (t == DType::f16) {
    uint16_t bits = f16(float(a.f)).bits;
    std::memcpy(slot, &bits, 2);
  } else if (t == DType::bf16) {
    uint16_t bits = bf16(float(a.f)).bits;
    std::memcpy(slot, &bits, 2);
  } else if (t == DType::f8e4m3) {
    slot[0] = f8e4m3(float(a.f)).bits;
  } else if (t == DType::f8e5m2) {
    slot[0] = f8e5m2(float(a.f)).bits;
  } else {
    throw Error(std::string(device) + " device: cannot pass a parameter of type " + a.type.str());
  }
}

}  // namespace

codegen::Specialization specialize(const std::vector<detail::LaunchArg>& args) {
  codegen::Specialization spec;
  spec.args.reserve(args.size());
  for (const auto& a : args) {
    if (a.type.is_ptr)
      spec.args.push_back(codegen::pointer_arg_facts(a.address));
    else if (is_int(a.type.dtype))
      spec.args.push_back(codegen::int_arg_facts(a.i));
    else
      spec.args.push_back(transforms::ArgFacts{});
  }
  return spec;
}

Launcher::Launcher(GpuDriver driver, KernelCache& cache) : driver_(std::move(driver)), cache_(cache) {}

std::shared_ptr<const LoadedKernel> Launcher::load(const detail::KernelImpl& k,
                                                   const std::vector<detail::LaunchArg>& args) {
  codegen::Specialization spec = specialize(args);
  std::pair<uint64_t, std::string> by_kernel{k.id, spec.key()};
  {
    std::lock_guard lock(by_kernel_mutex_);
    auto it = by_kernel_.find(by_kernel);
    if (it != by_kernel_.end()) return it->second;
  }
  std::shared_ptr<const LoadedKernel> loaded;
  // A kernel compiled ahead of time: its binary for this target and these
  // arguments, else a compile when there is a compiler.
  if (!k.precompiled.empty()) {
    if (const auto* p = pick_precompiled(k, driver_.device, driver_.target, spec))
      loaded = precompiled_.get_or_create(p->payload.data(), [&] { return load_precompiled(k, *p); });
    else if (!compiler())
      throw Error(no_precompiled_binary(k, driver_.device, driver_.target, spec));
  }
  if (!loaded) {
    CacheKey key = kernel_cache_key(k, by_kernel.second, key_target());
    loaded = loaded_.get_or_create(key, [&] { return load_binary(k, spec, key); });
  }
  std::lock_guard lock(by_kernel_mutex_);
  by_kernel_.emplace(std::move(by_kernel), loaded);
  return loaded;
}

const std::string& Launcher::key_target() {
  std::call_once(key_target_once_, [&] {
    std::string linker = driver_.linker ? driver_.linker() : "";
    key_target_ = linker.empty() ? driver_.target : driver_.target + " " + linker;
  });
  return key_target_;
}

CompileStats Launcher::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

std::shared_ptr<const LoadedKernel> Launcher::load_binary(const detail::KernelImpl& k,
                                                          const codegen::Specialization& spec, const CacheKey& key) {
  for (int attempt = 0;; ++attempt) {
    bool compiled = false;
    CachedBinary e = get_or_compile_binary(
        cache_, driver_.device, key, [&] { return compile(k, spec); }, &compiled);
    check_shared_bytes(k, e);
    auto t0 = Clock::now();
    // A cached binary that passed the cache's checks but that this driver
    // refuses (written by another driver, or damaged inside): compile it
    // again, once, rather than fail in every process.
    void* function = driver_.load(k, e, !compiled && attempt == 0);
    if (!function) {
      cache_.evict(key);
      continue;
    }
    auto out = loaded_kernel(function, e);
    double load_ms = ms_since(t0);
    std::lock_guard lock(stats_mutex_);
    if (!compiled) ++stats_.cache_hits;
    ++stats_.modules_loaded;
    stats_.load_ms += load_ms;
    return out;
  }
}

void Launcher::check_shared_bytes(const detail::KernelImpl& k, const CachedBinary& e) const {
  if (e.shared_bytes > driver_.max_shared_bytes)
    throw Error("kernel '" + k.name + "' needs " + std::to_string(e.shared_bytes) + " bytes of " +
                driver_.shared_memory + "; " + driver_.gpu_name + " allows at most " +
                std::to_string(driver_.max_shared_bytes));
}

std::shared_ptr<LoadedKernel> Launcher::loaded_kernel(void* function, const CachedBinary& e) {
  auto out = std::make_shared<LoadedKernel>();
  out->function = function;
  out->threads = e.threads;
  out->shared_bytes = e.shared_bytes;
  out->tensor_maps = e.tensor_maps;
  return out;
}

std::shared_ptr<const LoadedKernel> Launcher::load_precompiled(const detail::KernelImpl& k,
                                                               const detail::PrecompiledEntry& p) {
  std::string why;
  auto e = decode_cached_binary(driver_.device, p.payload, &why);
  if (!e)
    throw Error("kernel '" + k.name + "': its precompiled binary for " + p.target + " [" + p.specialization +
                "] cannot be used: " + why);
  check_shared_bytes(k, *e);
  auto t0 = Clock::now();
  auto out = loaded_kernel(driver_.load(k, *e, false), *e);
  double load_ms = ms_since(t0);
  std::lock_guard lock(stats_mutex_);
  ++stats_.precompiled;
  ++stats_.modules_loaded;
  stats_.load_ms += load_ms;
  return out;
}

// Tile IR -> assembly (-> binary, by the driver's link), with what a launch
// needs besides the binary.
CachedBinary Launcher::compile(const detail::KernelImpl& k, const codegen::Specialization& spec) {
  auto t0 = Clock::now();
  const Compiler& c = require_compiler("compiling kernel '" + k.name + "' for " + driver_.target);
  codegen::CompiledKernel ck = c.compile(k, spec, driver_.target);
  double codegen_ms = ms_since(t0);
  CachedBinary e;
  e.entry = ck.entry;
  e.threads = ck.threads;
  e.shared_bytes = ck.shared_bytes;
  e.tensor_maps = ck.tensor_maps;
  double link_ms = 0;
  if (driver_.link) {
    auto t1 = Clock::now();
    e.binary = driver_.link(k, ck);
    link_ms = ms_since(t1);
  } else {
    e.binary = std::move(ck.binary);
  }
  std::lock_guard lock(stats_mutex_);
  ++stats_.compiles;
  stats_.codegen_ms += codegen_ms;
  stats_.passes_ms += ck.times.passes;
  stats_.lower_ms += ck.times.lower;
  stats_.optimize_ms += ck.times.optimize;
  stats_.emit_ms += ck.times.emit;
  stats_.link_ms += link_ms;
  return e;
}

KernelParams::KernelParams(const std::vector<detail::LaunchArg>& args, std::string_view device,
                           const std::vector<TensorMapParam>& maps,
                           const std::function<TensorMapBytes(const TensorMapParam&, const std::vector<int64_t>&)>& encode)
    : slots_(args.size()), pointers_(args.size()) {
  for (size_t j = 0; j < args.size(); ++j) {
    marshal(args[j], slots_[j].data(), device);
    pointers_[j] = slots_[j].data();
  }
  if (maps.empty()) return;
  if (!encode) throw Error(std::string(device) + " device: cannot pass tensor maps");
  std::vector<int64_t> values;
  for (const auto& a : args) values.push_back(a.type.is_ptr ? int64_t(a.address) : a.i);
  maps_.reserve(maps.size());  // the pointers point into it
  for (const auto& m : maps) {
    maps_.push_back(encode(m, values));
    pointers_.push_back(maps_.back().bytes);
  }
}

std::string describe_launch(const detail::KernelImpl& k, uint64_t grid_x, uint32_t grid_y, uint32_t grid_z,
                            const LoadedKernel& loaded, std::string_view shared_memory) {
  return "kernel '" + k.name + "', grid (" + std::to_string(grid_x) + ", " + std::to_string(grid_y) + ", " +
         std::to_string(grid_z) + "), " + std::to_string(loaded.threads) + " threads, " +
         std::to_string(loaded.shared_bytes) + " bytes of " + std::string(shared_memory);
}

}  // namespace tl::runtime
