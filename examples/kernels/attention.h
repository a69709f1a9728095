// Flash-attention forward, O = softmax(Q K^T * sm_scale) V, with Q and O of
// shape [B, H, N, D] and K, V of shape [B, H / group, N, D] (contiguous) in
// bf16 or f16: the kernel that examples/attention.cpp checks and
// bench/attention.cpp times. `group` query heads share a key/value head
// (grouped-query attention; 1: multi-head, H: multi-query).
//
// Each program owns BM query rows of one (batch, head) and streams the keys
// and values in BN-row blocks, never materializing the N x N score matrix:
// an online softmax keeps each row's running max m_i and running sum l_i in
// f32 and rescales the partial output whenever the max grows. Scores are
// scaled by sm_scale * log2(e) so exp2 can stand in for exp. CAUSAL (query i
// sees keys j <= i) is a template parameter: the causal loop also stops at
// the diagonal, halving the work. N need not be a multiple of BM or BN:
// query rows and keys past N are masked.
//
// Launch: grid {cdiv(N, BM), B * H}; arguments Q, K, V, O, N, sm_scale,
// group.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tiledsl/autotune.h"
#include "tiledsl/tiledsl.h"

namespace kernels {

// One block of BN keys for the BM query rows of a program: S = Q K^T, the
// online softmax's update of the running max m_i and sum l_i, and
// acc += P V with the old acc rescaled. `start_n` is the block's first key
// and `offs_m` the program's query rows; K and V are [BN, D] (rows past N
// read as 0 or anything: their scores are masked to -inf, so P is 0
// there). With EDGES_ONLY only a block that reaches past N or (causal) past
// the first query row is masked (the others skip the compares and
// selects, behind a branch: on sm_80's mma.sync layouts that costs
// registers, so the pointer form masks every block).
template <class T, bool CAUSAL, int BM, int BN, bool EDGES_ONLY>
void attend_block(const tl::tile<T>& q, const tl::tile<T>& k, const tl::tile<T>& v, const tl::tile<int32_t>& offs_m,
                  const tl::scalar<int32_t>& start_m, const tl::scalar<int32_t>& start_n,
                  const tl::scalar<int32_t>& seq_len, const tl::scalar<float>& qk_scale, tl::tile<float>& m_i,
                  tl::tile<float>& l_i, tl::tile<float>& acc) {
  auto qk = tl::dot(q, tl::trans(k));                           // [BM, BN] f32, unscaled
  auto mask = [&] {
    auto cols = start_n + tl::arange(0, BN);                    // [BN] i32: key indices
    auto key_ok = tl::row(cols < seq_len);                      // [1, BN] i1
    if constexpr (CAUSAL)
      qk = tl::where(key_ok & (tl::col(offs_m) >= tl::row(cols)), qk, -INFINITY);  // [BM, BN] f32
    else
      qk = tl::where(key_ok, qk, -INFINITY);
  };
  if constexpr (EDGES_ONLY) {
    auto edge = start_n + BN > seq_len;                         // scalar i1: keys past N
    if constexpr (CAUSAL) edge = edge | (start_n + BN > start_m * BM);  // ... or keys past a query row
    tl::if_(edge, mask);
  } else {
    mask();
  }

  // Key 0 is valid for every row (seq_len >= 1, and a causal row i sees
  // keys 0..i), and the first block contains it, so m_new is finite from
  // the first iteration on: no inf - inf below. The scale (> 0) applies
  // to the row max and inside the exponential, one fused multiply-add an
  // element, as Triton's tutorial kernel does.
  auto m_new = tl::maximum(m_i, tl::max(qk, 1) * qk_scale);     // [BM] f32, log2 units
  auto p = tl::exp2(qk * qk_scale - tl::col(m_new));            // [BM, BN] f32
  auto alpha = tl::exp2(m_i - m_new);                           // [BM] f32: rescales the old state
  l_i = l_i * alpha + tl::sum(p, 1);
  // P is rounded to the input type for the tensor-core product, as in
  // Triton; l_i sums the unrounded p.
  acc = tl::dot(tl::cast<T>(p), v, acc * tl::col(alpha));       // [BM, D] f32
  m_i = m_new;
}

template <class T, int BM, int BN, int HEAD_DIM, bool CAUSAL>
void attention_fwd(tl::ptr<T> Q, tl::ptr<T> K, tl::ptr<T> V, tl::ptr<T> O, tl::scalar<int32_t> seq_len,
                   tl::scalar<float> sm_scale, tl::scalar<int32_t> group) {
  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "head dim 64 or 128");
  auto start_m = tl::program_id(0);                             // block of query rows
  auto head = tl::program_id(1);                                // batch * H + head
  auto base = head * seq_len * HEAD_DIM;                        // scalar i32: this head's [N, D] of Q and O
  auto kv_base = head / group * seq_len * HEAD_DIM;             // scalar i32: its key/value head's [N, D]

