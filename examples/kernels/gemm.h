// GEMM, C = A @ B with A [M, K] and B [K, N] in bf16 or f16, f32
// accumulation and C [M, N] in the input type: the kernel that
// examples/gemm.cpp checks and bench/gemm.cpp times. Also the tile
// configurations both of them can pick at run time (GemmConfig).
//
// Each program computes one BM x BN tile of C, walking K in BK steps with
// tl::range; masks cover the ragged edges of M, N and K, so no size has to be
// a multiple of a tile. Strides are kernel parameters, so A and B may each be
// row- or column-major (or any other strided layout); tile sizes are
// template parameters.
//
// Program order is grouped (as in Triton's matmul tutorial): programs that
// run at the same time cover GROUP_M rows of tiles and share their columns of
// B, instead of sweeping a whole row of C and re-reading all of B, which
// improves L2 reuse on a GPU.
//
// Launch: grid {cdiv(M, BM) * cdiv(N, BN)}; arguments A, B, C, M, N, K,
// stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tiledsl/autotune.h"
#include "tiledsl/tiledsl.h"

namespace kernels {

// Output tile number `pid` as (pid_m, pid_n) in grouped order: groups of
// GROUP_M tile rows are walked column by column; the last group may be
// shorter.
struct TileCoords {
  tl::scalar<int32_t> m, n;
};
template <int BM, int BN, int GROUP_M>
TileCoords grouped_tile(tl::scalar<int32_t> pid, tl::scalar<int32_t> M, tl::scalar<int32_t> N) {
  auto num_pid_m = tl::cdiv(M, BM);                             // scalar i32
  auto num_pid_n = tl::cdiv(N, BN);                             // scalar i32
  auto num_pid_in_group = GROUP_M * num_pid_n;                  // scalar i32
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_M);
  return {first_pid_m + (pid % num_pid_in_group) % group_size_m, (pid % num_pid_in_group) / group_size_m};
}

template <class T, int BM, int BN, int BK, int GROUP_M>
void gemm(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c,
          tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
          tl::scalar<int32_t> stride_am, tl::scalar<int32_t> stride_ak,
          tl::scalar<int32_t> stride_bk, tl::scalar<int32_t> stride_bn,
          tl::scalar<int32_t> stride_cm, tl::scalar<int32_t> stride_cn) {
  auto [pid_m, pid_n] = grouped_tile<BM, BN, GROUP_M>(tl::program_id(0), M, N);

  auto offs_m = pid_m * BM + tl::arange(0, BM);                 // [BM] i32
  auto offs_n = pid_n * BN + tl::arange(0, BN);                 // [BN] i32
  auto offs_k = tl::arange(0, BK);                              // [BK] i32
  auto a_ptrs = a + tl::col(offs_m) * stride_am + tl::row(offs_k) * stride_ak;  // [BM, BK] ptr<T>
  auto b_ptrs = b + tl::col(offs_k) * stride_bk + tl::row(offs_n) * stride_bn;  // [BK, BN] ptr<T>
  auto m_ok = tl::col(offs_m < M);                              // [BM, 1] i1
  auto n_ok = tl::row(offs_n < N);                              // [1, BN] i1

  // acc, a_ptrs and b_ptrs are assigned in the body: they become the loop's
  // carried values.
  auto acc = tl::zeros<float>({BM, BN});                        // [BM, BN] f32
  for (auto k : tl::range(0, K, BK)) {
    auto k_ok = k + offs_k < K;                                 // [BK] i1
    auto a_tile = tl::load(a_ptrs, m_ok & tl::row(k_ok), 0.0f);  // [BM, BK] T
    auto b_tile = tl::load(b_ptrs, tl::col(k_ok) & n_ok, 0.0f);  // [BK, BN] T
    acc = tl::dot(a_tile, b_tile, acc);                         // [BM, BN] f32
    a_ptrs += BK * stride_ak;
    b_ptrs += BK * stride_bk;
  }

  auto c_ptrs = c + tl::col(offs_m) * stride_cm + tl::row(offs_n) * stride_cn;  // [BM, BN] ptr<T>
  tl::store(c_ptrs, tl::cast<T>(acc), m_ok & n_ok);
}

