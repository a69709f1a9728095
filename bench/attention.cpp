// TFLOP/s of the flash-attention forward (examples/kernels/attention.h) in
// bf16, head dim 64 and 128, causal and not, for sequence lengths 1024 to
// 16384, on the best device present. bench/compare_attention.py measures
// torch's scaled_dot_product_attention (cuDNN and FlashAttention back ends)
// and a Triton kernel on the same shapes. TFLOP/s and ms: the median of a
// benchmark's three timings (bench::median_ms), each the mean of 20
// launches.
//
// attention_tuned: the configuration tl::Autotuner picks for each shape
// (kernels::tune_attention over kernels::attention_tune_configs, as the
// example does on a GPU), beside the fixed one of attention<...>.
//
// attention_varlen: the packed variable-length kernel on 16k tokens of
// sequences around the argument's length (no peer measures it yet).
//
// Shapes as in FlashAttention's benchmarks: 16k tokens per batch
// (B = 16384 / N) and a model width of 2048 (H = 2048 / D); attention_bhn
// takes B, H and N (issue 14's four shapes). FLOPs = 4 * B * H * N^2 * D,
// halved for causal.
//
//   bench_attention --benchmark_format=json --benchmark_out=attention.json
// TILEDSL_ATTN_CONFIG=BMxBN:warps:stages[:desc|:persistent][:xN] overrides the tile configuration
// (kernels::attention_config); the one used is in each result's counters.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "../examples/kernels/attention.h"
#include "bench_common.h"

namespace {

constexpr int kTokens = 16384;      // B * N
constexpr int kModelWidth = 2048;   // H * D

using bench::device;

tl::Buffer random_buffer(size_t n, uint32_t seed) { return bench::random_buffer<tl::bf16>(n, 1.0f, seed); }

// Runs `launch` once (it compiles: a device that cannot compile the kernel
// throws here, before the timed loop), then times it in the benchmark's
// loop, reporting TFLOP/s of `flops` and the configuration.
void time_launches(benchmark::State& state, const std::function<void()>& launch, double flops, int B, int H, int BM,
                   int BN, const kernels::AttentionConfig& cfg) {
  launch();
  device().synchronize();
  double ms = bench::median_ms(state, [&] { return device().time_ms(launch, 20); });
  if (ms > 0) {
    state.counters["TFLOP/s"] = flops / (ms / 1e3) / 1e12;
    state.counters["ms"] = ms;
  }
  state.counters["B"] = B;
  state.counters["H"] = H;
  state.counters["BM"] = BM;
  state.counters["BN"] = BN;
  state.counters["warps"] = cfg.num_warps;
  state.counters["stages"] = cfg.num_stages;
}

// `group` query heads share a key/value head (GROUP of attention_gqa).
template <int BM, int BN, int D, bool CAUSAL>
void time_attention(benchmark::State& state, const kernels::AttentionConfig& cfg, int group, int B, int H, int N) {
  const size_t n = size_t(B) * H * N * D, n_kv = n / size_t(group);
  kernels::AttentionKernel<tl::bf16, BM, BN, D, CAUSAL> kernel(
      cfg, {.name = "attention_bf16_d" + std::to_string(D) + (CAUSAL ? "_causal" : "")});
  auto q = random_buffer(n, 1), k = random_buffer(n_kv, 2), v = random_buffer(n_kv, 3);
  auto o = device().alloc<tl::bf16>(n);
  const float sm_scale = 1.0f / std::sqrt(float(D));
  const double flops = kernels::attention_flops(B, H, N, D, CAUSAL);
  time_launches(state, [&] { kernel(device(), q, k, v, o, B, H, N, sm_scale, group); }, flops, B, H, BM, BN, cfg);
  state.counters["descriptors"] = cfg.descriptors;
}

// One (D, causal) pair; the sequence length is the benchmark's argument.
// An error (a kernel the device cannot compile, a bad TILEDSL_ATTN_CONFIG)
// skips this benchmark with its message and lets the others run.
template <int D, bool CAUSAL, int GROUP = 1>
void attention_at(benchmark::State& state, int B, int H, int N) {
  try {
    auto cfg = kernels::attention_config(D, device().target(), N, CAUSAL);
    kernels::with_tiles(cfg, [&]<int BM, int BN>() { time_attention<BM, BN, D, CAUSAL>(state, cfg, GROUP, B, H, N); });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());  // before the timed loop: see time_attention
  }
}
template <int D, bool CAUSAL, int GROUP = 1>
void attention(benchmark::State& state) {
  const int N = int(state.range(0));
  attention_at<D, CAUSAL, GROUP>(state, kTokens / N, kModelWidth / D, N);
}