  auto offs_m = start_m * BM + tl::arange(0, BM);               // [BM] i32
  auto offs_n = tl::arange(0, BN);                              // [BN] i32
  auto offs_d = tl::arange(0, HEAD_DIM);                        // [D] i32
  auto row_ok = tl::col(offs_m < seq_len);                      // [BM, 1] i1
  auto q = tl::load(Q + base + tl::col(offs_m) * HEAD_DIM + tl::row(offs_d), row_ok);  // [BM, D] T
  auto qk_scale = sm_scale * 1.44269504f;                       // scalar f32: log2(e) folded in

  auto m_i = tl::full<float>({BM}, -INFINITY);                  // [BM] f32 running max (log2 units)
  auto l_i = tl::zeros<float>({BM});                            // [BM] f32 running sum of p
  auto acc = tl::zeros<float>({BM, HEAD_DIM});                  // [BM, D] f32 unnormalized output

  // Keys past the last query row of this block are all masked when causal.
  auto hi = seq_len;                                            // scalar i32
  if constexpr (CAUSAL) hi = tl::minimum((start_m + 1) * BM, seq_len);

  for (auto start_n : tl::range(0, hi, BN)) {
    auto cols = start_n + offs_n;                               // [BN] i32: key indices
    auto col_ok = tl::col(cols < seq_len);                      // [BN, 1] i1
    auto kv_offs = kv_base + tl::col(cols) * HEAD_DIM + tl::row(offs_d);  // [BN, D] i32
    auto k = tl::load(K + kv_offs, col_ok);                     // [BN, D] T
    auto v = tl::load(V + kv_offs, col_ok);                     // [BN, D] T
    attend_block<T, CAUSAL, BM, BN, false>(q, k, v, offs_m, start_m, start_n, seq_len, qk_scale, m_i, l_i, acc);
  }

  auto out = acc / tl::col(l_i);                                // [BM, D] f32
  tl::store(O + base + tl::col(offs_m) * HEAD_DIM + tl::row(offs_d), tl::cast<T>(out), row_ok);
}

// The descriptor forms' work on one block of query rows: the BM rows from
// start_m * BM of head `head` (Q and O [heads, N, D] through dq and dout)
// against the keys and values of `kv_head` (dk, dv), the output stored.
// Q is copied once; K and V stream in BN-row blocks.
template <class T, int BM, int BN, int HEAD_DIM, bool CAUSAL, class Desc>
void attend_rows(const Desc& dq, const Desc& dk, const Desc& dv, const Desc& dout, tl::scalar<int32_t> head,
                 tl::scalar<int32_t> kv_head, tl::scalar<int32_t> start_m, tl::scalar<int32_t> seq_len,
                 tl::scalar<float> sm_scale) {
  auto offs_m = start_m * BM + tl::arange(0, BM);               // [BM] i32
  auto q = tl::reshape(dq.load({head, start_m * BM, 0}), {BM, HEAD_DIM});  // [BM, D] T
  auto qk_scale = sm_scale * 1.44269504f;                       // scalar f32: log2(e) folded in

  auto m_i = tl::full<float>({BM}, -INFINITY);                  // [BM] f32 running max (log2 units)
  auto l_i = tl::zeros<float>({BM});                            // [BM] f32 running sum of p
  auto acc = tl::zeros<float>({BM, HEAD_DIM});                  // [BM, D] f32 unnormalized output

  auto hi = seq_len;                                            // scalar i32
  if constexpr (CAUSAL) hi = tl::minimum((start_m + 1) * BM, seq_len);

  for (auto start_n : tl::range(0, hi, BN)) {
    auto k = tl::reshape(dk.load({kv_head, start_n, 0}), {BN, HEAD_DIM});  // [BN, D] T
    auto v = tl::reshape(dv.load({kv_head, start_n, 0}), {BN, HEAD_DIM});  // [BN, D] T
    // Only the blocks reaching past N (or, causal, past the diagonal) are
    // masked (perf.md run 66: +3-4 % at d 128 once the softmax runs after
    // both products; before that, the branch cost the non-causal loop
    // 10 %, run 63).
    attend_block<T, CAUSAL, BM, BN, true>(q, k, v, offs_m, start_m, start_n, seq_len, qk_scale, m_i, l_i, acc);
  }

  auto out = acc / tl::col(l_i);                                // [BM, D] f32
  dout.store({head, start_m * BM, 0}, tl::reshape(tl::cast<T>(out), {1, BM, HEAD_DIM}));  // rows past N not written
}