// The same gemm through tensor descriptors: the hardware (or, where it
// cannot, the masks the descriptors mean) handles the ragged edges. On
// sm_90 the blocks of A and B become tensor copies (TMA) when the launch
// proves the rules: row-major A and B (stride 1 last), 16-byte aligned
// bases and row strides.
template <class T, int BM, int BN, int BK, int GROUP_M>
void gemm_desc(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c,
               tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
               tl::scalar<int32_t> stride_am, tl::scalar<int32_t> stride_ak,
               tl::scalar<int32_t> stride_bk, tl::scalar<int32_t> stride_bn,
               tl::scalar<int32_t> stride_cm, tl::scalar<int32_t> stride_cn) {
  auto [pid_m, pid_n] = grouped_tile<BM, BN, GROUP_M>(tl::program_id(0), M, N);
  auto da = tl::make_tensor_descriptor(a, {M, K}, {stride_am, stride_ak}, {BM, BK});
  auto db = tl::make_tensor_descriptor(b, {K, N}, {stride_bk, stride_bn}, {BK, BN});
  auto dc = tl::make_tensor_descriptor(c, {M, N}, {stride_cm, stride_cn}, {BM, BN});
  auto m0 = pid_m * BM, n0 = pid_n * BN;                         // scalar i32
  auto acc = tl::zeros<float>({BM, BN});                        // [BM, BN] f32
  for (auto k : tl::range(0, K, BK))
    acc = tl::dot(da.load({m0, k}), db.load({k, n0}), acc);     // [BM, BK] x [BK, BN]
  dc.store({m0, n0}, tl::cast<T>(acc));
}

// gemm_desc as a persistent program: each program walks the output tiles
// program_id, program_id + num_programs, ... in the same grouped order
// (launch about one program a multiprocessor: gemm_grid). Warp-specialized
// on sm_90a, the copies of a tile's first K blocks then run during the
// previous tile's epilogue.
template <class T, int BM, int BN, int BK, int GROUP_M>
void gemm_persistent(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c,
                     tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                     tl::scalar<int32_t> stride_am, tl::scalar<int32_t> stride_ak,
                     tl::scalar<int32_t> stride_bk, tl::scalar<int32_t> stride_bn,
                     tl::scalar<int32_t> stride_cm, tl::scalar<int32_t> stride_cn) {
  auto da = tl::make_tensor_descriptor(a, {M, K}, {stride_am, stride_ak}, {BM, BK});
  auto db = tl::make_tensor_descriptor(b, {K, N}, {stride_bk, stride_bn}, {BK, BN});
  auto dc = tl::make_tensor_descriptor(c, {M, N}, {stride_cm, stride_cn}, {BM, BN});
  auto tiles = tl::cdiv(M, BM) * tl::cdiv(N, BN);               // scalar i32
  for (auto t : tl::range(tl::program_id(0), tiles, tl::num_programs(0))) {
    auto [pid_m, pid_n] = grouped_tile<BM, BN, GROUP_M>(t, M, N);
    auto m0 = pid_m * BM, n0 = pid_n * BN;                       // scalar i32
    auto acc = tl::zeros<float>({BM, BN});                      // [BM, BN] f32
    for (auto k : tl::range(0, K, BK))
      acc = tl::dot(da.load({m0, k}), db.load({k, n0}), acc);   // [BM, BK] x [BK, BN]
    dc.store({m0, n0}, tl::cast<T>(acc));
  }
}

