// Generic scans and reductions over tuples of tiles (issue 17):
// tl::associative_scan with a user combine (cummax, a forward fill that is
// not commutative, reversed), reduce over a tuple (argmax by hand with the
// lowest index on ties, Welford's mean and variance) and associative_scan
// over a tuple (the linear recurrence x_i = a_i x_{i-1} + b_i). Checked on
// the interpreter against C++ references; bad input against its message;
// the code for sm_90a and gfx942; the GPU against the interpreter ([gpu]).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

constexpr int R = 8, C = 64;  // [R, C] tiles, scans and reductions along C

// out[0]: cummax along C; out[1]: forward fill of the non-zeros; out[2]:
// backward fill (reverse).
void scans(ptr<float> x, ptr<float> out) {
  auto offs = col(arange(0, R)) * C + row(arange(0, C));  // [R, C] i32
  auto v = load(x + offs);                                // [R, C] f32
  store(out + offs, associative_scan(v, 1, [](auto a, auto b) { return maximum(a, b); }));
  auto fill = [](auto a, auto b) { return where(b != 0.0f, b, a); };  // a earlier, b later
  store(out + R * C + offs, associative_scan(v, 1, fill));
  store(out + 2 * R * C + offs, associative_scan(v, 1, fill, true));
}

// Per row: the largest value and its lowest index (by hand), and Welford's
// (mean, M2, count) merged pairwise: out[r] = max, idx[r], mean[r], var[r].
void tuples(ptr<float> x, ptr<float> out, ptr<int32_t> idx) {
  auto offs = col(arange(0, R)) * C + row(arange(0, C));  // [R, C] i32
  auto v = load(x + offs);                                // [R, C] f32
  auto cols = broadcast_to(row(arange(0, C)), {R, C});       // [R, C] i32
  auto [best, at] = reduce(std::make_tuple(v, cols), 1, [](auto a, auto b) {
    auto [va, ia] = a;
    auto [vb, ib] = b;
    auto take_a = (va > vb) | ((va == vb) & (ia < ib));
    return std::make_tuple(where(take_a, va, vb), where(take_a, ia, ib));
  });
  auto ones = full<float>({R, C}, 1.0f);                  // [R, C] f32
  auto zeros_ = zeros<float>({R, C});                     // [R, C] f32
  auto [mean, m2, n] = reduce(std::make_tuple(v, zeros_, ones), 1, [](auto a, auto b) {
    auto [ma, qa, na] = a;
    auto [mb, qb, nb] = b;
    auto count = na + nb;
    auto delta = mb - ma;
    return std::make_tuple(ma + delta * (nb / count), qa + qb + delta * delta * (na * nb / count), count);
  });
  auto r = arange(0, R);                                  // [R] i32
  store(out + r, best);
  store(idx + r, at);
  store(out + R + r, mean);
  store(out + 2 * R + r, m2 / n);
}

// x_i = a_i x_{i-1} + b_i from x_{-1} = 0 along C, as pairs composed
// (a1, b1) then (a2, b2) = (a1 a2, b1 a2 + b2).
void recurrence(ptr<float> a_ptr, ptr<float> b_ptr, ptr<float> out) {
  auto offs = col(arange(0, R)) * C + row(arange(0, C));  // [R, C] i32
  auto a = load(a_ptr + offs), b = load(b_ptr + offs);    // [R, C] f32
  auto [pa, x] = associative_scan(std::make_tuple(a, b), 1, [](auto p, auto q) {
    auto [a1, b1] = p;
    auto [a2, b2] = q;
    return std::make_tuple(a1 * a2, b1 * a2 + b2);
  });
  store(out + offs, x);
}

std::vector<float> small_values(size_t n, unsigned seed, bool zeros) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = float(int(rng() % 9u) - 4);  // ties on purpose
    if (zeros && rng() % 3u == 0) x = 0.0f;
  }
  return v;
}

std::vector<float> run_scans(Device& d, const std::vector<float>& x) {
  Kernel k = compile(scans, {.name = "scans", .num_warps = 4});
  auto in = d.upload(x);
  auto out = d.alloc<float>(3 * R * C);
  d(k, Grid{1}, in, out);
  d.synchronize();
  return out.download<float>();
}

}  // namespace