// The same attention through tensor descriptors of Q and O as [B * H, N,
// D] and K, V as [B * H / group, N, D] (`heads` = B * H, `head_stride` = N
// * D): each block is a [1, rows, D] box of one head, so the hardware's
// bounds (or the masks the descriptors mean) read keys past N as 0 within
// the head. On sm_90 Q, K and V become tensor copies (K and V pipelined on
// mbarriers by a producer warp, Q read by the products where it landed);
// elsewhere the masked loads the descriptors mean.
//
// Launch: grid {cdiv(N, BM), B * H}; arguments Q, K, V, O, N, sm_scale,
// group, B * H, B * H / group, N * D.
template <class T, int BM, int BN, int HEAD_DIM, bool CAUSAL>
void attention_fwd_desc(tl::ptr<T> Q, tl::ptr<T> K, tl::ptr<T> V, tl::ptr<T> O, tl::scalar<int32_t> seq_len,
                        tl::scalar<float> sm_scale, tl::scalar<int32_t> group, tl::scalar<int32_t> heads,
                        tl::scalar<int32_t> kv_heads, tl::scalar<int32_t> head_stride) {
  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "head dim 64 or 128");
  auto start_m = tl::program_id(0);                             // block of query rows
  auto head = tl::program_id(1);                                // batch * H + head
  auto kv_head = head / group;                                  // its key/value head
  auto blocks = [&](tl::ptr<T> x, tl::scalar<int32_t> n_heads, int64_t rows) {  // [heads, N, D], a [1, rows, D] box
    return tl::make_tensor_descriptor(x, {n_heads, seq_len, HEAD_DIM}, {head_stride, HEAD_DIM, 1}, {1, rows, HEAD_DIM});
  };
  auto dq = blocks(Q, heads, BM), dk = blocks(K, kv_heads, BN), dv = blocks(V, kv_heads, BN), dout = blocks(O, heads, BM);

  attend_rows<T, BM, BN, HEAD_DIM, CAUSAL>(dq, dk, dv, dout, head, kv_head, start_m, seq_len, sm_scale);
}

// attention_fwd_desc as a persistent program: at most one program per
// multiprocessor (programs_per_sm of them with :xN), each walking the
// (head, query block) tiles from its program id in steps of the program
// count, so that the producer loads the
// next tile's first keys while the consumers finish the last one's
// softmax and store its output. The tiles of one head are consecutive
// (the programs working at once share their K and V through L2). Causal,
// query block j sees j + 1 key blocks, and a walk of single tiles hands
// some programs twice the keys of others (docs/perf.md run 78): a step
// takes blocks j and T - 1 - j of a head (T + 1 key blocks, the same for
// every step; with T odd, a head's middle block goes with the next head's
// first and the steps after it are T + 2), one after the other in the
// same tile loop (one loop of keys in its body, so both blocks share one
// ring of K and V buffers).
//
// Launch: grid {min(steps, multiprocessors * programs_per_sm)}: steps =
// tiles = cdiv(N, BM) * B * H, causal cdiv(tiles, 2); arguments as
// attention_fwd_desc's.
template <class T, int BM, int BN, int HEAD_DIM, bool CAUSAL>
void attention_persistent(tl::ptr<T> Q, tl::ptr<T> K, tl::ptr<T> V, tl::ptr<T> O, tl::scalar<int32_t> seq_len,
                          tl::scalar<float> sm_scale, tl::scalar<int32_t> group, tl::scalar<int32_t> heads,
                          tl::scalar<int32_t> kv_heads, tl::scalar<int32_t> head_stride) {
  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "head dim 64 or 128");
  auto blocks = [&](tl::ptr<T> x, tl::scalar<int32_t> n_heads, int64_t rows) {  // [heads, N, D], a [1, rows, D] box
    return tl::make_tensor_descriptor(x, {n_heads, seq_len, HEAD_DIM}, {head_stride, HEAD_DIM, 1}, {1, rows, HEAD_DIM});
  };
  auto dq = blocks(Q, heads, BM), dk = blocks(K, kv_heads, BN), dv = blocks(V, kv_heads, BN), dout = blocks(O, heads, BM);
  auto m_blocks = tl::cdiv(seq_len, BM);                        // scalar i32: query blocks of a head
  auto pid = tl::program_id(0), programs = tl::num_programs(0);  // scalar i32

  if constexpr (!CAUSAL) {
    for (auto tile : tl::range(pid, m_blocks * heads, programs)) {
      auto head = tile / m_blocks;                              // batch * H + head
      attend_rows<T, BM, BN, HEAD_DIM, CAUSAL>(dq, dk, dv, dout, head, head / group, tile % m_blocks, seq_len, sm_scale);
    }
  } else {
    // Each head's blocks in the order 0, T-1, 1, T-2, ...: a program takes
    // them two at a time (positions 2c and 2c + 1, c = pid, pid + programs,
    // ...). The last position of an odd total is taken twice.
    auto tiles = m_blocks * heads;                              // scalar i32
    auto mine = tl::cdiv(tl::cdiv(tiles, 2) - pid, programs);   // scalar i32: this program's pairs (<= 0: none)
    for (auto i : tl::range(0, 2 * mine, 1)) {
      auto q = tl::minimum(2 * (pid + i / 2 * programs) + i % 2, tiles - 1);  // scalar i32: position
      auto head = q / m_blocks, r = q % m_blocks;               // batch * H + head; place in its order
      auto start_m = r / 2 + (r % 2) * (m_blocks - 1 - 2 * (r / 2));  // r even: r / 2; odd: T - 1 - r / 2
      attend_rows<T, BM, BN, HEAD_DIM, CAUSAL>(dq, dk, dv, dout, head, head / group, start_m, seq_len, sm_scale);
    }
  }
}