// attention<D, CAUSAL> in the configuration the tuner picks for each
// length (measured on the first run, read from the results file after).
template <int D, bool CAUSAL>
void attention_tuned(benchmark::State& state) {
  try {
    const int N = int(state.range(0)), B = kTokens / N, H = kModelWidth / D;
    const std::string name = "attention_bf16_d" + std::to_string(D) + (CAUSAL ? "_causal" : "");
    auto cfg = kernels::tune_attention<tl::bf16, D, CAUSAL>(
        device(), "bench_" + name, kernels::attention_tune_configs(D, device().target()), B, H, N, 1, {.name = name});
    kernels::with_tiles(cfg, [&]<int BM, int BN>() { time_attention<BM, BN, D, CAUSAL>(state, cfg, 1, B, H, N); });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

#define ATTENTION_LENGTHS(D, CAUSAL)                                                                 \
  BENCHMARK(attention<D, CAUSAL>)                                                                   \
      ->Arg(1024)->Arg(2048)->Arg(4096)->Arg(8192)->Arg(16384)                                       \
      ->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

ATTENTION_LENGTHS(64, false)
ATTENTION_LENGTHS(64, true)
ATTENTION_LENGTHS(128, false)
ATTENTION_LENGTHS(128, true)

#define ATTENTION_TUNED(D, CAUSAL)                                                                  \
  BENCHMARK(attention_tuned<D, CAUSAL>)                                                             \
      ->Arg(1024)->Arg(4096)->Arg(16384)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
ATTENTION_TUNED(64, false)
ATTENTION_TUNED(64, true)
ATTENTION_TUNED(128, false)
ATTENTION_TUNED(128, true)

// Grouped-query attention, 4 query heads a key/value head (32 over 8 at
// d = 64), at 4096 keys: named attention_gqa so the summaries keep it apart.
template <int D, bool CAUSAL>
void attention_gqa(benchmark::State& state) { attention<D, CAUSAL, 4>(state); }
#define ATTENTION_GQA(D, CAUSAL) \
  BENCHMARK(attention_gqa<D, CAUSAL>)->Arg(4096)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
ATTENTION_GQA(64, false)
ATTENTION_GQA(128, false)
ATTENTION_GQA(128, true)

// Batch, heads and length given (the arguments B, H, N): the shapes of
// FlashAttention-3's table that issue 14 measures, where the heads are not
// 2048 / D. Named attention_bhn so the summaries keep it apart.
template <int D, bool CAUSAL>
void attention_bhn(benchmark::State& state) {
  attention_at<D, CAUSAL>(state, int(state.range(0)), int(state.range(1)), int(state.range(2)));
}
#define ATTENTION_BHN(D, CAUSAL, B, H, N)                                                               \
  BENCHMARK(attention_bhn<D, CAUSAL>)->Args({B, H, N})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
ATTENTION_BHN(128, false, 4, 32, 4096)
ATTENTION_BHN(128, true, 4, 32, 4096)
ATTENTION_BHN(64, false, 8, 16, 2048)
ATTENTION_BHN(128, true, 2, 16, 8192)

// Variable lengths (the varlen kernel, FlashAttention's packed layout):
// 16k tokens in sequences of lengths from half to one and a half times the
// argument (a fixed pattern), H = 2048 / D. FLOPs: 4 * H * D per score
// pair a query sees (causal: the ends aligned), counted exactly.
template <int BM, int BN, int D, bool CAUSAL>
void time_attention_varlen(benchmark::State& state, const kernels::AttentionConfig& cfg) {
  const int mean = int(state.range(0)), H = kModelWidth / D;
  std::vector<int> starts = {0};
  for (int i = 0; starts.back() < kTokens; ++i)
    starts.push_back(std::min(kTokens, starts.back() + mean / 2 + (i * 37 % 101) * mean / 100));
  const int B = int(starts.size()) - 1;
  int longest = 0;
  double pairs = 0;
  for (int b = 0; b < B; ++b) {
    int len = starts[size_t(b) + 1] - starts[size_t(b)];
    longest = std::max(longest, len);
    pairs += CAUSAL ? 0.5 * len * (len + 1.0) : double(len) * len;
  }
  kernels::AttentionVarlenKernel<tl::bf16, BM, BN, D, CAUSAL> kernel(
      cfg, {.name = "attention_varlen_bf16_d" + std::to_string(D) + (CAUSAL ? "_causal" : "")});
  const size_t n = size_t(kTokens) * H * D;
  auto q = random_buffer(n, 1), k = random_buffer(n, 2), v = random_buffer(n, 3);
  auto o = device().alloc<tl::bf16>(n);
  auto cu = device().upload(starts);
  const float sm_scale = 1.0f / std::sqrt(float(D));
  const double flops = 4.0 * H * D * pairs;
  time_launches(state, [&] { kernel(device(), q, k, v, o, cu, cu, B, H, longest, sm_scale); }, flops, B, H, BM, BN,
                cfg);
}

template <int D, bool CAUSAL>
void attention_varlen(benchmark::State& state) {
  try {
    auto cfg = kernels::varlen_attention_config(D, device().target());
    kernels::with_tiles(cfg, [&]<int BM, int BN>() { time_attention_varlen<BM, BN, D, CAUSAL>(state, cfg); });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
#define ATTENTION_VARLEN(D, CAUSAL) \
  BENCHMARK(attention_varlen<D, CAUSAL>)->Arg(1024)->Arg(4096)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
ATTENTION_VARLEN(128, false)
ATTENTION_VARLEN(128, true)

}  // namespace

BENCHMARK_MAIN();
