// dot's batched form ([B, M, K] x [B, K, N], Triton's 3-D dot) and
// max_num_imprecise_acc (f8 products promoted to f32 every n of K): the
// interpreter against a double reference, the traced IR's products, the
// errors, the code for sm_90a and gfx942, and the GPU against the
// interpreter.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

// c [B, M, N] = a [B, M, K] x b [B, K, N] (+ c when ACC).
template <class T, int B, int M, int N, int K, bool ACC>
void batched(ptr<T> a, ptr<T> b, ptr<float> c) {
  auto ta = load(a + reshape(arange(0, B * M * K), {B, M, K}));  // [B, M, K]
  auto tb = load(b + reshape(arange(0, B * K * N), {B, K, N}));  // [B, K, N]
  auto offs = reshape(arange(0, B * M * N), {B, M, N});          // [B, M, N] i32
  const DotOptions o{.input_precision = "ieee"};
  if constexpr (ACC)
    store(c + offs, dot(ta, tb, load(c + offs), o));
  else
    store(c + offs, dot(ta, tb, o));
}

// c [64, 64] += a [64, 128] x b [128, 64] in f8 with max_num_imprecise_acc N.
template <class T, int N>
void imprecise(ptr<T> a, ptr<T> b, ptr<float> c) {
  auto ta = load(a + reshape(arange(0, 64 * 128), {64, 128}));  // [64, 128]
  auto tb = load(b + reshape(arange(0, 128 * 64), {128, 64}));  // [128, 64]
  auto offs = reshape(arange(0, 64 * 64), {64, 64});            // [64, 64] i32
  store(c + offs, dot(ta, tb, load(c + offs), {.max_num_imprecise_acc = N}));
}

template <class T>
std::vector<T> values(size_t n, unsigned seed) {
  auto f = gpu_oracle::random<float>(n, -2.0f, 2.0f, seed);
  std::vector<T> v;
  for (float x : f) v.push_back(T(std::round(x * 8) / 8));  // exact in every input type
  return v;
}

// The product of [B, M, K] and [B, K, N] (+ c0) in double, and each
// element's sum of magnitudes.
template <class T>
void reference(int B, int M, int N, int K, const std::vector<T>& a, const std::vector<T>& b,
               const std::vector<float>* c0, std::vector<double>& ref, std::vector<double>& mag) {
  ref.assign(size_t(B * M * N), 0.0);
  mag.assign(ref.size(), 0.0);
  for (int p = 0; p < B; ++p)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        size_t o = size_t((p * M + m) * N + n);
        double s = c0 ? (*c0)[o] : 0.0, g = std::abs(s);
        for (int k = 0; k < K; ++k) {
          double t = double(float(a[size_t((p * M + m) * K + k)])) * double(float(b[size_t((p * K + k) * N + n)]));
          s += t;
          g += std::abs(t);
        }
        ref[o] = s;
        mag[o] = g;
      }
}

void check_close(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& mag) {
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << ref[i]);
    REQUIRE(std::abs(double(got[i]) - ref[i]) <= 1e-6 * mag[i] + 1e-30);
  }
}

template <class T, int B, int M, int N, int K, bool ACC>
std::vector<float> run_batched(Device& d, unsigned seed) {
  Kernel k = compile(batched<T, B, M, N, K, ACC>, {.name = "batched"});
  auto a = d.upload(values<T>(size_t(B * M * K), seed)), b = d.upload(values<T>(size_t(B * K * N), seed + 1));
  auto c = d.upload(values<float>(size_t(B * M * N), seed + 2));
  d(k, Grid{1}, a, b, c);
  d.synchronize();
  return c.download<float>();
}

template <class T, int B, int M, int N, int K, bool ACC>
void check_batched(unsigned seed) {
  INFO("B " << B << ", " << M << "x" << N << "x" << K << (ACC ? " + acc" : ""));
  Device interp = Device::get("interp");
  auto got = run_batched<T, B, M, N, K, ACC>(interp, seed);
  auto a = values<T>(size_t(B * M * K), seed), b = values<T>(size_t(B * K * N), seed + 1);
  auto c0 = values<float>(size_t(B * M * N), seed + 2);
  std::vector<double> ref, mag;
  reference(B, M, N, K, a, b, ACC ? &c0 : nullptr, ref, mag);
  check_close(got, ref, mag);
}

