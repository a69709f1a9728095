// [gpu] dot on the matrix units against the interpreter: every input type
// the target multiplies (bf16, f16, tf32, f8, i8, and f32 "ieee" through
// FMAs), tile shapes from one instruction to 128 wide, 4 and 8 warps,
// transposed operands, a dot feeding a dot (attention's P V), and K loops
// pipelined with 1 to 4 stages at trip counts 0, 1, 2, S-1, S and many
// with a ragged, masked K.
//
// Inputs are small integers, so every product and partial sum is exact in
// f32 and the GPU must match the interpreter exactly whatever order the
// hardware adds in.
#include <catch2/catch.hpp>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "runtime/kernel.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using namespace gpu_oracle;

namespace {

template <class E>
std::vector<E> small_ints(size_t n, unsigned seed, int span = 2) {
  std::mt19937 rng(seed);
  std::vector<E> v(n);
  for (auto& x : v) x = E(float(int(rng() % uint32_t(2 * span + 1)) - span));
  return v;
}

template <class T>
std::vector<float> as_float(const std::vector<T>& v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = float(v[i]);
  return r;
}

// One tile: C [BM, BN] = A [BM, BK] x B [BK, BN], A and B read through
// strides (row- or column-major).
template <class E, int BM, int BN, int BK, bool IEEE>
void dot_tile(ptr<E> a, ptr<E> b, ptr<detail::dot_acc_t<E>> c, scalar<int32_t> sam, scalar<int32_t> sak,
              scalar<int32_t> sbk, scalar<int32_t> sbn) {
  auto m = arange(0, BM), n = arange(0, BN), k = arange(0, BK);
  auto at = load(a + col(m) * sam + row(k) * sak);  // [BM, BK]
  auto bt = load(b + col(k) * sbk + row(n) * sbn);  // [BK, BN]
  auto r = dot(at, bt, DotOptions{.input_precision = IEEE ? "ieee" : "tf32"});  // [BM, BN]
  store(c + col(m) * BN + row(n), r);
}

template <class E, int BM, int BN, int BK, bool IEEE = false>
void check_tile(int warps, bool a_col_major, bool b_col_major) {
  using Acc = detail::dot_acc_t<E>;
  INFO("dot " << dtype_name(dtype_v<E>) << " " << BM << "x" << BN << "x" << BK << ", " << warps << " warps, A "
              << (a_col_major ? "col" : "row") << "-major, B " << (b_col_major ? "col" : "row") << "-major");
  auto k = compile(dot_tile<E, BM, BN, BK, IEEE>, {.name = "dot_tile", .num_warps = warps});
  same_on_both<float>([&](Device& d) {
    auto a = d.upload(small_ints<E>(BM * BK, 11)), b = d.upload(small_ints<E>(BK * BN, 12));
    auto c = d.alloc<Acc>(BM * BN);
    int sam = a_col_major ? 1 : BK, sak = a_col_major ? BM : 1;
    int sbk = b_col_major ? 1 : BN, sbn = b_col_major ? BK : 1;
    d(k, Grid{1}, a, b, c, sam, sak, sbk, sbn);
    d.synchronize();
    return std::vector<std::vector<float>>{as_float(c.template download<Acc>())};
  }, 0, 0);
}

// C = A x B over a K loop: a 2-D grid of BM x BN tiles, masks on every
// edge, `S` pipeline stages.
template <class E, int BM, int BN, int BK, int S>
void gemm_loop(ptr<E> a, ptr<E> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto offs_m = program_id(0) * BM + arange(0, BM);  // [BM]
  auto offs_n = program_id(1) * BN + arange(0, BN);  // [BN]
  auto offs_k = arange(0, BK);                       // [BK]
  auto a_ptrs = a + col(offs_m) * K + row(offs_k);   // [BM, BK]
  auto b_ptrs = b + col(offs_k) * N + row(offs_n);   // [BK, BN]
  auto acc = zeros<float>({BM, BN});
  for (auto k0 : range(0, K, BK, {.num_stages = S})) {
    auto k_ok = k0 + offs_k < K;
    auto at = load(a_ptrs, col(offs_m < M) & row(k_ok), 0.0f);  // [BM, BK]
    auto bt = load(b_ptrs, col(k_ok) & row(offs_n < N), 0.0f);  // [BK, BN]
    acc = dot(at, bt, acc);
    a_ptrs += BK;
    b_ptrs += BK * N;
  }
  store(c + col(offs_m) * N + row(offs_n), acc, col(offs_m < M) & row(offs_n < N));
}

template <int S>
void check_loop(int M, int N, int K) {
  constexpr int BM = 64, BN = 64, BK = 32;
  INFO("gemm loop, " << S << " stages, M=" << M << " N=" << N << " K=" << K << " (" << cdiv(K, BK) << " trips)");
  auto k = compile(gemm_loop<bf16, BM, BN, BK, S>, {.name = "gemm_loop", .num_warps = 4});
  same_on_both<float>([&](Device& d) {
    auto a = d.upload(small_ints<bf16>(size_t(M) * K + 1, 21)), b = d.upload(small_ints<bf16>(size_t(K) * N + 1, 22));
    auto c = d.upload(std::vector<float>(size_t(M) * N, -1.0f));
    d(k, Grid{uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))}, a, b, c, M, N, K);
    d.synchronize();
    return std::vector<std::vector<float>>{c.download<float>()};
  }, 0, 0);
}

