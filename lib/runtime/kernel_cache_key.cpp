// The kernel cache key of a traced kernel (see kernel_cache.h): the Tile IR
// text's digest and every compile option, with the specialization and the
// target. Apart from kernel_cache.cpp because it needs the IR printer, while
// the cache itself (and the fuzzer that drives its entry reader) does not.
#include <cstdlib>
#include <mutex>

#include "ir/printer.h"
#include "runtime/kernel.h"
#include "runtime/kernel_cache.h"

namespace tl::runtime {

CacheKey kernel_cache_key(const detail::KernelImpl& kernel, std::string_view specialization, std::string_view target) {
  // The IR does not change after tracing, so its digest is computed once.
  static std::mutex memo_mutex;
  std::string ir_digest;
  {
    std::lock_guard lock(memo_mutex);
    ir_digest = kernel.ir_digest;
  }
  if (ir_digest.empty()) {
    if (!kernel.fn) throw Error("kernel '" + kernel.name + "' has no function to compile");
    // Source locations are left out (the same kernel traced from another
    // file or checkout compiles to the same code), except where the code
    // holds them: a failed device_assert prints its file and line.
    std::string text = ir::print(*kernel.fn, {.locations = false});
    ir::walk(kernel.fn->body, [&](ir::Op* o) {
      if (o->kind == ir::OpKind::Assert) text += "\nassert at " + o->loc.str();
    });
    ir_digest = Sha256::hex(Sha256::of(text.data(), text.size()));
    std::lock_guard lock(memo_mutex);
    kernel.ir_digest = ir_digest;
  }
  // Every CompileOptions field that can change the generated code. (A new
  // option must be added here, or kernels differing in it would share code.)
  const CompileOptions& o = kernel.options;
  std::string options = "name=" + o.name + ";entry=" + kernel.name + ";num_warps=" + std::to_string(o.num_warps) +
                        ";num_stages=" + std::to_string(o.num_stages) + ";fp_fusion=" + std::to_string(o.fp_fusion) +
                        ";num_ctas=" + std::to_string(o.num_ctas) + ";warp_specialize=" +
                        (o.warp_specialize ? std::to_string(*o.warp_specialize) : std::string("auto")) +
                        (o.flush_denormals ? ";flush_denormals=1" : "") +
                        (o.programs_per_sm != 1 ? ";programs_per_sm=" + std::to_string(o.programs_per_sm) : "");
  // A GPU pass switched off or on for timing it (TILEDSL_GPU_PASSES, read
  // by the compiler's codegen::gpu_pass_changes) changes the code too.
  if (const char* passes = std::getenv("TILEDSL_GPU_PASSES"); passes && *passes) options += ";gpu_passes=" + std::string(passes);
  return CacheKey::make(ir_digest, options, specialization, target);
}


}  // namespace tl::runtime
