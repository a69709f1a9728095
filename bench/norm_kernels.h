// Row-wise softmax and layernorm forward, generic in the element type: the
// kernels bench/norms.cpp times, in two forms. The whole row is one tile of
// BLOCK (the next power of two >= N) lanes, masked past N. Math is in f32
// whatever the storage type, as in Triton's tutorials.
//  - one program a row (softmax_fwd, layernorm_fwd);
//  - persistent (*_persistent): a few programs per multiprocessor, each
//    walking rows pid, pid + P, ...; with STAGES >= 2 each loads the next
//    rows while it works on this one (the loop stores, so the pipelining
//    depth must be asked for). Not the default for small rows: the loop
//    keeps addresses live across iterations, which costs registers.
#pragma once

#include <algorithm>
#include <cmath>

#include "tiledsl/tiledsl.h"

namespace bench {

// One row: [BLOCK] lanes of row `row`.
template <class T, int BLOCK>
void softmax_row(tl::ptr<T> out, tl::ptr<T> in, tl::scalar<int32_t> row, tl::scalar<int32_t> stride,
                 tl::scalar<int32_t> n) {
  auto cols = tl::arange(0, BLOCK);                                                // [BLOCK] i32
  auto mask = cols < n;                                                            // [BLOCK] i1
  auto x = tl::cast<float>(tl::load(in + row * stride + cols, mask, -INFINITY));  // [BLOCK] f32
  auto num = tl::exp(x - tl::max(x, 0));                                           // [BLOCK] f32
  tl::store(out + row * stride + cols, tl::cast<T>(num / tl::sum(num, 0)), mask);
}

template <class T, int BLOCK>
void layernorm_row(tl::ptr<T> out, tl::ptr<T> in, tl::ptr<T> weight, tl::ptr<T> bias, tl::scalar<int32_t> row,
                   tl::scalar<int32_t> stride, tl::scalar<int32_t> n, tl::scalar<float> eps) {
  auto cols = tl::arange(0, BLOCK);                                          // [BLOCK] i32
  auto mask = cols < n;                                                      // [BLOCK] i1
  auto count = tl::cast<float>(n);
  // The row streams through L2 only (.cg); weight and bias, read again for
  // every row, stay in L1 as long as they can (evict_last).
  auto x = tl::cast<float>(tl::load(in + row * stride + cols, mask, 0.0f, {.cache = ".cg"}));  // [BLOCK] f32
  auto mean = tl::sum(x, 0) / count;                                         // scalar f32
  auto centered = tl::where(mask, x - mean, 0.0f);                           // [BLOCK] f32
  auto rstd = tl::rsqrt(tl::sum(centered * centered, 0) / count + eps);      // scalar f32
  auto w = tl::cast<float>(tl::load(weight + cols, mask, {.evict = "evict_last"}));  // [BLOCK] f32
  auto b = tl::cast<float>(tl::load(bias + cols, mask, {.evict = "evict_last"}));    // [BLOCK] f32
  tl::store(out + row * stride + cols, tl::cast<T>(centered * rstd * w + b), mask);
}

template <class T, int BLOCK>
void softmax_fwd(tl::ptr<T> out, tl::ptr<T> in, tl::scalar<int32_t> stride, tl::scalar<int32_t> n) {
  softmax_row<T, BLOCK>(out, in, tl::program_id(0), stride, n);
}

template <class T, int BLOCK>
void layernorm_fwd(tl::ptr<T> out, tl::ptr<T> in, tl::ptr<T> weight, tl::ptr<T> bias, tl::scalar<int32_t> stride,
                   tl::scalar<int32_t> n, tl::scalar<float> eps) {
  layernorm_row<T, BLOCK>(out, in, weight, bias, tl::program_id(0), stride, n, eps);
}

template <class T, int BLOCK, int STAGES>
void softmax_fwd_persistent(tl::ptr<T> out, tl::ptr<T> in, tl::scalar<int32_t> stride, tl::scalar<int32_t> n,
                            tl::scalar<int32_t> rows) {
  for (auto row : tl::range(tl::program_id(0), rows, tl::num_programs(0), {.num_stages = STAGES}))
    softmax_row<T, BLOCK>(out, in, row, stride, n);
}

template <class T, int BLOCK, int STAGES>
void layernorm_fwd_persistent(tl::ptr<T> out, tl::ptr<T> in, tl::ptr<T> weight, tl::ptr<T> bias,
                              tl::scalar<int32_t> stride, tl::scalar<int32_t> n, tl::scalar<float> eps,
                              tl::scalar<int32_t> rows) {
  for (auto row : tl::range(tl::program_id(0), rows, tl::num_programs(0), {.num_stages = STAGES}))
    layernorm_row<T, BLOCK>(out, in, weight, bias, row, stride, n, eps);
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
