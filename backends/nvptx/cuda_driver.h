// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1").
//
// Why not cuda.h: the library must build where no CUDA toolkit exists and
// run where no GPU exists, so nothing here links against libcuda. We declare
// the handful of handle types, enum values and entry points we call
// ourselves (values from the CUDA 13 driver API documentation; they are ABI
// and do not change) and resolve the *versioned* symbols by name
// (cuMemAlloc_v2, cuLinkCreate_v2, ...): cuda.h maps the plain names to them
// with macros, which dlsym never sees.
//
// Every failure is a tl::Error naming the call and the driver's error name,
// e.g. "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (218)", followed by
// the JIT log when the driver wrote one. A machine without a usable driver
// (no libcuda, the toolkit's stub library, no device) is a clear error too,
// never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tl::nvptx {

// --- Types of the driver ABI (cuda.h spells them the same way) -------------
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUlinkState = struct CUlinkState_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUpointer_attribute = int;
using CUstreamCaptureMode = int;
using CUjit_option = int;
using CUjitInputType = int;
using CUdevice_attribute = int;
using CUfunction_attribute = int;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;

// CUjit_option
inline constexpr CUjit_option CU_JIT_WALL_TIME = 2;                     // out: float ms
inline constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
inline constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
inline constexpr CUjit_option CU_JIT_OPTIMIZATION_LEVEL = 7;
inline constexpr CUjit_option CU_JIT_LOG_VERBOSE = 12;
inline constexpr CUjit_option CU_JIT_GENERATE_LINE_INFO = 13;

// CUjitInputType
inline constexpr CUjitInputType CU_JIT_INPUT_CUBIN = 0;
inline constexpr CUjitInputType CU_JIT_INPUT_PTX = 1;

// CUdevice_attribute
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82;

// CUfunction_attribute
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// Stream and event creation flags.
inline constexpr unsigned CU_STREAM_DEFAULT = 0;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0;

// The legacy and per-thread default streams' handles (cuda.h's
// CU_STREAM_LEGACY, CU_STREAM_PER_THREAD; null is the legacy one too).
inline constexpr uintptr_t CU_STREAM_LEGACY_HANDLE = 0x1;
inline constexpr uintptr_t CU_STREAM_PER_THREAD_HANDLE = 0x2;

// CUpointer_attribute
inline constexpr CUpointer_attribute CU_POINTER_ATTRIBUTE_CONTEXT = 1;
inline constexpr CUpointer_attribute CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
inline constexpr CUpointer_attribute CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;

// CUstreamCaptureMode
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_RELAXED = 2;

// The symbolic name of a driver error code, from our own table (used when the
// driver cannot be asked, e.g. the stub library): "CUDA_ERROR_INVALID_PTX".
// Unknown codes give "CUDA error <code>".
std::string cuda_error_name_fallback(CUresult code);

// The entry points we use, resolved from one loaded libcuda.
class CudaDriver {
 public:
  // The process-wide driver: loads libcuda.so.1 (or $TILEDSL_CUDA_LIBRARY
  // when set), calls cuInit(0) and counts devices, once. Throws tl::Error
  // saying why CUDA is unusable here; later calls rethrow the same message.
  static const CudaDriver& get();
  // True when get() would succeed; never throws.
  static bool available();

  // Loads a specific library (tests point this at the toolkit's stub).
  // Same checks as get(), not cached.
  static std::unique_ptr<CudaDriver> load(const std::string& library);

  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  const std::string& library() const { return library_; }
  int device_count() const { return device_count_; }

  // "CUDA_ERROR_INVALID_PTX (218)": cuGetErrorName, or our table.
  std::string error_name(CUresult code) const;
  // Throws "<call> failed: <error name>" (+ ": " + detail when not empty)
  // unless `code` is CUDA_SUCCESS.
  void check(CUresult code, const char* call, const std::string& detail = "") const;

  // --- entry points (names without the _v2 suffix; see the .cpp) ---
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int len, CUdevice) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;                        // _v2
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;                                  // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;          // _v2
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;                // _v2
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;          // _v2
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void* image, unsigned n, CUjit_option*, void**) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char* name) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int value) = nullptr;
  CUresult (*cuFuncGetAttribute)(int* value, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared_bytes, CUstream, void** params, void** extra) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;        // _v2
  CUresult (*cuPointerGetAttribute)(void* data, CUpointer_attribute, CUdeviceptr) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned flags) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;  // _v2
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned flags) = nullptr;
  CUresult (*cuStreamGetCtx)(CUstream, CUcontext*) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned flags) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;  // _v2
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end) = nullptr;  // _v2 when present
  CUresult (*cuLinkCreate)(unsigned n, CUjit_option*, void**, CUlinkState*) = nullptr;  // _v2
  CUresult (*cuLinkAddData)(CUlinkState, CUjitInputType, void* data, size_t size, const char* name, unsigned n,
                            CUjit_option*, void**) = nullptr;                             // _v2
  CUresult (*cuLinkComplete)(CUlinkState, void** cubin, size_t* size) = nullptr;
  CUresult (*cuLinkDestroy)(CUlinkState) = nullptr;
  // Null where the driver predates tensor maps (CUDA 12). The enums are
  // int-sized; the map is 128 bytes, 64-byte aligned.
  // Stream capture into CUDA graphs. The runtime itself does not capture
  // (the application does, around tiledsl's launches); the tests use these
  // to check that launches may be captured.
  CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode) = nullptr;  // _v2
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long flags) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
  CUresult (*cuTensorMapEncodeTiled)(void* map, int dtype, uint32_t rank, void* address, const uint64_t* dims,
                                     const uint64_t* strides, const uint32_t* box, const uint32_t* element_strides,
                                     int interleave, int swizzle, int l2_promotion, int oob_fill) = nullptr;

 private:
  CudaDriver() = default;
  void open(const std::string& library);  // dlopen, resolve, cuInit, count; throws
  std::string library_;
  void* handle_ = nullptr;
  int device_count_ = 0;
};

// A JIT log pair for driver calls that accept CU_JIT_*_LOG_BUFFER options:
// owns the buffers and fills the option arrays.
struct JitLog {
  static constexpr size_t kBytes = 16 * 1024;
  char info[kBytes] = {};
  char error[kBytes] = {};
  CUjit_option options[4] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                             CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[4];
  JitLog();
  static constexpr unsigned count = 4;
  // The error log, else the info log, trimmed; "" when both are empty.
  std::string text() const;
};

// The PTX -> cubin step: the driver's JIT linker on one PTX module.
// `name` labels the input in the driver's log. Throws tl::Error with the
// call, the error name and the JIT log.
std::vector<uint8_t> link_ptx_to_cubin(const CudaDriver& driver, const std::string& ptx, const std::string& name);

}  // namespace tl::nvptx