// Stream-K (after Osama et al., 2023): how a persistent gemm's work is
// shared out over `programs` programs when its tiles do not fill whole
// rounds. The tiles of the whole rounds are data-parallel, as in
// gemm_persistent. The last round's T tiles, which would leave programs
// idle, are split along K instead, with the cuts at the same steps in
// every tile: program p < s * T takes the (p % s)-th cut of `cut` steps of
// split tile p / s, and the r spare programs after them the rest of each
// tile, [s * cut, iters), T / r tiles each (n, rounded up).
// A tile computed by several programs is summed through memory
// (gemm_streamk): each cut's partial sums are written, and the program
// that adds the tile up reads the others back, kStreamKSumSteps steps'
// worth each. The cut balances the two kinds of program with that
// counted (cut + o = n * (iters - s * cut + o)); a tile is cut in at most
// iters / 16, a spare program takes at most 4 rests, and the split is
// only made where it still saves a tenth of a round. (The paper's form,
// each program's steps laid end to end across tiles, and an earlier form
// of this one without the cost counted, were both slower than not
// splitting at 4000^3: docs/perf.md run 89.)
// Written once for the host (I = int64_t: the workspace's size) and the
// kernel (I = tl::scalar<int32_t>: its walk).
//
// kStreamKSumSteps: what moving one cut's partial sums costs a program
// (writing them, or reading them back to add), in K steps of a 128 x 256
// tile on an H100: 128 KiB of f32, about 1.5 us, against 0.7 us a step.
inline constexpr int kStreamKSumSteps = 2;
template <class I>
struct StreamK {
  I dp_tiles;  // tiles [0, dp_tiles): whole, program p takes p, p + programs, ...
  I sk_tiles;  // T: tiles [dp_tiles, tiles), split
  I pieces;    // s: cuts of `cut` steps a split tile has at its start
  I cut;
  I spare;     // r: programs taking the rest, [pieces * cut, iters), of split tiles
  I slots;     // the programs one split tile is shared by: s, and 1 if a rest is left
};
namespace detail {
inline int64_t min_of(int64_t a, int64_t b) { return std::min(a, b); }
inline int64_t max_of(int64_t a, int64_t b) { return std::max(a, b); }
inline int64_t pick(bool c, int64_t a, int64_t b) { return c ? a : b; }
template <class B>
tl::scalar<int32_t> min_of(const tl::scalar<int32_t>& a, const B& b) { return tl::minimum(a, b); }
template <class B>
tl::scalar<int32_t> max_of(const tl::scalar<int32_t>& a, const B& b) { return tl::maximum(a, b); }
template <class A, class B>
tl::scalar<int32_t> pick(const tl::scalar<bool>& c, const A& a, const B& b) { return tl::where(c, a, b); }
}  // namespace detail
template <class I>
StreamK<I> stream_k(I tiles, I iters, I programs) {
  using detail::max_of, detail::min_of, detail::pick;
  I tail = tiles % programs;
  I s = min_of(max_of(programs / max_of(tail, 1), 1), max_of(iters / 16, 1));
  I r0 = min_of(programs - s * tail, tail);
  I n = (tail + max_of(r0, 1) - 1) / max_of(r0, 1);  // rests a spare program takes
  I r = pick(n <= 4, r0, 0);  // a longer chain of them would end last
  const int o = kStreamKSumSteps;
  I even = (iters + s - 1) / s;  // cuts without spare programs
  I cut = pick(r > 0, min_of((n * (iters + o) - o + s * n) / (1 + s * n), even), even);
  I rest = max_of(iters - s * cut, 0);
  // Without a rest, as many cuts as the steps fill: s cuts of
  // ceil(iters / s) steps can leave the last ones none (20 of 17 over
  // 321 steps), a program adding zeros and a partial sum moved for them.
  s = pick(rest > 0, s, max_of((iters + cut - 1) / max_of(cut, 1), 1));
  // The split round's steps: the slower kind of program, then the reads
  // of the one that adds a tile up.
  I steps = max_of(cut + o, pick(r > 0, n * (rest + o), 0)) + (s - pick(rest > 0, 0, 1)) * o;
  I split = pick((tail > 0) & (steps * 10 <= iters * 9), tail, 0);
  return {tiles - split, split, s, cut, pick((rest > 0) & (split > 0), r, 0), s + pick(rest > 0, 1, 0)};
}

