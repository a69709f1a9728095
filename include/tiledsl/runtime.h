// The public runtime API: devices, buffers, compiled kernels, launches, and
// what an application that owns its GPU memory and streams needs to hand
// them to tiledsl: wrapped pointers, DLPack tensors, streams and events.
// Devices sit behind one interface ("interp" always; "cuda", "hip" where a
// driver is present); every error is a tl::Error that says what was
// expected and what was found. No vendor header is included: streams and
// device pointers cross this API as void*.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tiledsl/detail/ir_types.h"

// DLPack's tensor (<dlpack/dlpack.h>, which a caller of tl::from_dlpack or
// Buffer::to_dlpack includes itself): declared, not defined, here so that
// this header does not need DLPack.
struct DLManagedTensor;

namespace tl {

// Programs along x, y and z. Every device launches at most CUDA's limits
// (x < 2^31, so that program_id fits its i32; y, z <= 65535), the
// interpreter included, so a grid that runs in CI runs on the GPU; a larger
// grid is a tl::Error at launch.
struct Grid {
  uint32_t x = 1, y = 1, z = 1;
  static constexpr uint32_t max_x = 2147483647u, max_y = 65535, max_z = 65535;
};

// Options of tl::compile. Tracing records them; GPU stages consume them.
// tl::compile rejects values outside the ranges given here, naming the
// kernel and the option.
struct CompileOptions {
  std::string name{};      // kernel name; defaults to "kernel"
  // Warps a program runs on: a power of two, 1 to 32; a target takes at
  // most 1024 threads (16 warps on the 64-lane AMD CDNA targets).
  int num_warps = 4;
  int num_stages = 3;    // default software-pipelining depth of tl::range loops (>= 1; 1: none)
  // Lets a multiply and an add on the result become one fused multiply-add
  // (one rounding instead of two), as Triton's enable_fp_fusion does by
  // default. The interpreter rounds twice; results then differ by an ulp.
  bool fp_fusion = true;
  // Lets f32 operations flush subnormal inputs and results to zero (CUDA's
  // -ftz=true): on NVIDIA exp2 is then one instruction instead of four
  // (ex2.approx.ftz), what an online softmax spends most of its issue on.
  // Values below 2^-126 in magnitude read and compute as zero; the
  // interpreter keeps them.
  bool flush_denormals = false;
  // CTAs a program spans (a thread-block cluster on sm_90 and later: 1, 2,
  // 4 or 8). Its tiles are split across the CTAs along their slowest
  // dimension and reductions over the split combine through distributed
  // shared memory; program_id and num_programs count clusters. A dot
  // splits M over the CTAs (warpgroup instructions, sm_90a; its operands
  // from tensor descriptors or pipelined loads), and a tensor copy of a
  // block every CTA reads (B) may be multicast to all of them. The
  // program's meaning does not change.
  int num_ctas = 1;
  // Warp specialization of loops whose tensor copies feed warpgroup dots
  // (sm_90a): a producer warpgroup issues the copies, the program's own
  // warps multiply, joined by mbarriers. Unset: the compiler decides; false:
  // never; true: a kernel with no loop it can specialize is an error saying
  // why.
  std::optional<bool> warp_specialize = std::nullopt;
  // Programs a multiprocessor holds at once, at least (1 to 8; CUDA's
  // __launch_bounds__ minimum blocks per multiprocessor): a thread's
  // registers are capped at its share of the register file (ptxas spills
  // past it), and a program's shared memory at its share of the
  // multiprocessor's (an error past it). More programs at once hide the
  // latency one program's warps leave exposed. NVIDIA targets; on AMD a
  // value above 1 is an error (not supported yet).
  int programs_per_sm = 1;
};

// What a device spent compiling kernels (GPU devices; all zero on the
// interpreter). Times are sums in milliseconds of the steps after tracing:
// codegen (Tile IR -> PTX/assembly), link (PTX -> binary by the driver's JIT
// linker) and load (binary -> loaded module). codegen_ms is the sum of its
// stages: the GPU passes (Tile IR -> GPU IR), the lowering to LLVM IR,
// LLVM's optimization, and the emission of assembly (and, on AMD, the code
// object).
struct CompileStats {
  int64_t compiles = 0;        // kernels compiled (not found in any cache)
  int64_t cache_hits = 0;      // kernels loaded from the kernel cache (memory or disk)
  int64_t precompiled = 0;     // binaries compiled ahead of time loaded (tiledsl/precompiled.h)
  int64_t modules_loaded = 0;  // == compiles + cache_hits + precompiled
  double codegen_ms = 0;
  double link_ms = 0;
  double load_ms = 0;
  double passes_ms = 0;    // codegen: the GPU passes
  double lower_ms = 0;     // codegen: GPU IR -> LLVM IR
  double optimize_ms = 0;  // codegen: LLVM's optimization pipeline
  double emit_ms = 0;      // codegen: assembly (and code object) emission
};

namespace detail {
struct KernelImpl;
struct DeviceImpl;
struct BufferImpl;
struct StreamImpl;
struct EventImpl;
}  // namespace detail

class Device;
class Stream;

// A traced and compiled kernel. Cheap to copy (shared).
class Kernel {
 public:
  Kernel() = default;
  explicit Kernel(std::shared_ptr<detail::KernelImpl> impl) : impl_(std::move(impl)) {}
  const std::string& name() const;
  const CompileOptions& options() const;
  // Parameter types in signature order ("ptr<f32>", "i32", ...).
  const std::vector<ir::Type>& params() const;
  // The Tile IR text of the kernel (after the target-independent passes).
  std::string ir() const;
  const std::shared_ptr<detail::KernelImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::KernelImpl> impl_;
};

// Device memory holding `size()` elements of `dtype()`: allocated by
// Device::alloc (and freed with the last Buffer referring to it), or memory
// another library owns (Buffer::wrap, tl::from_dlpack), which tiledsl never
// frees.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<detail::BufferImpl> impl) : impl_(std::move(impl)) {}

