// The "interp" device: allocations are host memory behind interp::Memory's
// windowed addresses (so the interpreter checks every access against its
// pointer's own buffer), copies are memcpy through Memory::host, and a
// launch compiles the kernel's function and runs it over the grid before
// returning. Wrapped host memory (Buffer::wrap, from_dlpack) gets a window
// of its own like an allocation. Every launch and copy is done when it
// returns, so streams and events keep DeviceImpl's defaults: a stream is
// in order because nothing is ever pending on it.
#include "interp/interp_device.h"

#include <cstring>

#include "interp/interp.h"
#include "interp/memory.h"

namespace tl::interp {

namespace {

class InterpDevice final : public detail::DeviceImpl {
 public:
  std::string name() const override { return "interp"; }
  uint64_t alloc(size_t bytes) override { return memory_.allocate(bytes); }
  void free(uint64_t address) override { memory_.release(address); }
  uint64_t wrap(void* pointer, size_t bytes) override { return memory_.adopt(pointer, bytes); }
  void unwrap(uint64_t address) override { memory_.release(address); }
  void* data_pointer(uint64_t address, size_t bytes) override { return memory_.host(address, bytes); }
  void copy_to_device(uint64_t dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(memory_.host(dst, bytes), src, bytes);
  }
  void copy_to_host(void* dst, uint64_t src, size_t bytes) override {
    if (bytes) std::memcpy(dst, memory_.host(src, bytes), bytes);
  }
  void launch(const detail::KernelImpl& k, Grid grid, const std::vector<detail::LaunchArg>& args, void*) override {
    if (!k.fn) throw Error("interp: kernel '" + k.name + "' has no function");
    // Compiling is linear in the number of ops, cheap next to running.
    auto prog = compile(*k.fn);
    std::vector<ArgValue> values;
    values.reserve(args.size());
    for (const auto& a : args) {
      if (a.type.is_ptr) values.push_back(ArgValue::integer(int64_t(a.address)));
      else if (is_float(a.type.dtype)) values.push_back(ArgValue::floating(a.f));
      else values.push_back(ArgValue::integer(a.i));
    }
    run(*prog, grid, values, memory_);
  }
  void synchronize() override {}  // launches complete before they return

 private:
  Memory memory_;
};

}  // namespace

std::shared_ptr<detail::DeviceImpl> make_interp_device() { return std::make_shared<InterpDevice>(); }

}  // namespace tl::interp