// gemm_persistent with stream-K (StreamK above): each program walks its
// whole tiles, then its cuts of split tiles. A whole tile is stored as
// usual; the programs that share a tile leave their partial sums (f32) in
// a slot of `partials` and count themselves in `arrivals` (one counter a
// split tile, zero before the first launch and left zero after each); the
// last to arrive adds the slots in K order (the same sum whoever it is)
// and stores the tile. The program of a tile's first cut looks before
// writing, and writes its partial sums only if another is still to come.
// Launch: launch_gemm (gemm_grid's one program a multiprocessor, and
// gemm_streamk_workspace's buffers).
template <class T, int BM, int BN, int BK, int GROUP_M>
void gemm_streamk(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c,
                  tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                  tl::scalar<int32_t> stride_am, tl::scalar<int32_t> stride_ak,
                  tl::scalar<int32_t> stride_bk, tl::scalar<int32_t> stride_bn,
                  tl::scalar<int32_t> stride_cm, tl::scalar<int32_t> stride_cn,
                  tl::ptr<float> partials, tl::ptr<int32_t> arrivals) {
  auto da = tl::make_tensor_descriptor(a, {M, K}, {stride_am, stride_ak}, {BM, BK});
  auto db = tl::make_tensor_descriptor(b, {K, N}, {stride_bk, stride_bn}, {BK, BN});
  auto dc = tl::make_tensor_descriptor(c, {M, N}, {stride_cm, stride_cn}, {BM, BN});
  auto pid = tl::program_id(0), programs = tl::num_programs(0);  // scalar i32
  auto iters = tl::cdiv(K, BK);                                  // K steps a tile
  auto sk = stream_k(tl::cdiv(M, BM) * tl::cdiv(N, BN), iters, programs);
  // This program's whole tiles, then its cuts: one of a split tile's first
  // ones, or the rest of the split tiles [lo, hi).
  auto whole_tiles = tl::where(pid < sk.dp_tiles, (sk.dp_tiles - pid + programs - 1) / programs, 0);
  auto first_cuts = sk.pieces * sk.sk_tiles;                     // programs with one
  auto spare = pid - first_cuts;                                 // >= 0: a spare program
  auto lo = spare * sk.sk_tiles / tl::maximum(sk.spare, 1), hi = (spare + 1) * sk.sk_tiles / tl::maximum(sk.spare, 1);
  auto cuts = tl::where(pid < first_cuts, 1, tl::where(spare < sk.spare, hi - lo, 0));
  auto offs_m = tl::arange(0, BM), offs_n = tl::arange(0, BN);   // [BM], [BN] i32
  auto slot_offs = tl::col(offs_m) * BN + tl::row(offs_n);        // [BM, BN] i32
  for (auto u : tl::range(0, whole_tiles + cuts)) {
    auto dp = u < whole_tiles;
    auto split = tl::where(pid < first_cuts, pid / sk.pieces, lo + u - whole_tiles);  // a split tile, from 0
    auto piece = tl::where(pid < first_cuts, pid % sk.pieces, sk.pieces);            // its slot
    auto tile = tl::where(dp, pid + u * programs, sk.dp_tiles + split);
    auto k_lo = tl::where(dp, 0, piece * sk.cut);
    auto k_hi = tl::where(dp | (piece == sk.pieces), iters, tl::minimum(k_lo + sk.cut, iters));
    auto [pid_m, pid_n] = grouped_tile<BM, BN, GROUP_M>(tile, M, N);
    auto m0 = pid_m * BM, n0 = pid_n * BN;                       // scalar i32
    auto acc = tl::zeros<float>({BM, BN});                       // [BM, BN] f32
    for (auto k : tl::range(k_lo * BK, k_hi * BK, BK))
      acc = tl::dot(da.load({m0, k}), db.load({k, n0}), acc);    // [BM, BK] x [BK, BN]
    // A whole tile is this program's to store; a shared one is stored by
    // the last of its programs to arrive, which adds up the cuts.
    auto out = acc;                                              // [BM, BN] f32
    auto mine = dp;
    tl::if_(!dp, [&] {
      auto slot = [&](const auto& q) {                           // [BM, BN] ptr<f32>
        return partials + ((split * sk.slots + q) * (BM * BN) + slot_offs);
      };
      auto counter = arrivals + split;
      auto others = sk.slots - 1;
      auto first = piece == 0;
      mine = first & (tl::atomic_add(counter, 0, first, {.sem = "acquire"}) == others);
      auto written = !mine;
      tl::if_(written, [&] {
        tl::store(slot(piece), acc);
        mine = tl::atomic_add(counter, 1, {.sem = "acq_rel"}) == others;
      });
      tl::if_(mine, [&] {
        // The cuts in K order, whoever adds them: the first from registers
        // only if it was never written (then it is this program's).
        tl::if_(written, [&] { out = tl::load(slot(0)); });
        for (auto q : tl::range(1, sk.slots))
          out += tl::load(slot(q));
        tl::store(counter, 0);                                   // for the next launch
      });
    });
    tl::if_(mine, [&] { dc.store({m0, n0}, tl::cast<T>(out)); });
  }
}

// The buffers gemm_streamk needs for M x N x K under `c` on `programs`
// programs: f32 partial sums (slots of BM x BN) and i32 counters, both
// at least one element; the counters must start at zero (the kernel
// leaves them so).
struct StreamKWorkspace {
  int64_t partials = 1, arrivals = 1;
};
inline StreamKWorkspace gemm_streamk_workspace(int bm, int bn, int bk, int64_t M, int64_t N, int64_t K,
                                               int64_t programs) {
  auto s = stream_k<int64_t>(tl::cdiv(M, int64_t(bm)) * tl::cdiv(N, int64_t(bn)), tl::cdiv(K, int64_t(bk)),
                             std::max<int64_t>(programs, 1));
  return {std::max<int64_t>(1, s.sk_tiles * s.slots * bm * bn), std::max<int64_t>(1, s.sk_tiles)};
}

// ---------------------------------------------------------------------------
// Tile configurations chosen at run time.