// P = cast(A x B) then O = P x V: the accumulator of the first dot becomes
// the A operand of the second (attention's shape), and B^T through trans.
template <int BM, int BN, int D>
void chained(ptr<bf16> a, ptr<bf16> bt, ptr<bf16> v, ptr<float> out) {
  auto m = arange(0, BM), n = arange(0, BN), d = arange(0, D);
  auto q = load(a + col(m) * D + row(d));                // [BM, D]
  auto kt = load(bt + col(n) * D + row(d));              // [BN, D]
  auto s = dot(q, trans(kt));                            // [BM, BN]
  auto p = cast<bf16>(s * 0.5f);                         // [BM, BN]
  auto vv = load(v + col(n) * D + row(d));               // [BN, D]
  store(out + col(m) * D + row(d), dot(p, vv));          // [BM, D]
}

// Attention's loop without the softmax: S = Q K_j^T, P = S / 8 (exact in
// bf16 for small integers), O += P V_j over key blocks j < n. On sm_90a
// overlap-dots issues iteration j + 1's S in iteration j (its loads masked
// off past n), and async-dots waits for both products at the end.
template <int BM, int BN, int D>
void chained_loop(ptr<bf16> q_ptr, ptr<bf16> k_ptr, ptr<bf16> v_ptr, ptr<float> out, scalar<int32_t> n) {
  auto m = arange(0, BM), d = arange(0, D);
  auto q = load(q_ptr + col(m) * D + row(d));            // [BM, D]
  auto acc = zeros<float>({BM, D});                      // [BM, D]
  for (auto j : range(0, n, BN)) {
    auto keys = j + arange(0, BN);                       // [BN]
    auto ok = col(keys < n);                             // [BN, 1]
    auto k = load(k_ptr + col(keys) * D + row(d), ok);   // [BN, D]
    auto v = load(v_ptr + col(keys) * D + row(d), ok);   // [BN, D]
    auto p = cast<bf16>(dot(q, trans(k)) * 0.125f);      // [BM, BN]
    acc = dot(p, v, acc);                                // [BM, D]
  }
  store(out + col(m) * D + row(d), acc);
}

}  // namespace

TEST_CASE("dot on bf16 and f16 tiles matches the interpreter", "[gpu]") {
  REQUIRE_GPU();
  check_tile<bf16, 16, 8, 16>(1, false, false);
  check_tile<bf16, 16, 16, 16>(4, false, false);
  check_tile<bf16, 64, 64, 32>(4, false, false);
  check_tile<bf16, 64, 64, 32>(4, true, true);
  check_tile<bf16, 128, 64, 64>(8, false, true);
  check_tile<bf16, 64, 128, 64>(8, true, false);
  check_tile<f16, 64, 32, 64>(4, false, false);
  check_tile<f16, 128, 128, 32>(8, true, false);
}

TEST_CASE("dot on tf32, f32 ieee, f8 and i8 matches the interpreter", "[gpu]") {
  REQUIRE_GPU();
  check_tile<float, 32, 32, 16>(4, false, false);
  check_tile<float, 64, 64, 32, true>(4, false, false);
  check_tile<f8e4m3, 64, 64, 64>(4, false, false);
  check_tile<f8e5m2, 32, 64, 32>(4, false, false);
  check_tile<int8_t, 64, 64, 64>(4, false, false);
}