// Variable-length sequences packed one after another (FlashAttention's
// varlen layout): Q and O of [total_q, H, D] and K, V of [total_k, H /
// group, D], sequence b's queries rows cu_q[b] .. cu_q[b + 1) and its keys
// rows cu_k[b] .. cu_k[b + 1) (cumulative lengths, B + 1 of each). A
// program owns BM queries of one (sequence, head); programs past their
// sequence's end run no loop and store nothing. Causal aligns each
// sequence's last query with its last key (FlashAttention 2.1's
// bottom-right convention): query i sees keys j <= i + k_len - q_len, so
// equal lengths are the usual causal mask; a query that sees no key (k_len
// < q_len) gets zeros, as does every query of a sequence without keys.
//
// Launch: grid {cdiv(longest q_len, BM), B * H}; arguments Q, K, V, O, cu_q,
// cu_k, sm_scale, H, group.
template <class T, int BM, int BN, int HEAD_DIM, bool CAUSAL>
void attention_varlen_fwd(tl::ptr<T> Q, tl::ptr<T> K, tl::ptr<T> V, tl::ptr<T> O, tl::ptr<int32_t> cu_q,
                          tl::ptr<int32_t> cu_k, tl::scalar<float> sm_scale, tl::scalar<int32_t> heads,
                          tl::scalar<int32_t> group) {
  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "head dim 64 or 128");
  auto start_m = tl::program_id(0);                             // block of query rows
  auto seq = tl::program_id(1) / heads;                         // sequence
  auto head = tl::program_id(1) % heads;
  auto q_start = tl::load(cu_q + seq), q_len = tl::load(cu_q + seq + 1) - q_start;  // scalar i32
  auto k_start = tl::load(cu_k + seq), k_len = tl::load(cu_k + seq + 1) - k_start;  // scalar i32
  auto q_stride = heads * HEAD_DIM, kv_stride = heads / group * HEAD_DIM;  // scalar i32: a token's row

  auto offs_m = start_m * BM + tl::arange(0, BM);               // [BM] i32: query positions
  auto offs_n = tl::arange(0, BN);                              // [BN] i32
  auto offs_d = tl::arange(0, HEAD_DIM);                        // [D] i32
  auto row_ok = tl::col(offs_m < q_len);                        // [BM, 1] i1
  auto q_offs = (q_start + tl::col(offs_m)) * q_stride + head * HEAD_DIM + tl::row(offs_d);  // [BM, D] i32
  auto q = tl::load(Q + q_offs, row_ok);                        // [BM, D] T
  auto qk_scale = sm_scale * 1.44269504f;                       // scalar f32: log2(e) folded in

  auto m_i = tl::full<float>({BM}, -INFINITY);                  // [BM] f32 running max (log2 units)
  auto l_i = tl::zeros<float>({BM});                            // [BM] f32 running sum of p
  auto acc = tl::zeros<float>({BM, HEAD_DIM});                  // [BM, D] f32 unnormalized output

  // Causal: query i's last key is i + diag; the block's last query bounds
  // the loop. A block past the sequence's queries runs no iteration.
  auto diag = k_len - q_len;                                    // scalar i32
  auto hi = k_len;                                              // scalar i32
  if constexpr (CAUSAL) hi = tl::minimum((start_m + 1) * BM + diag, k_len);
  hi = tl::where(start_m * BM < q_len, hi, 0);

  for (auto start_n : tl::range(0, hi, BN)) {
    auto cols = start_n + offs_n;                               // [BN] i32: key positions
    auto col_ok = tl::col(cols < k_len);                        // [BN, 1] i1
    auto kv_offs = (k_start + tl::col(cols)) * kv_stride + head / group * HEAD_DIM + tl::row(offs_d);  // [BN, D] i32
    auto k = tl::load(K + kv_offs, col_ok);                     // [BN, D] T
    auto v = tl::load(V + kv_offs, col_ok);                     // [BN, D] T
    // The causal mask compares key positions with offs_m + diag.
    attend_block<T, CAUSAL, BM, BN, false>(q, k, v, offs_m + diag, start_m, start_n, k_len, qk_scale, m_i, l_i, acc);
  }

  // A row that saw no key has l_i = 0 (or NaN from -inf - -inf): zeros.
  auto out = tl::where(tl::col(l_i > 0.0f), acc / tl::col(l_i), 0.0f);  // [BM, D] f32
  tl::store(O + q_offs, tl::cast<T>(out), row_ok);
}