TEST_CASE("associative_scan with a user combine: cummax, a forward and a backward fill", "[scan][interp]") {
  Device d = Device::get("interp");
  auto x = small_values(R * C, 71, true);
  auto got = run_scans(d, x);
  for (int r = 0; r < R; ++r) {
    float mx = -INFINITY, fwd = 0;
    for (int c = 0; c < C; ++c) {
      float v = x[size_t(r * C + c)];
      mx = std::max(mx, v);
      if (v != 0) fwd = v;
      INFO("row " << r << " col " << c);
      CHECK(got[size_t(r * C + c)] == mx);
      CHECK(got[size_t(R * C + r * C + c)] == fwd);
    }
    float bwd = 0;
    for (int c = C - 1; c >= 0; --c) {
      float v = x[size_t(r * C + c)];
      if (v != 0) bwd = v;
      CHECK(got[size_t(2 * R * C + r * C + c)] == bwd);
    }
  }
}

TEST_CASE("reduce over a tuple: argmax by hand, Welford's mean and variance", "[scan][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(tuples, {.name = "tuples", .num_warps = 4});
  auto x = small_values(R * C, 72, false);
  auto in = d.upload(x);
  auto out = d.alloc<float>(3 * R);
  auto idx = d.alloc<int32_t>(R);
  d(k, Grid{1}, in, out, idx);
  auto got = out.download<float>();
  auto at = idx.download<int32_t>();
  for (int r = 0; r < R; ++r) {
    float best = -INFINITY;
    int best_at = -1;
    double sum = 0, sq = 0;
    for (int c = 0; c < C; ++c) {
      float v = x[size_t(r * C + c)];
      if (v > best) best = v, best_at = c;
      sum += v;
    }
    double mean = sum / C;
    for (int c = 0; c < C; ++c) sq += (x[size_t(r * C + c)] - mean) * (x[size_t(r * C + c)] - mean);
    INFO("row " << r);
    CHECK(got[size_t(r)] == best);
    CHECK(at[size_t(r)] == best_at);  // the lowest index among ties
    CHECK(std::fabs(got[size_t(R + r)] - mean) <= 1e-5);
    CHECK(std::fabs(got[size_t(2 * R + r)] - sq / C) <= 1e-4 * (1 + sq / C));
  }
}

TEST_CASE("associative_scan over a tuple: a linear recurrence", "[scan][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(recurrence, {.name = "recurrence", .num_warps = 4});
  std::mt19937 rng(73);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(R * C), b(R * C);
  for (auto& v : a) v = 0.9f * dist(rng);
  for (auto& v : b) v = dist(rng);
  auto out = d.alloc<float>(R * C);
  d(k, Grid{1}, d.upload(a), d.upload(b), out);
  auto got = out.download<float>();
  for (int r = 0; r < R; ++r) {
    double x = 0;
    for (int c = 0; c < C; ++c) {
      x = a[size_t(r * C + c)] * x + b[size_t(r * C + c)];
      INFO("row " << r << " col " << c);
      CHECK(std::fabs(got[size_t(r * C + c)] - x) <= 1e-5 * (1 + std::fabs(x)));
    }
  }
}

namespace {
void mismatched(ptr<float> x, ptr<float> out) {
  auto v = load(x + arange(0, 64));                       // [64] f32
  auto w = load(x + arange(0, 32));                       // [32] f32
  auto [s, t] = reduce(std::make_tuple(v, w), 0, [](auto a, auto) { return a; });
  store(out, s + t);
}
void bad_axis(ptr<float> x, ptr<float> out) {
  auto v = load(x + arange(0, 64));                       // [64] f32
  store(out + arange(0, 64), associative_scan(v, 1, [](auto a, auto b) { return a + b; }));
}
}  // namespace

TEST_CASE("scans and tuple reductions: bad input is an error naming the line", "[scan][frontend]") {
  CHECK_THROWS_WITH(compile(mismatched, {.name = "mismatched"}),
                    Catch::Contains("test_scan_tuple.cpp") &&
                        Catch::Contains("reduce: expected tiles of one shape, found tile<64xf32> and tile<32xf32>"));
  CHECK_THROWS_WITH(compile(bad_axis, {.name = "bad_axis"}),
                    Catch::Contains("test_scan_tuple.cpp") && Catch::Contains("associative_scan"));
}

TEST_CASE("scans and tuple reductions compile for sm_90a and gfx942", "[scan][codegen]") {
  for (Kernel k : {compile(scans, {.name = "scans", .num_warps = 4}), compile(tuples, {.name = "tuples", .num_warps = 4}),
                   compile(recurrence, {.name = "recurrence", .num_warps = 4})}) {
    codegen_checks::check_stores_on_sm90a_and_gfx942(k);
  }
}

