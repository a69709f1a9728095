// The launch path every GPU device shares, from a launch's arguments to a
// kernel loaded by the driver:
//
//   launch args --specialize--> Specialization
//   a binary compiled ahead of time that fits, if the kernel has them
//   (runtime/precompiled.h), else:
//   (Tile IR digest, options, specialization, target, version) --> CacheKey
//   loaded-kernel map --miss--> kernel cache (memory, then disk)
//   --miss--> codegen::compile --the driver's link, if any--> binary --> cache
//   binary --the driver's load--> function handle
//
// with the counters and timings of CompileStats (codegen, link, load;
// tracing is not included). One piece, so that the devices cannot drift
// apart in their cache keys, statistics or recovery from a cached binary
// the driver refuses. What only a driver knows (how a binary is linked and
// loaded, the launch call itself) stays in backends/, behind GpuDriver, so
// that nothing here needs a vendor header.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/compile.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"

namespace tl::runtime {

// The facts of the launch arguments that the compiled code may rely on, as
// Triton specializes: a pointer's alignment, an integer's divisibility by 16
// (or by 8, a class Triton does not have) or equality to 1; none for a float.
codegen::Specialization specialize(const std::vector<detail::LaunchArg>& args);

// What a launcher asks of the GPU and driver it compiles for.
struct GpuDriver {
  std::string device;         // the name its cache entries carry (the device's name)
  std::string target;         // what codegen::compile compiles for (a registered target)
  std::string gpu_name;       // the GPU's name, for messages
  int max_shared_bytes = 0;   // dynamic shared memory a block may use
  std::string shared_memory;  // what messages call it, in the vendor's words
  // The binary the driver loads, made from a compile's assembly; timed as
  // CompileStats::link_ms. Empty when codegen::compile makes the binary
  // itself.
  std::function<Bytes(const detail::KernelImpl&, const codegen::CompiledKernel&)> link;
  // What `link` runs when it is not the driver's own (a part of the cache
  // key, so that binaries of one never stand in for the other's): "" or,
  // say, "ptxas V13.0.88"; empty (no function) for "". Asked once, when
  // the launcher first needs a cache key: finding the linker may run a
  // program, which a process launching only kernels compiled ahead of time
  // never does.
  std::function<std::string()> linker;
  // Loads `e.binary` and finds `e.entry` in it: the driver's function
  // handle. When the driver refuses the binary itself and `may_refuse` is
  // set, returns nullptr (the launcher then evicts the cached binary and
  // compiles it again); every other failure throws tl::Error in the
  // driver's words.
  std::function<void*(const detail::KernelImpl&, const CachedBinary& e, bool may_refuse)> load;
};

// A kernel loaded by a driver: what its launch call needs.
struct LoadedKernel {
  void* function = nullptr;  // the driver's function handle
  int threads = 0;           // block size
  int shared_bytes = 0;      // dynamic shared memory per block
  std::vector<TensorMapParam> tensor_maps;  // passed after the arguments
};

// One device's launch path (see the top of this file). Thread-safe: a key is
// loaded at most once per launcher, and concurrent launches of a key that
// is being loaded wait for it.
class Launcher {
 public:
  // `cache`: where compiled binaries are kept (a test's own cache, say).
  explicit Launcher(GpuDriver driver, KernelCache& cache = KernelCache::global());
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // `k` specialized for `args`, loaded: from this launcher's map, else from
  // the kernel cache, else compiled (and cached). A launch after the first
  // of a kernel and specialization finds it by the kernel's id and the
  // specialization's key, without making the cache key (the options' text
  // and a SHA-256 over all of it: 1.5 us a launch). Throws tl::Error when the
  // kernel needs more shared memory than the GPU has, and whatever the
  // compile or the driver throws.
  std::shared_ptr<const LoadedKernel> load(const detail::KernelImpl& k, const std::vector<detail::LaunchArg>& args);

  // The counters and timings since the launcher was made.
  CompileStats stats() const;

 private:
  std::shared_ptr<const LoadedKernel> load_binary(const detail::KernelImpl& k, const codegen::Specialization& spec,
                                                  const CacheKey& key);
  CachedBinary compile(const detail::KernelImpl& k, const codegen::Specialization& spec);
  std::shared_ptr<const LoadedKernel> load_precompiled(const detail::KernelImpl& k,
                                                       const detail::PrecompiledEntry& p);
  void check_shared_bytes(const detail::KernelImpl& k, const CachedBinary& e) const;
  static std::shared_ptr<LoadedKernel> loaded_kernel(void* function, const CachedBinary& e);
  // What the cache keys name the target by: the target, and the linker's
  // name where there is one (GpuDriver::linker, asked once).
  const std::string& key_target();

  const GpuDriver driver_;
  std::once_flag key_target_once_;
  std::string key_target_;
  KernelCache& cache_;
  OnceMap<CacheKey, LoadedKernel> loaded_;
  // Precompiled binaries loaded, by their payload's address.
  OnceMap<const void*, LoadedKernel> precompiled_;
  // What `loaded_` holds, by (KernelImpl::id, Specialization::key()).
  std::mutex by_kernel_mutex_;
  std::map<std::pair<uint64_t, std::string>, std::shared_ptr<const LoadedKernel>> by_kernel_;
  mutable std::mutex stats_mutex_;
  CompileStats stats_;
};

// The launch arguments as a driver's kernel-parameter array (the `void**`
// a driver's launch call takes): each in an 8-byte slot at
// its parameter's own width, of which the driver copies as many bytes as
// the kernel declares; then the kernel's tensor maps, 128 bytes each,
// encoded by `encode` from the arguments' values (a pointer's: its
// address; the device's encoder throws naming a rule they break). `device`
// names the device in the error for a type that cannot be passed, or for
// maps without an encoder.
class KernelParams {
 public:
  KernelParams(const std::vector<detail::LaunchArg>& args, std::string_view device,
               const std::vector<TensorMapParam>& maps = {},
               const std::function<TensorMapBytes(const TensorMapParam&, const std::vector<int64_t>&)>& encode = {});
  // The slots point into this object, which therefore stays where it is.
  KernelParams(const KernelParams&) = delete;
  KernelParams& operator=(const KernelParams&) = delete;

  void** data() { return pointers_.data(); }

 private:
  std::vector<std::array<uint8_t, 8>> slots_;
  std::vector<TensorMapBytes> maps_;
  std::vector<void*> pointers_;
};

// A launch, for the message of a driver's launch error: "kernel 'k', grid
// (x, y, z), 128 threads, 4096 bytes of shared memory" (`shared_memory`
// names the last).
std::string describe_launch(const detail::KernelImpl& k, uint64_t grid_x, uint32_t grid_y, uint32_t grid_z,
                            const LoadedKernel& loaded, std::string_view shared_memory);

}  // namespace tl::runtime
