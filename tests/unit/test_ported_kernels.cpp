// The Triton kernels ported in examples/kernels/ported.h (issue 17): the
// fused softmax of tutorial 02, the layer-norm backward of tutorial 05 (a
// spin lock per group of rows, f32 and f16) and a mixture-of-experts top-k
// router, each against a host reference in double on the interpreter, on
// ragged shapes (rows and columns not multiples of the blocks), and the
// GPU against the interpreter ([gpu]).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "../../examples/kernels/ported.h"
#include "codegen_checks.h"
#include "gpu_oracle.h"

using namespace tl;
namespace kp = kernels::ported;

namespace {

std::vector<float> normal(size_t n, unsigned seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <class T>
std::vector<T> as(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <class T>
std::vector<double> wide(const std::vector<T>& v) {
  std::vector<double> out;
  for (const T& x : v) out.push_back(double(float(x)));
  return out;
}

// ---- softmax (tutorial 02) ---------------------------------------------------

constexpr int kRows = 37, kCols = 100;

std::vector<float> run_softmax(Device& d, const std::vector<float>& x, int programs) {
  Kernel k = compile(kp::softmax<128, 2>, {.name = "softmax", .num_warps = 4});
  auto in = d.upload(x);
  auto out = d.alloc<float>(size_t(kRows) * kCols);
  d(k, Grid{uint32_t(programs)}, out, in, kCols, kCols, kRows, kCols);
  d.synchronize();
  return out.download<float>();
}

// ---- layer-norm backward (tutorial 05) ---------------------------------------

constexpr int kM = 70, kN = 200, kGroup = 8;

struct LnInputs {
  std::vector<float> x, dy, w, mean, rstd;
};

LnInputs ln_inputs() {
  LnInputs in{normal(size_t(kM) * kN, 11), normal(size_t(kM) * kN, 12), normal(kN, 13, 0.5f), {}, {}};
  for (int r = 0; r < kM; ++r) {
    double s = 0, s2 = 0;
    for (int c = 0; c < kN; ++c) s += in.x[size_t(r * kN + c)];
    double m = s / kN;
    for (int c = 0; c < kN; ++c) s2 += (in.x[size_t(r * kN + c)] - m) * (in.x[size_t(r * kN + c)] - m);
    in.mean.push_back(float(m));
    in.rstd.push_back(float(1.0 / std::sqrt(s2 / kN + 1e-5)));
  }
  return in;
}

struct LnGrads {
  std::vector<double> dx, dw, db;
};

template <class T>
LnGrads run_ln_bwd(Device& d, const LnInputs& in) {
  Kernel kdx = compile(kp::layer_norm_bwd_dx_fused<kGroup, 256, T>, {.name = "ln_bwd_dx", .num_warps = 4});
  Kernel kdw = compile(kp::layer_norm_bwd_dwdb<32, 128, T>, {.name = "ln_bwd_dwdb", .num_warps = 4});
  auto x = d.upload(as<T>(in.x)), dy = d.upload(as<T>(in.dy)), w = d.upload(as<T>(in.w));
  auto mean = d.upload(in.mean), rstd = d.upload(in.rstd);
  auto locks = d.upload(std::vector<int32_t>(2 * kGroup, 0));
  auto dx = d.alloc<T>(size_t(kM) * kN);
  auto pdw = d.upload(std::vector<T>(size_t(kGroup) * kN, T(0.0f))), pdb = d.upload(std::vector<T>(size_t(kGroup) * kN, T(0.0f)));
  auto dw = d.alloc<T>(kN), db = d.alloc<T>(kN);
  d(kdx, Grid{kM}, dx, dy, pdw, pdb, x, w, mean, rstd, locks, kN, kN);
  d(kdw, Grid{uint32_t(cdiv(kN, 128))}, pdw, pdb, dw, db, kGroup, kN);
  d.synchronize();
  CHECK(locks.download<int32_t>() == [] {
    std::vector<int32_t> v(2 * kGroup, 0);
    std::fill(v.begin() + kGroup, v.end(), 1);  // every group's count set, every lock free
    return v;
  }());
  return {wide(dx.template download<T>()), wide(dw.template download<T>()), wide(db.template download<T>())};
}

LnGrads ln_reference(const LnInputs& in) {
  LnGrads g{std::vector<double>(size_t(kM) * kN), std::vector<double>(kN, 0.0), std::vector<double>(kN, 0.0)};
  for (int r = 0; r < kM; ++r) {
    std::vector<double> xhat(kN), wdy(kN);
    double c1 = 0, c2 = 0;
    for (int c = 0; c < kN; ++c) {
      size_t i = size_t(r * kN + c);
      xhat[size_t(c)] = (double(in.x[i]) - in.mean[size_t(r)]) * in.rstd[size_t(r)];
      wdy[size_t(c)] = double(in.w[size_t(c)]) * in.dy[i];
      c1 += xhat[size_t(c)] * wdy[size_t(c)];
      c2 += wdy[size_t(c)];
    }
    c1 /= kN, c2 /= kN;
    for (int c = 0; c < kN; ++c) {
      size_t i = size_t(r * kN + c);
      g.dx[i] = (wdy[size_t(c)] - (xhat[size_t(c)] * c1 + c2)) * in.rstd[size_t(r)];
      g.dw[size_t(c)] += in.dy[i] * xhat[size_t(c)];
      g.db[size_t(c)] += in.dy[i];
    }
  }
  return g;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i])));
  }
}

// ---- mixture-of-experts router --------------------------------------------------

constexpr int kTokens = 100, kExperts = 64, kTop = 8;

struct Routes {
  std::vector<float> weights;
  std::vector<int32_t> ids;
};

