// Tensor descriptors as tensor copies (TMA) on sm_90a (codegen/
// tma_descriptors.h): a gemm whose blocks are descriptor loads, pipelined
// at 2 to 4 stages through a ring of full mbarriers, or copied where they
// stand at 1 stage, against the interpreter on the H200 at trip counts 0,
// 1, 2, S-1, S and many, ragged M and N, and shapes whose strides rule TMA
// out (the masked form then). Without a GPU: which specializations make
// tensor copies, and that the PTX holds them.
//
// Inputs are small integers: every product and partial sum is exact in f32,
// so the GPU must match the interpreter exactly.
#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <regex>
#include <set>
#include <tuple>
#include <type_traits>

#include "../../examples/kernels/attention.h"
#include "../../examples/kernels/gemm.h"
#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using namespace gpu_oracle;

namespace {

std::vector<bf16> small_ints(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<bf16> v(n);
  for (auto& x : v) x = bf16(float(int(rng() % 5u) - 2));
  return v;
}

// C [M, N] = A [M, K] x B [K, N], all row-major, through descriptors; WS:
// the loop's own warp_specialize (-1: unset).
template <int BM, int BN, int BK, int S, int WS = -1>
void gemm_desc(ptr<bf16> a, ptr<bf16> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto da = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto db = make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto dc = make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto acc = zeros<float>({BM, BN});  // [BM, BN] f32
  RangeOptions opts{.num_stages = S};
  if (WS >= 0) opts.warp_specialize = WS == 1;
  for (auto k : range(0, K, BK, opts)) acc = dot(da.load({m0, k}), db.load({k, n0}), acc);
  dc.store({m0, n0}, acc);
}

// Kernels for warp specialization's edges: a store before the loop (the
// consumers' partition starts there), B through pointer loads (cp.async
// beside the tensor copies: refused), and the loop two levels down
// (refused).
template <int BM, int BN, int BK>
void gemm_store_first(ptr<bf16> a, ptr<bf16> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto da = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto db = make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  store(c + program_id(0), 1.0f);  // a flag, before the loop
  auto acc = zeros<float>({BM, BN});
  for (auto k : range(0, K, BK)) acc = dot(da.load({m0, k}), db.load({k, n0}), acc);
  auto m = m0 + arange(0, BM), n = n0 + arange(0, BN);
  store(c + col(m) * N + row(n), acc, col(m < M) & row(n < N));
}
template <int BM, int BN, int BK>
void gemm_mixed(ptr<bf16> a, ptr<bf16> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto da = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto n = n0 + arange(0, BN), kk = arange(0, BK);
  auto acc = zeros<float>({BM, BN});
  for (auto k : range(0, K, BK)) {
    auto bt = load(b + col(k + kk) * N + row(n), col(k + kk < K) & row(n < N), 0.0f);  // [BK, BN]
    acc = dot(da.load({m0, k}), bt, acc);
  }
  auto m = m0 + arange(0, BM);
  store(c + col(m) * N + row(n), acc, col(m < M) & row(n < N));
}
template <int BM, int BN, int BK>
void gemm_deep(ptr<bf16> a, ptr<bf16> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto da = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto db = make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  for (auto i : range(0, 1, 1))
    for (auto t : range(program_id(0), cdiv(M, BM), num_programs(0))) {
      auto m0 = t * BM;
      auto acc = zeros<float>({BM, BN});
      for (auto k : range(0, K, BK, {.warp_specialize = true})) acc = dot(da.load({m0, k}), db.load({k, 0}), acc);
      store(c + col(m0 + arange(0, BM)) * N + row(arange(0, BN)) + i, acc);
    }
}

// A kernel whose loop bound is read from memory before the loop: the
// producer would need the consumers' load to know how many copies to issue.
template <int BM, int BN, int BK>
void gemm_bound_loaded(ptr<bf16> a, ptr<bf16> b, ptr<float> c, ptr<int32_t> k_ptr, scalar<int32_t> M,
                       scalar<int32_t> N, scalar<int32_t> K) {
  auto da = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto db = make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto k_end = load(k_ptr);  // scalar i32
  auto acc = zeros<float>({BM, BN});
  for (auto k : range(0, k_end, BK)) acc = dot(da.load({m0, k}), db.load({k, n0}), acc);
  store(c + col(m0 + arange(0, BM)) * N + row(n0 + arange(0, BN)), acc);
}

// Attention's loop through rank-3 descriptors of [H, n, D] (a [1, rows, D]
// box of head program_id(0)), keys past n read as zero within the head
// (the next head's rows are there in memory: a 2-D map over [H * n, D]
// would read them). Without SOFTMAX: S = Q K_j^T, P = S / 8 (exact in
// bf16 for small integers), O += P V_j over key blocks j < n. With it, an
// online softmax between the products (a running max and sum carried,
// keys past n masked, the accumulator rescaled; overlap-dots moves it
// after P V, on the next block's S, carrying P and the rescale). RANK 4:
// the same through [B, H, n, D] descriptors (a [1, 1, rows, D] box), batch
// program_id(1), its stride computed in the kernel (heads x head_stride:
// the launcher computes it too, for the tensor map).
template <int BM, int BN, int D, bool SOFTMAX = false, int RANK = 3>
void chained_heads(ptr<bf16> q_ptr, ptr<bf16> k_ptr, ptr<bf16> v_ptr, ptr<float> out, scalar<int32_t> heads,
                   scalar<int32_t> n, scalar<int32_t> head_stride) {
  auto head = program_id(0);
  auto batch = program_id(1);
  auto block = [&](ptr<bf16> x, int64_t rows, tl::index j) {  // [rows, D] at key j
    if constexpr (RANK == 4)
      return reshape(make_tensor_descriptor(x, {2, heads, n, D}, {heads * head_stride, head_stride, D, 1},
                                            {1, 1, rows, D}).load({batch, head, j, 0}), {rows, D});
    else
      return reshape(make_tensor_descriptor(x, {heads, n, D}, {head_stride, D, 1}, {1, rows, D}).load({head, j, 0}),
                     {rows, D});
  };
  auto q = block(q_ptr, BM, 0);                               // [BM, D]
  auto m_i = full<float>({BM}, -INFINITY);                    // [BM] (SOFTMAX)
  auto l_i = zeros<float>({BM});                              // [BM] (SOFTMAX)
  auto acc = zeros<float>({BM, D});                           // [BM, D]
  for (auto j : range(0, n, BN)) {
    auto k = block(k_ptr, BN, j);                             // [BN, D]
    auto v = block(v_ptr, BN, j);                             // [BN, D]
    if constexpr (SOFTMAX) {
      auto s = where(row(j + arange(0, BN) < n), dot(q, trans(k)) * 0.125f, -INFINITY);  // [BM, BN]
      auto m_new = maximum(m_i, max(s, 1));                   // [BM]
      auto p = exp2(s - col(m_new));                          // [BM, BN]
      auto alpha = exp2(m_i - m_new);                         // [BM]
      l_i = l_i * alpha + sum(p, 1);
      acc = dot(cast<bf16>(p), v, acc * col(alpha));
      m_i = m_new;
    } else {
      acc = dot(cast<bf16>(dot(q, trans(k)) * 0.125f), v, acc);
    }
  }
  auto m = arange(0, BM), d = arange(0, D);
  if constexpr (SOFTMAX) acc = acc / col(maximum(l_i, 1e-30f));
  store(out + (batch * heads + head) * (BM * D) + col(m) * D + row(d), acc);
}

// The idioms a user also writes: B stored N x K and transposed for the dot
// (attention's K), f16 or f32 (tf32 dots) elements, and a block read once
// before the loop (attention's Q) by every iteration's dot.
template <class E, int BM, int BN, int BK, int S = -1>
void gemm_bt(ptr<E> a, ptr<E> bt, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto da = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto db = make_tensor_descriptor(bt, {N, K}, {K, 1}, {BN, BK});
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto acc = zeros<float>({BM, BN});  // [BM, BN] f32
  for (auto k : range(0, K, BK, {.num_stages = S})) acc = dot(da.load({m0, k}), trans(db.load({n0, k})), acc);
  auto m = m0 + arange(0, BM), n = n0 + arange(0, BN);
  store(c + col(m) * N + row(n), acc, col(m < M) & row(n < N));
}

// out [BM, BN] of program i: Q (rows i*BM.., D columns) times each BN-row
// block of V ([L, D], read transposed), summed over the blocks.
template <int BM, int BN, int D>
void q_once(ptr<bf16> q, ptr<bf16> v, ptr<float> out, scalar<int32_t> L) {
  auto dq = make_tensor_descriptor(q, {L, D}, {D, 1}, {BM, D});
  auto dv = make_tensor_descriptor(v, {L, D}, {D, 1}, {BN, D});
  auto qt = dq.load({program_id(0) * BM, 0});  // [BM, D]
  auto acc = zeros<float>({BM, BN});
  for (auto j : range(0, L, BN)) acc = dot(qt, trans(dv.load({j, 0})), acc);
  store(out + program_id(0) * BM * BN + col(arange(0, BM)) * BN + row(arange(0, BN)), acc);
}

// A block of X (M x N, row-major) stored through a descriptor of Y at its
// own place shifted by (dm, dn): a tensor copy out of shared memory where
// both coordinates are non-negative, the masked store (clipped) where one
// is negative; rows and columns past M and N are not written either way.
template <int BM, int BN>
void shifted_store(ptr<float> x, ptr<float> y, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> dm,
                   scalar<int32_t> dn) {
  auto dy = make_tensor_descriptor(y, {M, N}, {N, 1}, {BM, BN});
  auto m = program_id(0) * BM + arange(0, BM), n = program_id(1) * BN + arange(0, BN);
  auto v = load(x + col(m) * N + row(n), col(m < M) & row(n < N), 0.0f);  // [BM, BN] f32
  dy.store({program_id(0) * BM + dm, program_id(1) * BN + dn}, v + 1.0f);
}

// Idioms a user also writes: two descriptor stores in one kernel (f16 and
// f32, blocks of two shapes), one of them in an if_ (odd rows of
// programs only), and a block stored back into the tensor it was loaded
// from (the copy then also waits for its global writes).
template <int BM, int BN>
void two_stores(ptr<float> x, ptr<f16> y, ptr<float> z, scalar<int32_t> M, scalar<int32_t> N) {
  auto dx = make_tensor_descriptor(x, {M, N}, {N, 1}, {BM, BN});
  auto dy = make_tensor_descriptor(y, {M, N}, {N, 1}, {BM, BN});
  auto dz = make_tensor_descriptor(z, {M, N}, {N, 1}, {BM / 2, BN});
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto m = m0 + arange(0, BM / 2), n = n0 + arange(0, BN);
  auto v = dx.load({m0, n0});                                          // [BM, BN] f32
  dy.store({m0, n0}, cast<f16>(v * 2.0f));
  auto top = load(x + col(m) * N + row(n), col(m < M) & row(n < N), 0.0f);  // [BM/2, BN] f32
  if_(program_id(0) % 2 == 1, [&] { dz.store({m0, n0}, top - 1.0f); });
  dx.store({m0, n0}, v + 3.0f);
}

template <class E>
std::vector<E> small_ints_of(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<E> v(n);
  for (auto& x : v) x = E(float(int(rng() % 5u) - 2));
  return v;
}

// `ws`: the warp_specialize option (unset: the compiler's choice); `ctas`:
// num_ctas (a program's tile over a cluster).
template <int S, int BM = 128, int BN = 128, int BK = 64>
void check_gemm(int M, int N, int K, int warps = 4, std::optional<bool> ws = std::nullopt, int ctas = 1) {
  INFO("descriptor gemm " << BM << "x" << BN << "x" << BK << ", " << S << " stages, " << warps << " warps, M=" << M
                          << " N=" << N << " K=" << K << ", warp_specialize " << (ws ? (*ws ? "on" : "off") : "auto")
                          << ", " << ctas << " CTAs a program");
  auto k = compile(gemm_desc<BM, BN, BK, S>,
                   {.name = "gemm_desc", .num_warps = warps, .num_ctas = ctas, .warp_specialize = ws});
  same_on_both<float>([&](Device& d) {
    auto a = d.upload(small_ints(size_t(M) * K + 1, 31)), b = d.upload(small_ints(size_t(K) * N + 1, 32));
    auto c = d.upload(std::vector<float>(size_t(M) * N, -1.0f));
    d(k, Grid{uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))}, a, b, c, M, N, K);
    d.synchronize();
    return std::vector<std::vector<float>>{c.download<float>()};
  }, 0, 0);
}