// How a gemm is compiled: tile sizes (template parameters of the kernel, so
// only the shapes in kGemmTiles below exist), warps and pipeline depth.
// Written and parsed as "BMxBNxBK:warps:stages", e.g. "128x128x64:8:3".
// The default is the fastest on the H200 among those timed (docs/perf.md):
// 64x64 per warp, three K tiles in flight.
struct GemmConfig {
  int bm = 128, bn = 256, bk = 64;
  int num_warps = 8;
  int num_stages = 4;
  bool descriptors = false;  // gemm_desc (":desc") instead of gemm
  bool persistent = false;   // gemm_persistent (":persistent"), descriptors too
  bool streamk = false;      // gemm_streamk (":streamk"), persistent too
  int programs_per_sm = 1;   // CompileOptions::programs_per_sm (":xN", N > 1)
  // CompileOptions::num_ctas (":cN", N > 1): a program, and its BM x BN
  // tile, over a cluster of N CTAs, each BM / N rows of it; B's block is
  // multicast to them.
  int num_ctas = 1;
  // CompileOptions::warp_specialize: ":ws" demands it, ":nows" forbids it;
  // unset, the compiler decides.
  std::optional<bool> warp_specialize = std::nullopt;

  std::string str() const {
    return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + ":" +
           std::to_string(num_warps) + ":" + std::to_string(num_stages) +
           (streamk ? ":streamk" : persistent ? ":persistent" : descriptors ? ":desc" : "") +
           (num_ctas > 1 ? ":c" + std::to_string(num_ctas) : "") +
           (programs_per_sm > 1 ? ":x" + std::to_string(programs_per_sm) : "") +
           (warp_specialize ? (*warp_specialize ? ":ws" : ":nows") : "");
  }
};

// The default configuration for `target` (tl::Device::target): on sm_90a
// the persistent kernel on tensor copies, warp-specialized by the
// compiler, three stages (the fastest form on the H200 at 4096^3, 8192^3,
// 8192 x 8192 x 1024 and 4000^3 but for one, docs/perf.md run 56). Other
// targets get the largest tiles whose pipeline fits their shared memory:
// sm_80 (164 KiB a block) 128x256x64 on cp.async in three stages (144
// KiB); sm_86 and sm_89 (99 KiB) and AMD's (64 KiB of LDS) 128x128x32 in
// four and two (64 and 32 KiB). Only the sm_90a one is measured.
inline GemmConfig default_gemm_config(const std::string& target) {
  GemmConfig c;
  if (target == "sm_90a") {
    c.num_stages = 3;
    c.persistent = c.descriptors = true;
  } else if (target == "sm_80") {
    c.num_stages = 3;
  } else {
    c.bn = 128, c.bk = 32, c.num_warps = 4;
    c.num_stages = target.rfind("gfx", 0) == 0 ? 2 : 4;
  }
  return c;
}
// The default for a product of row-major A (rows of K elements) and B
// (rows of N) of `elem_bytes` each: on sm_90a, where either's rows are not
// whole 128-byte lines, every other row of a block straddles one line more
// (1.68x the L2 requests at 4000³, run 86), and the program over a cluster
// of two, multicasting B's block, halves B's: +3 % at 4000³ and 6000³,
// +8 % at 3000 x 5000 x 4000, level at 4000 x 4000 x 2000, and 1 % behind
// where rows are whole lines (docs/perf.md run 98, H100).
inline GemmConfig default_gemm_config(const std::string& target, int64_t n, int64_t k, int elem_bytes) {
  GemmConfig c = default_gemm_config(target);
  if (target == "sm_90a" && ((n * elem_bytes) % 128 || (k * elem_bytes) % 128)) c.bm = 256, c.num_ctas = 2;
  return c;
}

// The interpreter's and --small's tiles: small problems still span several.
inline GemmConfig small_gemm_config() { return {.bm = 64, .bn = 64, .bk = 32, .num_warps = 4, .num_stages = 3}; }

// GROUP_M of every configuration: 8 tile rows share their columns of B.
inline constexpr int kGemmGroupM = 8;

// The tile shapes that have an instantiation: the GPU default, the larger
// 8-warp tiles worth trying on Hopper-class GPUs, smaller ones for the
// interpreter and narrow problems, and 16 rows for a few tokens against a
// wide weight (decode: memory-bound, many programs along N).
struct GemmTile {
  int bm, bn, bk;
};
inline constexpr GemmTile kGemmTiles[] = {
    {128, 128, 64}, {128, 256, 64}, {256, 128, 64}, {128, 128, 32}, {64, 128, 64},
    {128, 64, 64},  {64, 64, 64},   {64, 64, 32},   {16, 64, 128},  {256, 256, 64},
    // Three warpgroups of m64n160 (num_warps 12): 4000 x 4000 in 525 tiles,
    // 0.99 of their area useful (docs/hopper-plan.md).
    {192, 160, 64},
    // K steps of 32: 4000 = 125 x 32 (no half-empty last step), and A's
    // 64-byte rows never straddle a 128-byte line where a row is 8000
    // bytes (docs/perf.md run 98).
    {128, 256, 32}, {256, 256, 32},
};

