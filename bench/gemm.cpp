// TFLOP/s of bf16 GEMM (f32 accumulation, bf16 C, all row-major) on the
// best device present: the tiledsl kernel of examples/kernels/gemm.h and,
// on the same buffers in the same process, cuBLAS (cublasGemmEx through
// dlopen, bench/cublas.h). FLOPs counted: 2 * M * N * K; TFLOP/s and ms
// are the median of the benchmark's three timings (bench::median_ms), each
// the mean of 10-200 launches. Square sizes 1024
// to 8192 and transformer-like shapes (M tokens x hidden/MLP widths).
// bench/compare_gemm.py measures torch.matmul and a Triton GEMM on the same
// shapes; bench/summarize_gemm.py puts the two side by side.
//
//   bench_gemm --benchmark_format=json --benchmark_out=gemm.json
//
// Environment:
//   TILEDSL_GEMM_CONFIG  comma-separated tile configurations to time, each
//                        BMxBNxBK:warps:stages[:desc|:persistent|:streamk][:cN][:xN][:ws|:nows] (:desc:
//                        the kernel through tensor descriptors, TMA on
//                        sm_90; :ws / :nows demand or forbid warp
//                        specialization; :persistent the persistent
//                        kernel; :streamk it with the last round's tiles
//                        split along K; :cN a program over a cluster of N CTAs; :xN N
//                        programs a multiprocessor); default the example's, then it through
//                        descriptors at 4 stages without and with warp
//                        specialization, then the persistent kernel at 3
//                        stages without and with it (docs/perf.md run 52);
//                        e.g.
//                        128x128x64:8:3,128x256x64:8:4,256x128x64:8:4
//   TILEDSL_GEMM_SHAPES  comma-separated MxNxK to time instead of the defaults
//   TILEDSL_GEMM_PAIRED  configurations timed in turns with cuBLAS (gemm_paired)
//   TILEDSL_DEVICE       the device (e.g. interp: tiny default shapes, no cuBLAS)
//   TILEDSL_CUBLAS       the cuBLAS library to load (see bench/cublas.h)
//
// gemm_paired/MxNxK/<config>: the target's default configuration (or each
// of TILEDSL_GEMM_PAIRED's, comma-separated) and cuBLAS timed in turns,
// six pairs, their medians and the median ratio.
//
// Names: gemm_tiledsl/MxNxK/<config>, gemm_tiledsl/MxNxK/autotuned (the
// pick of tl::Autotuner over those configurations and the example's
// candidates, kernels::gemm_tune_configs) and
// gemm_cublas/MxNxK; the label says how each was compiled, which
// configuration the tuner picked, or which library ran. gemm_cublas also reports
// tl_vs_cublas: max |C_tiledsl - C_cublas| / max |C_cublas| over the whole
// output (of the last tiledsl configuration run on that shape; infinite
// when tiledsl produced a NaN), a cheap cross-check at every size.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>

#include "../examples/kernels/gemm.h"
#include "bench_common.h"
#include "tiledsl/autotune.h"
#include "cublas.h"

