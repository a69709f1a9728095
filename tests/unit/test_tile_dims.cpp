// Tiles whose dims are c x 2^k, c odd up to 15 (tl::is_tile_dim: 48 =
// 3 x 16, 40 = 5 x 8, 96, 160 ...), on the interpreter: a gemm over ragged
// M, N and K with such blocks (pointer form and tensor descriptors), a
// row reduction and a reshape of a 96-wide tile; each against a host
// reference. GPU targets lower powers of two only so far, and refuse the
// others naming the op and its line (the plan: docs/hopper-plan.md).
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "codegen_checks.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

int g_line = 0;
#define MARK g_line = __LINE__;

// c = a b, a [M, K], b [K, N], c [M, N], all row-major; BM x BN x BK blocks.
template <int BM, int BN, int BK>
void gemm_ptrs(ptr<float> a, ptr<float> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto rows = program_id(0) * BM + arange(0, BM);                     // [BM] i32
  auto cols = program_id(1) * BN + arange(0, BN);                     // [BN] i32
  auto acc = zeros<float>({BM, BN});                                  // [BM, BN] f32
  for (auto k : range(0, K, BK)) {
    auto ks = k + arange(0, BK);                                      // [BK] i32
    auto at = load(a + col(rows) * K + row(ks), col(rows < M) & row(ks < K), 0.0f);  // [BM, BK]
    auto bt = load(b + col(ks) * N + row(cols), col(ks < K) & row(cols < N), 0.0f);  // [BK, BN]
    acc = dot(at, bt, acc);
  }
  store(c + col(rows) * N + row(cols), acc, col(rows < M) & row(cols < N));
}

template <int BM, int BN, int BK>
void gemm_desc(ptr<float> a, ptr<float> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto da = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto db = make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto dc = make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto acc = zeros<float>({BM, BN});                                  // [BM, BN] f32
  for (auto k : range(0, K, BK)) acc = dot(da.load({m0, k}), db.load({k, n0}), acc);
  dc.store({m0, n0}, acc);
}

// Per row of x [R, 96]: its sum, and its maximum through a reshape to
// [R, 3, 32] (max over the 32, then over the 3).
void rows96(ptr<float> x, ptr<float> sums, ptr<float> maxes) {
  auto r = arange(0, 4);                                              // [4] i32
  auto t = load(x + col(r) * 96 + row(arange(0, 96)));                // [4, 96] f32
  store(sums + r, sum(t, 1));
  auto parts = max(reshape(t, {4, 3, 32}), 2);                        // [4, 3] f32
  store(maxes + r, max(parts, 1));
}

void one_gpu_op(ptr<float> x) {
  auto offs = arange(0, 64);
  MARK auto y = load(x + col(offs) * 3 + row(arange(0, 3)));          // [64, 3] f32
  store(x + offs, sum(y, 1));
}

std::vector<float> ramp(size_t n, float scale, int mod) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int(i * 7 % size_t(mod)) - mod / 2) * scale;
  return v;
}

template <class K>
void check_gemm(K kernel, int bm, int bn) {
  Device dev = Device::get("interp");
  Kernel k = compile(kernel);
  for (auto [M, N, Kd] : std::vector<std::array<int, 3>>{{48, 40, 24}, {50, 37, 30}, {97, 81, 7}, {1, 1, 1}}) {
    auto ha = ramp(size_t(M * Kd), 0.25f, 13), hb = ramp(size_t(Kd * N), 0.5f, 11);
    Buffer a = dev.upload(ha), b = dev.upload(hb), c = dev.upload(std::vector<float>(size_t(M * N), -1.0f));
    dev(k, Grid{uint32_t((M + bm - 1) / bm), uint32_t((N + bn - 1) / bn)}, a, b, c, M, N, Kd);
    dev.synchronize();
    auto hc = c.download<float>();
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double want = 0;
        for (int l = 0; l < Kd; ++l) want += double(ha[size_t(i * Kd + l)]) * hb[size_t(l * N + j)];
        INFO(M << " x " << N << " x " << Kd << " at (" << i << ", " << j << ")");
        REQUIRE(hc[size_t(i * N + j)] == Approx(want).margin(1e-4));
      }
  }
}

}  // namespace

TEST_CASE("tile dims: c x 2^k is a tile dim, up to c = 15", "[frontend]") {
  for (int64_t d : {1, 2, 3, 5, 6, 12, 15, 48, 96, 160, 192, 240, 15 << 10}) CHECK(is_tile_dim(d));
  for (int64_t d : {0, -4, 17, 34, 100, 200}) CHECK_FALSE(is_tile_dim(d));
}

TEST_CASE("tile dims: a gemm on 48 x 40 x 24 blocks, ragged, on the interpreter", "[frontend][run]") {
  check_gemm(gemm_ptrs<48, 40, 24>, 48, 40);
}

TEST_CASE("tile dims: a gemm through tensor descriptors on 48 x 40 x 24 blocks", "[frontend][run][descriptor]") {
  check_gemm(gemm_desc<48, 40, 24>, 48, 40);
}

TEST_CASE("tile dims: a 96-wide row's sum, and its max through a reshape", "[frontend][run]") {
  Device dev = Device::get("interp");
  auto hx = ramp(4 * 96, 0.125f, 29);
  Buffer x = dev.upload(hx), s = dev.upload(std::vector<float>(4)), m = dev.upload(std::vector<float>(4));
  dev(compile(rows96), Grid{1}, x, s, m);
  dev.synchronize();
  auto hs = s.download<float>(), hm = m.download<float>();
  for (int r = 0; r < 4; ++r) {
    double want_s = 0;
    float want_m = -INFINITY;
    for (int j = 0; j < 96; ++j) want_s += hx[size_t(r * 96 + j)], want_m = std::max(want_m, hx[size_t(r * 96 + j)]);
    CHECK(hs[size_t(r)] == Approx(want_s));
    CHECK(hm[size_t(r)] == want_m);
  }
}

TEST_CASE("tile dims: GPU targets refuse a tile not a power of two, naming the op", "[frontend][codegen]") {
  Kernel k = compile(one_gpu_op);
  for (const char* target : {"sm_90a", "sm_80", "gfx942"}) {
    INFO(target);
    CHECK_THROWS_WITH(codegen::compile(*k.impl(), codegen_checks::aligned(k), target),
                      Catch::Contains("test_tile_dims.cpp:" + std::to_string(g_line) + ": 'arange' on tile<3xi32>: ") &&
                          Catch::Contains(std::string(target) + " lowers tiles whose dims are powers of two only"));
  }
}