Routes run_router(Device& d, const std::vector<float>& logits) {
  Kernel k = compile(kp::moe_topk_softmax<16, kExperts, kTop, float>, {.name = "router", .num_warps = 4});
  auto in = d.upload(logits);
  auto w = d.alloc<float>(size_t(kTokens) * kTop);
  auto ids = d.alloc<int32_t>(size_t(kTokens) * kTop);
  d(k, Grid{uint32_t(cdiv(kTokens, 16))}, in, w, ids, kTokens);
  d.synchronize();
  return {w.download<float>(), ids.download<int32_t>()};
}

}  // namespace

TEST_CASE("ported: Triton's fused softmax (tutorial 02)", "[ported][interp]") {
  Device d = Device::get("interp");
  auto x = normal(size_t(kRows) * kCols, 5, 3.0f);
  for (int programs : {1, 8, 64}) {
    auto got = run_softmax(d, x, programs);
    for (int r = 0; r < kRows; ++r) {
      double m = -INFINITY, s = 0;
      for (int c = 0; c < kCols; ++c) m = std::max(m, double(x[size_t(r * kCols + c)]));
      for (int c = 0; c < kCols; ++c) s += std::exp(double(x[size_t(r * kCols + c)]) - m);
      for (int c = 0; c < kCols; ++c) {
        double want = std::exp(double(x[size_t(r * kCols + c)]) - m) / s;
        INFO("programs " << programs << " row " << r << " col " << c << ": " << got[size_t(r * kCols + c)] << " want " << want);
        CHECK(std::abs(got[size_t(r * kCols + c)] - want) <= 4e-6 * want);  // x - max rounds to f32 first
      }
    }
  }
}

TEST_CASE("ported: Triton's layer-norm backward (tutorial 05), its spin lock per group", "[ported][interp]") {
  Device d = Device::get("interp");
  LnInputs in = ln_inputs();
  LnGrads want = ln_reference(in);
  LnGrads f32 = run_ln_bwd<float>(d, in);
  check_close(f32.dx, want.dx, 1e-5);
  check_close(f32.dw, want.dw, 1e-5);
  check_close(f32.db, want.db, 1e-5);
  // f16 (the tutorial's type): the partial sums round to f16 as they go.
  LnGrads f16s = run_ln_bwd<f16>(d, in);
  check_close(f16s.dx, want.dx, 4e-3);
  check_close(f16s.dw, want.dw, 2e-2);
  check_close(f16s.db, want.db, 2e-2);
}

TEST_CASE("ported: a mixture-of-experts top-k router", "[ported][interp]") {
  Device d = Device::get("interp");
  auto logits = normal(size_t(kTokens) * kExperts, 21, 2.0f);
  Routes r = run_router(d, logits);
  for (int t = 0; t < kTokens; ++t) {
    INFO("token " << t);
    std::vector<int> order(kExperts);
    std::iota(order.begin(), order.end(), 0);
    const float* row = &logits[size_t(t * kExperts)];
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    double top = 0;
    for (int k = 0; k < kTop; ++k) top += std::exp(double(row[order[size_t(k)]]) - row[order[0]]);
    for (int k = 0; k < kTop; ++k) {
      CHECK(r.ids[size_t(t * kTop + k)] == order[size_t(k)]);
      double want = std::exp(double(row[order[size_t(k)]]) - row[order[0]]) / top;
      CHECK(std::abs(r.weights[size_t(t * kTop + k)] - want) <= 1e-6);
    }
  }
}

TEST_CASE("ported: the kernels compile for sm_90a and gfx942", "[ported][codegen]") {
  for (Kernel k : {compile(kp::softmax<128, 2>, {.name = "softmax", .num_warps = 4}),
                   compile(kp::layer_norm_bwd_dx_fused<kGroup, 256, f16>, {.name = "ln_bwd_dx", .num_warps = 4}),
                   compile(kp::layer_norm_bwd_dwdb<32, 128, f16>, {.name = "ln_bwd_dwdb", .num_warps = 4}),
                   compile(kp::moe_topk_softmax<16, kExperts, kTop, bf16>, {.name = "router", .num_warps = 4})})
    codegen_checks::check_stores_on_sm90a_and_gfx942(k);
}

TEST_CASE("ported: the same results on the GPU as on the interpreter", "[ported][gpu]") {
  REQUIRE_GPU();
  auto x = normal(size_t(kRows) * kCols, 5, 3.0f);
  gpu_oracle::same_on_both<float>([&](Device& d) {
    return std::vector<std::vector<float>>{run_softmax(d, x, 8)};
  }, 1e-6, 1e-7);
  // The lock orders the groups' additions differently on the GPU: dw and
  // db to the rounding of the order.
  LnInputs in = ln_inputs();
  gpu_oracle::same_on_both<double>([&](Device& d) {
    LnGrads g = run_ln_bwd<float>(d, in);
    return std::vector<std::vector<double>>{g.dx, g.dw, g.db};
  }, 1e-5, 1e-5);
  gpu_oracle::same_on_both<double>([&](Device& d) {
    LnGrads g = run_ln_bwd<f16>(d, in);
    return std::vector<std::vector<double>>{g.dx, g.dw, g.db};
  }, 2e-2, 2e-2);
  auto logits = normal(size_t(kTokens) * kExperts, 21, 2.0f);
  gpu_oracle::same_on_both<float>([&](Device& d) {
    Routes r = run_router(d, logits);
    return std::vector<std::vector<float>>{r.weights, std::vector<float>(r.ids.begin(), r.ids.end())};
  }, 1e-6, 1e-7);
}
