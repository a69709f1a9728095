// tl::range beyond i32 and positive steps: Triton's test_for_iv ported
// (64-bit bounds past 2^32, negative steps of C++ constants, loops of no
// trips), a 64-bit induction variable driving a pipelined dot loop, the
// bound errors, the code for sm_90a, sm_80 and gfx942, and the GPU against
// the interpreter ([gpu]).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

// Triton's test_for_iv: the sum of the induction variable over the loop.
template <int STEP>
void for_iv64(ptr<int64_t> out, scalar<int64_t> lo, scalar<int64_t> hi) {
  scalar<int64_t> acc = full<int64_t>({}, 0);
  for (auto i : range(lo, hi, STEP)) acc = acc + i;
  store(out, acc);
}

// The same over i32 bounds (C++ constants and traced scalars), and
// tl::range<int64_t> with C++ bounds past 32 bits.
template <int STEP>
void for_iv32(ptr<int64_t> out, scalar<int32_t> lo, scalar<int32_t> hi) {
  scalar<int64_t> acc = full<int64_t>({}, 0);
  for (auto i : range(lo, hi, STEP)) acc = acc + cast<int64_t>(i);
  store(out, acc);
  scalar<int64_t> acc2 = full<int64_t>({}, 0);
  for (auto i : range(15, -16, STEP)) acc2 = acc2 + cast<int64_t>(i);
  store(out + 1, acc2);
  scalar<int64_t> acc3 = full<int64_t>({}, 0);
  for (auto i : range<int64_t>(int64_t(1) << 35, (int64_t(1) << 35) + 20, STEP < 0 ? -STEP : STEP)) acc3 = acc3 + i;
  store(out + 2, acc3);
}

// A dot loop whose induction variable is 64-bit (widened from an i32 K).
void dot64(ptr<float> a, ptr<float> b, ptr<float> c, scalar<int32_t> K) {
  auto rm = arange(0, 32), rn = arange(0, 32), rk = arange(0, 16);
  auto acc = zeros<float>({32, 32});
  for (auto k : range<int64_t>(0, K, 16)) {
    auto ka = cast<int32_t>(k) + rk;
    auto x = load(a + col(rm) * K + row(ka));  // [32, 16]
    auto y = load(b + col(ka) * 32 + row(rn));  // [16, 32]
    acc = dot(x, y, acc, {.input_precision = "ieee"});
  }
  store(c + col(rm) * 32 + row(rn), acc);
}

int64_t ref_sum(int64_t lo, int64_t hi, int64_t step) {
  int64_t s = 0;
  if (step > 0)
    for (int64_t i = lo; i < hi; i += step) s += i;
  else
    for (int64_t i = lo; i > hi; i += step) s += i;
  return s;
}

template <int STEP>
std::vector<int64_t> run_iv64(Device& d, int64_t lo, int64_t hi) {
  Kernel k = compile(for_iv64<STEP>, {.name = "for_iv64_" + std::to_string(STEP < 0 ? -STEP : STEP)});
  auto out = d.upload(std::vector<int64_t>{-1});
  d(k, Grid{1}, out, lo, hi);
  d.synchronize();
  return out.download<int64_t>();
}

template <int STEP>
std::vector<int64_t> run_iv32(Device& d, int32_t lo, int32_t hi) {
  Kernel k = compile(for_iv32<STEP>, {.name = "for_iv32"});
  auto out = d.upload(std::vector<int64_t>{-1, -1, -1});
  d(k, Grid{1}, out, lo, hi);
  d.synchronize();
  return out.download<int64_t>();
}

std::vector<float> run_dot64(Device& d, int K) {
  Kernel k = compile(dot64, {.name = "dot64", .num_warps = 4});
  std::vector<float> a(size_t(32 * K)), b(size_t(K * 32));
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 13) - 6) * 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 7) - 3) * 0.25f;
  auto ba = d.upload(a), bb = d.upload(b);
  auto c = d.alloc<float>(32 * 32);
  d(k, Grid{1}, ba, bb, c, K);
  d.synchronize();
  return c.download<float>();
}

}  // namespace

