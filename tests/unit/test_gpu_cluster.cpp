// Programs on thread-block clusters (CompileOptions::num_ctas): tiles split
// over the CTAs of a cluster, reductions across them through distributed
// shared memory (each CTA sends its partials to the others). [gpu]: the
// same kernels on the GPU (2 and 4 CTAs a
// program) and on the interpreter (which ignores num_ctas: the program's
// meaning is the same), with masks, persistent pipelined loops with
// invariant weights, 2-D reductions along and across the split, scalar
// stores. [codegen]: the PTX declares the cluster, sends with st.async on
// transaction barriers, and the clear errors for what is missing.
#include <catch2/catch.hpp>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {
using namespace gpu_oracle;

// A layernorm-like walk over rows: two reductions a row, a weight vector
// the same for every row, the row's mean stored as a scalar.
template <class T, int BLOCK>
void norm_rows(ptr<float> out, ptr<float> means, ptr<T> in, ptr<T> weight, scalar<int32_t> rows,
               scalar<int32_t> n) {
  auto cols = arange(0, BLOCK);                                                        // [BLOCK] i32
  auto mask = cols < n;                                                                // [BLOCK] i1
  for (auto r : range(program_id(0), rows, num_programs(0), {.num_stages = 2})) {
    auto x = cast<float>(load(in + r * n + cols, mask, 0.0f));                         // [BLOCK] f32
    auto mean = sum(x, 0) / cast<float>(n);
    auto c = where(mask, x - mean, 0.0f);                                              // [BLOCK] f32
    auto rstd = rsqrt(sum(c * c, 0) / cast<float>(n) + 1e-5f);
    auto w = cast<float>(load(weight + cols, mask, 0.0f));                             // [BLOCK] f32
    store(out + r * n + cols, c * rstd * w, mask);
    store(means + r, mean);
  }
}

// A [64, 256] tile: sums down the columns (across the split of dim 0),
// maxima along the rows (within each CTA), and a softmax-like max then sum.
void tile_reductions(ptr<float> out, ptr<float> in) {
  auto i = col(arange(0, 64));                            // [64, 1] i32
  auto j = row(arange(0, 256));                           // [1, 256] i32
  auto x = load(in + program_id(0) * 64 * 256 + i * 256 + j);  // [64, 256] f32
  auto base = out + program_id(0) * (256 + 64 + 1);
  store(base + arange(0, 256), sum(x, 0));                // [256]
  store(base + 256 + arange(0, 64), max(x, 1));          // [64]
  auto e = exp(x - max(max(x, 1), 0));
  store(base + 320, sum(sum(e, 1), 0));
}

// c = a b on BM x BN x BK tiles, a dot reading an operand through a trans:
// B stored [N, K] (TRANS_B) or A stored [K, M]; through tensor descriptors
// (DESC) or masked pointer loads.
template <int BM, int BN, int BK, bool TRANS_B, bool DESC>
void gemm_trans(ptr<bf16> a, ptr<bf16> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto rm = m0 + arange(0, BM), rn = n0 + arange(0, BN), rk = arange(0, BK);   // [BM], [BN], [BK] i32
  auto acc = zeros<float>({BM, BN});                                           // [BM, BN] f32
  for (auto k : range(0, K, BK)) {
    auto ks = k + rk;                                                          // [BK] i32
    auto at = [&] {                                                            // [BM, BK] bf16
      if constexpr (TRANS_B)
        return DESC ? make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK}).load({m0, k})
                    : load(a + col(rm) * K + row(ks), col(rm < M) & row(ks < K), 0.0f);
      else  // of [BK, BM]
        return trans(DESC ? make_tensor_descriptor(a, {K, M}, {M, 1}, {BK, BM}).load({k, m0})
                          : load(a + col(ks) * M + row(rm), col(ks < K) & row(rm < M), 0.0f));
    }();
    auto bt = [&] {                                                            // [BK, BN] bf16
      if constexpr (TRANS_B)  // of [BN, BK]
        return trans(DESC ? make_tensor_descriptor(b, {N, K}, {K, 1}, {BN, BK}).load({n0, k})
                          : load(b + col(rn) * K + row(ks), col(rn < N) & row(ks < K), 0.0f));
      else
        return DESC ? make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN}).load({k, n0})
                    : load(b + col(ks) * N + row(rn), col(ks < K) & row(rn < N), 0.0f);
    }();
    acc = dot(at, bt, acc);
  }
  store(c + col(rm) * N + row(rn), acc, col(rm < M) & row(rn < N));
}

