// Row-wise softmax and layernorm forward, generic in the element type: the
// kernels bench/norms.cpp times. One program per row; the whole row is one
// tile of BLOCK (the next power of two >= N) lanes, masked past N. Math is
// in f32 whatever the storage type, as in Triton's tutorials.
#pragma once

#include <algorithm>
#include <cmath>

#include "tiledsl/tiledsl.h"

namespace bench {

template <class T, int BLOCK>
void softmax_fwd(tl::ptr<T> out, tl::ptr<T> in, tl::scalar<int32_t> stride, tl::scalar<int32_t> n) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);                                                // [BLOCK] i32
  auto mask = cols < n;                                                            // [BLOCK] i1
  auto x = tl::cast<float>(tl::load(in + row * stride + cols, mask, -INFINITY));  // [BLOCK] f32
  auto num = tl::exp(x - tl::max(x, 0));                                           // [BLOCK] f32
  tl::store(out + row * stride + cols, tl::cast<T>(num / tl::sum(num, 0)), mask);
}

template <class T, int BLOCK>
void layernorm_fwd(tl::ptr<T> out, tl::ptr<T> in, tl::ptr<T> weight, tl::ptr<T> bias, tl::scalar<int32_t> stride,
                   tl::scalar<int32_t> n, tl::scalar<float> eps) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK);                                          // [BLOCK] i32
  auto mask = cols < n;                                                      // [BLOCK] i1
  auto x = tl::cast<float>(tl::load(in + row * stride + cols, mask, 0.0f));  // [BLOCK] f32
  auto count = tl::cast<float>(n);
  auto mean = tl::sum(x, 0) / count;                                         // scalar f32
  auto centered = tl::where(mask, x - mean, 0.0f);                           // [BLOCK] f32
  auto rstd = tl::rsqrt(tl::sum(centered * centered, 0) / count + eps);      // scalar f32
  auto w = tl::cast<float>(tl::load(weight + cols, mask));                   // [BLOCK] f32
  auto b = tl::cast<float>(tl::load(bias + cols, mask));                     // [BLOCK] f32
  tl::store(out + row * stride + cols, tl::cast<T>(centered * rstd * w + b), mask);
}

// Long rows in chunks of CHUNK columns. Softmax keeps a running max and sum
// per lane (online softmax), reduces them once, and writes in a second
// pass that reads the row again (from L2). Layernorm takes three passes
// (mean, variance, normalize) as Triton's tutorial does. Few registers per
// thread, so several rows run on an SM at once, unlike the whole-row form.
template <class T, int CHUNK>
void softmax_fwd_looped(tl::ptr<T> out, tl::ptr<T> in, tl::scalar<int32_t> stride, tl::scalar<int32_t> n) {
  auto row = tl::program_id(0);
  auto in_row = in + row * stride;                         // scalar ptr<T>
  auto out_row = out + row * stride;
  auto lanes = tl::arange(0, CHUNK);                       // [CHUNK] i32
  auto m = tl::full<float>({CHUNK}, -INFINITY);            // [CHUNK] f32 running max per lane
  auto s = tl::zeros<float>({CHUNK});                      // [CHUNK] f32 running sum per lane
  for (auto off : tl::range(0, n, CHUNK)) {
    auto cols = off + lanes;                               // [CHUNK] i32
    auto mask = cols < n;                                  // [CHUNK] i1
    auto x = tl::cast<float>(tl::load(in_row + cols, mask, -INFINITY));  // [CHUNK] f32
    auto m_new = tl::maximum(m, x);
    // A lane that has seen only masked columns keeps max -inf and sum 0.
    auto alpha = tl::where(m_new == -INFINITY, 0.0f, tl::exp(m - m_new));
    s = s * alpha + tl::where(mask, tl::exp(x - m_new), 0.0f);
    m = m_new;
  }
  auto row_max = tl::max(m, 0);                            // scalar f32
  auto total = tl::sum(s * tl::exp(m - row_max), 0);       // scalar f32
  for (auto off : tl::range(0, n, CHUNK)) {
    auto cols = off + lanes;
    auto mask = cols < n;
    auto x = tl::cast<float>(tl::load(in_row + cols, mask, -INFINITY));
    tl::store(out_row + cols, tl::cast<T>(tl::exp(x - row_max) / total), mask);
  }
}

template <class T, int CHUNK>
void layernorm_fwd_looped(tl::ptr<T> out, tl::ptr<T> in, tl::ptr<T> weight, tl::ptr<T> bias,
                          tl::scalar<int32_t> stride, tl::scalar<int32_t> n, tl::scalar<float> eps) {
  auto row = tl::program_id(0);
  auto in_row = in + row * stride;                         // scalar ptr<T>
  auto out_row = out + row * stride;
  auto lanes = tl::arange(0, CHUNK);                       // [CHUNK] i32
  auto count = tl::cast<float>(n);
  auto sum = tl::zeros<float>({CHUNK});                    // [CHUNK] f32
  for (auto off : tl::range(0, n, CHUNK)) {
    auto cols = off + lanes;
    sum = sum + tl::cast<float>(tl::load(in_row + cols, cols < n, 0.0f));
  }
  auto mean = tl::sum(sum, 0) / count;                     // scalar f32
  auto sq = tl::zeros<float>({CHUNK});                     // [CHUNK] f32
  for (auto off : tl::range(0, n, CHUNK)) {
    auto cols = off + lanes;
    auto mask = cols < n;
    auto d = tl::where(mask, tl::cast<float>(tl::load(in_row + cols, mask, 0.0f)) - mean, 0.0f);
    sq = sq + d * d;
  }
  auto rstd = tl::rsqrt(tl::sum(sq, 0) / count + eps);     // scalar f32
  for (auto off : tl::range(0, n, CHUNK)) {
    auto cols = off + lanes;
    auto mask = cols < n;
    auto x = tl::cast<float>(tl::load(in_row + cols, mask, 0.0f));
    auto w = tl::cast<float>(tl::load(weight + cols, mask));
    auto b = tl::cast<float>(tl::load(bias + cols, mask));
    tl::store(out_row + cols, tl::cast<T>((x - mean) * rstd * w + b), mask);
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
