// What sits behind tl::Device, tl::Buffer, tl::Stream and tl::Event: the
// abstract device every back end implements (the interpreter here; the GPU
// devices of backends/, loaded through dlopen), the buffer, stream and
// event records, and the registry that maps device names ("cuda",
// "cuda:1") to implementations. Devices are process-wide singletons, one
// per kind and index, so two Device::get("interp") calls share memory and
// buffers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/kernel.h"
#include "tiledsl/runtime.h"

namespace tl::detail {

// A launch argument after checking against the kernel signature: pointers as
// device addresses, integers normalized to the parameter's dtype, floats
// rounded to it.
struct LaunchArg {
  ir::Type type;
  uint64_t address = 0;  // pointer parameters
  int64_t i = 0;         // integer parameters
  double f = 0;          // float parameters
};

// Streams and events cross this interface as the back end's own handles,
// as void*. The defaults below are those of
// a device whose launches and copies are done when they return (the
// interpreter, the inspector): its streams are tokens with nothing to
// order, and its events record the host clock.
struct DeviceImpl : std::enable_shared_from_this<DeviceImpl> {
  virtual ~DeviceImpl() = default;
  virtual std::string name() const = 0;
  // Device::index: among the devices of its kind.
  virtual int index() const { return 0; }
  // Device::target: what its kernels are compiled for.
  virtual std::string target() const { return "interp"; }
  // Device::hardware().
  virtual std::string hardware() const { return "the interpreter"; }
  // Device memory; addresses are opaque 64-bit numbers to the host.
  virtual uint64_t alloc(size_t bytes) = 0;
  virtual void free(uint64_t address) = 0;
  virtual void copy_to_device(uint64_t dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, uint64_t src, size_t bytes) = 0;
  // The same, ordered on `stream`; by default done before they return.
  virtual void copy_to_device_async(uint64_t dst, const void* src, size_t bytes, void* stream) {
    copy_to_device(dst, src, bytes);
  }
  virtual void copy_to_host_async(void* dst, uint64_t src, size_t bytes, void* stream) {
    copy_to_host(dst, src, bytes);
  }
  // Memory another library owns as an address of this device (Buffer::wrap):
  // a device pointer on GPU devices, host memory on the interpreter; throws
  // tl::Error when this device cannot take it. unwrap forgets it; neither
  // frees anything.
  virtual uint64_t wrap(void* pointer, size_t bytes);
  virtual void unwrap(uint64_t address) {}
  // What other libraries call the memory at `address` (DLPack's data
  // pointer): the address itself on GPU devices, the host memory behind it
  // on the interpreter.
  virtual void* data_pointer(uint64_t address, size_t bytes) { return reinterpret_cast<void*>(uintptr_t(address)); }
  // Runs (or enqueues on `stream`, a handle of this device) `k` over
  // `grid`; args are already checked. A grid with a zero dimension never
  // reaches here. Must not synchronize or allocate device memory: a GPU
  // stream may be capturing a graph.
  virtual void launch(const KernelImpl& k, Grid grid, const std::vector<LaunchArg>& args, void* stream) = 0;
  // Compiles and loads `k` for the specialization of `args` (checked), as
  // the first launch would, without launching; safe to call from several
  // threads at once. Nothing to do where launches compile nothing.
  virtual void prepare(const KernelImpl& k, const std::vector<LaunchArg>& args) {}
  virtual void synchronize() = 0;

  // The stream Device::launch uses when given none.
  virtual void* default_stream() { return &own_stream_; }
  virtual void* create_stream() { return new char; }
  virtual void destroy_stream(void* stream) {
    if (stream != &own_stream_) delete static_cast<char*>(stream);
  }
  // Checks that `stream`, made by another library, belongs to this device
  // (where the driver can tell); throws tl::Error otherwise.
  virtual void check_foreign_stream(void* stream) {}
  virtual void synchronize_stream(void* stream) {}
  virtual void* create_event() { return new Clock::time_point(); }
  virtual void destroy_event(void* event) { delete static_cast<Clock::time_point*>(event); }
  virtual void record_event(void* event, void* stream) { *static_cast<Clock::time_point*>(event) = Clock::now(); }
  virtual void wait_event(void* stream, void* event) {}
  virtual void synchronize_event(void* event) {}
  virtual double elapsed_ms(void* start, void* end) {
    return std::chrono::duration<double, std::milli>(*static_cast<Clock::time_point*>(end) -
                                                     *static_cast<Clock::time_point*>(start))
        .count();
  }
  // Total milliseconds of `reps` calls of `work` (Device::time_ms does the
  // warm-up and the division). GPU devices time with events on their
  // stream; this default, used by the interpreter, with a host clock.
  virtual double time_ms(const std::function<void()>& work, int reps) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) work();
    synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  virtual CompileStats compile_stats() const { return {}; }
  // Device::processor_count; the interpreter runs one program at a time.
  virtual int processor_count() const { return 1; }
  // Whether alloc's addresses are GPU pointers other libraries of the same
  // driver accept (Buffer::device_address); the interpreter's are not.
  virtual bool addresses_are_device_pointers() const { return false; }