inline std::string gemm_tiles_list() {
  std::string s;
  for (const auto& t : kGemmTiles)
    s += (s.empty() ? "" : ", ") + std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk);
  return s;
}

// Parses "BMxBNxBK:warps:stages[:desc|:persistent|:streamk][:cN][:xN][:ws|:nows]";
// ":stages" or ":warps:stages" may be left out (the defaults: 8 warps, 4
// stages); ":desc" picks gemm_desc, ":persistent" gemm_persistent,
// ":streamk" gemm_streamk (which takes a workspace: launch_gemm, or a
// gemm_tuner's), ":cN"
// a program over a cluster of N CTAs (2 or 4; sm_90a, descriptors), ":xN"
// N programs a multiprocessor (2 to 8; a persistent grid grows with it),
// ":ws" / ":nows" demand or forbid warp specialization. Throws tl::Error on
// malformed text or a tile shape without an instantiation.
inline GemmConfig parse_gemm_config(const std::string& text) {
  GemmConfig c;
  int consumed = 0;
  std::string body = text;
  auto suffix = [&](const std::string& s) {
    bool has = body.size() > s.size() && body.compare(body.size() - s.size(), s.size(), s) == 0;
    if (has) body.resize(body.size() - s.size());
    return has;
  };
  if (suffix(":nows")) c.warp_specialize = false;
  else if (suffix(":ws")) c.warp_specialize = true;
  for (int n = 2; n <= 8; ++n)
    if (suffix(":x" + std::to_string(n))) c.programs_per_sm = n;
  for (int n : {2, 4})
    if (suffix(":c" + std::to_string(n))) c.num_ctas = n;
  c.streamk = suffix(":streamk");
  c.persistent = c.streamk || suffix(":persistent");
  c.descriptors = c.persistent || suffix(":desc");
  int fields = std::sscanf(body.c_str(), "%dx%dx%d%n:%d%n:%d%n", &c.bm, &c.bn, &c.bk, &consumed, &c.num_warps,
                           &consumed, &c.num_stages, &consumed);
  if (fields < 3 || size_t(consumed) != body.size() || c.num_warps < 1 || c.num_stages < 1)
    throw tl::Error("gemm config '" + text + "': expected BMxBNxBK[:warps[:stages]][:desc|:persistent|:streamk][:cN][:xN][:ws|:nows], e.g. 128x128x64:8:3");
  for (const auto& t : kGemmTiles)
    if (t.bm == c.bm && t.bn == c.bn && t.bk == c.bk) return c;
  throw tl::Error("gemm config '" + text + "': tile " + std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" +
                  std::to_string(c.bk) + " has no instantiation (one of " + gemm_tiles_list() + ")");
}

namespace detail {
template <class T, size_t I = 0>
tl::Kernel compile_gemm_tile(const GemmConfig& c, const tl::CompileOptions& options) {
  if constexpr (I == std::size(kGemmTiles)) {
    throw tl::Error("gemm tile " + c.str() + " has no instantiation (one of " + gemm_tiles_list() + ")");
  } else {
    constexpr GemmTile t = kGemmTiles[I];
    if (c.bm == t.bm && c.bn == t.bn && c.bk == t.bk)
      return c.streamk       ? tl::compile(gemm_streamk<T, t.bm, t.bn, t.bk, kGemmGroupM>, options)
             : c.persistent  ? tl::compile(gemm_persistent<T, t.bm, t.bn, t.bk, kGemmGroupM>, options)
             : c.descriptors ? tl::compile(gemm_desc<T, t.bm, t.bn, t.bk, kGemmGroupM>, options)
                             : tl::compile(gemm<T, t.bm, t.bn, t.bk, kGemmGroupM>, options);
    return compile_gemm_tile<T, I + 1>(c, options);
  }
}
}  // namespace detail

// Traces gemm<T, ...> for configuration `c` under the kernel name `name`.
template <class T>
tl::Kernel compile_gemm(const GemmConfig& c, const std::string& name = "gemm") {
  return detail::compile_gemm_tile<T>(
      c, {.name = name,
          .num_warps = c.num_warps,
          .num_stages = c.num_stages,
          .num_ctas = c.num_ctas,
          .warp_specialize = c.warp_specialize,
          .programs_per_sm = c.programs_per_sm});
}

