// The "hip" devices (see hip_device.h; "hip:n" is GPU n): the HIP runtime
// through dlopen, streams and events, and what the shared launch path
// (runtime/launcher.h) asks of it:
//
//   code object --hipModuleLoadData--> hipModule_t --> hipFunction_t (load)
//
// The code object comes out of codegen::compile itself (an AMDGCN object
// linked by lld), so there is no link step here; specialization, cache
// keys, the kernel cache, the compile and its statistics are the launcher's.
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
#include <dlpack/dlpack.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include "codegen/compile.h"
#include "runtime/compiler.h"
#include "runtime/launcher.h"

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
  hipError_t (*hipDriverGetVersion)(int*) = nullptr;
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
  hipError_t (*hipMemcpyHtoDAsync)(hipDeviceptr_t dst, void* src, size_t bytes, hipStream_t) = nullptr;
  hipError_t (*hipMemcpyDtoHAsync)(void* dst, hipDeviceptr_t src, size_t bytes, hipStream_t) = nullptr;
  hipError_t (*hipStreamCreate)(hipStream_t*) = nullptr;
  hipError_t (*hipStreamDestroy)(hipStream_t) = nullptr;
  hipError_t (*hipStreamSynchronize)(hipStream_t) = nullptr;
  hipError_t (*hipStreamWaitEvent)(hipStream_t, hipEvent_t, unsigned flags) = nullptr;
  hipError_t (*hipEventCreate)(hipEvent_t*) = nullptr;
  hipError_t (*hipEventDestroy)(hipEvent_t) = nullptr;
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
    sym(r.hipDriverGetVersion, "hipDriverGetVersion");
    sym(r.hipGetDeviceProperties, "hipGetDevicePropertiesR0600", "hipGetDeviceProperties");
    sym(r.hipMalloc, "hipMalloc");
    sym(r.hipFree, "hipFree");
    sym(r.hipMemcpyHtoD, "hipMemcpyHtoD");
    sym(r.hipMemcpyDtoH, "hipMemcpyDtoH");
    sym(r.hipModuleLoadData, "hipModuleLoadData");
    sym(r.hipModuleGetFunction, "hipModuleGetFunction");
    sym(r.hipModuleLaunchKernel, "hipModuleLaunchKernel");
    sym(r.hipDeviceSynchronize, "hipDeviceSynchronize");
    sym(r.hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync");
    sym(r.hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync");
    sym(r.hipStreamCreate, "hipStreamCreate");
    sym(r.hipStreamDestroy, "hipStreamDestroy");
    sym(r.hipStreamSynchronize, "hipStreamSynchronize");
    sym(r.hipStreamWaitEvent, "hipStreamWaitEvent");
    sym(r.hipEventCreate, "hipEventCreate");
    sym(r.hipEventDestroy, "hipEventDestroy");
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

// LDS per work-group on every target we have (codegen checks it too).
constexpr int kMaxSharedBytes = 64 * 1024;

class HipDevice final : public detail::DeviceImpl {
 public:
  explicit HipDevice(int index) : hip_(HipRuntime::get()), index_(index) {
    make_current();
    char name[256] = {};
    hip_.check(hip_.hipDeviceGetName(name, sizeof(name) - 1, index_), "hipDeviceGetName");
    gpu_name_ = name;
    int version = 0;
    hip_.check(hip_.hipDriverGetVersion(&version), "hipDriverGetVersion");
    hardware_ = gpu_name_ + ", HIP driver " + std::to_string(version);
    // Generously larger than any hipDeviceProp_t (about 1.5 KB).
    std::vector<char> props(16 * 1024, '\0');
    hip_.check(hip_.hipGetDeviceProperties(props.data(), index_), "hipGetDeviceProperties");
    arch_ = arch_name(props);
    if (arch_.empty()) throw Error("hip device: cannot find the architecture (gcnArchName) of " + gpu_name_);
    target_ = hip_target_for(arch_, runtime::known_target);
    hip_.check(hip_.hipStreamCreate(&stream_), "hipStreamCreate");
    hip_.check(hip_.hipEventCreate(&timing_start_), "hipEventCreate");
    hip_.check(hip_.hipEventCreate(&timing_end_), "hipEventCreate");
    launcher_.emplace(runtime::GpuDriver{
        .device = "hip",
        .target = target_,
        .gpu_name = gpu_name_,
        .max_shared_bytes = kMaxSharedBytes,
        .shared_memory = "LDS",
        .link = nullptr,  // codegen::compile links the code object
        .linker = {},
        .load = [this](const detail::KernelImpl& k, const runtime::CachedBinary& e,
                       bool may_refuse) -> void* { return load(k, e, may_refuse); },
    });
  }
  // Stream, events and modules live until process exit (a process-wide
  // singleton; static Buffers may outlive any earlier teardown).

  std::string name() const override { return index_ == 0 ? "hip" : "hip:" + std::to_string(index_); }
  std::string target() const override { return target_; }
  std::string hardware() const override { return hardware_; }
  int index() const override { return index_; }
  bool addresses_are_device_pointers() const override { return true; }
  // hipDeviceGetAttribute's enumeration was renumbered between ROCm
  // releases and no AMD GPU is reachable to check which one a runtime
  // speaks, so this is not guessed.
  int processor_count() const override {
    throw Error("Device::processor_count is not available on the HIP back end yet (compute-unit query missing)");
  }

  uint64_t alloc(size_t bytes) override {
    if (bytes == 0) return 0;
    make_current();
    void* p = nullptr;
    hip_.check(hip_.hipMalloc(&p, bytes), "hipMalloc", std::to_string(bytes) + " bytes on " + gpu_name_);
    return reinterpret_cast<uint64_t>(p);
  }
  void free(uint64_t address) override {
    if (!address) return;
    make_current();
    hip_.check(hip_.hipFree(reinterpret_cast<void*>(address)), "hipFree");
  }
  void copy_to_device(uint64_t dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    make_current();
    hip_.check(hip_.hipMemcpyHtoD(reinterpret_cast<void*>(dst), const_cast<void*>(src), bytes), "hipMemcpyHtoD");
  }
  void copy_to_host(void* dst, uint64_t src, size_t bytes) override {
    if (bytes == 0) return;
    make_current();
    hip_.check(hip_.hipMemcpyDtoH(dst, reinterpret_cast<void*>(src), bytes), "hipMemcpyDtoH",
               "(an error here may come from a kernel launched earlier)");
  }
  void copy_to_device_async(uint64_t dst, const void* src, size_t bytes, void* stream) override {
    make_current();
    hip_.check(hip_.hipMemcpyHtoDAsync(reinterpret_cast<void*>(dst), const_cast<void*>(src), bytes,
                                       hipStream_t(stream)),
               "hipMemcpyHtoDAsync");
  }
  void copy_to_host_async(void* dst, uint64_t src, size_t bytes, void* stream) override {
    make_current();
    hip_.check(hip_.hipMemcpyDtoHAsync(dst, reinterpret_cast<void*>(src), bytes, hipStream_t(stream)),
               "hipMemcpyDtoHAsync", "(an error here may come from a kernel launched earlier)");
  }
  // Not checked with hipPointerGetAttributes: its struct's layout changed
  // between ROCm releases, and no AMD GPU is reachable to check which one a
  // runtime speaks. A wrong pointer faults in the kernel instead.
  uint64_t wrap(void* pointer, size_t bytes) override { return reinterpret_cast<uint64_t>(pointer); }

  void* default_stream() override { return stream_; }
  void* create_stream() override {
    make_current();
    hipStream_t s = nullptr;
    hip_.check(hip_.hipStreamCreate(&s), "hipStreamCreate");
    return s;
  }
  void destroy_stream(void* stream) override {
    make_current();
    hip_.check(hip_.hipStreamDestroy(hipStream_t(stream)), "hipStreamDestroy");
  }
  void synchronize_stream(void* stream) override {
    make_current();
    hip_.check(hip_.hipStreamSynchronize(hipStream_t(stream)), "hipStreamSynchronize",
               "(a kernel launched earlier on the stream failed, or the device faulted)");
  }
  void* create_event() override {
    make_current();
    hipEvent_t e = nullptr;
    hip_.check(hip_.hipEventCreate(&e), "hipEventCreate");
    return e;
  }
  void destroy_event(void* event) override {
    make_current();
    hip_.check(hip_.hipEventDestroy(hipEvent_t(event)), "hipEventDestroy");
  }
  void record_event(void* event, void* stream) override {
    make_current();
    hip_.check(hip_.hipEventRecord(hipEvent_t(event), hipStream_t(stream)), "hipEventRecord");
  }
  void wait_event(void* stream, void* event) override {
    make_current();
    hip_.check(hip_.hipStreamWaitEvent(hipStream_t(stream), hipEvent_t(event), 0), "hipStreamWaitEvent");
  }
  void synchronize_event(void* event) override {
    make_current();
    hip_.check(hip_.hipEventSynchronize(hipEvent_t(event)), "hipEventSynchronize",
               "(a kernel launched before the event failed, or the device faulted)");
  }
  double elapsed_ms(void* start, void* end) override {
    make_current();
    float ms = 0;
    hip_.check(hip_.hipEventElapsedTime(&ms, hipEvent_t(start), hipEvent_t(end)), "hipEventElapsedTime");
    return double(ms);
  }

  void prepare(const detail::KernelImpl& k, const std::vector<detail::LaunchArg>& args) override {
    make_current();
    launcher_->load(k, args);
  }

  void launch(const detail::KernelImpl& k, Grid grid, const std::vector<detail::LaunchArg>& args,
              void* stream) override {
    make_current();
    auto loaded = launcher_->load(k, args);
    runtime::KernelParams params(args, "hip");
    hip_.check(hip_.hipModuleLaunchKernel(static_cast<hipFunction_t>(loaded->function), grid.x, grid.y, grid.z,
                                          unsigned(loaded->threads), 1, 1, unsigned(loaded->shared_bytes),
                                          hipStream_t(stream), params.data(), nullptr),
               "hipModuleLaunchKernel", runtime::describe_launch(k, grid.x, grid.y, grid.z, *loaded, "LDS"));
  }

  void synchronize() override {
    make_current();
    hip_.check(hip_.hipDeviceSynchronize(), "hipDeviceSynchronize",
               "(a kernel launched earlier failed, or the device faulted)");
  }

  double time_ms(const std::function<void()>& work, int reps) override {
    std::lock_guard lock(timing_mutex_);
    make_current();
    hip_.check(hip_.hipEventRecord(timing_start_, stream_), "hipEventRecord");
    for (int i = 0; i < reps; ++i) work();
    hip_.check(hip_.hipEventRecord(timing_end_, stream_), "hipEventRecord");
    hip_.check(hip_.hipEventSynchronize(timing_end_), "hipEventSynchronize",
               "(a kernel launched in the timed work failed)");
    float ms = 0;
    hip_.check(hip_.hipEventElapsedTime(&ms, timing_start_, timing_end_), "hipEventElapsedTime");
    return double(ms);
  }

  CompileStats compile_stats() const override { return launcher_->stats(); }

 private:
  // The launcher's load: the code object into a module, and its entry.
  // nullptr when the runtime refuses the code object and `may_refuse`.
  hipFunction_t load(const detail::KernelImpl& k, const runtime::CachedBinary& e, bool may_refuse) const {
    hipModule_t module = nullptr;
    hipError_t r = hip_.hipModuleLoadData(&module, e.binary.data());
    if (r != hipSuccess && may_refuse) return nullptr;
    hip_.check(r, "hipModuleLoadData",
               "kernel '" + k.name + "' for " + target_ + " on " + gpu_name_ + " (" + arch_ + ")");
    hipFunction_t function = nullptr;
    hip_.check(hip_.hipModuleGetFunction(&function, module, e.entry.c_str()), "hipModuleGetFunction",
               "entry '" + e.entry + "'");
    return function;
  }

  // HIP's current device is per thread, and user threads may call us: set
  // it before every call that acts on a device.
  void make_current() const { hip_.check(hip_.hipSetDevice(index_), "hipSetDevice", "device " + std::to_string(index_)); }

  const HipRuntime& hip_;
  int index_ = 0;
  hipStream_t stream_ = nullptr;
  hipEvent_t timing_start_ = nullptr, timing_end_ = nullptr;
  std::string gpu_name_, arch_, target_;
  std::string hardware_;  // hardware(): the GPU and the driver's version
  std::mutex timing_mutex_;
  std::optional<runtime::Launcher> launcher_;  // made last in the constructor, from what it found
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
  auto e = detail::driver_device_entry<HipDevice>(
      "hip", [] { return HipRuntime::available(); }, [] { HipRuntime::get(); },
      [] { return HipRuntime::get().device_count; });
  e.dlpack_device_type = kDLROCM;
  return e;
}

}  // namespace tl::amdgpu
