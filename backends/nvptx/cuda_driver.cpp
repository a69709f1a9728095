// Loading libcuda with dlopen and resolving the driver entry points we use;
// turning driver error codes into tl::Error messages; the JIT linker step
// (PTX -> cubin). See cuda_driver.h for why there is no cuda.h here.
#include "nvptx/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "tiledsl/detail/ir_types.h"

namespace tl::nvptx {

std::string cuda_error_name_fallback(CUresult code) {
  // The codes a user of this back end is likely to meet; the driver's own
  // cuGetErrorName covers the rest whenever a real driver is loaded.
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 36: return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 221: return "CUDA_ERROR_JIT_COMPILER_NOT_FOUND";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 710: return "CUDA_ERROR_ASSERT";
    case 715: return "CUDA_ERROR_ILLEGAL_INSTRUCTION";
    case 716: return "CUDA_ERROR_MISALIGNED_ADDRESS";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA error " + std::to_string(code);
  }
}

// ---------------------------------------------------------------------------
// Loading

namespace {

// Resolves `name` (or, when given, the first of `name`, `fallback` that
// exists) into `fn`; throws naming the missing symbol.
template <class Fn>
void resolve(void* handle, const std::string& library, Fn& fn, const char* name, const char* fallback = nullptr) {
  void* sym = dlsym(handle, name);
  if (!sym && fallback) sym = dlsym(handle, fallback);
  if (!sym)
    throw Error("CUDA driver " + library + " lacks the entry point " + name +
                " (the driver is older than this back end needs)");
  fn = reinterpret_cast<Fn>(sym);
}

}  // namespace

std::unique_ptr<CudaDriver> CudaDriver::load(const std::string& library) {
  std::unique_ptr<CudaDriver> d(new CudaDriver());
  try {
    d->open(library);
  } catch (...) {
    // A rejected library is unloaded, so that a later dlopen("libcuda.so.1")
    // cannot find it by its SONAME (the toolkit's stub has that SONAME too).
    if (d->handle_) dlclose(d->handle_);
    throw;
  }
  return d;
}