namespace {

using bench::device;

bool on_interp() { return device().name() == "interp"; }

struct Shape {
  int m, n, k;
  bool operator==(const Shape&) const = default;
  std::string str() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
  double flops() const { return 2.0 * m * n * k; }
};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::vector<Shape> shapes() {
  if (const char* env = std::getenv("TILEDSL_GEMM_SHAPES"); env && *env) {
    std::vector<Shape> list;
    for (const auto& text : split(env, ',')) {
      Shape s{};
      int consumed = 0;
      if (std::sscanf(text.c_str(), "%dx%dx%d%n", &s.m, &s.n, &s.k, &consumed) != 3 ||
          size_t(consumed) != text.size() || s.m < 1 || s.n < 1 || s.k < 1)
        throw tl::Error("TILEDSL_GEMM_SHAPES: expected MxNxK[,MxNxK...] with positive sizes, found '" + text + "'");
      // The kernel's offsets are i32.
      if (std::max({int64_t(s.m) * s.k, int64_t(s.k) * s.n, int64_t(s.m) * s.n}) > INT32_MAX)
        throw tl::Error("TILEDSL_GEMM_SHAPES: " + text + " has a matrix of 2^31 or more elements (offsets are i32)");
      list.push_back(s);
    }
    return list;
  }
  // The interpreter runs a GEMM at a few MFLOP/s: shapes that check the
  // benchmark's plumbing, ragged ones included.
  if (on_interp()) return {{128, 128, 128}, {100, 72, 40}};
  return {
      {1024, 1024, 1024},   {2048, 2048, 2048},   {4096, 4096, 4096},  {8192, 8192, 8192},
      // M tokens x (N, K): attention projections (4096 -> 4096), an MLP's
      // up projection (4096 -> 11008) and down projection (11008 -> 4096)
      // of a 7B-class model; a longer batch of tokens.
      {8192, 4096, 4096},   {8192, 11008, 4096},  {8192, 4096, 11008}, {16384, 4096, 4096},
      // A few tokens against a weight (decode; memory-bound: 128 MiB of B).
      {16, 8192, 8192},
  };
}

std::vector<kernels::GemmConfig> configs() {
  const char* env = std::getenv("TILEDSL_GEMM_CONFIG");
  std::vector<kernels::GemmConfig> list;
  kernels::GemmConfig desc4 = kernels::GemmConfig{}, plain4, persistent, plain_persistent;
  desc4.descriptors = plain4.descriptors = true;
  plain4.warp_specialize = plain_persistent.warp_specialize = false;
  persistent.persistent = plain_persistent.persistent = true;
  persistent.num_stages = plain_persistent.num_stages = 3;  // 4 leave no room for the epilogue's
  std::string defaults = kernels::GemmConfig{}.str() + "," + plain4.str() + "," + desc4.str() + "," +
                         plain_persistent.str() + "," + persistent.str();
  for (const auto& text : split(env && *env ? env : defaults, ','))
    list.push_back(kernels::parse_gemm_config(text));
  return list;
}

// What gemm_paired times beside cuBLAS at `s`: TILEDSL_GEMM_PAIRED's
// configurations, else the target's default for the shape (bf16).
std::vector<kernels::GemmConfig> paired_configs(const Shape& s) {
  const char* env = std::getenv("TILEDSL_GEMM_PAIRED");
  if (!env || !*env) return {kernels::default_gemm_config(device().target(), s.n, s.k, 2)};
  std::vector<kernels::GemmConfig> list;
  for (const auto& text : split(env, ',')) list.push_back(kernels::parse_gemm_config(text));
  return list;
}

// The operands of one shape, shared by every benchmark of that shape (the
// benchmarks of a shape run one after the other, so only the current
// shape's buffers are kept). c_tiledsl and c_cublas are separate outputs so
// the two results can be compared.
struct Problem {
  Shape shape;
  tl::Buffer a, b, c_tiledsl, c_cublas;
  bool tiledsl_ran = false;  // c_tiledsl holds a result
};

Problem& problem(const Shape& s) {
  static std::unique_ptr<Problem> current;
  if (!current || !(current->shape == s)) {
    current.reset();  // free the previous shape's buffers first
    auto random_bf16 = [](size_t n, uint32_t seed) {
      std::vector<tl::bf16> host(n);
      std::mt19937 rng(seed);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      for (auto& v : host) v = tl::bf16(dist(rng));
      return device().upload(host);
    };
    auto p = std::make_unique<Problem>();
    p->shape = s;
    p->a = random_bf16(size_t(s.m) * s.k, 7);  // [M, K]
    p->b = random_bf16(size_t(s.k) * s.n, 8);  // [K, N]
    p->c_tiledsl = device().alloc<tl::bf16>(size_t(s.m) * s.n);
    p->c_cublas = device().alloc<tl::bf16>(size_t(s.m) * s.n);
    current = std::move(p);
  }
  return *current;
}

// Launches per timing: about 2e13 FLOPs' worth (tens of ms at cuBLAS's
// rate), between 10 and 200; one on the interpreter.
int reps_for(const Shape& s) {
  if (on_interp()) return 1;
  return std::clamp(int(2e13 / s.flops()), 10, 200);
}

// The counters of `ms`, the median of the iterations' timings (median_ms).
void report(benchmark::State& state, double ms, const Shape& s) {
  if (ms <= 0) return;
  state.counters["TFLOP/s"] = benchmark::Counter(s.flops() / (ms / 1e3) / 1e12);
  state.counters["ms"] = ms;
}

// The stream-K configurations' partial sums and counters, shared by all.
kernels::GemmWorkspace& workspace() {
  static kernels::GemmWorkspace w;
  return w;
}

void gemm_tiledsl(benchmark::State& state, Shape s, kernels::GemmConfig cfg) {
  try {
    Problem& p = problem(s);
    tl::Kernel k = kernels::compile_gemm<tl::bf16>(cfg, "gemm");
    auto launch = [&] {
      kernels::launch_gemm(device(), k, cfg, p.a, p.b, p.c_tiledsl, s.m, s.n, s.k, s.k, 1, s.n, 1, s.n, 1, workspace());
    };
    launch();  // compiles for the device; errors surface here, before timing
    device().synchronize();
    p.tiledsl_ran = true;
    state.SetLabel("tiledsl bf16 (f32 acc) " + cfg.str() + " (BMxBNxBK:warps:stages) GROUP_M=" +
                   std::to_string(kernels::kGemmGroupM) + " on " + device().name());
    report(state, bench::median_ms(state, [&] { return device().time_ms(launch, reps_for(s)); }), s);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The configurations the autotuned benchmark chooses from: the timed list
// (TILEDSL_GEMM_CONFIG or the defaults) and the example's candidates for
// this GPU (kernels::gemm_tune_configs: narrow tiles among them).
std::vector<kernels::GemmConfig> tune_configs(const std::vector<kernels::GemmConfig>& timed) {
  std::vector<kernels::GemmConfig> list = timed;  // stream-K's workspace comes from the tuner
  for (const auto& c : kernels::gemm_tune_configs(device().target()))
    if (std::find_if(list.begin(), list.end(), [&](const auto& x) { return x.str() == c.str(); }) == list.end())
      list.push_back(c);
  return list;
}

// The gemm through tl::Autotuner (issue 15; kernels::gemm_tuner, as the
// example): the first launch of a shape times every configuration (the
// results file keeps the winner for the next process), the benchmark then
// times the winner; its label names it. When this process tuned the
// shape, model_rank_corr is Spearman's rank correlation of
// kernels::gemm_estimate_us's estimates with the measured times, and
// model_rank_of_pick the winner's place in the model's order (1: the
// model's first choice).
void gemm_autotuned(benchmark::State& state, Shape s, std::vector<kernels::GemmConfig> timed) {
  try {
    static const std::vector<kernels::GemmConfig> configs = tune_configs(timed);
    static tl::Autotuner tuner = kernels::gemm_tuner<tl::bf16>("bench_gemm", configs, device().processor_count());
    Problem& p = problem(s);
    auto grid = kernels::gemm_tune_grid(s.m, s.n, device());
    auto launch = [&] { tuner(device(), grid, p.a, p.b, p.c_tiledsl, s.m, s.n, s.k, s.k, 1, s.n, 1, s.n, 1); };
    const int64_t measured_before = tuner.measured();
    launch();  // tunes this shape (or reads its winner), then runs it
    device().synchronize();
    if (tuner.measured() > measured_before) {  // tuned here: the model's ranking of this shape
      tl::TuningReport r = tuner.last_tuning();
      state.counters["model_rank_corr"] = r.rank_correlation;
      state.counters["model_rank_of_pick"] = r.picked_model_rank;
    }
    p.tiledsl_ran = true;
    const tl::TuneConfig& pick =
        tuner.pick(device(), grid, {p.a, p.b, p.c_tiledsl, s.m, s.n, s.k, s.k, 1, s.n, 1, s.n, 1});
    state.SetLabel("tiledsl bf16 autotuned over " + std::to_string(configs.size()) +
                   " configurations: " + pick.name + " on " + device().name());
    report(state, bench::median_ms(state, [&] { return device().time_ms(launch, reps_for(s)); }), s);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// max |got - ref| / max |ref| over two bf16 buffers of one size; infinite
// when got holds a NaN.
double normwise_difference(const tl::Buffer& got, const tl::Buffer& ref) {
  auto g = got.download<tl::bf16>(), r = ref.download<tl::bf16>();
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    double gi = float(g[i]), ri = float(r[i]);
    if (std::isnan(gi)) return INFINITY;
    max_diff = std::max(max_diff, std::fabs(gi - ri));
    max_ref = std::max(max_ref, std::fabs(ri));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

// cuBLAS, or null with the benchmark skipped saying why it is not there.
const bench::Cublas* cublas_or_skip(benchmark::State& state) {
  if (device().name() != "cuda") {
    state.SkipWithError(("cuBLAS skipped: it needs the cuda device, this run uses " + device().name()).c_str());
    return nullptr;
  }
  const bench::Cublas& cublas = bench::Cublas::get();
  if (!cublas.ok()) {
    state.SkipWithError(("cuBLAS skipped: " + cublas.error()).c_str());
    return nullptr;
  }
  return &cublas;
}

void gemm_cublas(benchmark::State& state, Shape s) {
  const bench::Cublas* loaded = cublas_or_skip(state);
  if (!loaded) return;
  const bench::Cublas& cublas = *loaded;
  try {
    Problem& p = problem(s);
    const uint64_t a = p.a.device_address(), b = p.b.device_address(), c = p.c_cublas.device_address();
    bench::Cublas::Status status = bench::Cublas::kSuccess;
    // cuBLAS runs on the legacy default stream; tiledsl's device stream is
    // a blocking stream, which orders with it both ways, so the device's
    // timing events bracket the cuBLAS kernels exactly.
    auto launch = [&] {
      if (status == bench::Cublas::kSuccess) status = cublas.gemm(bench::Cublas::kR16BF, a, b, c, s.m, s.n, s.k);
    };
    launch();
    device().synchronize();
    if (status != bench::Cublas::kSuccess) {
      state.SkipWithError(("cublasGemmEx failed: " + cublas.status_name(status)).c_str());
      return;
    }
    state.SetLabel("cublasGemmEx bf16, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT; " + cublas.description());
    if (p.tiledsl_ran) state.counters["tl_vs_cublas"] = normwise_difference(p.c_tiledsl, p.c_cublas);
    double ms = bench::median_ms(state, [&] { return device().time_ms(launch, reps_for(s)); });
    if (status != bench::Cublas::kSuccess) {
      state.SkipWithError(("cublasGemmEx failed: " + cublas.status_name(status)).c_str());
      return;
    }
    report(state, ms, s);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// tiledsl at `cfg` and cuBLAS timed in turns on the same buffers, the order
// alternating from one iteration to the next, so that a clock drifting
// within the run weighs on both alike (the GPU's clock falls as it heats:
// a benchmark's last timing ran 5-10 % below the mean of its three,
// perf.md run 83). TFLOP/s: tiledsl's median; cublas_TFLOP/s: cuBLAS's;
// tl_over_cublas: the median of the iterations' ratios.
void gemm_paired(benchmark::State& state, Shape s, kernels::GemmConfig cfg) {
  const bench::Cublas* loaded = cublas_or_skip(state);
  if (!loaded) return;
  const bench::Cublas& cublas = *loaded;
  try {
    Problem& p = problem(s);
    tl::Kernel k = kernels::compile_gemm<tl::bf16>(cfg, "gemm");
    auto ours = [&] {
      kernels::launch_gemm(device(), k, cfg, p.a, p.b, p.c_tiledsl, s.m, s.n, s.k, s.k, 1, s.n, 1, s.n, 1, workspace());
    };
    const uint64_t a = p.a.device_address(), b = p.b.device_address(), c = p.c_cublas.device_address();
    bench::Cublas::Status status = bench::Cublas::kSuccess;
    auto theirs = [&] {  // on the legacy default stream, ordered with the device's (gemm_cublas)
      if (status == bench::Cublas::kSuccess) status = cublas.gemm(bench::Cublas::kR16BF, a, b, c, s.m, s.n, s.k);
    };
    ours();
    theirs();
    device().synchronize();
    state.SetLabel("tiledsl " + cfg.str() + " and cuBLAS in turns");
    std::vector<double> tl_ms, cublas_ms, ratios;
    for (auto _ : state) {
      const bool ours_first = tl_ms.size() % 2 == 0;
      double t = 0, c_ms = 0;
      if (ours_first) t = device().time_ms(ours, reps_for(s));
      c_ms = device().time_ms(theirs, reps_for(s));
      if (!ours_first) t = device().time_ms(ours, reps_for(s));
      state.SetIterationTime(t / 1e3);
      tl_ms.push_back(t);
      cublas_ms.push_back(c_ms);
      ratios.push_back(c_ms / t);
    }
    if (status != bench::Cublas::kSuccess) {
      state.SkipWithError(("cublasGemmEx failed: " + cublas.status_name(status)).c_str());
      return;
    }
    report(state, bench::median(tl_ms), s);
    state.counters["cublas_TFLOP/s"] = s.flops() / (bench::median(cublas_ms) / 1e3) / 1e12;
    state.counters["tl_over_cublas"] = bench::median(ratios);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::vector<Shape> shape_list;
  std::vector<kernels::GemmConfig> config_list;
  try {
    shape_list = shapes();
    config_list = configs();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm: %s\n", e.what());
    return 2;
  }
  // Per shape: every tiledsl configuration, then cuBLAS on the same buffers.
  for (const Shape& s : shape_list) {
    for (const auto& cfg : config_list)
      benchmark::RegisterBenchmark(("gemm_tiledsl/" + s.str() + "/" + cfg.str()).c_str(), gemm_tiledsl, s, cfg)
          ->UseManualTime()
          ->Iterations(3)
          ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("gemm_tiledsl/" + s.str() + "/autotuned").c_str(), gemm_autotuned, s, config_list)
        ->UseManualTime()
        ->Iterations(3)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("gemm_cublas/" + s.str()).c_str(), gemm_cublas, s)
        ->UseManualTime()
        ->Iterations(3)
        ->Unit(benchmark::kMillisecond);
    for (const kernels::GemmConfig& paired : paired_configs(s))
      benchmark::RegisterBenchmark(("gemm_paired/" + s.str() + "/" + paired.str()).c_str(), gemm_paired, s, paired)
          ->UseManualTime()
          ->Iterations(6)
          ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