TEST_CASE("scans and tuple reductions: the same results on the GPU as on the interpreter", "[scan][gpu]") {
  REQUIRE_GPU();
  auto x = small_values(R * C, 74, true);
  gpu_oracle::same_on_both<float>([&](Device& d) { return std::vector<std::vector<float>>{run_scans(d, x)}; }, 0, 0);
  Kernel k = compile(tuples, {.name = "tuples", .num_warps = 4});
  gpu_oracle::same_on_both<float>([&](Device& d) {
    auto out = d.alloc<float>(3 * R);
    auto idx = d.alloc<int32_t>(R);
    d(k, Grid{1}, d.upload(small_values(R * C, 75, false)), out, idx);
    d.synchronize();
    std::vector<float> at;
    for (int32_t i : idx.download<int32_t>()) at.push_back(float(i));
    return std::vector<std::vector<float>>{out.download<float>(), at};
  }, 1e-5, 1e-5);
}

// ---- gather and histogram (standard.h) ------------------------------------------

namespace {

// out0 [R, 16]: src [R, C] gathered along axis 1 at idx [R, 16];
// out1 [16, C]: along axis 0 at idx0 [16, C]; out2 [32]: rank 1.
void gathers(ptr<float> src, ptr<int32_t> idx1, ptr<int32_t> idx0, ptr<float> out) {
  auto s = load(src + col(arange(0, R)) * C + row(arange(0, C)));          // [R, C] f32
  auto i1 = load(idx1 + col(arange(0, R)) * 16 + row(arange(0, 16)));      // [R, 16] i32
  auto i0 = load(idx0 + col(arange(0, 16)) * C + row(arange(0, C)));      // [16, C] i32
  store(out + col(arange(0, R)) * 16 + row(arange(0, 16)), gather(s, i1, 1));
  store(out + R * 16 + col(arange(0, 16)) * C + row(arange(0, C)), gather(s, i0, 0));
  auto line = load(src + arange(0, C));                                    // [C] f32
  store(out + R * 16 + 16 * C + arange(0, 32), gather(line, load(idx1 + arange(0, 32)), 0));
}

// counts [16] of v [256] (values -2 .. 20: some outside), and of the
// values whose mask (v odd) holds.
void histograms(ptr<int32_t> v, ptr<int32_t> out) {
  auto x = load(v + arange(0, 256));                                       // [256] i32
  store(out + arange(0, 16), histogram(x, 16));
  store(out + 16 + arange(0, 16), histogram(x, 16, (x % 2) != 0));
}

struct GatherInputs {
  std::vector<float> src;
  std::vector<int32_t> idx1, idx0;
};
GatherInputs gather_inputs(unsigned seed) {
  std::mt19937 rng(seed);
  GatherInputs g;
  g.src.resize(R * C);
  for (auto& x : g.src) x = float(int(rng() % 2001u) - 1000) / 8.0f;
  g.src[3] = -0.0f;
  g.src[5] = NAN;
  g.idx1.resize(R * 16);
  for (auto& i : g.idx1) i = int32_t(rng() % (C + 4u)) - 2;  // a few outside: gather 0
  g.idx1[0] = 3;
  g.idx1[1] = 5;
  g.idx0.resize(16 * C);
  for (auto& i : g.idx0) i = int32_t(rng() % (R + 2u)) - 1;
  return g;
}
std::vector<float> run_gathers(Device& d, const GatherInputs& g) {
  Kernel k = compile(gathers, {.name = "gathers", .num_warps = 4});
  auto out = d.alloc<float>(R * 16 + 16 * C + 32);
  d(k, Grid{1}, d.upload(g.src), d.upload(g.idx1), d.upload(g.idx0), out);
  d.synchronize();
  return out.download<float>();
}
std::vector<int32_t> hist_values(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> v(256);
  for (auto& x : v) x = int32_t(rng() % 23u) - 2;
  return v;
}

}  // namespace