void CudaDriver::open(const std::string& library) {
  CudaDriver* d = this;
  d->library_ = library;
  d->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!d->handle_) {
    const char* why = dlerror();
    throw Error("no CUDA driver: dlopen(\"" + library + "\") failed" + (why ? std::string(": ") + why : "") +
                " (no NVIDIA driver is installed on this machine)");
  }
  void* h = d->handle_;
  const std::string& lib = d->library_;
  resolve(h, lib, d->cuInit, "cuInit");
  resolve(h, lib, d->cuGetErrorName, "cuGetErrorName");
  resolve(h, lib, d->cuDeviceGetCount, "cuDeviceGetCount");
  resolve(h, lib, d->cuDeviceGet, "cuDeviceGet");
  resolve(h, lib, d->cuDeviceGetName, "cuDeviceGetName");
  resolve(h, lib, d->cuDriverGetVersion, "cuDriverGetVersion");
  resolve(h, lib, d->cuDeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(h, lib, d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(h, lib, d->cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(h, lib, d->cuCtxSynchronize, "cuCtxSynchronize");
  resolve(h, lib, d->cuMemAlloc, "cuMemAlloc_v2");
  resolve(h, lib, d->cuMemFree, "cuMemFree_v2");
  resolve(h, lib, d->cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  resolve(h, lib, d->cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  resolve(h, lib, d->cuMemsetD8, "cuMemsetD8_v2");
  resolve(h, lib, d->cuModuleLoadDataEx, "cuModuleLoadDataEx");
  resolve(h, lib, d->cuModuleGetFunction, "cuModuleGetFunction");
  resolve(h, lib, d->cuFuncSetAttribute, "cuFuncSetAttribute");
  resolve(h, lib, d->cuFuncGetAttribute, "cuFuncGetAttribute");
  resolve(h, lib, d->cuLaunchKernel, "cuLaunchKernel");
  resolve(h, lib, d->cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  resolve(h, lib, d->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  resolve(h, lib, d->cuPointerGetAttribute, "cuPointerGetAttribute");
  resolve(h, lib, d->cuStreamCreate, "cuStreamCreate");
  resolve(h, lib, d->cuStreamDestroy, "cuStreamDestroy_v2");
  resolve(h, lib, d->cuStreamSynchronize, "cuStreamSynchronize");
  resolve(h, lib, d->cuStreamWaitEvent, "cuStreamWaitEvent");
  resolve(h, lib, d->cuStreamGetCtx, "cuStreamGetCtx");
  resolve(h, lib, d->cuEventCreate, "cuEventCreate");
  resolve(h, lib, d->cuEventDestroy, "cuEventDestroy_v2");
  resolve(h, lib, d->cuEventRecord, "cuEventRecord");
  resolve(h, lib, d->cuEventSynchronize, "cuEventSynchronize");
  // CUDA 13 headers map cuEventElapsedTime to _v2 (same signature); drivers
  // before 12.8 only have the plain one.
  resolve(h, lib, d->cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  resolve(h, lib, d->cuLinkCreate, "cuLinkCreate_v2");
  resolve(h, lib, d->cuLinkAddData, "cuLinkAddData_v2");
  resolve(h, lib, d->cuLinkComplete, "cuLinkComplete");
  resolve(h, lib, d->cuLinkDestroy, "cuLinkDestroy");
  // Graphs: CUDA 10 and later (instantiation with flags: 11.4).
  resolve(h, lib, d->cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  resolve(h, lib, d->cuStreamEndCapture, "cuStreamEndCapture");
  resolve(h, lib, d->cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  resolve(h, lib, d->cuGraphLaunch, "cuGraphLaunch");
  resolve(h, lib, d->cuGraphExecDestroy, "cuGraphExecDestroy");
  resolve(h, lib, d->cuGraphDestroy, "cuGraphDestroy");
  // CUDA 12 and later: tensor maps (null on older drivers; cuda_tensor_map.h says so).
  d->cuTensorMapEncodeTiled = reinterpret_cast<decltype(d->cuTensorMapEncodeTiled)>(dlsym(h, "cuTensorMapEncodeTiled"));

  CUresult r = d->cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY)
    throw Error("no CUDA driver: cuInit failed: " + d->error_name(r) + " (" + library +
                " is the CUDA toolkit's stub library, not a driver; this machine has no NVIDIA driver)");
  if (r == CUDA_ERROR_NO_DEVICE)
    throw Error("no CUDA device: cuInit failed: " + d->error_name(r) + " (the driver found no NVIDIA GPU)");
  d->check(r, "cuInit", "the CUDA driver could not start");
  d->check(d->cuDeviceGetCount(&d->device_count_), "cuDeviceGetCount");
  if (d->device_count_ <= 0) throw Error("no CUDA device: the driver " + library + " reports 0 GPUs");
}

CudaDriver::~CudaDriver() {
  // The library stays loaded: a primary context, modules and buffers may
  // outlive this object until process exit, and unloading libcuda under them
  // would crash at exit. (dlclose is also unsafe for libcuda in general.)
}

namespace {

struct GlobalDriver {
  std::once_flag once;
  std::unique_ptr<CudaDriver> driver;
  std::string failure;
};

// Never destroyed: buffers, modules and devices held by other statics use
// the driver's table until the process ends, in whatever order their
// destructors run (a bench's static buffers freed after it was gone
// called through a freed table and crashed at exit).
GlobalDriver& global_driver() {
  static GlobalDriver& g = *new GlobalDriver;
  std::call_once(g.once, [&] {
    const char* env = std::getenv("TILEDSL_CUDA_LIBRARY");
    std::string library = env && *env ? env : "libcuda.so.1";
    try {
      g.driver = CudaDriver::load(library);
    } catch (const Error& e) {
      g.failure = e.what();
    }
  });
  return g;
}

}  // namespace

const CudaDriver& CudaDriver::get() {
  GlobalDriver& g = global_driver();
  if (!g.driver) throw Error(g.failure);
  return *g.driver;
}

bool CudaDriver::available() { return global_driver().driver != nullptr; }

// ---------------------------------------------------------------------------
// Errors

std::string CudaDriver::error_name(CUresult code) const {
  const char* name = nullptr;
  std::string text;
  if (cuGetErrorName && cuGetErrorName(code, &name) == CUDA_SUCCESS && name)
    text = name;
  else
    text = cuda_error_name_fallback(code);
  return text + " (" + std::to_string(code) + ")";
}

void CudaDriver::check(CUresult code, const char* call, const std::string& detail) const {
  if (code == CUDA_SUCCESS) return;
  std::string msg = std::string(call) + " failed: " + error_name(code);
  if (!detail.empty()) msg += ": " + detail;
  throw Error(msg);
}

// ---------------------------------------------------------------------------
// JIT logs and linking

JitLog::JitLog() {
  values[0] = info;
  values[1] = reinterpret_cast<void*>(uintptr_t(kBytes));
  values[2] = error;
  values[3] = reinterpret_cast<void*>(uintptr_t(kBytes));
}

std::string JitLog::text() const {
  auto trimmed = [](const char* buf) {
    std::string s(buf, strnlen(buf, kBytes));
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
    return s;
  };
  std::string e = trimmed(error);
  return e.empty() ? trimmed(info) : e;
}

namespace {

// Destroys a link state on every path out of link_ptx_to_cubin.
struct LinkGuard {
  const CudaDriver& driver;
  CUlinkState state = nullptr;
  ~LinkGuard() {
    if (state) driver.cuLinkDestroy(state);
  }
};

}  // namespace

std::vector<uint8_t> link_ptx_to_cubin(const CudaDriver& driver, const std::string& ptx, const std::string& name) {
  // The logs are large; keep them off the stack.
  auto log = std::make_unique<JitLog>();
  LinkGuard link{driver};
  driver.check(driver.cuLinkCreate(JitLog::count, log->options, log->values, &link.state), "cuLinkCreate_v2");
  // The driver reads PTX as a NUL-terminated string: pass size + 1.
  CUresult r = driver.cuLinkAddData(link.state, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()), ptx.size() + 1,
                                    name.c_str(), 0, nullptr, nullptr);
  driver.check(r, "cuLinkAddData_v2", "PTX of '" + name + "' rejected" +
                                          (log->text().empty() ? std::string() : ":\n" + log->text()));
  void* cubin = nullptr;
  size_t size = 0;
  r = driver.cuLinkComplete(link.state, &cubin, &size);
  driver.check(r, "cuLinkComplete",
               "linking '" + name + "'" + (log->text().empty() ? std::string() : ":\n" + log->text()));
  // The cubin belongs to the link state: copy it out before the guard
  // destroys the state.
  const auto* bytes = static_cast<const uint8_t*>(cubin);
  return std::vector<uint8_t>(bytes, bytes + size);
}

}  // namespace tl::nvptx