// A roofline estimate of a gemm of M x N x K under configuration `c`, in
// microseconds, on a GPU of `sms` multiprocessors reaching `peak_tflops` on
// its matrix units and
// `peak_tbps` from memory: the cost model with which an autotuner ranks
// configurations before measuring them (tl::AutotuneOptions::cost_model),
// as Triton's matmul perf model does. Counted:
// - tiles are whole programs (a tile past M or N costs its full product),
//   spread evenly over the multiprocessors: the busiest one runs
//   ceil(tiles / sms) of them (wave quantization; stream-K splits the
//   last round's over all of them, for a few K steps' summing); a program
//   over a cluster of num_ctas CTAs takes that many multiprocessors;
// - a program's products run at a share of its multiprocessor's peak that
//   grows with its warps' tiles (operand reuse in registers): BM * BN /
//   warps elements a warp, at half the peak for 2048 of them;
// - memory: A, B and C once from DRAM, and A once per tile column and B
//   once per tile row from L2 (taken as 3x DRAM's bandwidth).
// The largest of the three times is the estimate. The defaults are the
// H200's measured ceilings (bf16, docs/perf.md).
inline double gemm_estimate_us(const GemmConfig& c, int64_t M, int64_t N, int64_t K, int sms,
                               double peak_tflops = 790, double peak_tbps = 3.8) {
  const int64_t tiles_m = tl::cdiv(M, int64_t(c.bm)), tiles_n = tl::cdiv(N, int64_t(c.bn));
  // A program's tiles: whole rounds, or with stream-K the last round's
  // tiles split over every program (each split share summed through
  // memory: about kStreamKSumSteps K steps a partial, written and read).
  const double programs = std::max(1, sms / c.num_ctas), tiles = double(tiles_m * tiles_n);
  const double iters = double(tl::cdiv(K, int64_t(c.bk)));
  const double busiest = c.streamk && std::fmod(tiles, programs) != 0
                             ? tiles / programs + 2.0 * kStreamKSumSteps / iters
                             : std::ceil(tiles / programs);
  const double warp_tile = double(c.bm) * c.bn / c.num_warps / c.num_ctas;
  const double efficiency = warp_tile / (warp_tile + 2048);
  const double tile_flops = 2.0 * c.bm * c.bn * double(tl::cdiv(K, int64_t(c.bk)) * c.bk) / c.num_ctas;  // a CTA's
  const double sm_flops_per_us = peak_tflops * 1e6 / sms;
  const double t_compute = busiest * tile_flops / (sm_flops_per_us * efficiency);
  const double t_dram = 2.0 * double(M * K + K * N + M * N) / (peak_tbps * 1e6);
  const double t_l2 = 2.0 * double(M * K * tiles_n + K * N * tiles_m) / (3 * peak_tbps * 1e6);
  return std::max({t_compute, t_dram, t_l2});
}

// The launch grid of a gemm of M x N under configuration `c` on `dev`: a
// program a tile, or (persistent) at most programs_per_sm a multiprocessor
// (a program over a cluster of num_ctas CTAs taking that many).
inline tl::Grid gemm_grid(const GemmConfig& c, int M, int N, const tl::Device& dev) {
  int64_t tiles = int64_t(tl::cdiv(M, c.bm)) * tl::cdiv(N, c.bn);
  if (c.streamk)  // every multiprocessor: a last round's tiles are split over all of them
    return tl::Grid{uint32_t(std::max<int64_t>(1, int64_t(dev.processor_count()) * c.programs_per_sm / c.num_ctas))};
  if (c.persistent)
    tiles = std::max<int64_t>(
        1, std::min<int64_t>(tiles, int64_t(dev.processor_count()) * c.programs_per_sm / c.num_ctas));
  return tl::Grid{uint32_t(tiles)};
}

// The configurations a tuned gemm chooses from on `target`: its default
// (default_gemm_config, so tuning never loses to it but by the timing
// noise), other tile shapes and depths of the same kernel form, stream-K
// on sm_90a (few tiles over long K: up to 1.9x, docs/perf.md run 89), and
// small and 16-row tiles for narrow problems (a few rows against a wide weight is
// memory-bound: many programs along N read it at once). A configuration
// whose pipeline does not fit the GPU fails to compile and is dropped by
// the tuner with that reason.
inline std::vector<GemmConfig> gemm_tune_configs(const std::string& target) {
  std::vector<std::string> names;
  if (target == "sm_90a")
    names = {"128x256x64:8:3:persistent", "256x256x64:8:3:persistent:c2", "256x128x64:8:3:persistent",
             "128x128x64:8:4:persistent", "128x256x64:8:3:streamk", "128x128x64:8:4:streamk",
             "128x256x64:8:4:desc", "128x128x64:4:4:desc", "64x64x64:4:4", "16x64x128:4:4"};
  else if (target == "sm_80" || target == "sm_90")
    names = {"128x256x64:8:3", "128x128x64:8:4", "128x128x32:4:4", "64x64x64:4:4", "16x64x128:4:4"};
  else
    names = {"128x128x32:4:2", "128x128x32:4:4", "64x64x64:4:2", "64x64x32:4:3", "16x64x128:4:2"};
  std::vector<GemmConfig> out{default_gemm_config(target)};
  for (const auto& n : names) {
    GemmConfig c = parse_gemm_config(n);
    if (std::none_of(out.begin(), out.end(), [&](const GemmConfig& x) { return x.str() == c.str(); }))
      out.push_back(c);
  }
  return out;
}

