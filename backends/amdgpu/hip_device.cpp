// The "hip" device (see hip_device.h): the HIP runtime through dlopen, and
// the path from a traced kernel to a launched hipFunction_t:
//
//   launch args --int_arg_facts/pointer_arg_facts--> Specialization --> CacheKey
//   in-memory function map --miss--> kernel cache (memory, then disk)
//   --miss--> codegen::compile (AMDGCN object, linked by lld into a code object)
//   code object --hipModuleLoadData--> hipModule_t --> hipFunction_t
//
// Why no HIP headers: the library must build where ROCm is absent. We
// declare the handles and entry points ourselves; they are the HIP runtime's
// C ABI (hip_runtime_api.h, ROCm 5 and 6), in which every call returns a
// hipError_t (an int, 0 = success) and handles are opaque pointers.
//
// Not yet run on an AMD GPU (none is reachable from where this was written):
// the code compiles, and without ROCm the device reports itself unavailable
// with "no AMD GPU: libamdhip64.so not found".
#include "amdgpu/hip_device.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "codegen/compile.h"
#include "runtime/kernel_cache.h"

namespace tl::amdgpu {

namespace {

// --- The HIP runtime ABI we use -----------------------------------------
using hipError_t = int;
using hipDeviceptr_t = void*;
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;
using hipStream_t = struct ihipStream_t*;
using hipEvent_t = struct ihipEvent_t*;
constexpr hipError_t hipSuccess = 0;

// The libraries tried, in order (TILEDSL_HIP_LIBRARY first when set).
constexpr const char* kLibraries[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};

class HipRuntime {
 public:
  // The process-wide runtime, loaded once; throws the same tl::Error on
  // every call when HIP is unusable here.
  static const HipRuntime& get() {
    static const Loaded loaded = load();
    if (!loaded.runtime) throw Error(loaded.why);
    return *loaded.runtime;
  }
  static bool available() {
    try {
      get();
      return true;
    } catch (const Error&) {
      return false;
    }
  }

  std::string error_name(hipError_t code) const {
    const char* n = hipGetErrorName ? hipGetErrorName(code) : nullptr;
    return std::string(n ? n : "hipError") + " (" + std::to_string(code) + ")";
  }
  void check(hipError_t code, const char* call, const std::string& detail = "") const {
    if (code == hipSuccess) return;
    throw Error(std::string(call) + " failed: " + error_name(code) + (detail.empty() ? "" : ": " + detail));
  }