// Two matrix products of 2 * N * N * D flops per (batch, head); causal
// skips the masked half (the diagonal blocks' waste is not counted), as
// FlashAttention's benchmarks count.
inline double attention_flops(int B, int H, int N, int D, bool causal) {
  return 4.0 * B * H * double(N) * N * D * (causal ? 0.5 : 1.0);
}

// Tiles, warps, pipeline depth and form of one attention launch.
struct AttentionConfig {
  int block_m = 128;         // BM: query rows per program
  int block_n = 64;          // BN: keys per loop iteration
  int num_warps = 4;
  int num_stages = 3;
  bool descriptors = false;  // attention_fwd_desc (":desc") instead of attention_fwd
  bool persistent = false;   // attention_persistent (":persistent"), descriptors too
  int programs_per_sm = 1;   // CompileOptions::programs_per_sm (":xN", N > 1)

  std::string str() const {
    return std::to_string(block_m) + "x" + std::to_string(block_n) + ":" + std::to_string(num_warps) + ":" +
           std::to_string(num_stages) + (persistent ? ":persistent" : descriptors ? ":desc" : "") +
           (programs_per_sm > 1 ? ":x" + std::to_string(programs_per_sm) : "");
  }
};

// Parses "BMxBN:warps:stages[:desc|:persistent][:xN]" (AttentionConfig::str;
// xN: N programs a multiprocessor at least); `what` names the text's
// source in the error.
inline AttentionConfig parse_attention_config(const std::string& text, const std::string& what) {
  AttentionConfig c;
  char rest[32] = "";
  int fields = std::sscanf(text.c_str(), "%dx%d:%d:%d:%31s", &c.block_m, &c.block_n, &c.num_warps, &c.num_stages, rest);
  bool parsed = fields == 4 || fields == 5;
  std::string form, parts = fields == 5 ? rest : "";
  for (size_t at = 0; parsed && at < parts.size();) {
    size_t end = std::min(parts.find(':', at), parts.size());
    std::string part = parts.substr(at, end - at);
    at = end + 1;
    if (part.size() == 2 && part[0] == 'x' && part[1] >= '1' && part[1] <= '8') c.programs_per_sm = part[1] - '0';
    else if (form.empty() && c.programs_per_sm == 1 && (part == "desc" || part == "persistent")) form = part;
    else parsed = false;
  }
  c.persistent = form == "persistent";
  c.descriptors = c.persistent || form == "desc";
  bool tiles_ok = ((c.block_m == 64 || c.block_m == 128) && (c.block_n == 32 || c.block_n == 64 || c.block_n == 128)) ||
                  (c.block_m == 256 && c.block_n == 64);
  bool warps_ok = c.num_warps >= 1 && c.num_warps <= 16 && (c.num_warps & (c.num_warps - 1)) == 0;
  if (!parsed || !tiles_ok || !warps_ok || c.num_stages < 1 || c.num_stages > 8)
    throw tl::Error(what + ": expected BMxBN:warps:stages[:desc|:persistent][:xN] with BM 64 or 128 and BN 32, 64 or 128, or 256x64, "
                    "warps a power of two up to 16, 1 to 8 stages and 1 to 8 programs a multiprocessor (e.g. 128x64:8:3, "
                    "64x64:4:3:desc:x3), found '" + text + "'");
  return c;
}