  // `count` elements of `dtype` at `pointer`, memory tiledsl does not own and
  // never frees (the caller keeps it alive while the buffer is used): a
  // device pointer of `device` on a GPU device (a CUdeviceptr or HIP device
  // pointer, cast to void*), host memory on the interpreter. A null pointer,
  // a count of 0, a device that cannot wrap memory, or (CUDA) a pointer the
  // driver does not know as memory of `device` is a tl::Error naming `where`.
  static Buffer wrap(const Device& device, DType dtype, void* pointer, size_t count,
                     std::source_location where = std::source_location::current());
  template <class T>
  static Buffer wrap(const Device& device, void* pointer, size_t count,
                     std::source_location where = std::source_location::current()) {
    return wrap(device, dtype_v<T>, pointer, count, where);
  }

  DType dtype() const;
  size_t size() const;   // elements
  size_t bytes() const;
  // Whether the memory belongs to another library (wrap, from_dlpack).
  bool is_wrapped() const;
  Device device() const;
  void copy_from_host(const void* src, size_t bytes);
  void copy_to_host(void* dst, size_t bytes) const;
  // The same copies, ordered on `stream` (which must be of this buffer's
  // device) and returning before they are done: `src` must stay unchanged,
  // and `dst` unread, until the stream gets there (Stream::synchronize, or
  // an Event). Page-locked host memory makes a GPU copy truly
  // asynchronous; with pageable memory the driver may copy before
  // returning. On the interpreter they are done when they return.
  void copy_from_host_async(const void* src, size_t bytes, const Stream& stream);
  void copy_to_host_async(void* dst, size_t bytes, const Stream& stream) const;
  // The allocation's address on the GPU (a CUdeviceptr or HIP device
  // pointer), for handing the buffer to a vendor library such as cuBLAS;
  // 0 on devices whose buffers are not GPU memory (the interpreter, the
  // inspector).
  uint64_t device_address() const;

  // A DLPack tensor viewing this buffer without a copy: 1-D, of size()
  // elements, on its device (kDLCUDA, kDLROCM; kDLCPU on the interpreter,
  // whose data pointer is the host memory behind the buffer). The tensor
  // keeps the buffer alive until its consumer calls its deleter. Element
  // types DLPack 0.6 cannot express (i1, f8e4m3, f8e5m2) are a tl::Error.
  DLManagedTensor* to_dlpack() const;

  // A std::vector<bool> (packed bits in C++) goes through one byte an
  // element, as bool buffers hold it. A host vector of another element
  // type or size than the buffer's is a tl::Error naming `where` (the
  // caller's line).
  template <class T>
  void upload(const std::vector<T>& host, std::source_location where = std::source_location::current()) {
    check_host_type(dtype_v<T>, host.size(), "upload", where);
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(host.begin(), host.end());
      copy_from_host(bytes.data(), bytes.size());
    } else {
      copy_from_host(host.data(), host.size() * sizeof(T));
    }
  }
  template <class T>
  std::vector<T> download(std::source_location where = std::source_location::current()) const {
    check_host_type(dtype_v<T>, impl_ ? size() : 0, "download", where);
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(size());
      copy_to_host(bytes.data(), bytes.size());
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> host(size());
      copy_to_host(host.data(), host.size() * sizeof(T));
      return host;
    }
  }
  const std::shared_ptr<detail::BufferImpl>& impl() const { return impl_; }

 private:
  void check_host_type(DType host, size_t n, const char* what, const std::source_location& where) const;
  std::shared_ptr<detail::BufferImpl> impl_;
};

