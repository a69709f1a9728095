// What sits behind tl::Device and tl::Buffer: the abstract device every
// back end implements (the interpreter here; the GPU devices of backends/,
// loaded through dlopen), the buffer record, and the registry that maps device names to
// implementations. Devices are process-wide singletons, so two
// Device::get("interp") calls share memory and buffers.
#pragma once

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

struct DeviceImpl : std::enable_shared_from_this<DeviceImpl> {
  virtual ~DeviceImpl() = default;
  virtual std::string name() const = 0;
  // Device memory; addresses are opaque 64-bit numbers to the host.
  virtual uint64_t alloc(size_t bytes) = 0;
  virtual void free(uint64_t address) = 0;
  virtual void copy_to_device(uint64_t dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, uint64_t src, size_t bytes) = 0;
  // Runs (or enqueues) `k` over `grid`; args are already checked. A grid
  // with a zero dimension never reaches here.
  virtual void launch(const KernelImpl& k, Grid grid, const std::vector<LaunchArg>& args) = 0;
  virtual void synchronize() = 0;
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
};

struct BufferImpl {
  std::shared_ptr<DeviceImpl> device;
  uint64_t address = 0;
  DType dtype = DType::f32;
  size_t size = 0;  // elements
  BufferImpl(std::shared_ptr<DeviceImpl> d, DType t, size_t n);
  BufferImpl(const BufferImpl&) = delete;
  ~BufferImpl();
  size_t bytes() const { return size * size_t(byte_size(dtype)); }
};

// The registry. Entries are tried in registration order for Device::get("");
// the first available one wins (GPU back ends register before the
// interpreter, which is always available).
struct DeviceEntry {
  std::string name;
  std::function<bool()> available;                      // e.g. a driver loads and finds a GPU
  std::function<std::shared_ptr<DeviceImpl>()> create;  // called once, on first use
  std::function<std::string()> why_unavailable;         // optional: the reason, for the error message
};

// The entry of a GPU device whose driver loads through `load` (which throws
// tl::Error saying why it cannot): available when `available` says so, the
// reason being the message `load` throws.
template <class Device>
DeviceEntry driver_device_entry(std::string name, std::function<bool()> available, std::function<void()> load) {
  DeviceEntry e;
  e.name = std::move(name);
  e.available = std::move(available);
  e.create = []() -> std::shared_ptr<DeviceImpl> { return std::make_shared<Device>(); };
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
// The device named `name`, created on first use; throws tl::Error naming the
// available devices when it is unknown or unavailable.
std::shared_ptr<DeviceImpl> get_device(std::string_view name);

// Checks `args` against `k.params` and converts them; throws tl::Error
// naming `where` (the launching line), the argument, the expected type and
// what was found.
std::vector<LaunchArg> check_launch_args(const KernelImpl& k, const DeviceImpl& dev, const std::vector<Arg>& args,
                                         const ir::Loc& where);
// Checks `grid` against Grid's limits (the same on every device).
void check_grid(const KernelImpl& k, Grid grid, const ir::Loc& where);

}  // namespace tl::detail