// The example's persistent gemm (bf16 C; exact: the f32 sums are small
// integers, rounded alike) at S stages on `programs` programs, as the
// compiler decides or as `ws` says, compiled for `per_sm` programs a
// multiprocessor, each program on `ctas` CTAs.
template <int S, int BM = 128, int BN = 128, int BK = 64>
void check_persistent(int M, int N, int K, int programs, int warps = 4, std::optional<bool> ws = std::nullopt,
                      int per_sm = 1, int ctas = 1) {
  INFO("persistent gemm " << BM << "x" << BN << "x" << BK << ", " << S << " stages, " << warps << " warps, M=" << M
                          << " N=" << N << " K=" << K << ", " << programs << " programs (" << per_sm
                          << " a multiprocessor, " << ctas << " CTAs each), warp_specialize "
                          << (ws ? (*ws ? "on" : "off") : "auto"));
  auto k = compile(kernels::gemm_persistent<bf16, BM, BN, BK, kernels::kGemmGroupM>,
                   {.name = "gemm_persistent", .num_warps = warps, .num_stages = S, .num_ctas = ctas,
                    .warp_specialize = ws, .programs_per_sm = per_sm});
  same_on_both<float>([&](Device& d) {
    auto a = d.upload(small_ints(size_t(M) * K + 1, 51)), b = d.upload(small_ints(size_t(K) * N + 1, 52));
    auto c = d.upload(std::vector<bf16>(size_t(M) * N, bf16(-1.0f)));
    d(k, Grid{uint32_t(programs)}, a, b, c, M, N, K, K, 1, N, 1, N, 1);
    d.synchronize();
    std::vector<float> out;
    for (bf16 x : c.download<bf16>()) out.push_back(float(x));
    return std::vector<std::vector<float>>{out};
  }, 0, 0);
}

// The example's stream-K gemm on `programs` programs (bf16 C; exact, as
// above), launched twice on the same workspace: the second launch finds the
// counters the first left at zero. Returns C of the second launch and the
// counters after it, as floats.
template <int S, int BM = 128, int BN = 128, int BK = 64>
std::vector<std::vector<float>> run_streamk(Device& d, const Kernel& k, int M, int N, int K, int programs) {
  auto a = d.upload(small_ints(size_t(M) * K + 1, 61)), b = d.upload(small_ints(size_t(K) * N + 1, 62));
  auto need = kernels::gemm_streamk_workspace(BM, BN, BK, M, N, K, programs);
  auto partials = d.upload(std::vector<float>(size_t(need.partials), 7.0f));  // stale sums must not leak in
  auto arrivals = d.upload(std::vector<int32_t>(size_t(need.arrivals), 0));
  std::vector<float> out;
  for (int launch = 0; launch < 2; ++launch) {
    auto c = d.upload(std::vector<bf16>(size_t(M) * N, bf16(-1.0f)));
    d(k, Grid{uint32_t(programs)}, a, b, c, M, N, K, K, 1, N, 1, N, 1, partials, arrivals);
    d.synchronize();
    out.clear();
    for (bf16 x : c.download<bf16>()) out.push_back(float(x));
  }
  std::vector<float> counters;
  for (int32_t x : arrivals.download<int32_t>()) counters.push_back(float(x));
  return {out, counters};
}

template <int S, int BM = 128, int BN = 128, int BK = 64>
Kernel compile_streamk(int warps, std::optional<bool> ws = std::nullopt) {
  return compile(kernels::gemm_streamk<bf16, BM, BN, BK, kernels::kGemmGroupM>,
                 {.name = "gemm_streamk", .num_warps = warps, .num_stages = S, .warp_specialize = ws});
}

template <int S, int BM = 128, int BN = 128, int BK = 64>
void check_streamk(int M, int N, int K, int programs, int warps = 4, std::optional<bool> ws = std::nullopt) {
  INFO("stream-K gemm " << BM << "x" << BN << "x" << BK << ", " << S << " stages, " << warps << " warps, M=" << M
                        << " N=" << N << " K=" << K << ", " << programs << " programs, warp_specialize "
                        << (ws ? (*ws ? "on" : "off") : "auto"));
  auto k = compile_streamk<S, BM, BN, BK>(warps, ws);
  same_on_both<float>([&](Device& d) { return run_streamk<S, BM, BN, BK>(d, k, M, N, K, programs); }, 0, 0);
}

}  // namespace

