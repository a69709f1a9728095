// GB/s of row-wise softmax and layernorm forward over rows of 1024 to 32768
// elements, bf16 and f32, on the best device present, with a copy kernel as
// the ceiling. Bytes counted: each input element read once and each output
// written once (weights and bias are negligible). Two forms of each kernel
// (bench/norm_kernels.h): one program a row, and persistent programs swept
// over pipelining depth, programs per SM and warps. bench/compare_norms.py
// measures torch and Triton (the same two forms) on the same shapes, and
// bench/summarize_norms.py puts them side by side.
//
//   bench_norms --benchmark_format=json --benchmark_out=norms.json
// TILEDSL_BENCH_ELEMS sets the elements per matrix (default 2^25).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <random>

#include "bench_common.h"
#include "norm_kernels.h"

namespace {

using bench::device;

int64_t total_elements() {
  const char* e = std::getenv("TILEDSL_BENCH_ELEMS");
  return e ? std::atoll(e) : int64_t(1) << 25;
}

template <class T>
tl::Buffer random_buffer(size_t n) {
  return bench::random_buffer<T>(n, 2.0f);
}

// The rows every benchmark of one element type reads (made once: filling
// 2^25 random numbers takes longer than the measurements).
template <class T>
const tl::Buffer& input_rows() {
  static tl::Buffer x = random_buffer<T>(size_t(total_elements()));
  return x;
}

void report(benchmark::State& state, double ms, double bytes) { bench::report_bandwidth(state, ms, bytes); }

// Times a compiled softmax (out, in, stride, n[, rows]) or layernorm (out,
// in, weight, bias, stride, n, eps[, rows]) kernel over rows of n: one
// program a row, or (programs > 0, the persistent forms, which take the
// row count) that many programs walking the rows.
// Times `launch` (bytes moved by one), after one untimed launch that
// compiles it: a launch that fails there (a configuration the device cannot
// run) marks the benchmark skipped with the reason instead of ending the
// program in std::terminate.
void time_launches(benchmark::State& state, const std::function<void()>& launch, double bytes) {
  try {
    launch();
    device().synchronize();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  report(state, bench::median_ms(state, [&] { return device().time_ms(launch, 20); }), bytes);
}

template <class T>
void time_softmax(benchmark::State& state, const tl::Kernel& k, int n, int programs = 0) {
  const int rows = int(total_elements() / n);
  const tl::Buffer& x = input_rows<T>();
  auto y = device().alloc<T>(size_t(rows) * n);
  auto launch = [&] {
    if (programs > 0) device()(k, tl::Grid{uint32_t(std::min(programs, rows))}, y, x, n, n, rows);
    else device()(k, tl::Grid{uint32_t(rows)}, y, x, n, n);
  };
  time_launches(state, launch, 2.0 * rows * n * sizeof(T));
}

template <class T>
void time_layernorm(benchmark::State& state, const tl::Kernel& k, int n, int programs = 0) {
  const int rows = int(total_elements() / n);
  const tl::Buffer& x = input_rows<T>();
  auto w = random_buffer<T>(n), b = random_buffer<T>(n);
  auto y = device().alloc<T>(size_t(rows) * n);
  auto launch = [&] {
    if (programs > 0) device()(k, tl::Grid{uint32_t(std::min(programs, rows))}, y, x, w, b, n, n, 1e-5f, rows);
    else device()(k, tl::Grid{uint32_t(rows)}, y, x, w, b, n, n, 1e-5f);
  };
  time_launches(state, launch, 2.0 * rows * n * sizeof(T));
}

template <class T, int BLOCK>
tl::Kernel softmax_kernel(int warps) {
  return tl::compile(bench::softmax_fwd<T, BLOCK>, {.name = "softmax", .num_warps = warps});
}
template <class T, int BLOCK>
tl::Kernel layernorm_kernel(int warps) {
  return tl::compile(bench::layernorm_fwd<T, BLOCK>, {.name = "layernorm", .num_warps = warps});
}

template <class T, int BLOCK>
void softmax(benchmark::State& state) {
  time_softmax<T>(state, softmax_kernel<T, BLOCK>(bench::warps_for(BLOCK)), BLOCK);
}

// The same softmax with num_warps from the benchmark's argument: how many
// warps a row wants (bench::warps_for is the default choice).
template <class T, int BLOCK>
void softmax_warps(benchmark::State& state) {
  time_softmax<T>(state, softmax_kernel<T, BLOCK>(int(state.range(0))), BLOCK);
}

template <class T, int BLOCK>
void layernorm(benchmark::State& state) {
  time_layernorm<T>(state, layernorm_kernel<T, BLOCK>(bench::layernorm_warps_for(BLOCK)), BLOCK);
}

// Layernorm with num_warps from the argument (as softmax_warps).
template <class T, int BLOCK>
void layernorm_warps(benchmark::State& state) {
  time_layernorm<T>(state, layernorm_kernel<T, BLOCK>(int(state.range(0))), BLOCK);
}

// Persistent forms: arguments (programs per multiprocessor, warps), each
// program walking rows with the next rows' loads STAGES - 1 ahead. With
// CTAS > 1 a program is a cluster of that many CTAs (each holding a part
// of the row), so there are CTAS times fewer programs.
template <class T, int BLOCK, int STAGES, int CTAS = 1>
void softmax_persistent(benchmark::State& state) {
  auto k = tl::compile(bench::softmax_fwd_persistent<T, BLOCK, STAGES>,
                       {.name = "softmax_persistent", .num_warps = int(state.range(1)), .num_ctas = CTAS});
  time_softmax<T>(state, k, BLOCK, std::max(1, int(state.range(0)) * device().processor_count() / CTAS));
}

template <class T, int BLOCK, int STAGES, int CTAS = 1>
void layernorm_persistent(benchmark::State& state) {
  auto k = tl::compile(bench::layernorm_fwd_persistent<T, BLOCK, STAGES>,
                       {.name = "layernorm_persistent", .num_warps = int(state.range(1)), .num_ctas = CTAS});
  time_layernorm<T>(state, k, BLOCK, std::max(1, int(state.range(0)) * device().processor_count() / CTAS));
}

template <class T>
void copy(benchmark::State& state) {
  constexpr int BLOCK = 4096;
  const int n = int(total_elements());
  auto k = tl::compile(bench::copy<T, BLOCK>, {.name = "copy", .num_warps = 4});
  auto x = random_buffer<T>(n);
  auto y = device().alloc<T>(n);
  double ms = bench::median_ms(state, [&] { return device().time_ms([&] { device()(k, tl::Grid{uint32_t(n / BLOCK)}, y, x, n); }, 20); });
  report(state, ms, 2.0 * n * sizeof(T));
}

// Cold compile of the bf16 softmax (N = 4096): trace, then the first launch
// (codegen, PTX -> binary, load). The kernel has a name of its own, so no
// other benchmark of the run has compiled it; run with an empty
// TILEDSL_CACHE_DIR (scripts/gpu-run.sh does) so the disk cache misses too.
void softmax_cold_compile(benchmark::State& state) {
  for (auto _ : state) {
    tl::Device& dev = device();
    auto x = dev.alloc<tl::bf16>(4096), y = dev.alloc<tl::bf16>(4096);
    auto before = dev.compile_stats();
    auto t0 = std::chrono::steady_clock::now();
    auto k = tl::compile(bench::softmax_fwd<tl::bf16, 4096>, {.name = "softmax_cold", .num_warps = 16});
    auto t1 = std::chrono::steady_clock::now();
    dev(k, tl::Grid{1}, y, x, 4096, 4096);
    dev.synchronize();
    auto t2 = std::chrono::steady_clock::now();
    auto after = dev.compile_stats();
    double trace_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    double total_ms = std::chrono::duration<double, std::milli>(t2 - t0).count();
    state.SetIterationTime(total_ms / 1e3);
    state.counters["trace_ms"] = trace_ms;
    state.counters["codegen_ms"] = after.codegen_ms - before.codegen_ms;
    state.counters["link_ms"] = after.link_ms - before.link_ms;
    state.counters["load_ms"] = after.load_ms - before.load_ms;
    state.counters["total_ms"] = total_ms;
  }
}

#define NORM_SIZES(fn, T)                                                                             \
  BENCHMARK(fn<T, 1024>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);              \
  BENCHMARK(fn<T, 2048>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);              \
  BENCHMARK(fn<T, 4096>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);              \
  BENCHMARK(fn<T, 8192>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);              \
  BENCHMARK(fn<T, 16384>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);             \
  BENCHMARK(fn<T, 32768>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);

BENCHMARK(copy<tl::bf16>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
BENCHMARK(copy<float>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
NORM_SIZES(softmax, tl::bf16)
NORM_SIZES(softmax, float)
NORM_SIZES(layernorm, tl::bf16)
NORM_SIZES(layernorm, float)
// One iteration: a second one would find the kernel in the in-memory cache.
BENCHMARK(softmax_warps<tl::bf16, 8192>)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->UseManualTime()->Iterations(3);
BENCHMARK(softmax_warps<tl::bf16, 16384>)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->UseManualTime()->Iterations(3);
BENCHMARK(softmax_warps<tl::bf16, 32768>)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->UseManualTime()->Iterations(3);
BENCHMARK(layernorm_warps<tl::bf16, 16384>)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->UseManualTime()->Iterations(3);
BENCHMARK(layernorm_warps<tl::bf16, 32768>)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->UseManualTime()->Iterations(3);
BENCHMARK(layernorm_warps<float, 16384>)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->UseManualTime()->Iterations(3);
BENCHMARK(layernorm_warps<float, 32768>)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->UseManualTime()->Iterations(3);
// Depth 2 and 3; 1, 2 or 4 programs per multiprocessor; N / 1024 warps (the
// one-program-a-row default) and half that.
#define PERSISTENT(fn, T, N)                                                                             \
  BENCHMARK(fn<T, N, 2>)->ArgsProduct({{1, 2, 4}, {std::max(4, N / 2048), std::clamp(N / 1024, 4, 32)}}) \
      ->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);                                 \
  BENCHMARK(fn<T, N, 3>)->ArgsProduct({{1, 2, 4}, {std::max(4, N / 2048), std::clamp(N / 1024, 4, 32)}}) \
      ->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
#define PERSISTENT_SIZES(fn, T) PERSISTENT(fn, T, 4096) PERSISTENT(fn, T, 8192) PERSISTENT(fn, T, 16384) PERSISTENT(fn, T, 32768)
PERSISTENT_SIZES(softmax_persistent, tl::bf16)
PERSISTENT_SIZES(softmax_persistent, float)
PERSISTENT_SIZES(layernorm_persistent, tl::bf16)
PERSISTENT_SIZES(layernorm_persistent, float)
// The longest rows split over clusters of 2 CTAs (sm_90): half a row, and
// half the weights, per CTA (docs/perf.md, run 32).
#define CLUSTER(fn, T)                                                                 \
  BENCHMARK(fn<T, 32768, 2, 2>)->ArgsProduct({{1, 2}, {8, 16}})->UseManualTime()->Iterations(3) \
      ->Unit(benchmark::kMicrosecond);
CLUSTER(softmax_persistent, tl::bf16)
CLUSTER(softmax_persistent, float)
CLUSTER(layernorm_persistent, tl::bf16)
CLUSTER(layernorm_persistent, float)
BENCHMARK(softmax_cold_compile)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
