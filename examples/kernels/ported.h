// Three Triton kernels ported line by line (docs/porting-from-triton.md
// shows them side by side with the originals): the fused softmax of
// Triton's tutorial 02, the layer-norm backward of tutorial 05 (partial
// weight gradients summed under a spin lock per group of rows, then
// reduced over the groups), and a mixture-of-experts router (softmax over
// the experts, then the top k by repeated argmax, weights renormalized).
// tests/unit/test_ported_kernels.cpp checks them against host references
// and the GPU against the interpreter; bench/ported.cpp times them and
// bench/compare_ported.py times the Triton originals on the same shapes.
#pragma once

#include <cmath>
#include <cstdint>

#include "tiledsl/tiledsl.h"

namespace kernels::ported {

// Tutorial 02: persistent programs walk the rows; each row's softmax in
// one tile.
template <int BLOCK, int STAGES>
void softmax(tl::ptr<float> output_ptr, tl::ptr<float> input_ptr, tl::scalar<int32_t> input_row_stride,
             tl::scalar<int32_t> output_row_stride, tl::scalar<int32_t> n_rows, tl::scalar<int32_t> n_cols) {
  auto row_start = tl::program_id(0);
  auto row_step = tl::num_programs(0);
  for (auto row_idx : tl::range(row_start, n_rows, row_step, {.num_stages = STAGES})) {
    auto row_start_ptr = input_ptr + row_idx * input_row_stride;
    auto col_offsets = tl::arange(0, BLOCK);                       // [BLOCK] i32
    auto input_ptrs = row_start_ptr + col_offsets;
    auto mask = col_offsets < n_cols;
    auto row = tl::load(input_ptrs, mask, -INFINITY);              // [BLOCK] f32
    auto row_minus_max = row - tl::max(row, 0);
    auto numerator = tl::exp(row_minus_max);
    auto denominator = tl::sum(numerator, 0);
    auto softmax_output = numerator / denominator;
    auto output_row_start_ptr = output_ptr + row_idx * output_row_stride;
    tl::store(output_row_start_ptr + col_offsets, softmax_output, mask);
  }
}

// Tutorial 05, first kernel: dx of one row, and its dw and db added to the
// partial sums of its group of rows (row % GROUP), under the group's lock;
// the count beside the locks says whether the group's sums exist yet.
// Lock: 2 * GROUP i32 zeros; DW, DB: GROUP x N partial sums.
template <int GROUP, int BLOCK_N, class T>
void layer_norm_bwd_dx_fused(tl::ptr<T> DX, tl::ptr<T> DY, tl::ptr<T> DW, tl::ptr<T> DB, tl::ptr<T> X,
                             tl::ptr<T> W, tl::ptr<float> Mean, tl::ptr<float> Rstd, tl::ptr<int32_t> Lock,
                             tl::scalar<int32_t> stride, tl::scalar<int32_t> N) {
  auto row = tl::program_id(0);
  auto cols = tl::arange(0, BLOCK_N);                              // [BLOCK_N] i32
  auto mask = cols < N;
  X = X + row * stride;
  DY = DY + row * stride;
  DX = DX + row * stride;
  auto lock_id = row % GROUP;
  Lock = Lock + lock_id;
  auto Count = Lock + GROUP;
  auto DWs = DW + lock_id * N + cols;
  auto DBs = DB + lock_id * N + cols;
  auto x = tl::cast<float>(tl::load(X + cols, mask, 0));          // [BLOCK_N] f32
  auto dy = tl::cast<float>(tl::load(DY + cols, mask, 0));
  auto w = tl::cast<float>(tl::load(W + cols, mask));
  auto mean = tl::load(Mean + row);
  auto rstd = tl::load(Rstd + row);
  auto xhat = (x - mean) * rstd;
  auto wdy = w * dy;
  xhat = tl::where(mask, xhat, 0.0f);
  wdy = tl::where(mask, wdy, 0.0f);
  auto c1 = tl::sum(xhat * wdy, 0) / tl::cast<float>(N);
  auto c2 = tl::sum(wdy, 0) / tl::cast<float>(N);
  auto dx = (wdy - (xhat * c1 + c2)) * rstd;
  tl::store(DX + cols, tl::cast<T>(dx), mask);
  auto partial_dw = tl::cast<T>(dy * xhat);                        // [BLOCK_N] T
  auto partial_db = tl::cast<T>(dy);
  tl::while_([&] { return tl::atomic_cas(Lock, 0, 1) == 1; }, [] {});
  auto count = tl::load(Count);
  tl::if_(count == 0, [&] { tl::atomic_xchg(Count, 1); },
          [&] {
            partial_dw = partial_dw + tl::load(DWs, mask);
            partial_db = partial_db + tl::load(DBs, mask);
          });
  tl::store(DWs, partial_dw, mask);
  tl::store(DBs, partial_db, mask);
  tl::debug_barrier();
  tl::atomic_xchg(Lock, 0);
}

// Tutorial 05, second kernel: the GROUP (M here) partial sums of dw and db
// added up, BLOCK_N columns a program.
template <int BLOCK_M, int BLOCK_N, class T>
void layer_norm_bwd_dwdb(tl::ptr<T> DW, tl::ptr<T> DB, tl::ptr<T> FINAL_DW, tl::ptr<T> FINAL_DB,
                         tl::scalar<int32_t> M, tl::scalar<int32_t> N) {
  auto pid = tl::program_id(0);
  auto cols = pid * BLOCK_N + tl::arange(0, BLOCK_N);             // [BLOCK_N] i32
  auto dw = tl::zeros<float>({BLOCK_M, BLOCK_N});
  auto db = tl::zeros<float>({BLOCK_M, BLOCK_N});
  for (auto i : tl::range(0, M, BLOCK_M)) {
    auto rows = i + tl::arange(0, BLOCK_M);                        // [BLOCK_M] i32
    auto mask = (tl::col(rows) < M) & (tl::row(cols) < N);         // [BLOCK_M, BLOCK_N]
    auto offs = tl::col(rows) * N + tl::row(cols);
    dw = dw + tl::cast<float>(tl::load(DW + offs, mask, 0));
    db = db + tl::cast<float>(tl::load(DB + offs, mask, 0));
  }
  auto sum_dw = tl::sum(dw, 0);
  auto sum_db = tl::sum(db, 0);
  tl::store(FINAL_DW + cols, tl::cast<T>(sum_dw), cols < N);
  tl::store(FINAL_DB + cols, tl::cast<T>(sum_db), cols < N);
}

// A mixture-of-experts router: BLOCK_T tokens a program, each token's E
// logits softmaxed, the K largest probabilities picked by repeated argmax
// (ties to the lower expert) and renormalized to sum to 1.
template <int BLOCK_T, int E, int K, class T>
void moe_topk_softmax(tl::ptr<T> logits, tl::ptr<float> weights, tl::ptr<int32_t> ids, tl::scalar<int32_t> n_tokens) {
  auto pid = tl::program_id(0);
  auto rows = pid * BLOCK_T + tl::arange(0, BLOCK_T);             // [BLOCK_T] i32
  auto cols = tl::arange(0, E);                                    // [E] i32
  auto in_mask = (tl::col(rows) < n_tokens) & (tl::row(cols) < E);   // [BLOCK_T, E]
  auto x = tl::cast<float>(tl::load(logits + tl::col(rows) * E + tl::row(cols), in_mask, -INFINITY));  // [BLOCK_T, E] f32
  x = x - tl::col(tl::max(x, 1));
  auto p = tl::exp(x);
  p = p / tl::col(tl::sum(p, 1));
  auto ks = tl::arange(0, K);                                      // [K] i32
  auto w_out = tl::zeros<float>({BLOCK_T, K});
  auto id_out = tl::zeros<int32_t>({BLOCK_T, K});
  for (int k = 0; k < K; ++k) {  // tl.static_range
    auto idx = tl::argmax(p, 1);                                   // [BLOCK_T] i32
    auto val = tl::max(p, 1);
    w_out = tl::where(tl::row(ks) == k, tl::col(val), w_out);
    id_out = tl::where(tl::row(ks) == k, tl::col(idx), id_out);
    p = tl::where(tl::row(cols) == tl::col(idx), -1.0f, p);
  }
  w_out = w_out / tl::col(tl::sum(w_out, 1));
  auto out = tl::col(rows) * K + tl::row(ks);                      // [BLOCK_T, K]
  auto out_mask = (tl::col(rows) < n_tokens) & (tl::row(ks) < K);
  tl::store(weights + out, w_out, out_mask);
  tl::store(ids + out, id_out, out_mask);
}

}  // namespace kernels::ported