// gemm_streamk's workspace, grown as needed and kept between launches
// (its counters are left zero by each).
struct GemmWorkspace {
  tl::Buffer partials, arrivals;
  int64_t partials_size = 0, arrivals_size = 0;
  void reserve(tl::Device& dev, const StreamKWorkspace& need) {
    if (need.partials > partials_size) {
      partials = dev.alloc<float>(size_t(need.partials));
      partials_size = need.partials;
    }
    if (need.arrivals > arrivals_size) {
      arrivals = dev.upload(std::vector<int32_t>(size_t(need.arrivals), 0));
      arrivals_size = need.arrivals;
    }
  }
};

// An autotuner of gemm<T> over `configs` (tl::Autotuner, named `name` for
// its results file), keyed by every integer argument (the sizes and the
// strides), ranking the configurations by gemm_estimate_us on a GPU of
// `sms` multiprocessors before measuring all of them. Launch it with
// gemm_tune_grid's grid and the kernel's arguments:
//   tuner(dev, kernels::gemm_tune_grid(M, N, dev), a, b, c, M, N, K, ...);
// A stream-K configuration's workspace comes from the tuner (its extra
// arguments), so one launch form serves every configuration.
template <class T>
tl::Autotuner gemm_tuner(const std::string& name, const std::vector<GemmConfig>& configs, int sms) {
  // The stream-K configurations' workspace (TuneConfig::extra_args), one a
  // device, shared by them: each launch leaves its counters zero.
  struct Workspaces {
    std::mutex mutex;
    std::map<std::string, GemmWorkspace> of;  // by device name
  };
  auto spaces = std::make_shared<Workspaces>();
  std::vector<tl::TuneConfig> list;
  for (const auto& c : configs) {
    list.push_back({c.str(), [c] { return compile_gemm<T>(c); }, {}});
    if (c.streamk)
      list.back().extra_args = [c, spaces](tl::Device& dev, const std::vector<tl::Arg>& a) {
        std::lock_guard lock(spaces->mutex);
        GemmWorkspace& ws = spaces->of[dev.name()];
        const int M = int(a[3].i), N = int(a[4].i), K = int(a[5].i);
        ws.reserve(dev, gemm_streamk_workspace(c.bm, c.bn, c.bk, M, N, K, gemm_grid(c, M, N, dev).x));
        return std::vector<tl::Arg>{ws.partials, ws.arrivals};
      };
  }
  return tl::Autotuner(name, list,
                       {.cost_model = [sms](const tl::TuneConfig& c, const std::vector<tl::Arg>& a) {
                         return gemm_estimate_us(parse_gemm_config(c.name), a[3].i, a[4].i, a[5].i, sms);
                       }});
}

// The grid of each configuration of a gemm_tuner launch of M x N on `dev`.
inline tl::TuneGrid gemm_tune_grid(int M, int N, const tl::Device& dev) {
  return [M, N, &dev](const tl::TuneConfig& c) { return gemm_grid(parse_gemm_config(c.name), M, N, dev); };
}

// Launches kernel `k` of configuration `c` (compile_gemm) on C = A @ B of
// M x N x K with the given strides, on gemm_grid's grid; a stream-K
// configuration also gets `ws`'s buffers (grown to what it needs).
inline void launch_gemm(tl::Device& dev, const tl::Kernel& k, const GemmConfig& c, const tl::Buffer& a,
                        const tl::Buffer& b, const tl::Buffer& out, int M, int N, int K, int stride_am,
                        int stride_ak, int stride_bk, int stride_bn, int stride_cm, int stride_cn,
                        GemmWorkspace& ws) {
  tl::Grid grid = gemm_grid(c, M, N, dev);
  if (!c.streamk) {
    dev(k, grid, a, b, out, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn);
    return;
  }
  ws.reserve(dev, gemm_streamk_workspace(c.bm, c.bn, c.bk, M, N, K, grid.x));
  dev(k, grid, a, b, out, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, ws.partials,
      ws.arrivals);
}

}  // namespace kernels