TEST_CASE("descriptor loads become tensor copies on sm_90a where the specialization proves TMA's rules",
          "[descriptor][codegen]") {
  Kernel k = compile(gemm_desc<128, 128, 64, 3>, {.name = "gemm_desc", .num_warps = 4});
  codegen::Specialization aligned = codegen_checks::aligned(k);
  auto ring = codegen::compile(*k.impl(), aligned, "sm_90a");
  // A, B and C: three maps by value; C's block goes out through shared
  // memory (its threads' writes fenced for the copy) where its coordinates
  // are non-negative.
  CHECK(ring.tensor_maps.size() == 3);
  CHECK(codegen_checks::count(ring.assembly, R"(cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global)") >= 2);
  CHECK(codegen_checks::count(ring.assembly, R"(cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group)") == 4);
  CHECK(codegen_checks::count(ring.assembly, R"(fence\.proxy\.async\.shared::cta)") >= 1);
  CHECK(codegen_checks::count(ring.assembly, R"(mbarrier\.try_wait\.parity)") >= 1);
  CHECK(codegen_checks::count(ring.assembly, R"(cp\.async\.cg)") == 0);
  CHECK(codegen_checks::count(ring.assembly, R"(wgmma\.mma_async)") > 0);
  if (auto log = codegen_checks::ptxas(ring.assembly, "sm_90a")) CHECK(codegen_checks::count(*log, " 0 bytes spill") >= 1);

  // K not proven a multiple of 16 elements: A's row stride might not be a
  // multiple of 16 bytes, so A stays a masked load and B is copied; with N
  // so too, both stay masked.
  codegen::Specialization ragged = aligned;
  ragged.args[5] = codegen::int_arg_facts(100);
  auto mixed = codegen::compile(*k.impl(), ragged, "sm_90a");
  CHECK(mixed.tensor_maps.size() == 2);  // B and C
  CHECK(codegen_checks::count(mixed.assembly, R"(mbarrier\.try_wait\.parity)") >= 1);
  // N not proven a multiple of 16 either: B's rows and C's (a store's copy
  // would write past the row's end) rule both out.
  ragged.args[4] = codegen::int_arg_facts(100);
  auto masked = codegen::compile(*k.impl(), ragged, "sm_90a");
  CHECK(masked.tensor_maps.empty());
  CHECK(codegen_checks::count(masked.assembly, R"(cp\.async\.bulk\.tensor)") == 0);
  // Rows of 8 mod 16 elements (K 1000, N 136): the specialization's class
  // of 8 proves them multiples of 16 bytes, so all three are copies.
  codegen::Specialization eight = aligned;
  eight.args[4] = codegen::int_arg_facts(136);
  eight.args[5] = codegen::int_arg_facts(1000);
  CHECK(eight.key() != aligned.key());
  CHECK(codegen::compile(*k.impl(), eight, "sm_90a").tensor_maps.size() == 3);

  // One stage: A's and B's blocks copied together where A's stands, on
  // one mbarrier (one wait), ended after.
  Kernel k1 = compile(gemm_desc<128, 128, 64, 1>, {.name = "gemm_desc", .num_warps = 4});
  auto once = codegen::compile(*k1.impl(), codegen_checks::aligned(k1), "sm_90a");
  CHECK(once.tensor_maps.size() == 3);
  // A's block one copy, B's (128 bf16 wide) two panels of a 128-byte swizzle.
  CHECK(codegen_checks::count(once.assembly, R"(cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier)") == 3);
  CHECK(codegen_checks::count(once.assembly, R"(mbarrier\.try_wait\.parity)") == 1);
  CHECK(codegen_checks::count(once.assembly, R"(mbarrier\.inval)") == 1);

  // The example's gemm_desc: a bf16 epilogue converted through shared
  // memory where the ring was (its mbarriers ended first).
  kernels::GemmConfig cfg{.bm = 128, .bn = 256, .bk = 64, .num_warps = 8, .num_stages = 4, .descriptors = true};
  Kernel example = kernels::compile_gemm<bf16>(cfg);
  codegen::Specialization row_major = codegen_checks::aligned(example);
  for (int unit : {7, 9, 11}) row_major.args[size_t(unit)] = codegen::int_arg_facts(1);  // stride_ak, _bn, _cn
  auto wide = codegen::compile(*example.impl(), row_major, "sm_90a");
  CHECK(wide.tensor_maps.size() == 3);
  // The bf16 epilogue: packed conversions written as 4-byte words, so the
  // assembler keeps the dots asynchronous (no C7514 warning).
  CHECK(codegen_checks::count(wide.assembly, R"(cvt\.rn\.bf16x2\.f32)") == 64);
  CHECK(codegen_checks::count(wide.assembly, R"(cp\.async\.bulk\.tensor\.2d\.global\.shared::cta)") == 4);
  if (auto log = codegen_checks::ptxas(wide.assembly, "sm_90a")) CHECK(codegen_checks::count(*log, "C7514") == 0);
  CHECK(codegen_checks::count(wide.assembly, R"(wgmma\.mma_async\.sync\.aligned\.m64n256k16)") > 0);
  if (auto log = codegen_checks::ptxas(wide.assembly, "sm_90a")) CHECK(codegen_checks::count(*log, " 0 bytes spill") >= 1);
  // Warp-specialized (the compiler's choice): a producer warpgroup beside
  // the 8 warps, each partition setting its registers; forbidden, not.
  CHECK(wide.threads == 384);
  CHECK(codegen_checks::count(wide.assembly, R"(setmaxnreg\.inc\.sync\.aligned\.u32\s+240;)") == 1);
  CHECK(codegen_checks::count(wide.assembly, R"(setmaxnreg\.dec\.sync\.aligned\.u32\s+24;)") == 1);
  CHECK(codegen_checks::count(wide.assembly, R"(bar\.sync\s+1, 256;)") >= 1);
  Kernel plain = compile(kernels::gemm_desc<bf16, 128, 256, 64, kernels::kGemmGroupM>,
                         {.name = "gemm", .num_warps = 8, .num_stages = 4, .warp_specialize = false});
  auto unspecialized = codegen::compile(*plain.impl(), row_major, "sm_90a");
  CHECK(unspecialized.threads == 256);
  CHECK(codegen_checks::count(unspecialized.assembly, R"(setmaxnreg)") == 0);
  // Every configuration the [gpu] test demands it of can have it, without
  // spills.
  auto demanded = [&](auto kernel, int warps) {
    Kernel kw = compile(kernel, {.name = "gemm_desc", .num_warps = warps, .warp_specialize = true});
    auto c = codegen::compile(*kw.impl(), codegen_checks::aligned(kw), "sm_90a");
    CHECK(c.threads == (warps + 4) * 32);
    if (auto log = codegen_checks::ptxas(c.assembly, "sm_90a")) CHECK(codegen_checks::count(*log, " 0 bytes spill") >= 1);
  };
  demanded(gemm_desc<128, 128, 64, 3>, 4);
  demanded(gemm_desc<128, 128, 64, 2>, 4);
  demanded(gemm_desc<128, 128, 64, 4>, 8);
  demanded(gemm_desc<128, 256, 64, 4>, 8);
  demanded(gemm_desc<64, 64, 32, 3>, 4);
  demanded(gemm_desc<64, 32, 16, 3>, 4);
  // The persistent example: the producer runs the loop over tiles too.
  Kernel pk = kernels::compile_gemm<bf16>(kernels::parse_gemm_config("128x128x64:4:3:persistent"));
  codegen::Specialization pk_rows = codegen_checks::aligned(pk);
  for (int unit : {7, 9, 11}) pk_rows.args[size_t(unit)] = codegen::int_arg_facts(1);  // stride_ak, _bn, _cn
  auto persistent = codegen::compile(*pk.impl(), pk_rows, "sm_90a");
  CHECK(persistent.threads == 256);
  CHECK(codegen_checks::count(persistent.assembly, R"(setmaxnreg\.dec\.sync\.aligned\.u32\s+40;)") == 1);
  // Its tile's store waited for where the next tile stores and at the end,
  // not where it is issued (defer-store-waits).
  CHECK(codegen_checks::count(persistent.assembly, R"(cp\.async\.bulk\.commit_group;)") == 1);
  CHECK(codegen_checks::count(persistent.assembly, R"(cp\.async\.bulk\.wait_group\.read 0;)") == 2);
  // A loop's own option overrides the kernel's.
  Kernel off = compile(gemm_desc<128, 128, 64, 3, 0>, {.name = "gemm_desc", .num_warps = 4, .warp_specialize = true});
  CHECK_THROWS_WITH(codegen::compile(*off.impl(), codegen_checks::aligned(off), "sm_90a"),
                    Catch::Contains("no loop at its top level that may have it"));
  Kernel on = compile(gemm_desc<128, 128, 64, 3, 1>, {.name = "gemm_desc", .num_warps = 4, .warp_specialize = false});
  CHECK(codegen::compile(*on.impl(), codegen_checks::aligned(on), "sm_90a").threads == 256);
  Kernel on1 = compile(gemm_desc<128, 128, 64, 1, 1>, {.name = "gemm_desc", .num_warps = 4});
  CHECK_THROWS_WITH(codegen::compile(*on1.impl(), codegen_checks::aligned(on1), "sm_90a"),
                    Catch::Contains("this loop demands warp specialization") &&
                        Catch::Contains("test_gpu_descriptors.cpp"));
  // Refused, each with its reason.
  auto refusal = [](auto kernel) {
    Kernel kr = compile(kernel, {.name = "refused", .num_warps = 4, .warp_specialize = true});
    try {
      codegen::compile(*kr.impl(), codegen_checks::aligned(kr), "sm_90a");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("compiled");
  };
  // A store before the loop runs on the consumers alone: the consumers'
  // partition starts at it.
  Kernel sf = compile(gemm_store_first<128, 128, 64>, {.name = "store_first", .num_warps = 4});
  auto store_first = codegen::compile(*sf.impl(), codegen_checks::aligned(sf), "sm_90a");
  CHECK(store_first.threads == 256);
  CHECK(codegen_checks::count(store_first.assembly, R"(setmaxnreg\.dec\.sync\.aligned\.u32\s+24;)") == 1);
  CHECK_THAT(refusal(gemm_bound_loaded<128, 128, 64>),
             Catch::Contains("its copies depend on 'load' at") && Catch::Contains("(the consumers')"));
  CHECK_THAT(refusal(gemm_mixed<128, 128, 64>), Catch::Contains("it also copies with cp.async"));
  CHECK_THAT(refusal(gemm_deep<128, 128, 64>),
             Catch::Contains("this loop demands warp specialization") && Catch::Contains("neither at the kernel's top level"));
  // Demanded where there is nothing to specialize: an error saying why,
  // at the line of the tl::compile that demanded it.
  const int forced_line = __LINE__ + 1;
  Kernel forced = compile(gemm_desc<128, 128, 64, 3>, {.name = "gemm_desc", .num_warps = 4, .warp_specialize = true});
  CHECK_THROWS_WITH(codegen::compile(*forced.impl(), codegen_checks::aligned(forced), "sm_80"),
                    Catch::StartsWith(std::string(__FILE__) + ":" + std::to_string(forced_line) + ": @gemm_desc: ") &&
                        Catch::Contains("no loop can be warp-specialized") && Catch::Contains("sm_80"));

  // Demanded where A's rows (K = 1004 bf16: 2008 bytes) are no multiple
  // of 16 bytes, so A is a masked load and the product is not fed from
  // the ring alone: the refusal says so in the user's terms.
  codegen::Specialization ragged_k = codegen_checks::aligned(forced);
  ragged_k.args[5] = codegen::int_arg_facts(1004);
  CHECK_THROWS_WITH(codegen::compile(*forced.impl(), ragged_k, "sm_90a"),
                    Catch::Contains("no dot reads its ring as an asynchronous warpgroup product") &&
                        Catch::Contains("rows not a multiple of 16 bytes"));

  // ptxas counts a wgmma against the registers a thread has at entry, not
  // after setmaxnreg: three consumer warpgroups of m64n256 (138 + 16) do
  // not fit the 128 of 512 threads, so the compiler leaves such a loop one
  // partition (12 warps: 168 registers), and refuses where it is demanded.
  Kernel wide_auto = compile(gemm_desc<192, 256, 64, 2>, {.name = "gemm_desc", .num_warps = 12});
  auto one_partition = codegen::compile(*wide_auto.impl(), codegen_checks::aligned(wide_auto), "sm_90a");
  CHECK(one_partition.threads == 384);
  CHECK(codegen_checks::count(one_partition.assembly, R"(setmaxnreg)") == 0);
  CHECK(codegen_checks::count(one_partition.assembly, R"(wgmma\.mma_async\.sync\.aligned\.m64n256k16)") > 0);
  Kernel wide_ws = compile(gemm_desc<192, 256, 64, 2>, {.name = "gemm_desc", .num_warps = 12, .warp_specialize = true});
  CHECK_THROWS_WITH(codegen::compile(*wide_ws.impl(), codegen_checks::aligned(wide_ws), "sm_90a"),
                    Catch::Contains("no loop can be warp-specialized") && Catch::Contains("its dot issues") &&
                        Catch::Contains("m64n256k16") && Catch::Contains("needs about 154 registers") &&
                        Catch::Contains("a thread of 512 has 128"));
  // n160 fits (106): specialized as before.
  Kernel n160 = compile(gemm_desc<192, 160, 64, 2>, {.name = "gemm_desc", .num_warps = 12});
  CHECK(codegen::compile(*n160.impl(), codegen_checks::aligned(n160), "sm_90a").threads == 512);
  // Without a partition too: 24 warps leave 80 registers a thread, short
  // of m64n128's 90: an error naming the dot, not ptxas's.
  Kernel tall = compile(gemm_desc<384, 128, 64, 2>, {.name = "gemm_desc", .num_warps = 24});
  CHECK_THROWS_WITH(codegen::compile(*tall.impl(), codegen_checks::aligned(tall), "sm_90a"),
                    Catch::Contains("test_gpu_descriptors.cpp") && Catch::Contains("'dot' issues") &&
                        Catch::Contains("needs about 90 registers") && Catch::Contains("a thread of 768 has 80"));

  // A transposed B, and a block read once before the loop: copies too.
  Kernel kbt = compile(gemm_bt<bf16, 64, 64, 64>, {.name = "gemm_bt", .num_warps = 4});
  CHECK(codegen::compile(*kbt.impl(), codegen_checks::aligned(kbt), "sm_90a").tensor_maps.size() == 2);
  Kernel kq = compile(q_once<64, 64, 64>, {.name = "q_once", .num_warps = 4});
  auto q = codegen::compile(*kq.impl(), codegen_checks::aligned(kq), "sm_90a");
  CHECK(q.tensor_maps.size() == 2);
  CHECK(codegen_checks::count(q.assembly, R"(mbarrier\.inval)") >= 1);

  // f32 blocks, read into registers for tf32 dots: copies too, each refill
  // after a proxy fence (the reads are the generic proxy's).
  Kernel kf = compile(gemm_bt<float, 64, 64, 32>, {.name = "gemm_bt", .num_warps = 4});
  auto f32 = codegen::compile(*kf.impl(), codegen_checks::aligned(kf), "sm_90a");
  CHECK(f32.tensor_maps.size() == 2);
  CHECK(codegen_checks::count(f32.assembly, R"(fence\.proxy\.async)") >= 1);

  // Two stores (f16 and f32), one in an if_, and one back into the tensor
  // a block was loaded from: that one's copy waits for its writes too.
  Kernel k2 = compile(two_stores<64, 64>, {.name = "two_stores", .num_warps = 4});
  auto stores = codegen::compile(*k2.impl(), codegen_checks::aligned(k2), "sm_90a");
  // x's load feeds no dot: a masked load; the three stores are copies
  // (boxes of 128-byte rows: 1 for y's f16 block, 2 each for the f32 ones).
  CHECK(stores.tensor_maps.size() == 3);
  CHECK(codegen_checks::count(stores.assembly, R"(cp\.async\.bulk\.tensor\.2d\.global\.shared::cta)") == 5);
  CHECK(codegen_checks::count(stores.assembly, R"(cp\.async\.bulk\.wait_group 0)") == 1);
  CHECK(codegen_checks::count(stores.assembly, R"(cp\.async\.bulk\.wait_group\.read 0)") == 2);

  // Stores of 64- and 16-byte rows are copies too (64B swizzle, none).
  for (auto kernel : {shifted_store<64, 16>, shifted_store<32, 4>}) {
    Kernel ks = compile(kernel, {.name = "shifted_store", .num_warps = 4});
    CHECK(codegen::compile(*ks.impl(), codegen_checks::aligned(ks), "sm_90a").tensor_maps.size() == 1);
  }

  // sm_80 has no tensor copies: the same kernel compiles to masked loads.
  auto ampere = codegen::compile(*k.impl(), codegen_checks::aligned(k), "sm_80");
  CHECK(ampere.tensor_maps.empty());
  CHECK(codegen_checks::count(ampere.assembly, R"(cp\.async\.bulk)") == 0);
}

// The gemm example's default on sm_90a takes the cluster form (B's block
// multicast) where a row of A or B is not whole 128-byte lines (perf.md
// run 98), and the 128x256 tile where both are; other targets keep theirs.
TEST_CASE("the gemm example's default follows the rows' 128-byte lines", "[descriptor]") {
  using kernels::default_gemm_config;
  CHECK(default_gemm_config("sm_90a", 4096, 4096, 2).str() == "128x256x64:8:3:persistent");
  CHECK(default_gemm_config("sm_90a", 4000, 4000, 2).str() == "256x256x64:8:3:persistent:c2");
  CHECK(default_gemm_config("sm_90a", 4096, 4000, 2).str() == "256x256x64:8:3:persistent:c2");  // A's rows
  CHECK(default_gemm_config("sm_90a", 5000, 4096, 2).str() == "256x256x64:8:3:persistent:c2");  // B's rows
  CHECK(default_gemm_config("sm_90a", 4032, 64, 2).str() == "128x256x64:8:3:persistent");      // 8064 = 63 lines
  CHECK(default_gemm_config("sm_80", 4000, 4000, 2).str() == default_gemm_config("sm_80").str());
}

TEST_CASE("descriptor gemms through tensor copies match the interpreter", "[gpu][descriptor]") {
  REQUIRE_GPU();
  // Trip counts 0, 1, 2, S-1, S and many at 3 stages; ragged M and N.
  for (int trips : {0, 1, 2, 3, 9}) check_gemm<3>(200, 144, trips * 64);
  check_gemm<2>(128, 256, 64 * 5);
  check_gemm<4>(300, 136, 64 * 7, 8);
  // K a multiple of 16 but not of the block: the last block reads zeros
  // past K.
  check_gemm<3>(128, 128, 64 * 2 + 16);
  // One stage: a copy where each block stands.
  check_gemm<1>(160, 128, 64 * 3);
  // A row stride TMA cannot take: the masked form, same results.
  check_gemm<3>(130, 128, 100);
  // Rows of 8 mod 16 elements (N 152, K 264): tensor copies through the
  // specialization's class of 8, the last K block half past K.
  check_gemm<3>(200, 152, 64 * 4 + 8);
  // Narrower blocks (64- and 32-byte rows: the 64B and 32B swizzles).
  check_gemm<3, 64, 64, 32>(96, 80, 32 * 5);
  check_gemm<3, 64, 32, 16>(64, 48, 16 * 6);
}

TEST_CASE("warp-specialized descriptor gemms match the interpreter", "[gpu][descriptor]") {
  REQUIRE_GPU();
  // The producer runs ahead by the ring's depth: trip counts 0, 1, 2, S-1,
  // S, S+1 and many at 3 stages, ragged M and N; rings of 2 and 4; 8
  // consumer warps; a last block past K; 64- and 32-byte rows. (N a
  // multiple of 8: B's rows then meet TMA's rules, else B is a masked load
  // and the loop has nothing to specialize.)
  for (int trips : {0, 1, 2, 3, 4, 9}) check_gemm<3>(200, 144, trips * 64, 4, true);
  check_gemm<2>(128, 256, 64 * 5, 4, true);
  check_gemm<2>(64, 128, 64, 4, true);
  check_gemm<4, 128, 256>(300, 272, 64 * 7, 8, true);
  check_gemm<4>(256, 256, 64 * 3, 8, true);
  check_gemm<3>(128, 128, 64 * 2 + 16, 4, true);
  check_gemm<3, 64, 64, 32>(96, 80, 32 * 5, 4, true);
  check_gemm<3, 64, 32, 16>(64, 48, 16 * 6, 4, true);
  check_gemm<3>(136, 152, 64 * 5 + 8, 4, true);  // rows of 8 mod 16 elements
  // Three consumer warpgroups: m64n160 specialized; m64n256 does not fit
  // 512 threads' entry registers, so it runs as one partition (auto).
  check_gemm<2, 192, 160>(400, 328, 64 * 3, 12, true);
  check_gemm<2, 192, 256>(400, 520, 64 * 3, 12);
  // The same kernel with the option forbidding it.
  check_gemm<3>(200, 144, 9 * 64, 4, false);
}

TEST_CASE("persistent warp-specialized gemms match the interpreter", "[gpu][descriptor]") {
  REQUIRE_GPU();
  // Tiles a program: 0 (more programs than tiles), 1 and many (the ring's
  // slot and phase go on from tile to tile); K trip counts 0, 1, 2, S-1,
  // S and many; ragged M and N; 8 consumer warps on 128x256 tiles.
  check_persistent<3>(200, 144, 64 * 9, 5, 4, true);   // 4 tiles on 5 programs
  check_persistent<3>(200, 144, 64 * 9, 4, 4, true);   // one each
  check_persistent<3>(520, 400, 64 * 5, 3, 4, true);   // 5 or 6 each
  for (int trips : {0, 1, 2, 3, 4})
    check_persistent<3>(300, 272, trips * 64, 2, 4, true);
  check_persistent<2>(256, 384, 64 * 7, 1, 4, true);   // every tile on one program
  check_persistent<3, 128, 256>(384, 544, 64 * 6, 3, 8, true);
  check_persistent<4>(256, 256, 64 * 2 + 16, 3, 8, true);
  // Two programs a multiprocessor (the example's :x2), each half the
  // registers and shared memory; the output's store waited for a tile
  // later (defer-store-waits) in both.
  for (int trips : {0, 1, 5})
    check_persistent<2>(520, 400, trips * 64, 7, 4, true, 2);
  // Forbidden: the same kernel unspecialized (its ring made per tile).
  check_persistent<3>(520, 400, 64 * 5, 3, 4, false);
}

TEST_CASE("gemms on clusters of two CTAs match the interpreter", "[gpu][descriptor][cluster]") {
  REQUIRE_GPU();
  // A persistent program over two CTAs, each half of the tile's rows, B's
  // block multicast to both (each CTA copies half of its panels) and a
  // slot refilled once both CTAs' consumers let it go. Tiles a program:
  // 0, 1 and many; K trip counts 0, 1, 2, S-1, S and many; ragged M and N,
  // the second CTA's rows partly or wholly past M; 8 and 4 consumer warps;
  // 256x256 (the example's :c2).
  check_persistent<3, 256, 128>(200, 144, 64 * 9, 3, 8, true, 1, 2);  // 2 tiles on 3 programs
  check_persistent<3, 256, 128>(100, 144, 64 * 3, 2, 8, true, 1, 2);  // CTA 1's rows all past M
  for (int trips : {0, 1, 2, 3, 4})
    check_persistent<3, 256, 128>(520, 400, trips * 64, 3, 8, true, 1, 2);
  check_persistent<2, 256, 128>(300, 272, 64 * 5, 2, 4, true, 1, 2);
  check_persistent<3, 256, 256>(600, 520, 64 * 6 + 16, 2, 8, true, 1, 2);
  check_persistent<3, 256, 256>(1000, 1040, 64 * 4, 5, 8, true, 1, 2);
  // Unspecialized (no multicast: each CTA copies the whole of B), and the
  // one-tile-a-program descriptor gemm.
  check_persistent<3, 256, 128>(520, 400, 64 * 5, 3, 8, false, 1, 2);
  check_gemm<3, 256, 128>(300, 272, 64 * 5, 8, std::nullopt, 2);
  check_gemm<3, 256, 128>(130, 144, 64 * 2, 8, std::nullopt, 2);
  // Rows of 200 bytes (K 100): A and B as masked loads, each CTA writing
  // its rows of A (and all of B) to shared memory for the products.
  check_gemm<3, 256, 128>(130, 128, 100, 8, std::nullopt, 2);
  // The example's pointer form (cp.async pipelines, A and B in either
  // layout), one tile a program over two CTAs.
  auto k = compile(kernels::gemm<bf16, 256, 128, 64, kernels::kGemmGroupM>,
                   {.name = "gemm", .num_warps = 8, .num_stages = 3, .num_ctas = 2});
  for (auto [M, N, K, a_col] : {std::tuple{300, 272, 64 * 5, false}, {130, 200, 72, true}, {512, 128, 64, false}}) {
    INFO("pointer gemm 256x128x64 on 2 CTAs, M=" << M << " N=" << N << " K=" << K << (a_col ? ", A column-major" : ""));
    same_on_both<float>([&](Device& d) {
      auto a = d.upload(small_ints(size_t(M) * K, 53)), b = d.upload(small_ints(size_t(K) * N, 54));
      auto c = d.upload(std::vector<bf16>(size_t(M) * N, bf16(-1.0f)));
      const int sam = a_col ? 1 : K, sak = a_col ? M : 1;
      d(k, Grid{uint32_t(cdiv(M, 256) * cdiv(N, 128))}, a, b, c, M, N, K, sam, sak, N, 1, N, 1);
      d.synchronize();
      std::vector<float> out;
      for (bf16 x : c.download<bf16>()) out.push_back(float(x));
      return std::vector<std::vector<float>>{out};
    }, 0, 0);
  }
}

TEST_CASE("a persistent gemm on a cluster of two multicasts B's block and releases slots in both CTAs",
          "[descriptor][codegen][cluster]") {
  using namespace codegen_checks;
  auto k = compile(kernels::gemm_persistent<bf16, 256, 256, 64, kernels::kGemmGroupM>,
                   {.name = "gemm_persistent", .num_warps = 8, .num_stages = 3, .num_ctas = 2});
  codegen::Specialization row_major = aligned(k);
  for (int unit : {7, 9, 11}) row_major.args[size_t(unit)] = codegen::int_arg_facts(1);  // stride_ak, _bn, _cn
  auto ck = codegen::compile(*k.impl(), row_major, "sm_90a");
  CHECK(count(ck.assembly, R"(\.reqnctapercluster 2, 1, 1)") == 1);
  // B: 4 panels of 64 columns, two from each CTA into both (a branch on
  // the rank each); A: each CTA its 128 rows, not multicast.
  CHECK(count(ck.assembly, R"(complete_tx::bytes\.multicast::cluster)") >= 2);
  CHECK(count(ck.assembly, R"(complete_tx::bytes \[)") >= 1);
  // Consumers arrive on the empty mbarrier of both CTAs (16 arrivals a
  // phase: 8 warps of each), after mapa.
  CHECK(count(ck.assembly, R"(mbarrier\.arrive\.shared::cluster\.b64)") >= 2);
  CHECK(count(ck.assembly, R"(mbarrier\.arrive\.release\.cluster)") == 0);  // a fence every step (perf.md run 85)
  CHECK(count(ck.assembly, R"(mapa\.shared::cluster)") >= 2);
  // The cluster meets after the exchange's set-up, after the rings'
  // initialization and before it ends.
  CHECK(count(ck.assembly, R"(barrier\.cluster\.arrive)") == 3);
  CHECK(count(ck.assembly, R"(mbarrier\.inval)") == 0);
  CHECK(count(ck.assembly, R"(wgmma\.wait_group\.sync\.aligned 1)") >= 1);
  CHECK(count(ck.assembly, R"(setmaxnreg)") >= 2);
  if (auto log = ptxas(ck.assembly, "sm_90a")) CHECK(count(*log, " 0 bytes spill") >= 1);
  // A dot that cannot split its rows over the cluster (M 64 on two CTAs of
  // one warpgroup each) is a clear error.
  auto small = compile(kernels::gemm_persistent<bf16, 64, 64, 64, kernels::kGemmGroupM>,
                       {.name = "gemm_persistent", .num_warps = 4, .num_ctas = 2});
  CHECK_THROWS_WITH(codegen::compile(*small.impl(), row_major, "sm_90a"),
                    Catch::Contains("gemm.h:128: 'dot' with num_ctas = 2 splits its rows over the CTAs: expected M a "
                                    "multiple of 128 (2 CTAs x 64 rows x 1 warpgroup), found M = 64"));
}

TEST_CASE("descriptor stores through tensor copies clip at the tensor's edges and at negative coordinates",
          "[gpu][descriptor]") {
  REQUIRE_GPU();
  // Rows of 128, 64 and 16 bytes: the 128B and 64B swizzles, and none.
  auto check = [](auto kernel, int BM, int BN) {
    auto k = compile(kernel, {.name = "shifted_store", .num_warps = 4});
    // (0, 0): every program a copy, the last ones past M and N; then shifts
    // that make the first row or column of programs (or both) store through
    // the masked form, and ones that only move the blocks.
    for (auto [dm, dn] : {std::pair{0, 0}, {-8, 0}, {0, -16}, {-64, -32}, {5, 16}, {-3, 48}}) {
      for (auto [M, N] : {std::pair{200, 96}, {64, 32}, {130, 72}}) {
        INFO("shifted_store " << BM << "x" << BN << " M=" << M << " N=" << N << " shift (" << dm << ", " << dn << ")");
        same_on_both<float>([&](Device& d) {
          auto x = d.upload(small_ints_of<float>(size_t(M) * N, 61));
          auto y = d.upload(std::vector<float>(size_t(M) * N, -7.0f));
          d(k, Grid{uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))}, x, y, M, N, dm, dn);
          d.synchronize();
          return std::vector<std::vector<float>>{y.download<float>()};
        }, 0, 0);
      }
    }
  };
  check(shifted_store<64, 32>, 64, 32);
  check(shifted_store<64, 16>, 64, 16);
  check(shifted_store<32, 4>, 32, 4);
}

