// Row-wise softmax and layernorm forward, generic in the element type: the
// kernels bench/norms.cpp times. A program walks rows pid, pid + P, ...
// (P programs): launched with one program a row it handles one; launched
// with a few per multiprocessor (persistent) it loads the next rows while it
// works on this one, when STAGES >= 2 (the loop's pipelining depth; it
// stores, so the depth must be asked for). The whole row is one tile of
// BLOCK (the next power of two >= N) lanes, masked past N. Math is in f32
// whatever the storage type, as in Triton's tutorials.
#pragma once

#include <algorithm>
#include <cmath>

#include "tiledsl/tiledsl.h"

namespace bench {

template <class T, int BLOCK, int STAGES>
void softmax_fwd(tl::ptr<T> out, tl::ptr<T> in, tl::scalar<int32_t> stride, tl::scalar<int32_t> n,
                 tl::scalar<int32_t> rows) {
  auto cols = tl::arange(0, BLOCK);                                                  // [BLOCK] i32
  auto mask = cols < n;                                                              // [BLOCK] i1
  for (auto row : tl::range(tl::program_id(0), rows, tl::num_programs(0), {.num_stages = STAGES})) {
    auto x = tl::cast<float>(tl::load(in + row * stride + cols, mask, -INFINITY));  // [BLOCK] f32
    auto num = tl::exp(x - tl::max(x, 0));                                           // [BLOCK] f32
    tl::store(out + row * stride + cols, tl::cast<T>(num / tl::sum(num, 0)), mask);
  }
}

template <class T, int BLOCK, int STAGES>
void layernorm_fwd(tl::ptr<T> out, tl::ptr<T> in, tl::ptr<T> weight, tl::ptr<T> bias, tl::scalar<int32_t> stride,
                   tl::scalar<int32_t> n, tl::scalar<float> eps, tl::scalar<int32_t> rows) {
  auto cols = tl::arange(0, BLOCK);                                            // [BLOCK] i32
  auto mask = cols < n;                                                        // [BLOCK] i1
  auto count = tl::cast<float>(n);
  for (auto row : tl::range(tl::program_id(0), rows, tl::num_programs(0), {.num_stages = STAGES})) {
    auto x = tl::cast<float>(tl::load(in + row * stride + cols, mask, 0.0f));  // [BLOCK] f32
    auto mean = tl::sum(x, 0) / count;                                         // scalar f32
    auto centered = tl::where(mask, x - mean, 0.0f);                           // [BLOCK] f32
    auto rstd = tl::rsqrt(tl::sum(centered * centered, 0) / count + eps);      // scalar f32
    auto w = tl::cast<float>(tl::load(weight + cols, mask));                   // [BLOCK] f32
    auto b = tl::cast<float>(tl::load(bias + cols, mask));                     // [BLOCK] f32
    tl::store(out + row * stride + cols, tl::cast<T>(centered * rstd * w + b), mask);
  }
}

// A copy at the same granularity: the bandwidth ceiling as tiledsl sees it.
template <class T, int BLOCK>
void copy(tl::ptr<T> out, tl::ptr<T> in, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;
  tl::store(out + offs, tl::load(in + offs, mask), mask);
}

// Warps per row: 32 elements per thread (1024 per warp), 4 to 32 warps. A
// sweep on the H200 (docs/perf.md, run 6) put the bf16 softmax's best there
// for N = 8192, 16384 and 32768.
inline int warps_for(int block) { return std::clamp(block / 1024, 4, 32); }

// Layernorm keeps the centered row live across its second reduction and
// loads weight and bias too; at N = 16384 a sweep on the H200 (docs/perf.md,
// session 2) found 4 warps (128 elements per thread) 1.5x faster in bf16
// than 16 and a little faster in f32; elsewhere warps_for was the best or
// within 2 %.
inline int layernorm_warps_for(int block) { return block == 16384 ? 4 : warps_for(block); }

}  // namespace bench
