// The "cuda" devices (see cuda_device.h): memory, wrapped device pointers,
// streams, events, launches and event timing on GPU n ("cuda:n"), and what
// the shared launch path (runtime/launcher.h) asks of the CUDA driver:
//
//   PTX --ptxas where present (TILEDSL_PTXAS), else the driver's JIT linker--> cubin (link)
//   cubin --cuModuleLoadDataEx--> CUmodule --> CUfunction (load)
//
// Specialization, cache keys, the kernel cache, the compile and its
// statistics are the launcher's.
//
// A launch may be captured into a CUDA graph: once a kernel is loaded, the
// launch path makes no synchronous driver call and allocates nothing on
// the device (cuCtxSetCurrent, host-side tensor-map encoding and
// cuLaunchKernel on the given stream). What would not be legal under
// capture happens elsewhere: the zeros an empty tensor map points to are
// allocated when the device is made, and a kernel's first launch (compile,
// cuModuleLoadDataEx) should come before a capture, as with any JIT.
#include "nvptx/cuda_device.h"

#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "codegen/compile.h"
#include "codegen/dump.h"
#include "nvptx/cuda_driver.h"
#include "nvptx/cuda_ptxas.h"
#include "nvptx/cuda_tensor_map.h"
#include "runtime/compiler.h"
#include "runtime/launcher.h"

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