  hipError_t (*hipInit)(unsigned flags) = nullptr;
  const char* (*hipGetErrorName)(hipError_t) = nullptr;
  hipError_t (*hipGetDeviceCount)(int*) = nullptr;
  hipError_t (*hipSetDevice)(int) = nullptr;
  hipError_t (*hipDeviceGetName)(char*, int len, int device) = nullptr;
  // Fills a hipDeviceProp_t, whose layout differs between ROCm 5 and 6
  // (hipGetDevicePropertiesR0600); we only read gcnArchName out of it, by
  // content (see arch_name), so either layout works.
  hipError_t (*hipGetDeviceProperties)(void* props, int device) = nullptr;
  hipError_t (*hipMalloc)(void** p, size_t bytes) = nullptr;
  hipError_t (*hipFree)(void* p) = nullptr;
  hipError_t (*hipMemcpyHtoD)(hipDeviceptr_t dst, void* src, size_t bytes) = nullptr;
  hipError_t (*hipMemcpyDtoH)(void* dst, hipDeviceptr_t src, size_t bytes) = nullptr;
  hipError_t (*hipModuleLoadData)(hipModule_t*, const void* image) = nullptr;
  hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char* name) = nullptr;
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                      unsigned bz, unsigned shared_bytes, hipStream_t, void** params,
                                      void** extra) = nullptr;
  hipError_t (*hipDeviceSynchronize)() = nullptr;
  hipError_t (*hipStreamCreate)(hipStream_t*) = nullptr;
  hipError_t (*hipEventCreate)(hipEvent_t*) = nullptr;
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t) = nullptr;
  hipError_t (*hipEventSynchronize)(hipEvent_t) = nullptr;
  hipError_t (*hipEventElapsedTime)(float* ms, hipEvent_t start, hipEvent_t stop) = nullptr;

  int device_count = 0;
  std::string library;

 private:
  struct Loaded {
    std::unique_ptr<HipRuntime> runtime;
    std::string why;
  };

  static Loaded load() {
    Loaded out;
    std::vector<std::string> names;
    if (const char* env = std::getenv("TILEDSL_HIP_LIBRARY")) names.push_back(env);
    for (const char* n : kLibraries) names.push_back(n);
    void* handle = nullptr;
    std::string tried, last_error;
    for (const auto& n : names) {
      handle = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        out.runtime.reset(new HipRuntime());
        out.runtime->library = n;
        break;
      }
      const char* e = dlerror();
      tried += (tried.empty() ? "" : ", ") + n;
      last_error = e ? e : "";
    }
    if (!handle) {
      out.why = "no AMD GPU: libamdhip64.so not found (tried " + tried + "; ROCm's HIP runtime is not installed" +
                (last_error.empty() ? std::string() : ": " + last_error) + ")";
      return out;
    }
    HipRuntime& r = *out.runtime;
    std::string missing;
    auto sym = [&](auto& fn, const char* name, const char* alternative = nullptr) {
      void* p = dlsym(handle, name);
      if (!p && alternative) p = dlsym(handle, alternative);
      if (!p) missing += (missing.empty() ? "" : ", ") + std::string(name);
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    sym(r.hipInit, "hipInit");
    sym(r.hipGetErrorName, "hipGetErrorName");
    sym(r.hipGetDeviceCount, "hipGetDeviceCount");
    sym(r.hipSetDevice, "hipSetDevice");
    sym(r.hipDeviceGetName, "hipDeviceGetName");
    sym(r.hipGetDeviceProperties, "hipGetDevicePropertiesR0600", "hipGetDeviceProperties");
    sym(r.hipMalloc, "hipMalloc");
    sym(r.hipFree, "hipFree");
    sym(r.hipMemcpyHtoD, "hipMemcpyHtoD");
    sym(r.hipMemcpyDtoH, "hipMemcpyDtoH");
    sym(r.hipModuleLoadData, "hipModuleLoadData");
    sym(r.hipModuleGetFunction, "hipModuleGetFunction");
    sym(r.hipModuleLaunchKernel, "hipModuleLaunchKernel");
    sym(r.hipDeviceSynchronize, "hipDeviceSynchronize");
    sym(r.hipStreamCreate, "hipStreamCreate");
    sym(r.hipEventCreate, "hipEventCreate");
    sym(r.hipEventRecord, "hipEventRecord");
    sym(r.hipEventSynchronize, "hipEventSynchronize");
    sym(r.hipEventElapsedTime, "hipEventElapsedTime");
    if (!missing.empty()) {
      out.why = "no AMD GPU: " + r.library + " lacks " + missing;
      out.runtime.reset();
      return out;
    }
    hipError_t e = r.hipInit(0);
    if (e == hipSuccess) e = r.hipGetDeviceCount(&r.device_count);
    if (e != hipSuccess || r.device_count == 0) {
      out.why = "no AMD GPU: " + r.library + " loaded, but " +
                (e != hipSuccess ? "HIP initialization failed: " + r.error_name(e) : std::string("it found no device"));
      out.runtime.reset();
    }
    return out;
  }
};