TEST_CASE("gather along either axis and on rank 1 moves each element's bits; an index outside gathers 0",
          "[standard][interp]") {
  Device d = Device::get("interp");
  GatherInputs g = gather_inputs(81);
  auto got = run_gathers(d, g);
  auto same_bits = [](float a, float b) { return std::memcmp(&a, &b, 4) == 0; };
  auto at = [&](int r, int c) { return c < 0 || c >= C || r < 0 || r >= R ? 0.0f : g.src[size_t(r * C + c)]; };
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < 16; ++k) {
      INFO("axis 1, row " << r << " k " << k);
      CHECK(same_bits(got[size_t(r * 16 + k)], at(r, g.idx1[size_t(r * 16 + k)])));
    }
  CHECK(std::signbit(got[0]));  // -0.0 kept
  CHECK(std::isnan(got[1]));
  for (int k = 0; k < 16; ++k)
    for (int c = 0; c < C; ++c) {
      INFO("axis 0, k " << k << " col " << c);
      CHECK(same_bits(got[size_t(R * 16 + k * C + c)], at(g.idx0[size_t(k * C + c)], c)));
    }
  for (int k = 0; k < 32; ++k) CHECK(same_bits(got[size_t(R * 16 + 16 * C + k)], at(0, g.idx1[size_t(k)])));
  // Its ops are the caller's: an error about one (a tile too large for
  // shared memory, say) names the caller's line, not standard.h's.
  CHECK(compile(gathers, {.name = "gathers", .num_warps = 4}).ir().find("standard.h") == std::string::npos);
}

TEST_CASE("histogram counts the values inside its bins, with and without a mask", "[standard][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(histograms, {.name = "histograms", .num_warps = 4});
  auto v = hist_values(82);
  auto out = d.alloc<int32_t>(32);
  d(k, Grid{1}, d.upload(v), out);
  auto got = out.download<int32_t>();
  std::vector<int32_t> all(16, 0), odd(16, 0);
  for (int32_t x : v)
    if (x >= 0 && x < 16) {
      ++all[size_t(x)];
      if (x % 2) ++odd[size_t(x)];
    }
  for (int b = 0; b < 16; ++b) {
    INFO("bin " << b);
    CHECK(got[size_t(b)] == all[size_t(b)]);
    CHECK(got[size_t(16 + b)] == odd[size_t(b)]);
  }
}

namespace {
void gather_bad(ptr<float> x, ptr<int32_t> i, ptr<float> out) {
  auto s = load(x + col(arange(0, 8)) * 8 + row(arange(0, 8)));            // [8, 8]
  auto idx = load(i + col(arange(0, 4)) * 4 + row(arange(0, 4)));          // [4, 4]
  store(out + col(arange(0, 4)) * 4 + row(arange(0, 4)), gather(s, idx, 1));
}
void histogram_bad(ptr<int32_t> v, ptr<int32_t> out) { store(out + arange(0, 16), histogram(load(v + arange(0, 16)), 12)); }
}  // namespace

TEST_CASE("gather and histogram: bad arguments are errors naming the line", "[standard][frontend]") {
  CHECK_THROWS_WITH(compile(gather_bad, {.name = "gather_bad"}),
                    Catch::Contains("test_scan_tuple.cpp") &&
                        Catch::Contains("gather: expected an index of the source's sizes but along axis 1"));
  CHECK_THROWS_WITH(compile(histogram_bad, {.name = "histogram_bad"}),
                    Catch::Contains("test_scan_tuple.cpp") &&
                        Catch::Contains("histogram: expected a number of bins that is a power of two, found 12"));
}

TEST_CASE("gather and histogram compile for sm_90a and gfx942", "[standard][codegen]") {
  for (Kernel k : {compile(gathers, {.name = "gathers", .num_warps = 4}), compile(histograms, {.name = "histograms", .num_warps = 4})}) {
    codegen_checks::check_stores_on_sm90a_and_gfx942(k);
  }
}

TEST_CASE("gather and histogram: the same results on the GPU as on the interpreter", "[standard][gpu]") {
  REQUIRE_GPU();
  GatherInputs g = gather_inputs(83);
  gpu_oracle::same_on_both<float>([&](Device& d) { return std::vector<std::vector<float>>{run_gathers(d, g)}; }, 0, 0);
  Kernel k = compile(histograms, {.name = "histograms", .num_warps = 4});
  gpu_oracle::same_on_both<int32_t>([&](Device& d) {
    auto out = d.alloc<int32_t>(32);
    d(k, Grid{1}, d.upload(hist_values(84)), out);
    d.synchronize();
    return std::vector<std::vector<int32_t>>{out.download<int32_t>()};
  }, 0, 0);
}