template <bool TRANS_B, bool DESC>
Kernel compile_gemm_trans() {
  return compile(gemm_trans<256, 128, 64, TRANS_B, DESC>, {.name = "gemm_trans", .num_warps = 8, .num_ctas = 2});
}

template <class T, int BLOCK>
void check_norm_rows(int ctas, int warps, int rows, int n, int programs) {
  auto k = compile(norm_rows<T, BLOCK>, {.name = "norm_rows", .num_warps = warps, .num_ctas = ctas});
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<T>(size_t(std::max(rows, 1)) * n, -2, 2, 31));
    auto w = d.upload(random<T>(size_t(n), -2, 2, 32));
    auto out = d.upload(std::vector<float>(size_t(std::max(rows, 1)) * n, 7.0f));
    auto means = d.upload(std::vector<float>(size_t(std::max(rows, 1)), 7.0f));
    d(k, Grid{uint32_t(programs)}, out, means, x, w, rows, n);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>(), means.download<float>()};
  }, 1e-4, 1e-4);
}

}  // namespace

TEST_CASE("programs on clusters of 2 and 4 CTAs match the interpreter", "[gpu]") {
  REQUIRE_GPU();
  for (int ctas : {2, 4}) {
    INFO("num_ctas " << ctas);
    for (int rows : {0, 1, 3, 7}) check_norm_rows<bf16, 4096>(ctas, 4, rows, 4000, 3);
    check_norm_rows<float, 8192>(ctas, 8, 9, 8192, 2);
    check_norm_rows<float, 1024>(ctas, 4, 5, 1000, 4);
    auto k = compile(tile_reductions, {.name = "tile_reductions", .num_warps = 4, .num_ctas = ctas});
    same_on_both<float>([&](Device& d) {
      auto x = d.upload(random<float>(3 * 64 * 256, -3, 3, 33));
      auto out = d.alloc<float>(3 * (256 + 64 + 1));
      d(k, Grid{3}, out, x);
      d.synchronize();
      return std::vector<std::vector<float>>{out.download<float>()};
    }, 1e-5, 1e-4);
  }
}

TEST_CASE("a cluster program declares its cluster and reduces through distributed shared memory", "[codegen]") {
  using namespace codegen_checks;
  Kernel k = compile(norm_rows<float, 32768>, {.name = "norm_rows", .num_warps = 16, .num_ctas = 2});
  auto ck = codegen::compile(*k.impl(), aligned(k), "sm_90a");
  CHECK(count(ck.assembly, R"(\.reqnctapercluster 2, 1, 1)") == 1);
  // One cluster barrier, after the transaction barriers' initialization;
  // per row, two reductions: each sends its partial to the other CTA (one
  // send instruction a possible peer) and waits for the other's.
  CHECK(count(ck.assembly, R"(barrier\.cluster\.arrive)") == 1);
  CHECK(count(ck.assembly, R"(mbarrier\.init)") == 2);
  CHECK(count(ck.assembly, R"(st\.async\.shared::cluster\.mbarrier::complete_tx::bytes)") == 4);
  CHECK(count(ck.assembly, R"(mbarrier\.try_wait\.parity)") == 2);
  // Each CTA keeps its half of the row (f32, 64 KB) and of the weights
  // (64 KB) in shared memory: the whole weights would not fit beside a row.
  CHECK(ck.shared_bytes >= 128 * 1024);
  CHECK(ck.shared_bytes <= 227 * 1024);
  CHECK(count(ck.assembly, R"(cp\.async)") > 0);
  check_assembles(ck.assembly, "sm_90a");
  // 2-D reductions along and across the split, on 2 and 4 CTAs.
  for (int ctas : {2, 4}) {
    Kernel t = compile(tile_reductions, {.name = "tile_reductions", .num_warps = 4, .num_ctas = ctas});
    check_assembles(codegen::compile(*t.impl(), aligned(t), "sm_90a").assembly, "sm_90a");
  }
}