TEST_CASE("dot loops pipeline at trip counts 0, 1, 2, S-1, S and many with a ragged K", "[gpu]") {
  REQUIRE_GPU();
  for (int trips : {0, 1, 2, 3, 4, 9}) {
    int K = trips * 32;
    check_loop<3>(100, 80, K);
    if (K > 5) check_loop<3>(100, 80, K - 5);  // ragged: the last step is masked
  }
  check_loop<1>(64, 64, 96);
  check_loop<2>(130, 70, 95);
  check_loop<4>(64, 200, 32 * 7 - 1);
}

TEST_CASE("a dot's result feeds another dot; trans operands", "[gpu]") {
  REQUIRE_GPU();
  for (int warps : {4, 8}) {
    auto k = compile(chained<64, 64, 32>, {.name = "chained", .num_warps = warps});
    same_on_both<float>([&](Device& d) {
      auto a = d.upload(small_ints<bf16>(64 * 32, 31, 1)), b = d.upload(small_ints<bf16>(64 * 32, 32, 1));
      auto v = d.upload(small_ints<bf16>(64 * 32, 33, 1));
      auto out = d.alloc<float>(64 * 32);
      d(k, Grid{1}, a, b, v, out);
      d.synchronize();
      return std::vector<std::vector<float>>{out.download<float>()};
    }, 0, 0);
  }
}

TEST_CASE("a loop's chain of products overlapped across iterations: trip counts 0, 1, 2, 3 and many", "[gpu]") {
  REQUIRE_GPU();
  for (const char* passes : codegen_checks::kPassLists)
  for (int warps : {4, 8}) {
    codegen_checks::ScopedEnv env("TILEDSL_GPU_PASSES", passes);  // read when a new kernel first compiles
    auto k = compile(chained_loop<128, 64, 64>, {.name = "chained_loop", .num_warps = warps});
    for (int n : {0, 1, 64, 100, 128, 187, 576}) {
      INFO(warps << " warps, " << n << " keys, passes '" << passes << "'");
      same_on_both<float>([&](Device& d) {
        auto q = d.upload(small_ints<bf16>(128 * 64, 41, 1));
        auto kk = d.upload(small_ints<bf16>(size_t(n) * 64 + 1, 42, 1));
        auto v = d.upload(small_ints<bf16>(size_t(n) * 64 + 1, 43, 1));
        auto out = d.alloc<float>(128 * 64);
        d(k, Grid{1}, q, kk, v, out, n);
        d.synchronize();
        return std::vector<std::vector<float>>{out.download<float>()};
      }, 0, 0);
    }
  }
}