// The configuration for head dim `head_dim` on `target` (Device::target()),
// sequences of `seq_len` keys (0: not known, taken as long) and `causal`
// masking:
// TILEDSL_ATTN_CONFIG = BMxBN:warps:stages[:desc|:persistent][:xN] (e.g. 128x64:8:3) when
// set, for every head dim and target. Else on sm_90a the descriptor forms
// with 8 warps (two consumer warpgroups of 64 query rows beside the
// compiler's producer) and 128-key blocks: at d = 128 the persistent one
// with 2 stages (3 do not fit shared memory; 5-22 % faster than 128x64 with
// 3 stages, whose per-block costs, the rescale of O and the row
// reductions, weigh twice as much: perf.md run 80), at d = 64 a program a
// block with 3 stages (twice the keys a step for the same shared memory;
// runs 61, 67 and 80), but for sequences of up to 4096 keys 64x64 with
// one consumer warpgroup and three programs a multiprocessor (:x3): a
// program's start (its Q and first keys) and end (the output's store)
// overlap the other two's products, +22 / +13 / +1 % at N 1024 / 2048 /
// 4096 and +43 / +26 / +14 % causal, 4-6 % behind at N 16384 (run 81);
// and without the causal mask, past 1024 keys, 256x64 with 16 warps (four
// consumer warpgroups sharing each key block: half the copies of K and V a
// query row) in 2 stages, +4 / +2 / +12 / +10 % over :x3 at N 2048 / 4096
// / 8192 / 16384 and 2 % behind at 1024 (run 82; causal it trails :x3 by
// 5-23 % up to N 8192, its diagonal blocks twice as large); on AMD see
// below; elsewhere
// 128x64 with 4 warps (d = 64) or 8 warps (d = 128), 3 stages: the shapes
// FlashAttention-2 and Triton's tutorial settle on for mma.sync (16 query rows per warp at d = 128, where
// the [BM, D] f32 accumulator is largest). BM is 64 or 128 and BN 32, 64 or
// 128, or 256x64: the instantiations with_tiles makes.
inline AttentionConfig default_attention_config(int head_dim, const std::string& target, int seq_len = 0,
                                                bool causal = false) {
  if (target == "sm_90a") {
    if (head_dim == 128) return {128, 128, 8, 2, true, true};
    if (!causal && seq_len > 1024) return {256, 64, 16, 2, true};
    if (seq_len > 0 && seq_len <= 4096) return {64, 64, 4, 3, true, false, 3};
    return {128, 128, 8, 3, true};
  }
  // AMD: a thread's registers grow with BN (the key block every warp
  // multiplies by) and hardly shrink with more warps: 128x64 at d 128
  // spilled 78 registers a thread on gfx90a and gfx942 and 116 on gfx1100
  // (259 at d 64 there); 128x32 with 8 warps spills none but on gfx1100 at
  // d 128 (50). Chosen by the compiler's register counts: no AMD GPU has
  // timed them yet.
  if (target.rfind("gfx", 0) == 0 && (head_dim == 128 || target == "gfx1100")) return {128, 32, 8, 3};
  return {128, 64, head_dim == 64 ? 4 : 8, 3};
}
// TILEDSL_ATTN_CONFIG, when set.
inline std::optional<AttentionConfig> env_attention_config() {
  const char* env = std::getenv("TILEDSL_ATTN_CONFIG");
  if (env && *env) return parse_attention_config(env, "TILEDSL_ATTN_CONFIG");
  return std::nullopt;
}
inline AttentionConfig attention_config(int head_dim, const std::string& target = "", int seq_len = 0,
                                        bool causal = false) {
  return env_attention_config().value_or(default_attention_config(head_dim, target, seq_len, causal));
}
// The varlen kernel's configuration (it has the pointer form only, which
// takes the tiles, warps and stages): TILEDSL_ATTN_CONFIG when set, else
// the default's, but at d = 128 on sm_90a 128x64:8:3, 12-17 % faster there
// than the persistent default's 128x128:8:2 (run 81).
inline AttentionConfig varlen_attention_config(int head_dim, const std::string& target = "") {
  if (auto c = env_attention_config()) return *c;
  if (target == "sm_90a" && head_dim == 128) return {128, 64, 8, 3};
  return default_attention_config(head_dim, target);
}