 protected:
  using Clock = std::chrono::steady_clock;

 private:
  char own_stream_ = 0;  // the default stream's token
};

struct BufferImpl {
  std::shared_ptr<DeviceImpl> device;
  uint64_t address = 0;
  DType dtype = DType::f32;
  size_t size = 0;  // elements
  // Memory another library owns (Buffer::wrap, from_dlpack): never freed.
  bool wrapped = false;
  // Runs when the buffer goes away (a DLPack tensor's deleter).
  std::function<void()> on_release;
  // Allocates n elements on `d`.
  BufferImpl(std::shared_ptr<DeviceImpl> d, DType t, size_t n);
  // Wraps `bytes` at `pointer` (DeviceImpl::wrap).
  BufferImpl(std::shared_ptr<DeviceImpl> d, DType t, size_t n, void* pointer);
  BufferImpl(const BufferImpl&) = delete;
  ~BufferImpl();
  size_t bytes() const { return size * size_t(byte_size(dtype)); }
  // A copy of `bytes` between `host` and this buffer fits it and has a
  // host pointer (`what`: the caller, for the message; `direction`: "into"
  // or "out of").
  void check_host_copy(const void* host, size_t bytes, const char* what, const char* direction) const;
};

struct StreamImpl {
  std::shared_ptr<DeviceImpl> device;
  void* native = nullptr;
  bool owned = false;  // made by Device::create_stream: destroyed here
  StreamImpl(std::shared_ptr<DeviceImpl> d, void* n, bool o) : device(std::move(d)), native(n), owned(o) {}
  StreamImpl(const StreamImpl&) = delete;
  ~StreamImpl();
};

struct EventImpl {
  std::shared_ptr<DeviceImpl> device;
  void* native = nullptr;
  std::atomic<bool> recorded{false};
  explicit EventImpl(std::shared_ptr<DeviceImpl> d) : device(std::move(d)), native(device->create_event()) {}
  EventImpl(const EventImpl&) = delete;
  ~EventImpl();
};

// The registry. Entries are tried in registration order for Device::get("");
// the first available one wins (GPU back ends register before the
// interpreter, which is always available).
// An entry is a kind of device ("cuda"); its devices are "cuda" (index 0)
// and "cuda:N".
struct DeviceEntry {
  std::string name;
  std::function<bool()> available;                         // e.g. a driver loads and finds a GPU
  std::function<std::shared_ptr<DeviceImpl>(int)> create;  // called once per index, on first use
  std::function<std::string()> why_unavailable;            // optional: the reason, for the error message
  std::function<int()> count;                              // devices of this kind when available (default 1)
  int dlpack_device_type = 0;  // DLPack's DLDeviceType of tensors on these devices (0: none)
};

// The entry of a GPU device whose driver loads through `load` (which throws
// tl::Error saying why it cannot): available when `available` says so, the
// reason being the message `load` throws; `count` devices, made by
// Device(index).
template <class Device>
DeviceEntry driver_device_entry(std::string name, std::function<bool()> available, std::function<void()> load,
                                std::function<int()> count) {
  DeviceEntry e;
  e.name = std::move(name);
  e.available = std::move(available);
  e.count = std::move(count);
  e.create = [](int index) -> std::shared_ptr<DeviceImpl> { return std::make_shared<Device>(index); };
  e.why_unavailable = [load = std::move(load)]() -> std::string {
    try {
      load();
      return "";
    } catch (const Error& err) {
      return err.what();
    }
  };
  return e;
}

// Defined in backends/devices.cpp: the GPU devices of this build, in order
// of preference. The registry puts them ahead of the interpreter.
std::vector<DeviceEntry> builtin_gpu_devices();
void register_device(DeviceEntry entry);
std::vector<std::string> available_devices();
// Every registered kind of device, available here or not ("interp" last).
std::vector<std::string> device_kinds();
// The device named `name` ("cuda", "cuda:1"), created on first use; throws
// tl::Error naming the available devices when it is unknown or unavailable,
// and how many there are when the index is past the last.
std::shared_ptr<DeviceImpl> get_device(std::string_view name);
// The kind of device ("interp", or a back end's) whose entry gives DLPack
// device type `type`, or "" when none; the type an entry of `kind` gives
// (0 when none).
std::string device_kind_of_dlpack(int type);
int dlpack_device_type_of(std::string_view kind);

// Checks `args` against `k.params` and converts them; throws tl::Error
// naming `where` (the launching line), the argument, the expected type and
// what was found.
std::vector<LaunchArg> check_launch_args(const KernelImpl& k, const DeviceImpl& dev, const std::vector<Arg>& args,
                                         const std::source_location& where);
// Checks `grid` against Grid's limits (the same on every device).
void check_grid(const KernelImpl& k, Grid grid, const std::source_location& where);
// "file:line" of `where`, for messages. (Made only when there is an error:
// a launch that passes its checks copies no file name.)
inline std::string where_str(const std::source_location& where) {
  return ir::Loc{where.file_name(), int(where.line())}.str();
}

}  // namespace tl::detail