TEST_CASE("descriptor stores through tensor copies: two in a kernel, one in an if_, one in place", "[gpu][descriptor]") {
  REQUIRE_GPU();
  constexpr int BM = 64, BN = 64;
  auto k = compile(two_stores<BM, BN>, {.name = "two_stores", .num_warps = 4});
  for (auto [M, N] : {std::pair{200, 96}, {64, 64}, {130, 80}, {256, 112}}) {
    INFO("two_stores M=" << M << " N=" << N);
    same_on_both<float>([&](Device& d) {
      auto x = d.upload(small_ints_of<float>(size_t(M) * N, 71));
      auto y = d.upload(std::vector<f16>(size_t(M) * N, f16(-5.0f)));
      auto z = d.upload(std::vector<float>(size_t(M) * N, -7.0f));
      d(k, Grid{uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))}, x, y, z, M, N);
      d.synchronize();
      std::vector<float> yf;
      for (f16 e : y.download<f16>()) yf.push_back(float(e));
      return std::vector<std::vector<float>>{x.download<float>(), yf, z.download<float>()};
    }, 0, 0);
  }
}

TEST_CASE("descriptor idioms through tensor copies: a transposed B, f16 and f32, a block read once", "[gpu][descriptor]") {
  REQUIRE_GPU();
  auto bt = [](auto tag, int M, int N, int K, auto stages) {
    using E = decltype(tag);
    constexpr int BM = 64, BN = 64, BK = sizeof(E) == 4 ? 32 : 64, S = decltype(stages)::value;
    INFO("gemm_bt " << dtype_name(dtype_v<E>) << " M=" << M << " N=" << N << " K=" << K << ", stages " << S);
    auto k = compile(gemm_bt<E, BM, BN, BK, S>, {.name = "gemm_bt", .num_warps = 4});
    same_on_both<float>([&](Device& d) {
      auto a = d.upload(small_ints_of<E>(size_t(M) * K + 4, 41)), b = d.upload(small_ints_of<E>(size_t(N) * K + 4, 42));
      auto c = d.upload(std::vector<float>(size_t(M) * N, -1.0f));
      d(k, Grid{uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))}, a, b, c, M, N, K);
      d.synchronize();
      return std::vector<std::vector<float>>{c.download<float>()};
    }, 0, 0);
  };
  using S2 = std::integral_constant<int, 2>;
  using S3 = std::integral_constant<int, 3>;
  using S4 = std::integral_constant<int, 4>;
  bt(bf16{}, 130, 96, 64 * 4, S3{});
  bt(bf16{}, 64, 64, 64 * 2, S2{});  // the f32 form failed at 2 stages, 2 trips
  bt(bf16{}, 128, 64, 64 * 7, S2{});
  bt(bf16{}, 128, 64, 64 * 9, S4{});
  bt(f16{}, 64, 200, 64 * 3 + 32, S3{});
  // f32 read into registers: this case found that a refill needs a proxy
  // fence after the generic-proxy reads (wrong rows without it).
  bt(float{}, 100, 64, 32 * 5 - 2, S3{});  // masked: K not a multiple of 4
  bt(float{}, 100, 64, 32 * 5 + 4, S3{});
  bt(float{}, 100, 64, 32 * 5, S3{});
  bt(float{}, 64, 64, 64, S2{});
  constexpr int BM = 64, BN = 64, D = 64;
  auto k = compile(q_once<BM, BN, D>, {.name = "q_once", .num_warps = 4});
  for (int L : {64, 200, 64 * 5}) {
    INFO("q_once L=" << L);
    same_on_both<float>([&](Device& d) {
      auto q = d.upload(small_ints_of<bf16>(size_t(L) * D, 43)), v = d.upload(small_ints_of<bf16>(size_t(L) * D, 44));
      auto out = d.alloc<float>(size_t(cdiv(L, BM)) * BM * BN);
      d(k, Grid{uint32_t(cdiv(L, BM))}, q, v, out, L);
      d.synchronize();
      return std::vector<std::vector<float>>{out.download<float>()};
    }, 0, 0);
  }
}

