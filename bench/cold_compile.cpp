// Cold compile of the gemm and attention examples' default kernels, one
// figure a process: `bench_cold_compile gemm|attention` prints one JSON
// line with the device's creation (the driver context, reported apart),
// the trace, and the first launch broken into the compile's stages (GPU
// passes, lowering to LLVM IR, LLVM's optimization, assembly emission, the
// link of PTX by ptxas or the driver's JIT, module load) and the rest (argument checks,
// tensor maps, the launch itself). Run it in fresh processes with
// CUDA_CACHE_DISABLE=1 and TILEDSL_ALWAYS_COMPILE=1 (or an empty
// TILEDSL_CACHE_DIR); without them the same command times a warm start
// from the disk cache. bench/compare_cold_compile.py runs it beside
// Triton's first call of its GEMM and attention kernels.
//
// Not a Google Benchmark: a second iteration in one process would find the
// kernel in memory.
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "../examples/kernels/attention.h"
#include "../examples/kernels/gemm.h"
#include "tiledsl/tiledsl.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "gemm";
  if (which != "gemm" && which != "attention") {
    std::fprintf(stderr, "usage: %s gemm|attention\n", argv[0]);
    return 2;
  }
  try {
    auto t0 = Clock::now();
    tl::Device dev = tl::Device::get();
    dev.synchronize();
    auto t1 = Clock::now();
    // Inputs (not timed): a 1024^3 bf16 gemm; attention of 1 x 8 heads,
    // 1024 keys, head dim 128.
    const int M = 1024, N = 1024, K = 1024, heads = 8, seq = 1024, D = 128;
    tl::Buffer a, b, c, q, k, v, o;
    if (which == "gemm") {
      a = dev.alloc<tl::bf16>(size_t(M) * K), b = dev.alloc<tl::bf16>(size_t(K) * N), c = dev.alloc<tl::bf16>(size_t(M) * N);
    } else {
      q = dev.alloc<tl::bf16>(size_t(heads) * seq * D), k = dev.alloc<tl::bf16>(size_t(heads) * seq * D);
      v = dev.alloc<tl::bf16>(size_t(heads) * seq * D), o = dev.alloc<tl::bf16>(size_t(heads) * seq * D);
    }
    dev.synchronize();
    std::string config;
    std::function<void()> launch;
    auto t2 = Clock::now();
    tl::Kernel gemm;
    if (which == "gemm") {
      kernels::GemmConfig cfg = kernels::default_gemm_config(dev.target());
      config = cfg.str();
      gemm = kernels::compile_gemm<tl::bf16>(cfg);
      launch = [&, cfg] { dev(gemm, kernels::gemm_grid(cfg, M, N, dev), a, b, c, M, N, K, K, 1, N, 1, N, 1); };
    } else {
      kernels::AttentionConfig cfg = kernels::attention_config(D, dev.target());
      config = cfg.str();
      launch = kernels::with_tiles(cfg, [&]<int BM, int BN>() -> std::function<void()> {
        using Kern = kernels::AttentionKernel<tl::bf16, BM, BN, D, false>;
        auto kern = std::make_shared<Kern>(cfg, tl::CompileOptions{.name = "attention"});  // kept by the launch
        return [&, kern] { (*kern)(dev, q, k, v, o, 1, heads, seq, 0.088f); };
      });
    }
    auto t3 = Clock::now();
    launch();
    dev.synchronize();
    auto t4 = Clock::now();
    tl::CompileStats s = dev.compile_stats();
    double stages = s.passes_ms + s.lower_ms + s.optimize_ms + s.emit_ms + s.link_ms + s.load_ms;
    std::printf(
        "{\"kernel\": \"%s\", \"config\": \"%s\", \"target\": \"%s\", \"hardware\": \"%s\", \"compiles\": %lld, \"cache_hits\": %lld, "
        "\"context_ms\": %.3f, \"trace_ms\": %.3f, \"passes_ms\": %.3f, \"lower_ms\": %.3f, \"optimize_ms\": %.3f, "
        "\"emit_ms\": %.3f, \"jit_link_ms\": %.3f, \"load_ms\": %.3f, \"other_ms\": %.3f, \"first_launch_ms\": %.3f, "
        "\"trace_to_loaded_ms\": %.3f}\n",
        which.c_str(), config.c_str(), dev.target().c_str(), dev.hardware().c_str(), (long long)s.compiles, (long long)s.cache_hits, ms(t0, t1),
        ms(t2, t3), s.passes_ms, s.lower_ms, s.optimize_ms, s.emit_ms, s.link_ms, s.load_ms, ms(t3, t4) - stages,
        ms(t3, t4), ms(t2, t4));
  } catch (const tl::Error& e) {
    std::fprintf(stderr, "bench_cold_compile: %s\n", e.what());
    return 1;
  }
  return 0;
}