// One kernel argument, type-erased. Built implicitly from a Buffer, an
// integer or a floating-point value (narrow floats too); checked against the kernel's signature
// at launch.
struct Arg {
  enum class Kind { Pointer, Int, Float } kind;
  DType dtype = DType::i64;              // buffer element type / host value type
  std::shared_ptr<detail::BufferImpl> buffer;
  int64_t i = 0;
  double f = 0;

  // An empty Buffer is reported by the launch, with the caller's line.
  Arg(const Buffer& b) : kind(Kind::Pointer), dtype(b.impl() ? b.dtype() : DType::f32), buffer(b.impl()) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Arg(T v) : kind(Kind::Int), dtype(dtype_v<T>), i(int64_t(v)) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Arg(T v) : kind(Kind::Float), dtype(dtype_v<T>), f(double(v)) {}
  // tl::f16, tl::bf16, tl::f8e4m3, tl::f8e5m2 (their value is exact as a float).
  template <narrow_float T>
  Arg(T v) : kind(Kind::Float), dtype(dtype_v<T>), f(double(float(v))) {}
};

// A tensor of another library (PyTorch, CuPy, JAX, ...) as a Buffer,
// without a copy: the buffer views the tensor's memory on the device DLPack
// names (kDLCUDA device n: "cuda:n"; kDLROCM: "hip:n"; kDLCPU: "interp"),
// and calls the tensor's deleter when the last Buffer referring to it goes
// away. The tensor must be contiguous (row-major; strides of size-1
// dimensions are not looked at), of one lane, of a type tiledsl has. On a
// tl::Error (naming `where` and what was expected and found) the tensor is
// not taken: its deleter is not called and the caller still owns it.
Buffer from_dlpack(DLManagedTensor* tensor, std::source_location where = std::source_location::current());

class Event;