// Without a GPU: attention's loop on rank-3 descriptors becomes a
// warp-specialized pipeline of 3-D tensor copies (K and V in one ring, Q
// copied once by the consumers before the loop), both products on wgmma
// (the second with A from registers), the next S waited for while P V is
// in flight and P V retired before the step ends; each consumer warp lets
// the slot's K buffer go after S's wait and its V buffer after P V's (two
// rings of empty mbarriers in one), and on two warpgroups that last wait
// is pinned behind the softmax (a CTA fence before it in the PTX). With
// peel-last-iteration (on unless TILEDSL_GPU_PASSES says otherwise) the
// last step runs after the loop: P V alone, no S of a block past the end,
// with its own waits, releases and turn (and with prescale-accumulator O's
// rescale moves after P V's wait: the same counts).
TEST_CASE("attention's loop on rank-3 descriptors: 3-D tensor copies, warp-specialized, two products a step",
          "[codegen][descriptor]") {
  using namespace codegen_checks;
  // 64 query rows on one consumer warpgroup, 128 on two.
  auto check = [&]<int BM>(int warps, const char* passes) {
    INFO(warps << " warps, " << BM << " rows, passes '" << passes << "'");
    ScopedEnv env("TILEDSL_GPU_PASSES", passes);
    const bool peel = peels(passes);
    const int steps = peel ? 2 : 1;  // the loop's body, and the step after it
    Kernel k = compile(chained_heads<BM, 64, 64>, {.name = "chained_heads", .num_warps = warps});
    std::string gpu = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Gpu);
    // S in the loop alone (the one before it is synchronous), P V in each step.
    CHECK(count(gpu, R"(= dot [^\n]*\{async = 1, input)") == 1);
    CHECK(count(gpu, R"(= dot [^\n]*\{a_in = "registers", async = 1)") == steps);
    CHECK(count(gpu, R"(peel_last)") == (peel ? 0 : 1));
    CHECK(count(gpu, R"(tensor_map [^\n]*\{box = \[1, 64, 64\])") == (BM == 64 ? 3 : 2));  // K, V (and Q)
    CHECK(count(gpu, R"(tensor_map [^\n]*\{box = \[1, 128, 64\])") == (BM == 64 ? 0 : 1));  // Q
    CHECK(count(gpu, R"(warp_specialize \{registers)") == 1);
    CHECK(count(gpu, R"(dot_wait [^\n]*\{pending = 0, pinned = 1\})") == (warps == 8 ? steps : 0));
    CHECK(count(gpu, R"(dot_wait [^\n]*\{pending = 0[,}])") == steps);
    CHECK(count(gpu, R"(local_alloc [^\n]*smem<6x1xi64)") == 1);  // three stages: K's empty slots, then V's
    CHECK(count(gpu, R"(mbarrier_arrive [^\n]*\{per_warp = 1\})") == 2 * steps);
    auto c = codegen::compile(*k.impl(), aligned(k), "sm_90a");
    CHECK(c.threads == (warps + 4) * 32);
    const std::string& ptx = c.assembly;
    CHECK(count(ptx, R"(cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.mbarrier)") > 0);
    CHECK(count(ptx, R"(cp\.async\.bulk\.tensor\.2d)") == 0);
    CHECK(count(ptx, R"(setmaxnreg\.dec\.sync\.aligned\.u32\s+24;)") == 1);
    CHECK(count(ptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n64k16[^;]*\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd)") > 0);
    // Two consumer warpgroups take turns issuing their products: each
    // waits on its own barrier (3 or 4) and hands over on the other's;
    // the second starts the first, the first takes the last turn.
    CHECK(count(ptx, R"(bar\.sync \t%r\d+, 256;)") == (warps == 8 ? steps : 0));
    CHECK(count(ptx, R"(bar\.arrive \t%r\d+, 256;)") == (warps == 8 ? steps : 0));
    CHECK(count(ptx, R"(bar\.arrive \t3, 256;)") == (warps == 8 ? 1 : 0));
    CHECK(count(ptx, R"(bar\.sync \t3, 256;)") == (warps == 8 ? 1 : 0));
    // The next S waited for with P V in flight, then P V before the yield.
    CHECK(count(ptx, R"(wgmma\.wait_group\.sync\.aligned 1;)") == 1);
    CHECK(count(ptx, R"(fence\.acq_rel\.cta;\s+wgmma\.wait_group\.sync\.aligned 0;)") == (warps == 8 ? steps : 0));
    CHECK(count(ptx, R"(wgmma\.wait_group\.sync\.aligned [2-9])") == 0);
    // A product's K steps share one descriptor (each step's offset added
    // in its statement), and S = Q K^T's zero accumulator is not set: its
    // first step does not accumulate (scale-d from a register set to 0).
    int descriptors = count(ptx, R"(or\.b64\s+%rd\d+, %rd\d+, \d+;)");
    int products = count(ptx, R"(wgmma\.mma_async)");
    CHECK(descriptors > 0);
    CHECK(descriptors * 3 <= products);
    CHECK(count(ptx, R"(add\.s32 da_lo, da_lo, \d+;)") > 0);
    CHECK(count(ptx, R"(add\.s32 db_lo, db_lo, \d+;)") > 0);
    std::set<std::string> scale_d;
    const std::regex setp(R"(setp\.ne\.b32 p, (%r\d+), 0;)");
    for (std::sregex_iterator it(ptx.begin(), ptx.end(), setp), end; it != end; ++it)
      scale_d.insert((*it)[1]);
    int zero_scale = 0;
    for (const auto& r : scale_d) zero_scale += count(ptx, "mov\\.b32\\s+" + r + ", 0;") > 0;
    CHECK(zero_scale >= 1);
    check_assembles(ptx, "sm_90a");
    if (auto log = ptxas(ptx, "sm_90a")) {
      CHECK(count(*log, "C7514") == 0);
      CHECK(count(*log, R"( 0 bytes spill stores)") == 1);
    }
  };
  for (const char* passes : kPassLists) {
    check.template operator()<64>(4, passes);
    check.template operator()<128>(8, passes);
  }
  // Rank 4 ([B, H, n, D], Triton's habit): 4-D copies of [1, 1, rows, D] boxes.
  {
    Kernel k4 = compile(chained_heads<128, 64, 64, true, 4>, {.name = "heads_4d", .num_warps = 8});
    std::string gpu = codegen::emit_stage(*k4.impl(), aligned(k4), "sm_90a", codegen::Stage::Gpu);
    CHECK(count(gpu, R"(tensor_map [^\n]*\{box = \[1, 1, 64, 64\])") == 2);  // K, V
    CHECK(count(gpu, R"(= mul %4, %6 : i32)") == 1);  // the batch stride, for the three maps
    CHECK(count(gpu, R"(tensor_map [^\n]*\{box = \[1, 1, 128, 64\])") == 1);  // Q
    CHECK(count(gpu, R"(warp_specialize \{registers)") == 1);
    auto c4 = codegen::compile(*k4.impl(), aligned(k4), "sm_90a");
    REQUIRE(c4.tensor_maps.size() == 3);
    using Operand = codegen::TensorMapParam::Operand;
    for (const auto& m : c4.tensor_maps) CHECK(m.strides[0] == (Operand{1, {4, 6}}));  // heads x head_stride
    const std::string& ptx = c4.assembly;
    CHECK(count(ptx, R"(cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.mbarrier)") > 0);
    CHECK(count(ptx, R"(cp\.async\.bulk\.tensor\.[235]d)") == 0);
    check_assembles(ptx, "sm_90a");
    if (auto log = ptxas(ptx, "sm_90a")) CHECK(count(*log, R"( 0 bytes spill stores)") == 1);
  }
  // On sm_80 the same source is the masked loads the descriptors mean.
  Kernel k = compile(chained_heads<128, 64, 64>, {.name = "chained_heads", .num_warps = 4});
  auto ampere = codegen::compile(*k.impl(), aligned(k), "sm_80");
  CHECK(ampere.tensor_maps.empty());
  check_assembles(ampere.assembly, "sm_80");
}

