// uint16_t tiles (Triton's uint16): unsigned arithmetic that wraps at 16
// bits, division, shifts and comparisons by the unsigned value, promotion
// with i32 and u32, casts to and from floats (saturating, NaN to 0), a
// u16 kernel argument and atomics-free reductions, against plain C++ on
// the interpreter, and the GPU against the interpreter ([gpu]).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

constexpr int kN = 256;

// out_u16[k * 256 + i] (k = 0..6) and out_i32/out_f32 rows, from a and b.
void u16_ops(ptr<uint16_t> a, ptr<uint16_t> b, ptr<float> f, ptr<uint16_t> out, ptr<int32_t> wide,
             ptr<float> flo, scalar<uint16_t> s) {
  auto i = arange(0, kN);
  tile<uint16_t> x = load(a + i), y = load(b + i);
  store(out + i, x + y);                      // wraps
  store(out + kN + i, x * y);                 // wraps
  store(out + 2 * kN + i, x / (y | 1));       // unsigned division
  store(out + 3 * kN + i, x >> 3);            // logical shift
  store(out + 4 * kN + i, maximum(x, y));     // unsigned order
  store(out + 5 * kN + i, x - s);             // a u16 argument
  store(out + 6 * kN + i, cast<uint16_t>(load(f + i)));  // saturating, NaN to 0
  store(wide + i, x + load(b + i) * 0 + cast<int32_t>(y) * -1);  // i32 with u16: i32
  store(wide + kN + i, cast<int32_t>(x > y));
  store(flo + i, cast<float>(x));
  store(wide + 2 * kN, cast<int32_t>(sum(cast<uint32_t>(x), 0)));
  store(wide + 2 * kN + 1, cast<int32_t>(max(x, 0)));
}

struct Run {
  std::vector<uint16_t> out;
  std::vector<int32_t> wide;
  std::vector<float> flo;
};

std::vector<uint16_t> values(unsigned seed) {
  std::vector<uint16_t> v(kN);
  uint32_t x = seed;
  for (auto& e : v) x = x * 1664525u + 1013904223u, e = uint16_t(x >> 13);
  v[0] = 0, v[1] = 65535, v[2] = 32768;
  return v;
}
std::vector<float> floats() {
  std::vector<float> f(kN);
  for (int i = 0; i < kN; ++i) f[size_t(i)] = float(i * 517 - 60000) * 1.5f + 0.75f;
  f[3] = NAN, f[4] = -INFINITY, f[5] = INFINITY, f[6] = 65535.9f, f[7] = -0.9f;
  return f;
}

Run run(Device& d, const Kernel& k) {
  auto a = d.upload(values(1)), b = d.upload(values(2));
  auto f = d.upload(floats());
  auto out = d.alloc<uint16_t>(7 * kN);
  auto wide = d.alloc<int32_t>(2 * kN + 2);
  auto flo = d.alloc<float>(kN);
  d(k, Grid{1}, a, b, f, out, wide, flo, uint16_t(40000));
  d.synchronize();
  return {out.download<uint16_t>(), wide.download<int32_t>(), flo.download<float>()};
}

}  // namespace

TEST_CASE("u16: unsigned 16-bit arithmetic, promotion and casts", "[u16][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(u16_ops, {.name = "u16_ops"});
  Run r = run(d, k);
  auto a = values(1), b = values(2);
  auto f = floats();
  uint32_t total = 0;
  uint16_t top = 0;
  for (int i = 0; i < kN; ++i) {
    INFO("i = " << i << ", a = " << a[size_t(i)] << ", b = " << b[size_t(i)]);
    uint16_t x = a[size_t(i)], y = b[size_t(i)];
    CHECK(r.out[size_t(i)] == uint16_t(x + y));
    CHECK(r.out[size_t(kN + i)] == uint16_t(uint32_t(x) * y));
    CHECK(r.out[size_t(2 * kN + i)] == uint16_t(x / (y | 1)));
    CHECK(r.out[size_t(3 * kN + i)] == uint16_t(x >> 3));
    CHECK(r.out[size_t(4 * kN + i)] == std::max(x, y));
    CHECK(r.out[size_t(5 * kN + i)] == uint16_t(x - 40000));
    float fv = f[size_t(i)];
    uint16_t want = std::isnan(fv) ? 0 : fv <= 0 ? 0 : fv >= 65535 ? 65535 : uint16_t(fv);
    CHECK(r.out[size_t(6 * kN + i)] == want);
    CHECK(r.wide[size_t(i)] == int32_t(x) - int32_t(y));
    CHECK(r.wide[size_t(kN + i)] == int32_t(x > y));
    CHECK(r.flo[size_t(i)] == float(x));
    total += x;
    top = std::max(top, x);
  }
  CHECK(r.wide[2 * kN] == int32_t(total));
  CHECK(r.wide[2 * kN + 1] == int32_t(top));
}

TEST_CASE("u16: a literal that does not fit is an error; the IR names the type", "[u16][frontend]") {
  Kernel k = compile(u16_ops, {.name = "u16_ops"});
  CHECK(k.ir().find("tile<256xu16>") != std::string::npos);
  auto bad = [](ptr<uint16_t> p) { store(p + arange(0, 32), load(p + arange(0, 32)) + 70000); };
  CHECK_THROWS_WITH(compile(+bad, {.name = "bad"}), Catch::Contains("expected a value representable in u16, found 70000"));
}

TEST_CASE("u16: compiles for sm_90a and gfx942", "[u16][codegen]") {
  codegen_checks::check_stores_on_sm90a_and_gfx942(compile(u16_ops, {.name = "u16_ops"}));
}

TEST_CASE("u16: the same results on the GPU as on the interpreter", "[u16][gpu]") {
  REQUIRE_GPU();
  Kernel k = compile(u16_ops, {.name = "u16_ops"});
  gpu_oracle::same_on_both<double>([&](Device& d) {
    Run r = run(d, k);
    return std::vector<std::vector<double>>{std::vector<double>(r.out.begin(), r.out.end()),
                                            std::vector<double>(r.wide.begin(), r.wide.end()),
                                            std::vector<double>(r.flo.begin(), r.flo.end())};
  }, 0, 0);
}
