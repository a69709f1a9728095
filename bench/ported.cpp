// GB/s of the three Triton kernels ported in examples/kernels/ported.h, on
// the shapes of their Triton benchmarks, with the launch settings of the
// originals' host code. bench/compare_ported.py times the Triton
// originals on the same shapes in the same way.
//
//   softmax (tutorial 02): f32, 4096 rows of N; bytes 2 M N 4 (read, write).
//   ln_bwd (tutorial 05): f16, 4096 rows of N, both kernels (dx with the
//     partial dw, db under the group locks; then their sum); bytes: x, dy
//     read and dx written (3 M N 2; the partial sums and weights are small).
//   router: bf16 logits of 64 experts, top 8; bytes: T 64 2 read, T 8 (4 + 4)
//     written.
//
//   bench_ported --benchmark_format=json --benchmark_out=ported.json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>

#include "../examples/kernels/ported.h"
#include "bench_common.h"

namespace {

namespace kp = kernels::ported;

using bench::device;
using bench::random_buffer;

void report(benchmark::State& state, double ms, double bytes) { bench::report_bandwidth(state, ms, bytes); }

constexpr int kRows = 4096;

// Tutorial 02's host code: 8 warps, 4 stages where shared memory is large
// (the H200's is), programs: the state's argument per multiprocessor.
template <int N>
void softmax(benchmark::State& state) {
  constexpr int BLOCK = std::max(N, 1);
  auto k = tl::compile(kp::softmax<BLOCK, 4>, {.name = "softmax", .num_warps = 8});
  auto x = random_buffer<float>(size_t(kRows) * N);
  auto y = device().alloc<float>(size_t(kRows) * N);
  int programs = std::min(kRows, int(state.range(0)) * device().processor_count());
  auto launch = [&] { device()(k, tl::Grid{uint32_t(programs)}, y, x, N, N, kRows, N); };
  report(state, bench::median_ms(state, [&] { return device().time_ms(launch, 20); }), 2.0 * kRows * N * 4);
}

// Tutorial 05's host code: BLOCK_N the row's power of two, warps
// min(max(BLOCK_N / 256, 1), 8) (the argument), GROUP_SIZE_M by N; the
// second kernel 32 x 128 blocks. The locks are zeroed once: later runs find every
// group's count set and add to its sums (the same work but for one load).
template <int N>
void ln_bwd(benchmark::State& state) {
  constexpr int GROUP = N <= 1024 ? 256 : N <= 4096 ? 128 : N <= 8192 ? 96 : 64;
  using T = tl::f16;
  auto kdx = tl::compile(kp::layer_norm_bwd_dx_fused<GROUP, N, T>,
                         {.name = "ln_bwd_dx", .num_warps = int(state.range(0))});
  auto kdw = tl::compile(kp::layer_norm_bwd_dwdb<32, 128, T>, {.name = "ln_bwd_dwdb", .num_warps = 4});
  auto x = random_buffer<T>(size_t(kRows) * N), dy = random_buffer<T>(size_t(kRows) * N);
  auto w = random_buffer<T>(N), dx = device().alloc<T>(size_t(kRows) * N);
  auto mean = random_buffer<float>(kRows, 0.1f), rstd = random_buffer<float>(kRows, 0.1f);
  auto locks = device().upload(std::vector<int32_t>(2 * GROUP, 0));
  auto pdw = device().alloc<T>(size_t(GROUP) * N), pdb = device().alloc<T>(size_t(GROUP) * N);
  auto dw = device().alloc<T>(N), db = device().alloc<T>(N);
  auto launch = [&] {
    device()(kdx, tl::Grid{kRows}, dx, dy, pdw, pdb, x, w, mean, rstd, locks, N, N);
    device()(kdw, tl::Grid{uint32_t(tl::cdiv(N, 128))}, pdw, pdb, dw, db, GROUP, N);
  };
  report(state, bench::median_ms(state, [&] { return device().time_ms(launch, 20); }), 3.0 * kRows * N * 2);
}

template <int TOKENS>
void router(benchmark::State& state) {
  constexpr int E = 64, K = 8, BLOCK_T = 16;
  auto k = tl::compile(kp::moe_topk_softmax<BLOCK_T, E, K, tl::bf16>, {.name = "router", .num_warps = 4});
  auto logits = random_buffer<tl::bf16>(size_t(TOKENS) * E, 2.0f);
  auto w = device().alloc<float>(size_t(TOKENS) * K);
  auto ids = device().alloc<int32_t>(size_t(TOKENS) * K);
  auto launch = [&] { device()(k, tl::Grid{uint32_t(TOKENS / BLOCK_T)}, logits, w, ids, TOKENS); };
  report(state, bench::median_ms(state, [&] { return device().time_ms(launch, 20); }), double(TOKENS) * (E * 2 + K * 8));
}

}  // namespace

BENCHMARK(softmax<1024>)->Arg(4)->Arg(8)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
BENCHMARK(softmax<4096>)->Arg(2)->Arg(4)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
BENCHMARK(softmax<16384>)->Arg(1)->Arg(2)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
BENCHMARK(ln_bwd<1024>)->Arg(4)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
BENCHMARK(ln_bwd<4096>)->Arg(8)->Arg(16)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
BENCHMARK(ln_bwd<8192>)->Arg(8)->Arg(4)->Arg(16)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
BENCHMARK(router<16384>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
BENCHMARK(router<65536>)->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