TEST_CASE("range: Triton's test_for_iv, 64-bit bounds and negative steps", "[range][interp]") {
  Device d = Device::get("interp");
  const int64_t big = int64_t(1) << 35;
  CHECK(run_iv64<1>(d, big, big + 20)[0] == ref_sum(big, big + 20, 1));
  CHECK(run_iv64<2>(d, big, big + 20)[0] == ref_sum(big, big + 20, 2));
  CHECK(run_iv64<3>(d, big, big + 20)[0] == ref_sum(big, big + 20, 3));
  CHECK(run_iv64<-1>(d, 15, -16)[0] == ref_sum(15, -16, -1));
  CHECK(run_iv64<-2>(d, 15, -16)[0] == ref_sum(15, -16, -2));
  CHECK(run_iv64<-3>(d, 15, -16)[0] == ref_sum(15, -16, -3));
  CHECK(run_iv64<-1>(d, -18, -22)[0] == ref_sum(-18, -22, -1));
  CHECK(run_iv64<-1>(d, 22, 18)[0] == ref_sum(22, 18, -1));
  CHECK(run_iv64<-1>(d, 18, 22)[0] == 0);  // no trips
  CHECK(run_iv64<2>(d, 22, 18)[0] == 0);
  for (int32_t lo : {15, 0, -7}) {
    INFO("lo " << lo);
    CHECK(run_iv32<-3>(d, lo, -16) ==
          std::vector<int64_t>{ref_sum(lo, -16, -3), ref_sum(15, -16, -3), ref_sum(big, big + 20, 3)});
    CHECK(run_iv32<4>(d, lo, 40) ==
          std::vector<int64_t>{ref_sum(lo, 40, 4), ref_sum(15, -16, 4), ref_sum(big, big + 20, 4)});
  }
  // The largest i32 step down: one trip from INT32_MAX.
  auto top = [](ptr<int32_t> out) {
    scalar<int32_t> n = full<int32_t>({}, 0);
    for (auto i : range(std::numeric_limits<int32_t>::max(), 0, -std::numeric_limits<int32_t>::max())) n = n + 1 + i * 0;
    store(out, n);
  };
  Kernel kt = compile(+top, {.name = "top"});
  auto out = d.upload(std::vector<int32_t>{-1});
  d(kt, Grid{1}, out);
  d.synchronize();
  CHECK(out.download<int32_t>()[0] == 1);
}

TEST_CASE("range: a dot loop over a 64-bit induction variable", "[range][interp]") {
  Device d = Device::get("interp");
  for (int K : {16, 48, 64}) {
    std::vector<float> got = run_dot64(d, K);
    for (int i = 0; i < 32; ++i)
      for (int j = 0; j < 32; ++j) {
        double want = 0;
        for (int k = 0; k < K; ++k)
          want += double(float(int((i * K + k) % 13) - 6) * 0.5f) * double(float(int((k * 32 + j) % 7) - 3) * 0.25f);
        CHECK(got[size_t(i * 32 + j)] == float(want));
      }
  }
}

namespace {
int g_line = 0;
void big_i32_bound(ptr<int32_t> out) {
  scalar<int32_t> n = full<int32_t>({}, 0);
  g_line = __LINE__ + 1;
  for (auto i : range(int64_t(0), int64_t(1) << 33)) n = n + i;
  store(out, n);
}
void i64_bound_in_i32_loop(ptr<int32_t> out, scalar<int64_t> hi) {
  scalar<int32_t> n = full<int32_t>({}, 0);
  g_line = __LINE__ + 1;
  for (auto i : range<int32_t>(0, hi)) n = n + i;
  store(out, n);
}
}  // namespace