class Device {
 public:
  Device() = default;
  explicit Device(std::shared_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {}
  // "interp", "cuda" or "hip" (device 0 of that kind), "cuda:1" (by index),
  // or "" for the best available (TILEDSL_DEVICE overrides). "cuda" and
  // "cuda:0" are the same device. An index past the last device of its kind
  // is a tl::Error saying how many there are.
  static Device get(std::string_view name = "");
  static std::vector<std::string> available();
  // A device that runs nothing: the first launch of each kernel and
  // argument specialization prints `stage` ("tile", "gpu", "llvm" or
  // "asm") of the kernel compiled for `target` ("interp", "sm_80",
  // "sm_90a", "gfx942", ...), specialized for the launch's arguments.
  // Needs no GPU; buffers are host memory.
  static Device inspector(const std::string& target, const std::string& stage);

  std::string name() const;  // "cuda" for device 0, "cuda:1" for the next one
  int index() const;         // among the devices of its kind (0 on the interpreter)
  // What kernels launched here are compiled for: "sm_90a", "sm_80",
  // "gfx942", ..., "interp" (an inspector: its target). A program may
  // pick a kernel's tiles by it: what runs best on one target is not what
  // runs best on another.
  std::string target() const;
  // The GPU and its driver's version ("NVIDIA H200, CUDA driver 13.0"),
  // or "the interpreter": what a measured tuning depends on besides the
  // target (the autotuner keys its results by it).
  std::string hardware() const;
  // Multiprocessors (SMs, compute units) running programs side by side:
  // what a persistent kernel's grid is sized by. 1 on the interpreter.
  int processor_count() const;
  Buffer alloc(DType dtype, size_t n);
  template <class T>
  Buffer alloc(size_t n) { return alloc(dtype_v<T>, n); }
  template <class T>
  Buffer upload(const std::vector<T>& host, std::source_location where = std::source_location::current()) {
    Buffer b = alloc<T>(host.size());
    b.upload(host, where);
    return b;
  }

  // Launches `k` over `grid`. Arguments are checked against the signature
  // and the grid against Grid's limits: a wrong count or type, or too large
  // a grid, is a tl::Error naming `where` (the caller's line) and the
  // parameter or dimension, like trace-time errors.
  void launch(const Kernel& k, Grid grid, const std::vector<Arg>& args,
              std::source_location where = std::source_location::current());
  // The same launch, ordered on `stream` (of this device) instead of the
  // device's own stream; `stream(k, grid, args...)` says it shorter.
  void launch(const Kernel& k, Grid grid, const std::vector<Arg>& args, const Stream& stream,
              std::source_location where = std::source_location::current());
  // dev(k, grid, args...): `k` converts to a Site, whose default argument
  // records the caller's line (a parameter pack leaves no room for one).
  struct Site {
    const Kernel& kernel;
    std::source_location where;
    Site(const Kernel& k, std::source_location w = std::source_location::current()) : kernel(k), where(w) {}
  };
  template <class... A>
  void operator()(Site k, Grid grid, A&&... args) {
    launch(k.kernel, grid, std::vector<Arg>{Arg(std::forward<A>(args))...}, k.where);
  }
  // Compiles and loads `k` for the arguments' specialization (their types,
  // pointer alignment, integer values 1 and divisibility) without
  // launching, as Triton's warmup does: the next launch with such
  // arguments starts at once. The arguments are checked as a launch's are.
  // Threads may prepare kernels at the same time, and their compiles run
  // in parallel (the autotuner compiles its candidates so). A no-op on the
  // interpreter.
  void prepare(const Kernel& k, const std::vector<Arg>& args,
               std::source_location where = std::source_location::current());
  // Waits for all work of this device, on every stream.
  void synchronize();

  // The stream that launch and dev(...) use when given none.
  Stream stream() const;
  // A new stream of this device, destroyed with the last Stream referring
  // to it. Work on it is ordered after nothing but earlier work on it
  // (order it against other streams with events).
  Stream create_stream();
  // A new event of this device (Event says what it is for).
  Event create_event();

  // Mean time of one `work()` in milliseconds, measured on the device: runs
  // `work` once untimed (it compiles and warms caches) and synchronizes,
  // then runs it `reps` times between two device events (GPU devices) or
  // with a host clock (the interpreter). `work` should enqueue launches on
  // this device; reps >= 1.
  double time_ms(const std::function<void()>& work, int reps = 10);
  // Compile counters and timings of this device since it was created.
  CompileStats compile_stats() const;

  const std::shared_ptr<detail::DeviceImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::DeviceImpl> impl_;
};

// An in-order queue of work on one device: launches, asynchronous copies,
// event records and waits run in the order they were enqueued. Either made
// by Device::create_stream, or another library's stream (a CUstream or
// hipStream_t) taken by Stream::wrap, which tiledsl never destroys. Cheap
// to copy (shared). A launch on a stream makes no synchronous driver call
// and allocates no device memory, so it may be captured into a CUDA graph
// (cuStreamBeginCapture) once the kernel has been launched before (its
// first launch compiles and loads it). On the interpreter, where every
// launch and copy is done when it returns, a stream is trivially in order
// and its waits have nothing to wait for.
class Stream {
 public:
  Stream() = default;
  explicit Stream(std::shared_ptr<detail::StreamImpl> impl) : impl_(std::move(impl)) {}
  // `native` (a CUstream on "cuda", a hipStream_t on "hip"; a null pointer
  // is that API's default stream) as a stream of `device`. The stream must
  // outlive the Stream objects wrapping it. CUDA checks that it belongs to
  // the device's context.
  static Stream wrap(const Device& device, void* native);

  Device device() const;
  // The driver's handle (CUstream, hipStream_t); null on the interpreter.
  void* native() const;
  // Waits until all work enqueued on the stream is done.
  void synchronize() const;
  // Work enqueued on this stream from now on waits until `event` (recorded
  // on any stream of the same device) has happened.
  void wait(const Event& event) const;

  // stream(k, grid, args...): the launch of Device::operator() on this
  // stream.
  template <class... A>
  void operator()(Device::Site k, Grid grid, A&&... args) const {
    launch(k.kernel, grid, std::vector<Arg>{Arg(std::forward<A>(args))...}, k.where);
  }
  // That launch (on an empty stream an error naming `where`).
  void launch(const Kernel& k, Grid grid, const std::vector<Arg>& args,
              std::source_location where = std::source_location::current()) const;

  const std::shared_ptr<detail::StreamImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::StreamImpl> impl_;
};

// A point in a stream's work: recorded on a stream, it happens when the
// work enqueued there before it is done. Other streams wait for it
// (Stream::wait), the host waits for it (synchronize), and two of them
// time the work between them (elapsed_ms). Made by Device::create_event;
// cheap to copy (shared).
class Event {
 public:
  Event() = default;
  explicit Event(std::shared_ptr<detail::EventImpl> impl) : impl_(std::move(impl)) {}
  // Records the event at the end of the work enqueued on `stream` so far
  // (again: the latest record counts).
  void record(const Stream& stream);
  // Waits until the event has happened; it must have been recorded.
  void synchronize() const;
  // Milliseconds between `start` and `end`, both recorded and happened.
  static double elapsed_ms(const Event& start, const Event& end);

  const std::shared_ptr<detail::EventImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::EventImpl> impl_;
};

}  // namespace tl

#pragma GCC visibility pop