int count_dots(const Kernel& k) {
  std::string ir = k.ir();
  int n = 0;
  for (size_t p = ir.find("= dot "); p != std::string::npos; p = ir.find("= dot ", p + 1)) ++n;
  return n;
}

void batch_mismatch(ptr<float> a, ptr<float> c) {
  auto x = load(a + reshape(arange(0, 2 * 16 * 16), {2, 16, 16}));  // [2, 16, 16]
  auto y = load(a + reshape(arange(0, 4 * 16 * 16), {4, 16, 16}));  // [4, 16, 16]
  store(c + reshape(arange(0, 2 * 16 * 16), {2, 16, 16}), dot(x, y));
}
void rank_mismatch(ptr<float> a, ptr<float> c) {
  auto x = load(a + reshape(arange(0, 2 * 16 * 16), {2, 16, 16}));  // [2, 16, 16]
  auto y = load(a + reshape(arange(0, 16 * 16), {16, 16}));         // [16, 16]
  store(c + reshape(arange(0, 2 * 16 * 16), {2, 16, 16}), dot(x, y));
}

}  // namespace

TEST_CASE("dot: batched products against a double reference", "[dot_forms][interp]") {
  check_batched<float, 2, 16, 16, 16, false>(1);
  check_batched<float, 4, 32, 16, 64, true>(2);
  check_batched<bf16, 8, 16, 32, 16, true>(3);
  check_batched<float, 1, 16, 16, 16, true>(4);
}

TEST_CASE("dot: max_num_imprecise_acc splits f8 products along K", "[dot_forms][interp]") {
  // One product a chunk of N along K = 128 (N >= K: one, added to acc);
  // ignored for other inputs, which the matrix units sum in f32.
  CHECK(count_dots(compile(imprecise<f8e4m3, 32>, {.name = "i"})) == 4);
  CHECK(count_dots(compile(imprecise<f8e4m3, 64>, {.name = "i"})) == 2);
  CHECK(count_dots(compile(imprecise<f8e5m2, 128>, {.name = "i"})) == 1);
  CHECK(count_dots(compile(imprecise<f8e4m3, 1024>, {.name = "i"})) == 1);
  CHECK(count_dots(compile(imprecise<f8e4m3, 0>, {.name = "i"})) == 1);
  CHECK(count_dots(compile(imprecise<bf16, 32>, {.name = "i"})) == 1);
  Device d = Device::get("interp");
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    Kernel k = form == 0 ? compile(imprecise<f8e4m3, 32>, {.name = "i"})
               : form == 1 ? compile(imprecise<f8e4m3, 1024>, {.name = "i"})
                           : compile(imprecise<f8e4m3, 0>, {.name = "i"});
    auto av = values<f8e4m3>(64 * 128, 7), bv = values<f8e4m3>(128 * 64, 8);
    auto c0 = values<float>(64 * 64, 9);
    auto a = d.upload(av), b = d.upload(bv), c = d.upload(c0);
    d(k, Grid{1}, a, b, c);
    d.synchronize();
    std::vector<double> ref, mag;
    reference(1, 64, 64, 128, av, bv, &c0, ref, mag);
    check_close(c.download<float>(), ref, mag);
  }
}

TEST_CASE("dot: batched and imprecise-accumulation errors name the line", "[dot_forms][frontend]") {
  CHECK_THROWS_WITH(compile(batch_mismatch, {.name = "b"}),
                    Catch::Contains("test_dot_forms.cpp") && Catch::Contains("[B, M, K] x [B, K, N] with one B") &&
                        Catch::Contains("2x16x16") && Catch::Contains("4x16x16"));
  CHECK_THROWS_WITH(compile(rank_mismatch, {.name = "b"}),
                    Catch::Contains("test_dot_forms.cpp") && Catch::Contains("[B, M, K] x [B, K, N]"));
  CHECK_THROWS_WITH(compile(imprecise<f8e4m3, 48>, {.name = "i"}),
                    Catch::Contains("test_dot_forms.cpp") &&
                        Catch::Contains("a power of two dividing K = 128, found 48"));
}