// gcnArchName out of a hipDeviceProp_t of either layout: the one string in
// it that starts with "gfx" (name holds the marketing name, "AMD Instinct
// MI300X"). Returns the architecture without target features ("gfx942").
std::string arch_name(const std::vector<char>& props) {
  for (size_t i = 0; i + 4 < props.size(); ++i) {
    if ((i > 0 && props[i - 1] != '\0') || std::strncmp(&props[i], "gfx", 3) != 0) continue;
    size_t end = i;
    while (end < props.size() && props[end] != '\0') ++end;
    if (end == props.size()) break;
    std::string s(&props[i], end - i);
    return s.substr(0, s.find(':'));
  }
  return "";
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct LoadedKernel {
  hipModule_t module = nullptr;
  hipFunction_t function = nullptr;
  int threads = 0;
  int shared_bytes = 0;
};

// LDS per work-group on every target we have (codegen checks it too).
constexpr int kMaxSharedBytes = 64 * 1024;

class HipDevice final : public detail::DeviceImpl {
 public:
  HipDevice() : hip_(HipRuntime::get()) {
    hip_.check(hip_.hipSetDevice(0), "hipSetDevice");
    char name[256] = {};
    hip_.check(hip_.hipDeviceGetName(name, sizeof(name) - 1, 0), "hipDeviceGetName");
    gpu_name_ = name;
    // Generously larger than any hipDeviceProp_t (about 1.5 KB).
    std::vector<char> props(16 * 1024, '\0');
    hip_.check(hip_.hipGetDeviceProperties(props.data(), 0), "hipGetDeviceProperties");
    arch_ = arch_name(props);
    if (arch_.empty()) throw Error("hip device: cannot find the architecture (gcnArchName) of " + gpu_name_);
    target_ = hip_target_for(arch_, [](const std::string& t) { return codegen::is_known_target(t); });
    hip_.check(hip_.hipStreamCreate(&stream_), "hipStreamCreate");
    hip_.check(hip_.hipEventCreate(&timing_start_), "hipEventCreate");
    hip_.check(hip_.hipEventCreate(&timing_end_), "hipEventCreate");
  }
  // Stream, events and modules live until process exit (a process-wide
  // singleton; static Buffers may outlive any earlier teardown).

  std::string name() const override { return "hip"; }
  bool addresses_are_device_pointers() const override { return true; }
  // hipDeviceGetAttribute's enumeration was renumbered between ROCm
  // releases and no AMD GPU is reachable to check which one a runtime
  // speaks, so this is not guessed.
  int processor_count() const override {
    throw Error("Device::processor_count is not available on the HIP back end yet (compute-unit query missing)");
  }

  uint64_t alloc(size_t bytes) override {
    if (bytes == 0) return 0;
    void* p = nullptr;
    hip_.check(hip_.hipMalloc(&p, bytes), "hipMalloc", std::to_string(bytes) + " bytes on " + gpu_name_);
    return reinterpret_cast<uint64_t>(p);
  }
  void free(uint64_t address) override {
    if (address) hip_.check(hip_.hipFree(reinterpret_cast<void*>(address)), "hipFree");
  }
  void copy_to_device(uint64_t dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    hip_.check(hip_.hipMemcpyHtoD(reinterpret_cast<void*>(dst), const_cast<void*>(src), bytes), "hipMemcpyHtoD");
  }
  void copy_to_host(void* dst, uint64_t src, size_t bytes) override {
    if (bytes == 0) return;
    hip_.check(hip_.hipMemcpyDtoH(dst, reinterpret_cast<void*>(src), bytes), "hipMemcpyDtoH",
               "(an error here may come from a kernel launched earlier)");
  }

  void launch(const detail::KernelImpl& k, Grid grid, const std::vector<detail::LaunchArg>& args) override {
    codegen::Specialization spec;
    for (const auto& a : args) {
      if (a.type.is_ptr) spec.args.push_back(codegen::pointer_arg_facts(a.address));
      else if (is_int(a.type.dtype)) spec.args.push_back(codegen::int_arg_facts(a.i));
      else spec.args.push_back(transforms::ArgFacts{});
    }
    runtime::CacheKey key = runtime::kernel_cache_key(k, spec.key(), target_);
    auto loaded = loaded_.get_or_create(key, [&] { return load(k, spec, key); });
    // Each parameter in an 8-byte slot at its own width; the runtime copies
    // as many bytes as the kernel's argument metadata declares.
    std::vector<std::array<uint8_t, 8>> slots(args.size());
    std::vector<void*> params(args.size());
    for (size_t j = 0; j < args.size(); ++j) {
      marshal(args[j], slots[j].data());
      params[j] = slots[j].data();
    }
    hip_.check(hip_.hipModuleLaunchKernel(loaded->function, grid.x, grid.y, grid.z, unsigned(loaded->threads), 1, 1,
                                          unsigned(loaded->shared_bytes), stream_, params.data(), nullptr),
               "hipModuleLaunchKernel",
               "kernel '" + k.name + "', grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " +
                   std::to_string(grid.z) + "), " + std::to_string(loaded->threads) + " threads, " +
                   std::to_string(loaded->shared_bytes) + " bytes of LDS");
  }

  void synchronize() override {
    hip_.check(hip_.hipDeviceSynchronize(), "hipDeviceSynchronize",
               "(a kernel launched earlier failed, or the device faulted)");
  }

  double time_ms(const std::function<void()>& work, int reps) override {
    std::lock_guard lock(timing_mutex_);
    hip_.check(hip_.hipEventRecord(timing_start_, stream_), "hipEventRecord");
    for (int i = 0; i < reps; ++i) work();
    hip_.check(hip_.hipEventRecord(timing_end_, stream_), "hipEventRecord");
    hip_.check(hip_.hipEventSynchronize(timing_end_), "hipEventSynchronize",
               "(a kernel launched in the timed work failed)");
    float ms = 0;
    hip_.check(hip_.hipEventElapsedTime(&ms, timing_start_, timing_end_), "hipEventElapsedTime");
    return double(ms);
  }

  CompileStats compile_stats() const override {
    std::lock_guard lock(stats_mutex_);
    return stats_;
  }

 private:
  std::shared_ptr<const LoadedKernel> load(const detail::KernelImpl& k, const codegen::Specialization& spec,
                                           const runtime::CacheKey& key) {
    auto& cache = runtime::KernelCache::global();
    for (int attempt = 0;; ++attempt) {
      bool compiled = false;
      runtime::CachedBinary e = runtime::get_or_compile_binary(
          cache, "hip", key,
          [&] {
            auto t0 = Clock::now();
            // The lld link into a code object happens inside compile.
            codegen::CompiledKernel ck = codegen::compile(k, spec, target_);
            double codegen_ms = ms_since(t0);
            std::lock_guard lock(stats_mutex_);
            ++stats_.compiles;
            stats_.codegen_ms += codegen_ms;
            return runtime::CachedBinary{ck.entry, ck.threads, ck.shared_bytes, ck.binary};
          },
          &compiled);
      if (e.shared_bytes > kMaxSharedBytes)
        throw Error("kernel '" + k.name + "' needs " + std::to_string(e.shared_bytes) + " bytes of LDS; " +
                    gpu_name_ + " allows at most " + std::to_string(kMaxSharedBytes));
      auto t0 = Clock::now();
      auto out = std::make_shared<LoadedKernel>();
      out->threads = e.threads;
      out->shared_bytes = e.shared_bytes;
      hipError_t r = hip_.hipModuleLoadData(&out->module, e.binary.data());
      // A cached code object that passed the cache's checks but that this
      // runtime refuses: recompile once rather than fail in every process.
      if (r != hipSuccess && !compiled && attempt == 0) {
        cache.evict(key);
        continue;
      }
      hip_.check(r, "hipModuleLoadData",
                 "kernel '" + k.name + "' for " + target_ + " on " + gpu_name_ + " (" + arch_ + ")");
      hip_.check(hip_.hipModuleGetFunction(&out->function, out->module, e.entry.c_str()), "hipModuleGetFunction",
                 "entry '" + e.entry + "'");
      double load_ms = ms_since(t0);
      std::lock_guard lock(stats_mutex_);
      if (!compiled) ++stats_.cache_hits;
      ++stats_.modules_loaded;
      stats_.load_ms += load_ms;
      return out;
    }
  }

  // One launch argument into `slot`, at the width of its parameter type.
  static void marshal(const detail::LaunchArg& a, uint8_t* slot) {
    std::memset(slot, 0, 8);
    const DType t = a.type.dtype;
    if (a.type.is_ptr) {
      std::memcpy(slot, &a.address, 8);
    } else if (is_int(t)) {
      uint64_t v = uint64_t(a.i);  // little-endian: the low bytes
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
      throw Error("hip device: cannot pass a parameter of type " + a.type.str());
    }
  }

  const HipRuntime& hip_;
  hipStream_t stream_ = nullptr;
  hipEvent_t timing_start_ = nullptr, timing_end_ = nullptr;
  std::string gpu_name_, arch_, target_;
  runtime::OnceMap<runtime::CacheKey, LoadedKernel> loaded_;
  std::mutex timing_mutex_;
  mutable std::mutex stats_mutex_;
  CompileStats stats_;
};

}  // namespace

std::string hip_target_for(const std::string& arch, const std::function<bool(const std::string&)>& is_known) {
  std::string gfx = arch.substr(0, arch.find(':'));
  if (is_known && is_known(gfx)) return gfx;
  throw Error("AMD GPU " + (gfx.empty() ? std::string("of unknown architecture") : gfx) +
              " is not supported: this build compiles for gfx90a, gfx942 and gfx1100, and AMD code objects run "
              "only on the gfx version they were built for");
}

detail::DeviceEntry hip_device_entry() {
  return detail::driver_device_entry<HipDevice>(
      "hip", [] { return HipRuntime::available(); }, [] { HipRuntime::get(); });
}

}  // namespace tl::amdgpu