TEST_CASE("num_ctas needs clusters, supported ops and a power of two", "[codegen]") {
  using namespace codegen_checks;
  Kernel two = compile(norm_rows<float, 1024>, {.name = "norm_rows", .num_ctas = 2});
  CHECK_THROWS_WITH(codegen::compile(*two.impl(), aligned(two), "sm_80"), Catch::Contains("sm_90"));
  CHECK_THROWS_WITH(codegen::compile(*two.impl(), aligned(two), "gfx942"), Catch::Contains("clusters"));
  CHECK_THROWS_WITH(compile(norm_rows<float, 1024>, {.name = "norm_rows", .num_ctas = 3}),
                    Catch::Contains("num_ctas must be 1, 2, 4 or 8, found 3"));
  auto gemm = [](ptr<float> c, ptr<bf16> a, ptr<bf16> b) {
    auto i = col(arange(0, 64)), j = row(arange(0, 64));
    store(c + i * 64 + j, dot(load(a + i * 64 + j), load(b + i * 64 + j)));
  };
  Kernel dk = compile(+gemm, {.name = "gemm", .num_ctas = 2});
  CHECK_THROWS_WITH(codegen::compile(*dk.impl(), aligned(dk), "sm_90a"), Catch::Contains("dot"));
  // A transposed tile added to one that is not: its rows are split over the
  // CTAs the other way, so elements would cross between CTAs (at the trans,
  // whose operand is asked for in the sum's layout). The error names the
  // user's line and op.
  auto crossing = [](ptr<float> x, ptr<float> y) {
    auto i = col(arange(0, 64)), j = row(arange(0, 64));
    auto t = load(x + i * 64 + j);
    store(y + i * 64 + j, trans(t) + load(y + i * 64 + j));  // the line checked below
  };
  int line = __LINE__ - 2;
  Kernel ck = compile(+crossing, {.name = "crossing", .num_ctas = 2});
  CHECK_THROWS_WITH(codegen::compile(*ck.impl(), aligned(ck), "sm_90a"),
                    Catch::Contains("test_gpu_cluster.cpp:" + std::to_string(line) +
                                    ": 'trans' with num_ctas > 1 needs tile elements moved between the CTAs of a cluster"));
  // A scalar atomic: every CTA would perform it. The error names the
  // user's line, the function they called and what to do.
  auto counter = [](ptr<int32_t> n) {
    atomic_add(n, 1);  // the line checked below
  };
  line = __LINE__ - 2;
  Kernel ak = compile(+counter, {.name = "counter", .num_ctas = 2});
  CHECK_THROWS_WITH(codegen::compile(*ak.impl(), aligned(ak), "sm_90a"),
                    Catch::Contains("test_gpu_cluster.cpp:" + std::to_string(line) + ": 'atomic_rmw' (tl::atomic_add") &&
                        Catch::Contains("is not supported yet; use num_ctas = 1"));
}

TEST_CASE("a dot on a cluster reads an operand through a trans: B stored [N, K], A stored [K, M]", "[codegen]") {
  // The trans's operand block is loaded as the operand the trans makes is
  // split: B whole in each CTA, A's rows of the CTA. (It was split over the
  // CTAs by default: "'dot' expects operand #1's buffer to hold 64x128 of
  // it in each CTA, found 64x64".)
  using namespace codegen_checks;
  for (const Kernel& k : {compile_gemm_trans<true, true>(), compile_gemm_trans<true, false>(),
                          compile_gemm_trans<false, true>(), compile_gemm_trans<false, false>()}) {
    auto ck = codegen::compile(*k.impl(), aligned(k), "sm_90a");
    CHECK(count(ck.assembly, R"(\.reqnctapercluster 2, 1, 1)") == 1);
    CHECK(count(ck.assembly, R"(wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.bf16\.bf16)") > 0);
    check_assembles(ck.assembly, "sm_90a");
  }
}

TEST_CASE("a dot on a cluster reading an operand through a trans matches the interpreter", "[gpu][cluster]") {
  REQUIRE_GPU();
  auto check = [](const Kernel& k, bool trans_b, int M, int N, int K) {
    INFO("M=" << M << " N=" << N << " K=" << K << (trans_b ? ", B stored [N, K]" : ", A stored [K, M]"));
    same_on_both<float>([&](Device& d) {
      auto a = d.upload(random<bf16>(size_t(M) * K, -2, 2, 41)), b = d.upload(random<bf16>(size_t(K) * N, -2, 2, 42));
      auto c = d.upload(std::vector<float>(size_t(M) * N, -1.0f));
      d(k, Grid{uint32_t(cdiv(M, 256)), uint32_t(cdiv(N, 128))}, a, b, c, M, N, K);
      d.synchronize();
      return std::vector<std::vector<float>>{c.download<float>()};
    }, 1e-5, 1e-3);
  };
  for (auto [M, N, K] : {std::tuple{512, 256, 320}, {300, 272, 64}, {130, 200, 72}}) {
    check(compile_gemm_trans<true, true>(), true, M, N, K);
    check(compile_gemm_trans<true, false>(), true, M, N, K);
    check(compile_gemm_trans<false, true>(), false, M, N, K);
    check(compile_gemm_trans<false, false>(), false, M, N, K);
  }
}