// Without a GPU: the example's attention with 128-key blocks at head dim
// 128 (two warpgroups of 64 x 128 scores) fits the consumers' registers:
// the loop carries P as bf16, not the f32 it was rounded from (the
// optimizer's phi(cast a, cast b) -> cast(phi(a, b)) would double it), and
// the edge masks' column indices are computed in the edge block, not held
// across the loop (sink-to-cold-blocks). Spilled, ptxas serialized every
// product of the loop (perf.md run 69).
TEST_CASE("attention's 128-key blocks at head dim 128: P carried narrow, no spills", "[codegen][descriptor]") {
  using namespace codegen_checks;
  for (bool causal : {false, true}) {
    INFO((causal ? "causal" : "non-causal"));
    CompileOptions options{.name = "attention", .num_warps = 8, .num_stages = 2, .flush_denormals = true};
    Kernel k = causal ? compile(kernels::attention_fwd_desc<bf16, 128, 128, 128, true>, options)
                      : compile(kernels::attention_fwd_desc<bf16, 128, 128, 128, false>, options);
    std::string ir = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Llvm);
    // P, 64 bf16 a thread, goes round as 32 words (and nothing as f32 pairs).
    CHECK(count(ir, R"(= phi i32 )") >= 32);
    CHECK(count(ir, R"(phi <\d+ x float>)") == 0);
    std::string ptx = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Asm);
    if (auto log = ptxas(ptx, "sm_90a")) {
      CHECK(count(*log, R"( 0 bytes spill stores)") == 1);
      CHECK(count(*log, "C7514") == 0);
    }
  }
}

// Without a GPU: attention at d 64 with more than one program a
// multiprocessor (programs_per_sm): the entry cap is the program's share
// of the register file, and setmaxnreg moves registers within the
// program's (a warpgroup raising past them would wait for ever): 2 x 384
// threads -> 80 at entry, producer 24, two consumer warpgroups 104; 3 x
// 256 threads -> 80, one consumer warpgroup 136, no spills.
TEST_CASE("attention with 2 and 3 programs a multiprocessor: setmaxnreg within a program's registers",
          "[codegen][descriptor]") {
  using namespace codegen_checks;
  auto ptx_of = [&](Kernel k) { return codegen::compile(*k.impl(), aligned(k), "sm_90a").assembly; };
  CompileOptions two{.name = "attention", .num_warps = 8, .num_stages = 3, .flush_denormals = true, .programs_per_sm = 2};
  std::string p2 = ptx_of(compile(kernels::attention_fwd_desc<bf16, 128, 64, 64, false>, two));
  CHECK(count(p2, R"(\.maxnreg 80\b)") == 1);
  CHECK(count(p2, R"(setmaxnreg\.inc\.sync\.aligned\.u32\s+104;)") >= 1);
  CHECK(count(p2, R"(setmaxnreg\.dec\.sync\.aligned\.u32\s+24;)") == 1);
  CompileOptions three{.name = "attention", .num_warps = 4, .num_stages = 3, .flush_denormals = true, .programs_per_sm = 3};
  std::string p3 = ptx_of(compile(kernels::attention_fwd_desc<bf16, 64, 64, 64, false>, three));
  CHECK(count(p3, R"(\.maxnreg 80\b)") == 1);
  CHECK(count(p3, R"(setmaxnreg\.inc\.sync\.aligned\.u32\s+136;)") >= 1);
  if (auto log = ptxas(p3, "sm_90a")) CHECK(count(*log, R"( 0 bytes spill stores)") == 1);
  // Shared memory at a program's share: with 8 a multiprocessor, 28160
  // bytes (228 KiB / 8 less the 1 KiB each program keeps).
  CompileOptions eight = two;
  eight.programs_per_sm = 8;
  Kernel big = compile(kernels::attention_fwd_desc<bf16, 128, 64, 64, false>, eight);
  CHECK_THROWS_WITH(codegen::compile(*big.impl(), aligned(big), "sm_90a"),
                    Catch::Contains("sm_90a (a program's share at programs_per_sm = 8) has 28160"));
}

// Without a GPU: attention at d 64 in 256-row blocks of 64 keys with 16
// warps (the config 256x64:16:3:desc): four consumer warpgroups of 64
// rows beside the producer, 640 threads, so 96 registers at entry, the
// producer down to 24 and the consumers up to 112, assembled without
// spills, causal and not. The four take turns issuing their products, in
// a ring of four named barriers (3 to 6): each waits on its own, passes
// to the next, the last starts the first and the first takes the last
// turn.
TEST_CASE("attention in 256-row blocks: four consumer warpgroups within the register file, no spills",
          "[codegen][descriptor]") {
  using namespace codegen_checks;
  CompileOptions options{.name = "attention", .num_warps = 16, .num_stages = 3, .flush_denormals = true};
  for (const char* passes : kPassLists)
  for (Kernel k : {compile(kernels::attention_fwd_desc<bf16, 256, 64, 64, false>, options),
                   compile(kernels::attention_fwd_desc<bf16, 256, 64, 64, true>, options)}) {
    ScopedEnv env("TILEDSL_GPU_PASSES", passes);
    const int steps = peels(passes) ? 2 : 1;  // a turn in the loop, and one in its last step after it (peeled)
    std::string gpu = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Gpu);
    for (const char* turn : {"start", "wait", "pass", "finish"})
      CHECK(count(gpu, std::string(R"(named_barrier \{groups = 4, id = 3, pingpong = ")") + turn + R"(", threads = 256\})") ==
            (turn[0] == 'w' || turn[0] == 'p' ? steps : 1));
    std::string ptx = codegen::compile(*k.impl(), aligned(k), "sm_90a").assembly;
    CHECK(count(ptx, R"(bar\.sync \t%r\d+, 256;)") == steps);    // its own
    CHECK(count(ptx, R"(bar\.arrive \t%r\d+, 256;)") == steps);  // the next one's
    CHECK(count(ptx, R"(bar\.arrive \t3, 256;)") == 1);       // start
    CHECK(count(ptx, R"(bar\.sync \t3, 256;)") == 1);         // finish
    CHECK(count(ptx, R"(\.maxnreg 96\b)") == 1);
    CHECK(count(ptx, R"(setmaxnreg\.inc\.sync\.aligned\.u32\s+112;)") >= 1);
    CHECK(count(ptx, R"(setmaxnreg\.dec\.sync\.aligned\.u32\s+24;)") == 1);
    if (auto log = ptxas(ptx, "sm_90a")) CHECK(count(*log, R"( 0 bytes spill stores)") == 1);
  }
}

// Without a GPU: the persistent attention (kernels::attention_persistent)
// is warp-specialized as a whole, the tile loop in both partitions: one
// ring of K and V for every tile, Q copied by the consumers each tile, the
// producer loading the next tile's keys while the consumers end the last;
// no spills at head dims 64 and 128.
TEST_CASE("the persistent attention: the tile loop warp-specialized as a whole, no spills", "[codegen][descriptor]") {
  using namespace codegen_checks;
  auto check = [&]<int BN, int D, bool CAUSAL>() {
    INFO("BN " << BN << ", D " << D << (CAUSAL ? ", causal" : ""));
    CompileOptions options{.name = "attention", .num_warps = 8, .num_stages = 2, .flush_denormals = true};
    Kernel k = compile(kernels::attention_persistent<bf16, 128, BN, D, CAUSAL>, options);
    std::string gpu = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Gpu);
    CHECK(count(gpu, R"(warp_specialize \{registers)") == 1);
    auto c = codegen::compile(*k.impl(), aligned(k), "sm_90a");
    CHECK(c.threads == 12 * 32);
    const std::string& ptx = c.assembly;
    CHECK(count(ptx, R"(cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.mbarrier)") > 0);
    CHECK(count(ptx, R"(cp\.async\.bulk\.tensor\.3d\.global\.shared::cta)") >= 1);  // O.s store
    CHECK(count(ptx, R"(setmaxnreg\.dec\.sync\.aligned\.u32)") == 1);
    CHECK(count(ptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n\d+k16[^;]*\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd)") > 0);
    check_assembles(ptx, "sm_90a");
    if (auto log = ptxas(ptx, "sm_90a")) {
      CHECK(count(*log, R"( 0 bytes spill stores)") == 1);
      CHECK(count(*log, "C7514") == 0);
    }
  };
  check.template operator()<64, 128, false>();
  check.template operator()<64, 128, true>();
  check.template operator()<128, 64, false>();
  check.template operator()<128, 128, false>();  // d 128's default on sm_90a
  check.template operator()<128, 128, true>();
}