// The kernel of configuration `c` compiled with `options` (its warps and
// stages set here), and its launch on `dev` over Q, K, V, O of shape [B,
// H, N, D] and K, V of [B, H / group, N, D]: one place that knows the two
// forms' arguments.
inline tl::CompileOptions attention_options(const AttentionConfig& c, tl::CompileOptions options) {
  options.num_warps = c.num_warps;
  options.num_stages = c.num_stages;
  options.programs_per_sm = c.programs_per_sm;
  // exp2 of a softmax whose result is below 2^-126 counts as 0 (as
  // FlashAttention's fast-math build): one instruction per exponential.
  options.flush_denormals = true;
  return options;
}

// The device a launch goes to: `dev` itself, or a stream's.
inline const tl::Device& device_of(const tl::Device& dev) { return dev; }
inline tl::Device device_of(const tl::Stream& stream) { return stream.device(); }

// The grid of a launch over `heads` heads of N queries: a program a BM-row
// query block of a head, or (persistent) at most `programs_per_sm` a
// multiprocessor.
inline tl::Grid attention_grid(const tl::Device& dev, int BM, bool persistent, bool causal, int heads, int N,
                               int programs_per_sm = 1) {
  const int64_t blocks = tl::cdiv(N, BM);
  if (!persistent) return {uint32_t(blocks), uint32_t(heads)};
  // attention_persistent's steps: a tile each, causal a pair.
  const int64_t tiles = blocks * heads, steps = causal ? tl::cdiv(tiles, int64_t(2)) : tiles;
  return {uint32_t(std::max<int64_t>(1, std::min<int64_t>(steps, int64_t(dev.processor_count()) * programs_per_sm)))};
}

template <class T, int BM, int BN, int D, bool CAUSAL>
struct AttentionKernel {
  AttentionKernel(const AttentionConfig& c, tl::CompileOptions options)
      : descriptors(c.descriptors), persistent(c.persistent), programs_per_sm(c.programs_per_sm) {
    options = attention_options(c, options);
    kernel = persistent    ? tl::compile(attention_persistent<T, BM, BN, D, CAUSAL>, options)
             : descriptors ? tl::compile(attention_fwd_desc<T, BM, BN, D, CAUSAL>, options)
                           : tl::compile(attention_fwd<T, BM, BN, D, CAUSAL>, options);
  }
  // On a device, or on a stream of one (`dev` a tl::Device or tl::Stream).
  template <class Dev>
  void operator()(Dev& dev, const tl::Buffer& q, const tl::Buffer& k, const tl::Buffer& v, tl::Buffer& o, int B,
                  int H, int N, float sm_scale, int group = 1) const {
    tl::Grid grid = attention_grid(device_of(dev), BM, persistent, CAUSAL, B * H, N, programs_per_sm);
    if (descriptors) dev(kernel, grid, q, k, v, o, N, sm_scale, group, B * H, B * H / group, N * D);
    else dev(kernel, grid, q, k, v, o, N, sm_scale, group);
  }
  tl::Kernel kernel;
  bool descriptors, persistent;
  int programs_per_sm;
};

// The varlen kernel (attention_varlen_fwd) in configuration `c`'s tiles,
// warps and stages (always the pointer form), and its launch over packed
// Q, O [total_q, H, D] and K, V [total_k, H / group, D] of B sequences
// whose cumulative lengths are cu_q and cu_k (B + 1 i32 each), the longest
// query sequence max_q_len.
template <class T, int BM, int BN, int D, bool CAUSAL>
struct AttentionVarlenKernel {
  AttentionVarlenKernel(const AttentionConfig& c, tl::CompileOptions options)
      : kernel(tl::compile(attention_varlen_fwd<T, BM, BN, D, CAUSAL>, attention_options(c, options))) {}
  template <class Dev>
  void operator()(Dev& dev, const tl::Buffer& q, const tl::Buffer& k, const tl::Buffer& v, tl::Buffer& o,
                  const tl::Buffer& cu_q, const tl::Buffer& cu_k, int B, int H, int max_q_len, float sm_scale,
                  int group = 1) const {
    tl::Grid grid{uint32_t(std::max(1, tl::cdiv(max_q_len, BM))), uint32_t(B * H)};
    dev(kernel, grid, q, k, v, o, cu_q, cu_k, sm_scale, H, group);
  }
  tl::Kernel kernel;
};