class CudaDevice final : public detail::DeviceImpl {
 public:
  explicit CudaDevice(int index) : driver_(CudaDriver::get()), index_(index) {
    const CudaDriver& d = driver_;
    d.check(d.cuDeviceGet(&device_, index), "cuDeviceGet", "device " + std::to_string(index));
    d.check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    d.check(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    char name[256] = {};
    d.check(d.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
    gpu_name_ = name;
    int version = 0;
    d.check(d.cuDriverGetVersion(&version), "cuDriverGetVersion");
    hardware_ = gpu_name_ + ", CUDA driver " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    driver_version_ = version;
    d.check(d.cuDeviceGetAttribute(&cc_major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
    d.check(d.cuDeviceGetAttribute(&cc_minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
            "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
    d.check(d.cuDeviceGetAttribute(&sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_),
            "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
    d.check(d.cuDeviceGetAttribute(&max_shared_optin_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                   device_),
            "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
    // Only for the note on a launch out of resources: no error if absent.
    if (d.cuDeviceGetAttribute(&sm_registers_, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, device_) != CUDA_SUCCESS)
      sm_registers_ = 0;
    target_ = cuda_target_for(cc_major_, cc_minor_, runtime::known_target);
    // A blocking stream: it orders with the synchronous copies, which run on
    // the legacy default stream.
    d.check(d.cuStreamCreate(&stream_, CU_STREAM_DEFAULT), "cuStreamCreate");
    d.check(d.cuEventCreate(&timing_start_, CU_EVENT_DEFAULT), "cuEventCreate");
    d.check(d.cuEventCreate(&timing_end_, CU_EVENT_DEFAULT), "cuEventCreate");
    launcher_.emplace(runtime::GpuDriver{
        .device = "cuda",
        .target = target_,
        .gpu_name = gpu_name_,
        .max_shared_bytes = max_shared_optin_,
        .shared_memory = "shared memory per block",
        .link = [this](const detail::KernelImpl& k, const codegen::CompiledKernel& ck) { return link(k, ck); },
        .linker = [this] { return linker(); },
        .load = [this](const detail::KernelImpl& k, const runtime::CachedBinary& e,
                       bool may_refuse) -> void* { return load(k, e, may_refuse); },
    });
    zeros();  // now, not in a launch that a graph capture may be recording
  }
  // The primary context, stream, events and modules live until process exit:
  // the device is a process-wide singleton, and releasing the context while
  // static Buffers still point into it would crash at exit.

  std::string name() const override { return index_ == 0 ? "cuda" : "cuda:" + std::to_string(index_); }
  std::string target() const override { return target_; }
  std::string hardware() const override { return hardware_ + (ptxas() ? ", " + linker() : ""); }
  int index() const override { return index_; }
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

  void copy_to_device_async(uint64_t dst, const void* src, size_t bytes, void* stream) override {
    make_current();
    driver_.check(driver_.cuMemcpyHtoDAsync(dst, src, bytes, CUstream(stream)), "cuMemcpyHtoDAsync_v2");
  }

  void copy_to_host_async(void* dst, uint64_t src, size_t bytes, void* stream) override {
    make_current();
    driver_.check(driver_.cuMemcpyDtoHAsync(dst, src, bytes, CUstream(stream)), "cuMemcpyDtoHAsync_v2",
                  "(an error here may come from a kernel launched earlier)");
  }

  // Another library's device pointer: the driver must know it as memory of
  // this GPU (cuMemAlloc, cudaMalloc, a pool or VMM allocator, managed
  // memory), so that host memory or a pointer of another GPU is an error
  // here rather than a fault in a kernel.
  uint64_t wrap(void* pointer, size_t bytes) override {
    make_current();
    CUdeviceptr p = CUdeviceptr(reinterpret_cast<uintptr_t>(pointer));
    char at[32];
    std::snprintf(at, sizeof at, "0x%llx", p);
    int ordinal = -1;
    CUresult r = driver_.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    if (r != CUDA_SUCCESS)
      throw Error("expected a device pointer of " + name() + " (" + gpu_name_ + "), found " + at +
                  ", which the CUDA driver does not know as GPU memory (" + driver_.error_name(r) +
                  "): host memory, or memory already freed");
    if (ordinal != index_)
      throw Error("expected a device pointer of " + name() + " (GPU " + std::to_string(index_) + "), found " + at +
                  ", memory of GPU " + std::to_string(ordinal) + " (wrap it for Device::get(\"cuda:" +
                  std::to_string(ordinal) + "\"))");
    return p;
  }

  void prepare(const detail::KernelImpl& k, const std::vector<detail::LaunchArg>& args) override {
    make_current();
    launcher_->load(k, args);
  }

  void launch(const detail::KernelImpl& k, Grid grid, const std::vector<detail::LaunchArg>& args,
              void* stream) override {
    make_current();
    auto loaded = launcher_->load(k, args);
    runtime::KernelParams params(args, "cuda", loaded->tensor_maps, [this](const auto& m, const auto& values) {
      TensorMapSpec spec = tensor_map_spec(m, values);
      if (has_no_elements(spec)) spec = empty_tensor_spec(spec, zeros());
      TensorMap map = encode_tensor_map(driver_, spec);
      runtime::TensorMapBytes out;
      std::memcpy(out.bytes, map.words, sizeof(out.bytes));
      return out;
    });
    // A program is a cluster of num_ctas CTAs along x (the kernel declares
    // its cluster size, so a plain launch forms the clusters).
    uint64_t ctas_x = uint64_t(grid.x) * uint64_t(std::max(1, k.options.num_ctas));
    if (ctas_x > 0x7fffffffu) throw Error("kernel '" + k.name + "': grid.x times num_ctas exceeds 2^31 - 1");
    CUresult r = driver_.cuLaunchKernel(static_cast<CUfunction>(loaded->function), unsigned(ctas_x), grid.y, grid.z,
                                        unsigned(loaded->threads), 1, 1, unsigned(loaded->shared_bytes),
                                        CUstream(stream), params.data(), nullptr);
    driver_.check(r, "cuLaunchKernel",
                  runtime::describe_launch(k, ctas_x, grid.y, grid.z, *loaded, "shared memory") +
                      registers_note(r, loaded->function, loaded->threads));
  }

  void synchronize() override {
    make_current();
    driver_.check(driver_.cuCtxSynchronize(), "cuCtxSynchronize",
                  "(a kernel launched earlier failed, or the device faulted)");
  }

  void* default_stream() override { return stream_; }
  // Blocking streams (like the device's own): they order with the
  // synchronous copies, which run on the legacy default stream.
  void* create_stream() override {
    make_current();
    CUstream s = nullptr;
    driver_.check(driver_.cuStreamCreate(&s, CU_STREAM_DEFAULT), "cuStreamCreate");
    return s;
  }
  void destroy_stream(void* stream) override {
    make_current();
    driver_.check(driver_.cuStreamDestroy(CUstream(stream)), "cuStreamDestroy_v2");
  }
  void check_foreign_stream(void* stream) override {
    uintptr_t h = reinterpret_cast<uintptr_t>(stream);
    // The default streams are those of whichever context is current: ours.
    if (h == 0 || h == CU_STREAM_LEGACY_HANDLE || h == CU_STREAM_PER_THREAD_HANDLE) return;
    make_current();
    CUcontext context = nullptr;
    driver_.check(driver_.cuStreamGetCtx(CUstream(stream), &context), "cuStreamGetCtx",
                  "Stream::wrap: expected a CUstream, found a handle the driver does not know");
    if (context != context_)
      throw Error("Stream::wrap: expected a stream of " + name() + "'s primary context (the CUDA runtime's), " +
                  "found a stream of another context (another GPU, or a context made by cuCtxCreate)");
  }
  void synchronize_stream(void* stream) override {
    make_current();
    driver_.check(driver_.cuStreamSynchronize(CUstream(stream)), "cuStreamSynchronize",
                  "(a kernel launched earlier on the stream failed, or the device faulted)");
  }
  void* create_event() override {
    make_current();
    CUevent e = nullptr;
    driver_.check(driver_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }
  void destroy_event(void* event) override {
    make_current();
    driver_.check(driver_.cuEventDestroy(CUevent(event)), "cuEventDestroy_v2");
  }
  void record_event(void* event, void* stream) override {
    make_current();
    driver_.check(driver_.cuEventRecord(CUevent(event), CUstream(stream)), "cuEventRecord");
  }
  void wait_event(void* stream, void* event) override {
    make_current();
    driver_.check(driver_.cuStreamWaitEvent(CUstream(stream), CUevent(event), 0), "cuStreamWaitEvent");
  }
  void synchronize_event(void* event) override {
    make_current();
    driver_.check(driver_.cuEventSynchronize(CUevent(event)), "cuEventSynchronize",
                  "(a kernel launched before the event failed, or the device faulted)");
  }
  double elapsed_ms(void* start, void* end) override {
    make_current();
    float ms = 0;
    driver_.check(driver_.cuEventElapsedTime(&ms, CUevent(start), CUevent(end)), "cuEventElapsedTime");
    return double(ms);
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

  CompileStats compile_stats() const override { return launcher_->stats(); }

 private:
  // The driver's current context is per thread; user threads may call us.
  void make_current() const { driver_.check(driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

  // Where a launch ran out of resources, the registers the binary holds
  // a thread against the block's: the usual cause, which the driver's
  // code does not name.
  std::string registers_note(CUresult r, void* function, int threads) const {
    int regs = 0;
    if (r != CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ||
        driver_.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, CUfunction(function)) != CUDA_SUCCESS)
      return {};
    const int warps = (threads + 31) / 32, charged = (warps + 3) / 4 * 4;
    return "; its binary holds " + std::to_string(regs) + " registers a thread, and a block's " + std::to_string(warps) +
           " warps are charged as " + std::to_string(charged) + " (warps get registers in fours): " +
           std::to_string(int64_t(charged) * 32 * ((regs + 7) / 8 * 8)) + " of the multiprocessor's " +
           (sm_registers_ > 0 ? std::to_string(sm_registers_) : std::string("registers"));
  }

  // 16 bytes of zeros in device memory, made once (empty_tensor_spec).
  uint64_t zeros() {
    std::call_once(zeros_once_, [this] {
      zeros_ = alloc(16);
      driver_.check(driver_.cuMemsetD8(zeros_, 0, 16), "cuMemsetD8_v2");
    });
    return zeros_;
  }

  // The launcher's load: the cubin into a module of the context, and its
  // entry. nullptr when the driver refuses the cubin and `may_refuse`.
  CUfunction load(const detail::KernelImpl& k, const runtime::CachedBinary& e, bool may_refuse) const {
    CUmodule module = nullptr;
    auto log = std::make_unique<JitLog>();
    CUresult r = driver_.cuModuleLoadDataEx(&module, e.binary.data(), JitLog::count, log->options, log->values);
    if (r != CUDA_SUCCESS && may_refuse) return nullptr;
    driver_.check(r, "cuModuleLoadDataEx",
                  "kernel '" + k.name + "' for " + target_ +
                      (log->text().empty() ? std::string() : ":\n" + log->text()));
    CUfunction function = nullptr;
    driver_.check(driver_.cuModuleGetFunction(&function, module, e.entry.c_str()), "cuModuleGetFunction",
                  "entry '" + e.entry + "'");
    // Above 48 KiB, dynamic shared memory must be opted into per function.
    if (e.shared_bytes > 48 * 1024)
      driver_.check(driver_.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               e.shared_bytes),
                    "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                    std::to_string(e.shared_bytes) + " bytes for kernel '" + k.name + "'");
    return function;
  }

  // The launcher's link: PTX -> cubin by ptxas where there is one
  // (cuda_ptxas.h), else by the driver's JIT linker.
  runtime::Bytes link(const detail::KernelImpl& k, const codegen::CompiledKernel& ck) const {
    try {
      if (const auto& ptxas = this->ptxas()) {
        try {
          std::string notes;
          std::string cubin = run_ptxas(ptxas->path, ck.assembly, target_, k.name, &notes);
          if (!notes.empty()) codegen::dump(k.name, target_, "ptxas", [&] { return notes; });
          return runtime::Bytes(cubin.begin(), cubin.end());
        } catch (const Error&) {
          // A ptxas found, not named, may be too old for the PTX: the
          // driver's JIT takes it (and is what fails, if the PTX is wrong).
          if (!ptxas->found) throw;
        }
      }
      return link_ptx_to_cubin(driver_, ck.assembly, k.name);
    } catch (const Error& err) {
      if (!cuda_target_is_fallback(cc_major_, cc_minor_)) throw;
      throw Error(std::string(err.what()) + "\n(" + gpu_name_ + " has compute capability " +
                  std::to_string(cc_major_) + "." + std::to_string(cc_minor_) +
                  ", newer than any target this build knows; the kernel was compiled for " + target_ + ")");
    }
  }

  const CudaDriver& driver_;
  int index_ = 0;  // the driver's ordinal
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent timing_start_ = nullptr, timing_end_ = nullptr;
  std::once_flag zeros_once_;
  uint64_t zeros_ = 0;
  std::string gpu_name_, target_;
  std::string hardware_;  // hardware() but the ptxas linking: the GPU and the driver's version
  int driver_version_ = 0;
  // The ptxas that links instead of the driver's JIT (cuda_ptxas.h), looked
  // for at the first compile, cache lookup or hardware(): finding it runs
  // `ptxas --version`, which a process launching only kernels compiled
  // ahead of time never needs. A failure (TILEDSL_PTXAS naming no ptxas)
  // is thrown there, and again at the next ask.
  const std::optional<Ptxas>& ptxas() const {
    std::call_once(ptxas_once_, [&] { ptxas_ = ptxas_from_environment(driver_version_); });
    return ptxas_;
  }
  // The launcher's GpuDriver::linker: "ptxas <release>", or "" for the JIT.
  std::string linker() const { return ptxas() ? "ptxas " + ptxas()->version : ""; }
  mutable std::once_flag ptxas_once_;
  mutable std::optional<Ptxas> ptxas_;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0, max_shared_optin_ = 48 * 1024;
  int sm_registers_ = 0;  // a multiprocessor's 32-bit registers (65536 on sm_80 and sm_90)

  std::mutex timing_mutex_;
  std::optional<runtime::Launcher> launcher_;  // made last in the constructor, from what it found
};

}  // namespace

detail::DeviceEntry cuda_device_entry() {
  auto e = detail::driver_device_entry<CudaDevice>(
      "cuda", [] { return CudaDriver::available(); }, [] { CudaDriver::get(); },
      [] { return CudaDriver::get().device_count(); });
  e.dlpack_device_type = kDLCUDA;
  return e;
}

}  // namespace tl::nvptx