// On the interpreter, the persistent attention writes what the descriptor
// form (a program a query block) writes, bit for bit: every tile computed
// (causal, with an odd count of tiles, the last one twice, to the same
// bits). Program counts 1, 2 and 5 over 3 heads of N = 1, 300 (3 blocks:
// a head's middle one pairs with the next head's first), 512 (4) and 640
// (5); with 5 programs some have no step.
TEST_CASE("the persistent attention covers every tile on the interpreter: causal steps of blocks j and T-1-j",
          "[interp][descriptor]") {
  constexpr int BM = 128, BN = 64, D = 64, H = 3;  // odd counts of tiles too
  Device d = Device::get("interp");
  auto run = [&]<bool CAUSAL>() {
    CompileOptions options{.name = "attention_persistent", .num_warps = 8, .num_stages = 2};
    Kernel persistent = compile(kernels::attention_persistent<bf16, BM, BN, D, CAUSAL>, options);
    Kernel single = compile(kernels::attention_fwd_desc<bf16, BM, BN, D, CAUSAL>, options);
    for (int n : {1, 300, 512, 640}) {
      auto q = d.upload(small_ints(size_t(H) * n * D, 81)), k = d.upload(small_ints(size_t(H) * n * D, 82));
      auto v = d.upload(small_ints(size_t(H) * n * D, 83));
      auto want = d.alloc<bf16>(size_t(H) * n * D);
      d(single, Grid{uint32_t(cdiv(n, BM)), uint32_t(H)}, q, k, v, want, n, 0.125f, 1, H, H, n * D);
      for (uint32_t programs : {1u, 2u, 5u}) {
        INFO(n << " queries, " << programs << " programs" << (CAUSAL ? ", causal" : ""));
        auto got = d.upload(std::vector<bf16>(size_t(H) * n * D, bf16(-7.0f)));  // a value no output takes
        d(persistent, Grid{programs}, q, k, v, got, n, 0.125f, 1, H, H, n * D);
        auto w = want.download<bf16>(), g = got.download<bf16>();
        size_t first = 0;  // the first element that differs
        while (first < w.size() && g[first].bits == w[first].bits) ++first;
        INFO("first difference at element " << first << " (row " << first / D << ")");
        CHECK(first == w.size());
      }
    }
  };
  run.template operator()<false>();
  run.template operator()<true>();
}

// The attention example's default configuration on AMD compiles without
// spilling registers to scratch: gfx90a and gfx942 at d 64 and 128,
// gfx1100 at d 64 (at d 128 every configuration spills there: 50 registers
// at the default, the least).
TEST_CASE("the default attention on AMD: no spills but gfx1100 at d 128", "[codegen]") {
  auto spills = [&]<int D>(const std::string& target) {
    kernels::AttentionConfig c = kernels::default_attention_config(D, target);
    return kernels::with_tiles(c, [&]<int BM, int BN>() {
      kernels::AttentionKernel<bf16, BM, BN, D, true> k(c, {.name = "attention"});
      std::string gcn = codegen::emit_stage(*k.kernel.impl(), codegen_checks::aligned(k.kernel), target, codegen::Stage::Asm);
      std::smatch m;
      REQUIRE(std::regex_search(gcn, m, std::regex(R"(\.vgpr_spill_count:\s+(\d+))")));
      return std::stoi(m[1]);
    });
  };
  for (const char* t : {"gfx90a", "gfx942"}) {
    INFO(t);
    CHECK(spills.template operator()<64>(t) == 0);
    CHECK(spills.template operator()<128>(t) == 0);
  }
  CHECK(spills.template operator()<64>("gfx1100") == 0);
}

// The persistent attention against the interpreter running the same
// kernel: 3 heads of N queries, on 2 programs (each walks many tiles,
// their rings and phases carried across tiles) and on 8 (at N = 1 five
// have no tile at all); ragged N, causal and not, d 64 with 64-key blocks
// and d 128 with 128 (the example's default on sm_90a).
TEST_CASE("the persistent attention matches the interpreter: programs with 0, 1 and many tiles, ragged N",
          "[gpu][descriptor]") {
  REQUIRE_GPU();
  constexpr int BM = 128, H = 3;
  auto run = [&]<int BN, int D, bool CAUSAL>() {
    CompileOptions options{.name = "attention_persistent", .num_warps = 8, .num_stages = 2};
    for (const char* passes : codegen_checks::kPassLists) {
    codegen_checks::ScopedEnv env("TILEDSL_GPU_PASSES", passes);  // read when a new kernel first compiles
    Kernel k = compile(kernels::attention_persistent<bf16, BM, BN, D, CAUSAL>, options);
    for (int n : {1, 100, 128, 300})
    for (uint32_t programs : {2u, 8u}) {
      INFO(n << " queries, " << programs << " programs, BN " << BN << ", D " << D << (CAUSAL ? ", causal" : "") << ", passes '"
             << passes << "'");
      same_on_both<float>([&](Device& d) {
        auto q = d.upload(small_ints(size_t(H) * n * D, 71)), kk = d.upload(small_ints(size_t(H) * n * D, 72));
        auto v = d.upload(small_ints(size_t(H) * n * D, 73));
        auto o = d.alloc<bf16>(size_t(H) * n * D);
        d(k, Grid{programs}, q, kk, v, o, n, 0.125f, 1, H, H, n * D);
        d.synchronize();
        std::vector<float> out;
        for (bf16 x : o.download<bf16>()) out.push_back(float(x));
        return std::vector<std::vector<float>>{out};
      }, 2e-2, 2e-2);
    }
    }
  };
  run.template operator()<64, 64, false>();
  run.template operator()<64, 64, true>();
  run.template operator()<128, 128, false>();
  run.template operator()<128, 128, true>();
}

// The d 64 default for sequences of up to 4096 keys on sm_90a
// (64x64:4:3:desc:x3: one consumer warpgroup a program, three programs a
// multiprocessor, registers and shared memory capped at a program's share)
// and 256x64:16:3:desc (four consumer warpgroups a program) against the
// interpreter: ragged N, causal and not, more programs than fit at once.
TEST_CASE("attention at d 64, three programs a multiprocessor or 256-row blocks (3 or 2 stages), matches the interpreter",
          "[gpu][descriptor]") {
  REQUIRE_GPU();
  constexpr int BN = 64, D = 64, H = 5;
  auto run = [&]<int BM, bool CAUSAL>(int warps, int programs_per_sm, int stages = 3) {
    CompileOptions options{.name = "attention_d64", .num_warps = warps, .num_stages = stages, .flush_denormals = true,
                           .programs_per_sm = programs_per_sm};
    for (const char* passes : codegen_checks::kPassLists) {
    codegen_checks::ScopedEnv env("TILEDSL_GPU_PASSES", passes);  // read when a new kernel first compiles
    Kernel k = compile(kernels::attention_fwd_desc<bf16, BM, BN, D, CAUSAL>, options);
    for (int n : {1, 100, 128, 300}) {
      INFO(n << " queries, BM " << BM << ", " << stages << " stages" << (CAUSAL ? ", causal" : "") << ", passes '" << passes
             << "'");
      same_on_both<float>([&](Device& d) {
        auto q = d.upload(small_ints(size_t(H) * n * D, 81)), kk = d.upload(small_ints(size_t(H) * n * D, 82));
        auto v = d.upload(small_ints(size_t(H) * n * D, 83));
        auto o = d.alloc<bf16>(size_t(H) * n * D);
        d(k, Grid{uint32_t(tl::cdiv(n, BM)), uint32_t(H)}, q, kk, v, o, n, 0.125f, 1, H, H, n * D);
        d.synchronize();
        std::vector<float> out;
        for (bf16 x : o.download<bf16>()) out.push_back(float(x));
        return std::vector<std::vector<float>>{out};
      }, 2e-2, 2e-2);
    }
    }
  };
  run.template operator()<64, false>(4, 3);
  run.template operator()<64, true>(4, 3);
  run.template operator()<256, false>(16, 1);
  run.template operator()<256, true>(16, 1);
  // The tuning list's 256x64:16:2:desc (a two-slot ring).
  run.template operator()<256, false>(16, 1, 2);
  run.template operator()<256, true>(16, 1, 2);
}

TEST_CASE("attention's loop on rank-3 descriptors matches the interpreter: keys 0, 1, 64, 100, 187, 576, three heads, "
          "with and without an online softmax, and through rank-4 descriptors",
          "[gpu][descriptor]") {
  REQUIRE_GPU();
  constexpr int BM = 128, D = 64, H = 3;
  for (const char* passes : codegen_checks::kPassLists)
  for (int warps : {4, 8})
  for (int variant : {0, 1, 2}) {  // 0: plain, 1: online softmax, 2: that through rank-4 descriptors
    codegen_checks::ScopedEnv env("TILEDSL_GPU_PASSES", passes);  // read when a new kernel first compiles
    const bool softmax = variant > 0;
    const int batches = variant == 2 ? 2 : 1;
    Kernel k = variant == 2 ? compile(chained_heads<BM, 64, D, true, 4>, {.name = "heads_4d", .num_warps = warps})
               : softmax    ? compile(chained_heads<BM, 64, D, true>, {.name = "softmax_heads", .num_warps = warps})
                            : compile(chained_heads<BM, 64, D>, {.name = "chained_heads", .num_warps = warps});
    for (int n : {0, 1, 64, 100, 128, 187, 576}) {
      INFO(warps << " warps, " << n << " keys" << (softmax ? ", online softmax" : "") << (batches > 1 ? ", 4-D" : "")
                 << ", passes '" << passes << "'");
      // Each head's n rows, then the next head's (ragged: keys past n
      // belong to the next head and must read as zero). Q has BM rows a
      // head (n of them valid in the map: rows past n read as zero).
      const int rows = std::max(n, BM);
      same_on_both<float>([&](Device& d) {
        auto q = d.upload(small_ints(size_t(batches * H) * rows * D, 51));
        auto kk = d.upload(small_ints(size_t(batches * H) * rows * D, 52));
        auto v = d.upload(small_ints(size_t(batches * H) * rows * D, 53));
        auto out = d.alloc<float>(size_t(batches * H) * BM * D);
        d(k, Grid{uint32_t(H), uint32_t(batches)}, q, kk, v, out, H, n, rows * D);
        d.synchronize();
        return std::vector<std::vector<float>>{out.download<float>()};
      }, softmax ? 1e-2 : 0, softmax ? 1e-2 : 0);
    }
  }
}