TEST_CASE("range: bounds that do not fit the induction type name the line", "[range][frontend]") {
  auto msg = [](auto fn, const char* name) {
    try {
      compile(fn, {.name = name});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string here = "test_range_forms.cpp:";
  std::string m = msg(big_i32_bound, "big");
  CHECK_THAT(m, Catch::Contains(here + std::to_string(g_line)) &&
                    Catch::Contains("range: expected the upper bound to fit i32, found 8589934592") &&
                    Catch::Contains("tl::range<int64_t>"));
  m = msg(i64_bound_in_i32_loop, "narrow");
  CHECK_THAT(m, Catch::Contains(here + std::to_string(g_line)) &&
                    Catch::Contains("range: expected an i32 scalar upper bound, found i64"));
}

namespace {
// Python's range(10, 0, -1) ported with the step traced: no iterations on
// a GPU (a step must be positive), an error on the interpreter. The loop's
// bounds are constants and its result is known without it, and the second
// loop does nothing: simplification once removed both, and the check with
// them.
void down_traced(ptr<int32_t> out, scalar<int32_t> st) {
  scalar<int32_t> n = full<int32_t>({}, 0);
  for (auto i : range(10, 0, st)) n = n + 1;
  store(out, n);
}
void empty_traced(ptr<int32_t> out, scalar<int32_t> lo, scalar<int32_t> hi, scalar<int32_t> st) {
  for (auto i : range(lo, hi, st)) {
  }
  store(out, 1);
}
}  // namespace

TEST_CASE("range: a traced step of 0 or below is named though the loop would not run or does nothing",
          "[range][interp]") {
  auto dev = Device::get("interp");
  auto out = dev.alloc<int32_t>(1);
  Kernel down = compile(down_traced, {.name = "down"});
  Kernel empty = compile(empty_traced, {.name = "empty"});
  for (int st : {-1, 0}) {
    INFO("step " << st);
    CHECK_THROWS_WITH(dev(down, {1}, out, st), Catch::Contains("for loop step must be positive, found " + std::to_string(st)));
    CHECK_THROWS_WITH(dev(empty, {1}, out, 0, 10, st),
                      Catch::Contains("for loop step must be positive, found " + std::to_string(st)));
    CHECK_THROWS_WITH(dev(empty, {1}, out, 10, 0, st),
                      Catch::Contains("for loop step must be positive, found " + std::to_string(st)));
  }
  dev(down, {1}, out, 1);
  CHECK(out.download<int32_t>()[0] == 0);  // range(10, 0, 1): no iterations
  dev(empty, {1}, out, 0, 10, 3);
  CHECK(out.download<int32_t>()[0] == 1);
}

TEST_CASE("range: 64-bit and downward loops compile for sm_90a, sm_80 and gfx942", "[range][codegen]") {
  for (Kernel k : {compile(for_iv64<-3>, {.name = "for_iv64"}), compile(for_iv32<-3>, {.name = "for_iv32"}),
                   compile(dot64, {.name = "dot64", .num_warps = 4})})
    codegen_checks::check_stores_on_sm90a_and_gfx942(k);
}

TEST_CASE("range: the same results on the GPU as on the interpreter", "[range][gpu]") {
  REQUIRE_GPU();
  const int64_t big = int64_t(1) << 35;
  gpu_oracle::same_on_both<int64_t>([&](Device& d) {
    return std::vector<std::vector<int64_t>>{run_iv64<3>(d, big, big + 20), run_iv64<-2>(d, 15, -16),
                                             run_iv64<-1>(d, 18, 22), run_iv32<-3>(d, -7, -16),
                                             run_iv32<4>(d, 0, 40)};
  }, 0, 0);
  gpu_oracle::same_on_both<float>([&](Device& d) {
    return std::vector<std::vector<float>>{run_dot64(d, 16), run_dot64(d, 48), run_dot64(d, 64)};
  }, 1e-6, 1e-6);
}