// Without a GPU: the same kernels compile for sm_80 and sm_90a, use the
// matrix instructions (on sm_90a, wgmma for 16-bit tiles whose B is loaded
// from memory and whose M splits into 64 rows a warpgroup), and assemble
// with ptxas without spills.
TEST_CASE("dot kernels lower to mma.sync and wgmma and assemble", "[codegen]") {
  using namespace codegen_checks;
  auto check = [](const Kernel& k, const std::string& instr, std::string sm90a_instr = "") {
    for (const char* arch : {"sm_80", "sm_90a"}) {
      INFO(k.impl()->name << " for " << arch);
      std::string ptx = codegen::emit_stage(*k.impl(), aligned(k), arch, codegen::Stage::Asm);
      CHECK(count(ptx, std::string(arch) == "sm_90a" && !sm90a_instr.empty() ? sm90a_instr : instr) > 0);
      check_assembles(ptx, arch);
    }
  };
  check(compile(dot_tile<bf16, 64, 64, 32, false>, {.name = "dot_bf16", .num_warps = 4}),
        R"(mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16)",
        R"(wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.bf16\.bf16)");
  check(compile(dot_tile<f16, 128, 64, 64, false>, {.name = "dot_f16", .num_warps = 8}),
        R"(mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16)",
        R"(wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16)");
  check(compile(dot_tile<float, 32, 32, 16, false>, {.name = "dot_tf32"}), R"(m16n8k8\.row\.col\.f32\.tf32)");
  check(compile(dot_tile<int8_t, 64, 64, 64, false>, {.name = "dot_i8"}), R"(m16n8k32\.row\.col\.s32\.s8)");
  check(compile(dot_tile<float, 32, 32, 16, true>, {.name = "dot_ieee"}), R"(fma\.rn\.f32)");
  check(compile(gemm_loop<bf16, 64, 64, 32, 3>, {.name = "gemm_loop"}), R"(mma\.sync)", R"(wgmma\.mma_async)");
  // wgmma's loop: the copies are made visible to the asynchronous proxy
  // before the barrier, and each iteration waits for its multiplies.
  Kernel wg = compile(gemm_loop<bf16, 128, 128, 64, 3>, {.name = "gemm_loop", .num_warps = 8});
  std::string wptx = codegen::emit_stage(*wg.impl(), aligned(wg), "sm_90a", codegen::Stage::Asm);
  CHECK(count(wptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n128k16)") == 4);  // K = 64: 4 steps a warpgroup
  CHECK(count(wptx, R"(fence\.proxy\.async\.shared::cta)") > 0);
  CHECK(count(wptx, R"(wgmma\.wait_group\.sync\.aligned 0)") == 1);
  check_assembles(wptx, "sm_90a");
  // The pipelined loop: operands copied asynchronously into shared memory
  // (16 bytes per copy) and read with matrix loads; no shared-memory
  // exchange of the masks. (Its groups and waits: expand-pipelines.tir.)
  Kernel loop = compile(gemm_loop<bf16, 128, 128, 64, 3>, {.name = "gemm_loop", .num_warps = 8});
  std::string ptx = codegen::emit_stage(*loop.impl(), aligned(loop), "sm_80", codegen::Stage::Asm);
  CHECK(count(ptx, R"(cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16)") > 0);
  CHECK(count(ptx, R"(ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16)") > 0);
  CHECK(count(ptx, R"(ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16)") > 0);
  CHECK(count(ptx, R"(st\.shared\.b8)") == 0);
  check_assembles(ptx, "sm_80");
  // The second product's A is the first one's accumulators: on sm_90a a
  // wgmma taking A from registers (four 32-bit words, then B's descriptor;
  // V is stored N-major, so trans-b is 1).
  check(compile(chained<64, 64, 32>, {.name = "chained"}), R"(mma\.sync)",
        R"(wgmma\.mma_async\.sync\.aligned\.m64n32k16[^;]*\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+, p, 1, 1, 1;)");
  // The loop of a chain on sm_90a (overlap_dots.h, async_dots.h), without
  // peel-last-iteration: each
  // warpgroup (64 rows) issues the first product once before the loop (4
  // instructions, K = 64), then in the body the next iteration's (4) and
  // this one's second (4), both asynchronous: the first retired by a
  // wait_group 1 before the work that reads it (the second in flight),
  // the second by a wait_group 0 before the yield; ptxas keeps them
  // asynchronous (no C7514).
  Kernel chain = compile(chained_loop<128, 64, 64>, {.name = "chained_loop", .num_warps = 8});
  {
    ScopedEnv env("TILEDSL_GPU_PASSES", "-peel-last-iteration");
    std::string cptx = codegen::emit_stage(*chain.impl(), aligned(chain), "sm_90a", codegen::Stage::Asm);
    CHECK(count(cptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n64k16)") == 12);  // 4 before, 4 + 4 in the body
    CHECK(count(cptx, R"(wgmma\.wait_group\.sync\.aligned 0)") == 2);          // the first product's, the body's
    CHECK(count(cptx, R"(wgmma\.wait_group\.sync\.aligned 1;)") == 1);         // the next S, P V in flight
    CHECK(count(cptx, R"(wgmma\.wait_group\.sync\.aligned [2-9])") == 0);
    check_assembles(cptx, "sm_90a");
    if (auto log = ptxas(cptx, "sm_90a")) CHECK(count(*log, "C7514") == 0);
  }
  // With peel-last-iteration (the default), the last iteration runs after
  // the loop with its second product alone (4 more, and their wait_group
  // 0), no first product of an iteration past the end
  // (peel_last_iteration.h).
  std::string pptx = codegen::emit_stage(*chain.impl(), aligned(chain), "sm_90a", codegen::Stage::Asm);
  CHECK(count(pptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n64k16)") == 16);
  CHECK(count(pptx, R"(wgmma\.wait_group\.sync\.aligned 0)") == 3);
  CHECK(count(pptx, R"(wgmma\.wait_group\.sync\.aligned 1;)") == 1);
  CHECK(count(pptx, R"(wgmma\.wait_group\.sync\.aligned [2-9])") == 0);
  check_assembles(pptx, "sm_90a");
  if (auto log = ptxas(pptx, "sm_90a")) CHECK(count(*log, "C7514") == 0);
  // f8 needs sm_89: on sm_80 the FMA form stands in.
  Kernel f8 = compile(dot_tile<f8e4m3, 64, 64, 64, false>, {.name = "dot_f8"});
  CHECK(count(codegen::emit_stage(*f8.impl(), aligned(f8), "sm_90a", codegen::Stage::Asm), R"(m16n8k32\.row\.col\.f32\.e4m3)") > 0);
}