TEST_CASE("the stream-K gemm splits the last round's tiles along K and sums them exactly", "[descriptor][streamk]") {
  // How the work is shared out (the host's view of the kernel's walk).
  auto plan = kernels::stream_k<int64_t>(2048, 128, 132);  // 8192^3 in 128x256 tiles on an H100
  CHECK(plan.dp_tiles == 1980);
  CHECK(plan.sk_tiles == 68);
  CHECK(plan.pieces == 1);
  CHECK(plan.cut == 86);    // 68 programs take steps [0, 86) of a tile each ...
  CHECK(plan.spare == 64);  // ... and 64 the steps [86, 128) of 1 or 2 tiles
  CHECK(plan.slots == 2);
  CHECK(kernels::stream_k<int64_t>(512, 63, 132).sk_tiles == 0);  // 4000^3: summing would cost what it saves
  CHECK(kernels::stream_k<int64_t>(264, 63, 132).sk_tiles == 0);  // whole rounds
  CHECK(kernels::stream_k<int64_t>(200, 0, 132).sk_tiles == 0);   // no K steps to split
  CHECK(kernels::stream_k<int64_t>(2, 3, 132).sk_tiles == 0);     // too few to cut
  auto few = kernels::stream_k<int64_t>(32, 128, 132);  // 1024 x 1024 x 8192: each tile in 4 cuts
  CHECK(few.dp_tiles == 0);
  CHECK(few.pieces == 4);
  CHECK(few.cut == 32);
  CHECK(few.spare == 0);
  CHECK(few.slots == 4);
  // Never more programs than launched, no spare without a rest to take,
  // no cut without steps (2 tiles of 321 steps on 40 programs: 20 cuts of
  // 17 would leave the last none).
  for (auto [tiles, iters, programs] : {std::tuple{512, 63, 132}, {2048, 16, 132}, {5, 9, 7}, {3, 64, 132}, {70, 1, 66},
                                        {1, 401, 132}, {130, 40, 66}, {2, 321, 40}, {7, 1000, 132}}) {
    auto s = kernels::stream_k<int64_t>(tiles, iters, programs);
    INFO(tiles << " tiles of " << iters << " steps on " << programs << " programs");
    if (s.sk_tiles == 0) continue;
    CHECK(s.dp_tiles % programs == 0);
    CHECK(s.pieces * s.sk_tiles + s.spare <= programs);
    CHECK(s.spare <= s.sk_tiles);
    CHECK(s.cut >= 1);
    CHECK((s.pieces - 1) * s.cut < iters);
    CHECK((s.spare > 0) == (s.pieces * s.cut < iters));
    CHECK(s.slots == s.pieces + (s.pieces * s.cut < iters ? 1 : 0));
  }
  // On the interpreter (programs run one after another; the last to arrive
  // is then always the highest): whole rounds, a split last round, shares
  // spanning tiles, several programs on one tile, K not a multiple of BK,
  // K = 0, and a program with nothing to do.
  Device interp = Device::get("interp");
  auto k = compile_streamk<3, 64, 64, 32>(4);
  for (auto [M, N, K, programs] : {std::tuple{256, 128, 32 * 9, 4},  // whole rounds
                                    {64, 64, 32 * 40, 6},         // 1 tile: 2 cuts and a rest
                                    {128, 128, 32 * 64, 13},      // 4 tiles in 3 cuts each
                                    {320, 64, 32 * 64, 7},        // 5 tiles: a cut each, rests on 2 programs
                                    {200, 136, 32 * 65 + 5, 5},   // whole tiles, then 2 in 2 cuts and a rest
                                    {200, 136, 0, 5},             // K = 0
                                    {64, 64, 32 * 8, 9},          // too short to split: 8 programs idle
                                    {128, 64, 32 * 321, 40}}) {   // 2 tiles in 19 cuts (not 20, the last empty)

    INFO("M=" << M << " N=" << N << " K=" << K << " on " << programs << " programs");
    auto got = run_streamk<3, 64, 64, 32>(interp, k, M, N, K, programs);
    auto ha = small_ints(size_t(M) * K + 1, 61), hb = small_ints(size_t(K) * N + 1, 62);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        float want = 0;
        for (int kk = 0; kk < K; ++kk) want += float(ha[size_t(m) * K + kk]) * float(hb[size_t(kk) * N + n]);
        INFO("C[" << m << ", " << n << "]");
        REQUIRE(got[0][size_t(m) * N + n] == float(bf16(want)));
      }
    for (float c : got[1]) REQUIRE(c == 0);
  }
}

TEST_CASE("the stream-K gemm is warp-specialized, sums partial tiles in the accumulator's layout and orders them "
          "before its count",
          "[descriptor][codegen][streamk]") {
  using namespace codegen_checks;
  auto k = compile(kernels::gemm_streamk<bf16, 128, 256, 64, kernels::kGemmGroupM>,
                   {.name = "gemm_streamk", .num_warps = 8, .num_stages = 3});
  codegen::Specialization row_major = aligned(k);
  for (int unit : {7, 9, 11}) row_major.args[size_t(unit)] = codegen::int_arg_facts(1);  // stride_ak, _bn, _cn
  auto ck = codegen::compile(*k.impl(), row_major, "sm_90a");
  CHECK(count(ck.assembly, R"(setmaxnreg)") >= 2);
  CHECK(count(ck.assembly, R"(wgmma\.wait_group\.sync\.aligned 1)") >= 1);
  // The partial sums leave and come back 8 bytes a thread from the
  // accumulator's registers (no conversion through shared memory: the
  // kernel would not fit beside the ring and the output's buffer).
  CHECK(count(ck.assembly, R"(st\.global\.v2\.b32)") >= 64);
  CHECK(count(ck.assembly, R"(ld\.global\.v2\.b32)") >= 64);
  // The count after them waits for every consumer thread's stores.
  size_t count_at = ck.assembly.find("atom.acq_rel.gpu");
  REQUIRE(count_at != std::string::npos);
  std::string before = ck.assembly.substr(0, count_at);
  size_t bar = before.rfind("bar.sync");
  REQUIRE(bar != std::string::npos);
  CHECK(before.find("st.global", bar) == std::string::npos);  // nothing stored between them
  CHECK(before.rfind("st.global.v2.b32") < bar);
  // One barrier, not two: insert-barriers counts the count's own
  // (atomic_syncs_threads), which also orders the exchange of its old
  // value through shared memory after the last tile's read of it.
  CHECK(count(ck.assembly, R"(bar\.sync \t1, 256;\s+bar\.sync \t1, 256;)") == 0);
  // The tile's store waits for its buffer where the next tile stores (and
  // at the end), not right after it, though it sits two `if`s deep.
  CHECK(count(ck.assembly, R"(cp\.async\.bulk\.wait_group\.read 0)") == 2);
  if (auto log = ptxas(ck.assembly, "sm_90a")) CHECK(count(*log, " 0 bytes spill") >= 1);
  // 128x128 at 4 stages: the read-back loop's loads would take a ring of
  // their own beside the K loop's, which lives through the tile; they stay
  // where they are, and the function says why.
  auto k128 = compile(kernels::gemm_streamk<bf16, 128, 128, 64, kernels::kGemmGroupM>,
                      {.name = "gemm_streamk", .num_warps = 8, .num_stages = 4});
  codegen::Specialization rm128 = aligned(k128);
  for (int unit : {7, 9, 11}) rm128.args[size_t(unit)] = codegen::int_arg_facts(1);
  std::string gpu = codegen::emit_stage(*k128.impl(), rm128, "sm_90a", codegen::Stage::Gpu);
  CHECK(count(gpu, R"(schedule = "loads read into registers left in place)") == 1);
  CHECK_NOTHROW(codegen::compile(*k128.impl(), rm128, "sm_90a"));
}

namespace {
// C = A B through kernels::gemm_tuner over `configs` (the tuner gives a
// stream-K configuration its workspace), launched twice; exact on small
// integers. C of the second launch, as floats.
std::vector<float> run_tuned_gemm(Device& d, const std::vector<kernels::GemmConfig>& configs, const std::string& name,
                                  int M, int N, int K) {
  tl::Autotuner tuner = kernels::gemm_tuner<bf16>(name, configs, d.processor_count());
  auto a = d.upload(small_ints(size_t(M) * K + 1, 61)), b = d.upload(small_ints(size_t(K) * N + 1, 62));
  std::vector<float> out;
  for (int launch = 0; launch < 2; ++launch) {
    auto c = d.upload(std::vector<bf16>(size_t(M) * N, bf16(-1.0f)));
    tuner(d, kernels::gemm_tune_grid(M, N, d), a, b, c, M, N, K, K, 1, N, 1, N, 1);
    d.synchronize();
    out.clear();
    for (bf16 x : c.download<bf16>()) out.push_back(float(x));
  }
  return out;
}
}  // namespace

TEST_CASE("a tuned gemm may pick stream-K: the tuner passes its workspace", "[descriptor][streamk][autotune]") {
  // The interpreter (one program: no split), the stream-K form alone and
  // beside the plain one.
  Device interp = Device::get("interp");
  const int M = 200, N = 136, K = 32 * 9;
  auto want = run_tuned_gemm(interp, {kernels::parse_gemm_config("64x64x32:4:3")}, "tuned-plain", M, N, K);
  CHECK(run_tuned_gemm(interp, {kernels::parse_gemm_config("64x64x32:4:3:streamk")}, "tuned-streamk", M, N, K) == want);
  CHECK(run_tuned_gemm(interp,
                       {kernels::parse_gemm_config("64x64x32:4:3"), kernels::parse_gemm_config("64x64x32:4:3:streamk")},
                       "tuned-both", M, N, K) == want);
}

TEST_CASE("a tuned gemm that picks stream-K matches the interpreter", "[gpu][descriptor][streamk][autotune]") {
  REQUIRE_GPU();
  // 4 tiles of 128 x 128 over 64 K steps on every multiprocessor: split.
  const auto configs = std::vector<kernels::GemmConfig>{kernels::parse_gemm_config("128x128x64:8:4:streamk")};
  same_on_both<float>([&](Device& d) {
    return std::vector<std::vector<float>>{run_tuned_gemm(d, configs, "tuned-streamk-gpu", 256, 256, 64 * 64)};
  }, 0, 0);
}

TEST_CASE("stream-K gemms match the interpreter", "[gpu][descriptor][streamk]") {
  REQUIRE_GPU();
  check_streamk<3>(128, 128, 64 * 40, 9, 4, true);            // 1 tile: 2 cuts and a rest
  check_streamk<3>(640, 128, 64 * 64, 7, 4, true);            // 5 tiles: a cut each, rests on 2 programs
  check_streamk<3>(600, 272, 64 * 65 + 8, 7, 4, true);        // 2 whole tiles each, then 1 in 4 cuts and a rest
  check_streamk<3, 128, 256>(384, 544, 64 * 16, 7, 8, true);  // 2 split tiles, rests on 2 programs
  check_streamk<2>(300, 272, 64 * 3, 7, 4, true);             // K too short to split: whole tiles only
  check_streamk<3>(200, 144, 0, 3, 4, true);                  // K = 0
  check_streamk<3>(640, 128, 64 * 64, 7, 4, false);
}