TEST_CASE("dot: batched and imprecise-accumulation products compile for sm_90a and gfx942", "[dot_forms][codegen]") {
  codegen_checks::check_stores_on_sm90a_and_gfx942(compile(batched<bf16, 4, 32, 32, 16, true>, {.name = "batched"}));
  // f8: sm_90a's f8 instruction; gfx942 has none for the OCP formats and
  // runs the product on its f16 one (the operands widened exactly), not
  // on fused multiply-adds (a megabyte of code and a minute of compiling).
  Kernel k = compile(imprecise<f8e4m3, 32>, {.name = "i"});
  codegen_checks::check_stores_on_sm90a_and_gfx942(k);
  std::string ptx = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), "sm_90a", codegen::Stage::Asm);
  CHECK(codegen_checks::count(ptx, R"(mma\.sync\.aligned\.m16n8k32\.row\.col\.f32\.e4m3\.e4m3\.f32)") > 0);
  std::string gcn = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), "gfx942", codegen::Stage::Asm);
  CHECK(codegen_checks::count(gcn, R"(v_mfma_f32_16x16x16_?f16)") > 0);
  CHECK(gcn.size() < 200000);
}

namespace {
int g_np2_line = 0;
// A dot of tiles whose N (or M) is not a power of two, one product.
template <int BM, int BN>
void np2_dot(ptr<f16> a, ptr<f16> b, ptr<float> c) {
  auto rm = col(arange(0, BM)), rn = row(arange(0, BN)), rk = arange(0, 64);
  auto x = load(a + rm * 64 + row(rk));  // [BM, 64] f16
  auto y = load(b + col(rk) * BN + rn);  // [64, BN] f16
  g_np2_line = __LINE__ + 1;
  store(c + rm * BN + rn, dot(x, y));
}
}  // namespace

// On sm_90a a warpgroup that would take several 64-row slices of a tile
// whose dims are not all powers of two: layouts not built yet, an error at
// the dot's line saying what to change (it was an internal layout message
// without a line); a warpgroup a slice compiles.
TEST_CASE("dot: tiles not powers of two with several 64-row slices a warpgroup name the line", "[dot_forms][codegen]") {
  for (auto [k, what] : {std::pair{compile(np2_dot<128, 96>, {.name = "np2", .num_warps = 4}), "128 x 96 x 64 on 4"},
                         std::pair{compile(np2_dot<192, 128>, {.name = "np2", .num_warps = 4}), "192 x 128 x 64 on 4"}}) {
    INFO(what);
    CHECK_THROWS_WITH(codegen::compile(*k.impl(), codegen_checks::aligned(k), "sm_90a"),
                      Catch::Contains("test_dot_forms.cpp:" + std::to_string(g_np2_line) + ": 'dot' of " + what +
                                      " warps is not supported yet on this target") &&
                          Catch::Contains("give each warpgroup (4 warps) at most 64 rows"));
  }
  Kernel ok = compile(np2_dot<128, 96>, {.name = "np2", .num_warps = 8});
  CHECK(codegen_checks::count(codegen::compile(*ok.impl(), codegen_checks::aligned(ok), "sm_90a").assembly,
                              R"(wgmma\.mma_async\.sync\.aligned\.m64n96k16)") > 0);
}

TEST_CASE("dot: batched and imprecise-accumulation products on the GPU as on the interpreter", "[dot_forms][gpu]") {
  REQUIRE_GPU();
  gpu_oracle::same_on_both<float>(
      [&](Device& d) { return std::vector<std::vector<float>>{run_batched<bf16, 4, 32, 32, 16, true>(d, 5)}; }, 1e-5,
      1e-5);
  Kernel k = compile(imprecise<f8e4m3, 32>, {.name = "i"});
  auto av = values<f8e4m3>(64 * 128, 7), bv = values<f8e4m3>(128 * 64, 8);
  auto c0 = values<float>(64 * 64, 9);
  gpu_oracle::same_on_both<float>(
      [&](Device& d) {
        auto a = d.upload(av), b = d.upload(bv), c = d.upload(c0);
        d(k, Grid{1}, a, b, c);
        d.synchronize();
        return std::vector<std::vector<float>>{c.download<float>()};
      },
      1e-5, 1e-5);
}