// Calls `f.template operator()<BM, BN>()` for the run-time tile sizes of `c`
// (BM in {64, 128} with BN in {32, 64, 128}, or 256 x 64: four consumer
// warpgroups of 64 rows at d 64 with 16 warps); returns what f returns.
template <class F>
decltype(auto) with_tiles(const AttentionConfig& c, F&& f) {
  auto with_bn = [&]<int BM>() -> decltype(auto) {
    if (c.block_n == 32) return f.template operator()<BM, 32>();
    if (c.block_n == 64) return f.template operator()<BM, 64>();
    if (c.block_n == 128) return f.template operator()<BM, 128>();
    throw tl::Error("attention: BN " + std::to_string(c.block_n) + " has no instantiation (32, 64 or 128)");
  };
  if (c.block_m == 64) return with_bn.template operator()<64>();
  if (c.block_m == 128) return with_bn.template operator()<128>();
  if (c.block_m == 256 && c.block_n == 64) return f.template operator()<256, 64>();
  throw tl::Error("attention: BMxBN " + std::to_string(c.block_m) + "x" + std::to_string(c.block_n) +
                  " has no instantiation (BM 64 or 128, or 256x64)");
}

// The configurations a tuned attention chooses from for head dim
// `head_dim` on `target`: the default (default_attention_config), the other key block sizes and pipeline depths of
// the same form (the descriptor form on sm_90a, whose launch takes more
// arguments: one tuner's configurations share one argument list), 64
// query rows for short sequences, and on sm_90a the persistent form
// (which shares the descriptor form's arguments; docs/perf.md runs 78-80)
// and 256-row blocks of four consumer warpgroups (d 64 without the mask:
// 2-12 % ahead of :x3 from N 2048 on the H200, behind it with the mask
// up to N 8192; run 82).
// One whose
// buffers do not fit the GPU's shared memory fails to compile and is
// dropped by the tuner, saying so.
inline std::vector<AttentionConfig> attention_tune_configs(int head_dim, const std::string& target) {
  std::vector<std::string> names;
  if (target == "sm_90a")
    names = {"128x128:8:2:desc",       "128x64:8:2:desc",       "128x64:8:3:desc", "128x128:8:3:desc",
             "64x64:4:3:desc",         "128x64:8:3:persistent", "128x128:8:2:persistent",
             "128x128:8:3:persistent", "64x64:4:3:desc:x3",     "64x128:4:2:desc:x2",
             "256x64:16:2:desc"};
  else
    names = {"128x64:8:3", "128x64:4:3", "128x32:4:3", "64x64:4:3", "128x128:8:2"};
  std::vector<AttentionConfig> out{default_attention_config(head_dim, target)};
  for (const auto& n : names) {
    AttentionConfig c = parse_attention_config(n, "attention_tune_configs");
    if (std::none_of(out.begin(), out.end(), [&](const AttentionConfig& x) { return x.str() == c.str(); }))
      out.push_back(c);
  }
  return out;
}

// Picks the configuration of attention<T, D, CAUSAL> for B x H heads of N
// (over H / group key/value heads) with tl::Autotuner over `configs` (all
// of one form), named `name` for its results file: measures each on
// buffers of the problem's size the first time a key is seen, and the
// next run reads the pick from disk. The key is the launch's integers: N
// and the group (and in the descriptor form the head counts), as Triton's
// tutorial keys by N_CTX; B and H, which set only the grid's second axis,
// are not in the pointer form's.
template <class T, int D, bool CAUSAL>
AttentionConfig tune_attention(tl::Device& dev, const std::string& name, const std::vector<AttentionConfig>& configs,
                               int B, int H, int N, int group, const tl::CompileOptions& options) {
  std::vector<tl::TuneConfig> list;
  for (const auto& c : configs)
    list.push_back({c.str(), [c, options] {
                      return with_tiles(c, [&]<int BM, int BN>() {
                        return AttentionKernel<T, BM, BN, D, CAUSAL>(c, options).kernel;
                      });
                    },
                    {{"BM", c.block_m}, {"persistent", c.persistent}, {"programs_per_sm", c.programs_per_sm}}});
  tl::Autotuner tuner(name, list);
  const size_t n = size_t(B) * H * N * D, n_kv = size_t(B) * (H / group) * N * D;
  tl::Buffer q = dev.alloc<T>(n), k = dev.alloc<T>(n_kv), v = dev.alloc<T>(n_kv), o = dev.alloc<T>(n);
  auto grid = [&](const tl::TuneConfig& c) {
    return attention_grid(dev, int(c.meta.at("BM")), c.meta.at("persistent") != 0, CAUSAL, B * H, N,
                          int(c.meta.at("programs_per_sm")));
  };
  const float sm_scale = 1.0f / std::sqrt(float(D));
  std::vector<tl::Arg> args = {q, k, v, o, N, sm_scale, group};
  if (configs.front().descriptors)
    for (int extra : {B * H, B * H / group, N * D}) args.push_back(extra);
  return parse_attention_config(tuner.pick(dev, grid, args).name, "tune_attention");
}

}  // namespace kernels
