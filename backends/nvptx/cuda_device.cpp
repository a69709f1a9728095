// The "cuda" device (see cuda_device.h): memory, launches and event timing
// on GPU 0, and the path from a traced kernel to a loaded CUfunction:
//
//   launch args --int_arg_facts/pointer_arg_facts--> Specialization
//   (Tile IR digest, options, specialization, target, version) --> CacheKey
//   in-memory CUfunction map  --miss-->  kernel cache (memory, then disk cubin)
//   --miss--> codegen::compile (PTX) --driver JIT linker--> cubin --> disk
//   cubin --cuModuleLoadDataEx--> CUmodule --> CUfunction
//
// Compile timings (codegen, PTX -> cubin, module load; tracing is not
// included) accumulate in CompileStats, read through Device::compile_stats().
#include "nvptx/cuda_device.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <mutex>

#include "codegen/compile.h"
#include "nvptx/cuda_driver.h"
#include "runtime/kernel_cache.h"

namespace tl::nvptx {

// ---------------------------------------------------------------------------
// Targets

namespace {

// The targets this back end knows, newest first, by compute capability.
struct KnownTarget {
  int major, minor;
  const char* name;
};
constexpr KnownTarget kKnownTargets[] = {{9, 0, "sm_90a"}, {8, 9, "sm_89"}, {8, 6, "sm_86"}, {8, 0, "sm_80"}};

}  // namespace

bool cuda_target_is_fallback(int major, int minor) { return major > 9 || (major == 9 && minor > 0); }

std::string cuda_target_for(int major, int minor, const std::function<bool(const std::string&)>& is_known) {
  int cc = major * 10 + minor;
  if (cc < 80)
    throw Error("CUDA GPU of compute capability " + std::to_string(major) + "." + std::to_string(minor) +
                " is not supported: the oldest target is sm_80 (compute capability 8.0)");
  if (cuda_target_is_fallback(major, minor)) {
    // "sm_90a" PTX uses instructions that exist only on 9.0; pick code that
    // later GPUs can JIT.
    if (is_known && is_known("sm_90")) return "sm_90";
    return "sm_89";
  }
  for (const auto& t : kKnownTargets)
    if (t.major * 10 + t.minor <= cc) return t.name;
  return "sm_80";  // unreachable: cc >= 80 matches the last entry
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// One kernel, specialized and loaded into the context.
struct LoadedKernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::string entry;
  int threads = 0;
  int shared_bytes = 0;
};

// ---------------------------------------------------------------------------

class CudaDevice final : public detail::DeviceImpl {
 public:
  CudaDevice() : driver_(CudaDriver::get()) {
    const CudaDriver& d = driver_;
    d.check(d.cuDeviceGet(&device_, 0), "cuDeviceGet");
    d.check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    d.check(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    char name[256] = {};
    d.check(d.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
    gpu_name_ = name;
    d.check(d.cuDeviceGetAttribute(&cc_major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
    d.check(d.cuDeviceGetAttribute(&cc_minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
    d.check(d.cuDeviceGetAttribute(&sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_),
            "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
    d.check(d.cuDeviceGetAttribute(&max_shared_optin_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                   device_),
            "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
    target_ = cuda_target_for(cc_major_, cc_minor_, [](const std::string& t) { return codegen::is_known_target(t); });
    // A blocking stream: it orders with the synchronous copies, which run on
    // the legacy default stream.
    d.check(d.cuStreamCreate(&stream_, CU_STREAM_DEFAULT), "cuStreamCreate");
    d.check(d.cuEventCreate(&timing_start_, CU_EVENT_DEFAULT), "cuEventCreate");
    d.check(d.cuEventCreate(&timing_end_, CU_EVENT_DEFAULT), "cuEventCreate");
  }
  // The primary context, stream, events and modules live until process exit:
  // the device is a process-wide singleton, and releasing the context while
  // static Buffers still point into it would crash at exit.

  std::string name() const override { return "cuda"; }
  bool addresses_are_device_pointers() const override { return true; }
  int processor_count() const override { return sm_count_; }

  uint64_t alloc(size_t bytes) override {
    if (bytes == 0) return 0;  // cuMemAlloc rejects 0; a null address is never dereferenced
    make_current();
    CUdeviceptr p = 0;
    driver_.check(driver_.cuMemAlloc(&p, bytes), "cuMemAlloc_v2",
                  std::to_string(bytes) + " bytes on " + gpu_name_);
    return p;
  }

  void free(uint64_t address) override {
    if (address == 0) return;
    make_current();
    driver_.check(driver_.cuMemFree(address), "cuMemFree_v2");
  }

  void copy_to_device(uint64_t dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    make_current();
    driver_.check(driver_.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD_v2");
  }

  void copy_to_host(void* dst, uint64_t src, size_t bytes) override {
    if (bytes == 0) return;
    make_current();
    driver_.check(driver_.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH_v2",
                  "(an error here may come from a kernel launched earlier)");
  }

  void launch(const detail::KernelImpl& k, Grid grid, const std::vector<detail::LaunchArg>& args) override {
    make_current();
    // Specialize on the actual arguments, as Triton does.
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
    runtime::CacheKey key = runtime::kernel_cache_key(k, spec.key(), target_);
    auto loaded = loaded_.get_or_create(key, [&] { return load(k, spec, key); });

    // Each parameter in an 8-byte slot at its own width; the driver copies
    // as many bytes as the kernel's parameter declares.
    std::vector<std::array<uint8_t, 8>> slots(args.size());
    std::vector<void*> params(args.size());
    for (size_t j = 0; j < args.size(); ++j) {
      marshal(args[j], slots[j].data());
      params[j] = slots[j].data();
    }
    // A program is a cluster of num_ctas CTAs along x (the kernel declares
    // its cluster size, so a plain launch forms the clusters).
    uint64_t ctas_x = uint64_t(grid.x) * uint64_t(std::max(1, k.options.num_ctas));
    if (ctas_x > 0x7fffffffu) throw Error("kernel '" + k.name + "': grid.x times num_ctas exceeds 2^31 - 1");
    CUresult r = driver_.cuLaunchKernel(loaded->function, unsigned(ctas_x), grid.y, grid.z, unsigned(loaded->threads),
                                        1, 1, unsigned(loaded->shared_bytes), stream_, params.data(), nullptr);
    driver_.check(r, "cuLaunchKernel",
                  "kernel '" + k.name + "', grid (" + std::to_string(ctas_x) + ", " + std::to_string(grid.y) +
                      ", " + std::to_string(grid.z) + "), " + std::to_string(loaded->threads) + " threads, " +
                      std::to_string(loaded->shared_bytes) + " bytes of shared memory");
  }

  void synchronize() override {
    make_current();
    driver_.check(driver_.cuCtxSynchronize(), "cuCtxSynchronize",
                  "(a kernel launched earlier failed, or the device faulted)");
  }

  double time_ms(const std::function<void()>& work, int reps) override {
    std::lock_guard lock(timing_mutex_);
    make_current();
    driver_.check(driver_.cuEventRecord(timing_start_, stream_), "cuEventRecord");
    for (int i = 0; i < reps; ++i) work();
    driver_.check(driver_.cuEventRecord(timing_end_, stream_), "cuEventRecord");
    driver_.check(driver_.cuEventSynchronize(timing_end_), "cuEventSynchronize",
                  "(a kernel launched in the timed work failed)");
    float ms = 0;
    driver_.check(driver_.cuEventElapsedTime(&ms, timing_start_, timing_end_), "cuEventElapsedTime");
    return double(ms);
  }

  CompileStats compile_stats() const override {
    std::lock_guard lock(stats_mutex_);
    return stats_;
  }

 private:
  // The driver's current context is per thread; user threads may call us.
  void make_current() const { driver_.check(driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

  std::shared_ptr<const LoadedKernel> load(const detail::KernelImpl& k, const codegen::Specialization& spec,
                                           const runtime::CacheKey& key) {
    auto& cache = runtime::KernelCache::global();
    for (int attempt = 0;; ++attempt) {
      bool compiled = false;
      runtime::CachedBinary e = runtime::get_or_compile_binary(
          cache, "cuda", key, [&] { return compile(k, spec); }, &compiled);
      if (e.shared_bytes > max_shared_optin_)
        throw Error("kernel '" + k.name + "' needs " + std::to_string(e.shared_bytes) +
                    " bytes of shared memory per block; " + gpu_name_ + " allows at most " +
                    std::to_string(max_shared_optin_));

      auto t0 = Clock::now();
      auto out = std::make_shared<LoadedKernel>();
      out->entry = e.entry;
      out->threads = e.threads;
      out->shared_bytes = e.shared_bytes;
      auto log = std::make_unique<JitLog>();
      CUresult r =
          driver_.cuModuleLoadDataEx(&out->module, e.binary.data(), JitLog::count, log->options, log->values);
      // A cached cubin that passed the cache's checks but that this driver
      // refuses (written by another driver, or damaged inside): recompile
      // once rather than fail in every process.
      if (r != CUDA_SUCCESS && !compiled && attempt == 0) {
        cache.evict(key);
        continue;
      }
      driver_.check(r, "cuModuleLoadDataEx",
                    "kernel '" + k.name + "' for " + target_ +
                        (log->text().empty() ? std::string() : ":\n" + log->text()));
      driver_.check(driver_.cuModuleGetFunction(&out->function, out->module, e.entry.c_str()),
                    "cuModuleGetFunction", "entry '" + e.entry + "'");
      // Above 48 KiB, dynamic shared memory must be opted into per function.
      if (e.shared_bytes > 48 * 1024)
        driver_.check(driver_.cuFuncSetAttribute(out->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                 e.shared_bytes),
                      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                      std::to_string(e.shared_bytes) + " bytes for kernel '" + k.name + "'");
      double load_ms = ms_since(t0);
      std::lock_guard lock(stats_mutex_);
      if (!compiled) ++stats_.cache_hits;
      ++stats_.modules_loaded;
      stats_.load_ms += load_ms;
      return out;
    }
  }

  // Tile IR -> PTX -> cubin, with what a launch needs besides the binary.
  runtime::CachedBinary compile(const detail::KernelImpl& k, const codegen::Specialization& spec) {
    auto t0 = Clock::now();
    codegen::CompiledKernel ck = codegen::compile(k, spec, target_);
    double codegen_ms = ms_since(t0);
    auto t1 = Clock::now();
    runtime::CachedBinary e;
    e.entry = ck.entry;
    e.threads = ck.threads;
    e.shared_bytes = ck.shared_bytes;
    try {
      e.binary = link_ptx_to_cubin(driver_, ck.assembly, k.name);
    } catch (const Error& err) {
      if (!cuda_target_is_fallback(cc_major_, cc_minor_)) throw;
      throw Error(std::string(err.what()) + "\n(" + gpu_name_ + " has compute capability " +
                  std::to_string(cc_major_) + "." + std::to_string(cc_minor_) +
                  ", newer than any target this build knows; the kernel was compiled for " + target_ + ")");
    }
    double link_ms = ms_since(t1);
    std::lock_guard lock(stats_mutex_);
    ++stats_.compiles;
    stats_.codegen_ms += codegen_ms;
    stats_.link_ms += link_ms;
    return e;
  }

  // One launch argument into `slot`, at the width of its parameter type.
  static void marshal(const detail::LaunchArg& a, uint8_t* slot) {
    std::memset(slot, 0, 8);
    const DType t = a.type.dtype;
    if (a.type.is_ptr) {
      CUdeviceptr p = a.address;
      std::memcpy(slot, &p, sizeof(p));
    } else if (is_int(t)) {
      // Little-endian: the low byte_size(t) bytes of the value (i1 is a byte).
      uint64_t v = uint64_t(a.i);
      std::memcpy(slot, &v, size_t(byte_size(t)));
    } else if (t == DType::f64) {
      double v = a.f;
      std::memcpy(slot, &v, sizeof(v));
    } else if (t == DType::f32) {
      float v = float(a.f);
      std::memcpy(slot, &v, sizeof(v));
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
      throw Error("cuda device: cannot pass a parameter of type " + a.type.str());
    }
  }

  const CudaDriver& driver_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent timing_start_ = nullptr, timing_end_ = nullptr;
  std::string gpu_name_, target_;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0, max_shared_optin_ = 48 * 1024;

  runtime::OnceMap<runtime::CacheKey, LoadedKernel> loaded_;
  std::mutex timing_mutex_;
  mutable std::mutex stats_mutex_;
  CompileStats stats_;
};

}  // namespace

detail::DeviceEntry cuda_device_entry() {
  return detail::driver_device_entry<CudaDevice>(
      "cuda", [] { return CudaDriver::available(); }, [] { CudaDriver::get(); });
}

}  // namespace tl::nvptx
