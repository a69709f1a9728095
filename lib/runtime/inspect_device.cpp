// The inspector: a device that runs nothing. Each launch prints one stage
// of the kernel (Tile IR, GPU IR with layouts, LLVM IR, or assembly) as
// compiled for a named target and specialized for that launch's arguments,
// once per kernel and specialization: per kernel cache key, as a GPU device
// compiles, so two kernels that share a name but differ in IR or options
// are both printed. Buffers are host memory, so programs
// run unchanged; their results are meaningless. This is how the examples'
// --target/--emit work on a machine with no GPU.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <set>

#include "codegen/compile.h"
#include "runtime/compiler.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"
#include "runtime/launcher.h"

namespace tl {

namespace {

class InspectDevice final : public detail::DeviceImpl {
 public:
  InspectDevice(std::string target, codegen::Stage stage) : target_(std::move(target)), stage_(stage) {}
  std::string name() const override { return "inspect:" + target_; }
  std::string target() const override { return target_; }
  std::string hardware() const override { return "an inspector for " + target_; }

  uint64_t alloc(size_t bytes) override {
    // Rounded up to 256 bytes and one more block: a size near 2^64 would
    // wrap around to a small block (an inspector runs nothing, but its
    // buffers take copies from the host all the same).
    if (bytes > SIZE_MAX - 512)
      throw Error(name() + ": cannot allocate " + std::to_string(bytes) + " bytes: more than the host can address");
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!p) throw Error("inspector: out of host memory for " + std::to_string(bytes) + " bytes");
    return uint64_t(reinterpret_cast<uintptr_t>(p));
  }
  void free(uint64_t address) override { std::free(reinterpret_cast<void*>(uintptr_t(address))); }
  void copy_to_device(uint64_t dst, const void* src, size_t bytes) override {
    std::memcpy(reinterpret_cast<void*>(uintptr_t(dst)), src, bytes);
  }
  void copy_to_host(void* dst, uint64_t src, size_t bytes) override {
    std::memcpy(dst, reinterpret_cast<const void*>(uintptr_t(src)), bytes);
  }
  void synchronize() override {}

  void launch(const detail::KernelImpl& k, Grid, const std::vector<detail::LaunchArg>& args, void*) override {
    codegen::Specialization spec = runtime::specialize(args);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!printed_.insert(runtime::kernel_cache_key(k, spec.key(), target_)).second) return;
    }
    // Compiled first, then written in one piece under the lock: kernels
    // compiled by several threads at once must not interleave their text.
    std::string text = "// kernel '" + k.name + "' for " + target_ + ", arguments specialized as [" + spec.key() +
                       "]\n" + runtime::require_compiler("Device::inspector").emit_stage(k, spec, target_, stage_) + "// end of kernel '" + k.name + "'\n";
    std::lock_guard<std::mutex> lock(mu_);
    std::cout << text << std::flush;
  }

 private:
  std::string target_;
  codegen::Stage stage_;
  std::mutex mu_;
  std::set<runtime::CacheKey> printed_;
};

}  // namespace

Device Device::inspector(const std::string& target, const std::string& stage) {
  codegen::Stage s;
  if (!codegen::parse_stage(stage, s)) throw Error("unknown stage '" + stage + "' (expected tile, gpu, llvm or asm)");
  if (target == "interp") {
    if (s != codegen::Stage::Tile) throw Error("Device::inspector: the interpreter runs Tile IR: only the stage \"tile\" applies to target "
                  "\"interp\", found \"" + stage + "\"");
  } else if (const auto& c = runtime::require_compiler("Device::inspector"); !c.is_known_target(target)) {
    std::string known;
    for (const auto& t : c.available_targets()) known += " " + t;
    throw Error("unknown target '" + target + "' (expected interp or one of:" + known + ")");
  }
  return Device(std::make_shared<InspectDevice>(target, s));
}

}  // namespace tl
