// The f64 math expansions of lib/codegen/math_expansions.h, which the GPU
// targets run for exp, exp2, log, log2, rsqrt, sin, cos, tanh and erf.
// [math]: the same templates instantiated over plain doubles, their error
// measured in ulps against long double on random points over each function's
// whole range and on edge cases, so the documented bounds hold in CI
// without a GPU. [codegen]: f64 math compiles for every target, and ptxas
// accepts it. [gpu]: the GPU's results against the interpreter's (std::).
#include <catch2/catch.hpp>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "codegen/math_expansions.h"
#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
namespace m = tl::codegen::math;

namespace {

// ------------------------------------------------------------------ the host emitter

// Every operation one IEEE double operation (the build does not contract:
// no FMA in the baseline x86-64 ISA, and fma is std::fma), integers as
// wrapping 64-bit words.
struct HostEmitter {
  using V = double;
  using B = bool;
  struct I {
    uint64_t v;
    I(uint64_t u = 0) : v(u) {}
    I(int64_t s) : v(uint64_t(s)) {}
    I(int s) : v(uint64_t(int64_t(s))) {}
    friend I operator+(I a, I b) { return I(a.v + b.v); }
    friend I operator-(I a, I b) { return I(a.v - b.v); }
    friend I operator&(I a, I b) { return I(a.v & b.v); }
    friend I operator|(I a, I b) { return I(a.v | b.v); }
    friend I operator+(I a, int64_t b) { return a + I(b); }
    friend I operator-(I a, int64_t b) { return a - I(b); }
    friend I operator&(I a, int64_t b) { return a & I(b); }
    friend I operator|(I a, int64_t b) { return a | I(b); }
    I operator~() const { return I(~v); }
    I operator<<(int s) const { return I(v << s); }
    I operator>>(int s) const { return I(int64_t(v) >> s); }
  };
  V c(double x) { return x; }
  I i(int64_t x) { return I(x); }
  V fma(V a, V b, V c) { return std::fma(a, b, c); }
  V sqrt(V x) { return std::sqrt(x); }
  V rint(V x) { return std::nearbyint(x); }
  V fmin(V a, V b) { return std::fmin(a, b); }
  V fmax(V a, V b) { return std::fmax(a, b); }
  V sel(B b, V x, V y) { return b ? x : y; }
  I sel(B b, I x, I y) { return b ? x : y; }
  I bits(V x) { return I(std::bit_cast<uint64_t>(x)); }
  V from_bits(I x) { return std::bit_cast<double>(x.v); }
  I to_int(V x) { return I(int64_t(x)); }
  V to_double(I x) { return double(int64_t(x.v)); }
  B eq(I a, I b) { return a.v == b.v; }
  B ilt(I a, I b) { return int64_t(a.v) < int64_t(b.v); }
  B ult(I a, I b) { return a.v < b.v; }
  I mul_lo(I a, I b) { return I(a.v * b.v); }
  I umul_hi(I a, I b) { return I(uint64_t((unsigned __int128)a.v * b.v >> 64)); }
  I shl(I a, I s) { return I(a.v << s.v); }
  I lshr(I a, I s) { return I(a.v >> s.v); }
  template <size_t N>
  I table(const char*, const uint64_t (&w)[N], I index) {
    REQUIRE(index.v < N);
    return I(w[index.v]);
  }
  template <class F, size_t N>
  std::array<V, N> if_(B cond, F then_fn, std::array<V, N> else_values) {
    return cond ? then_fn() : else_values;
  }
};

// ------------------------------------------------------------------ measuring

// The error of `got` in units of the last place of the true value `want`
// (the double spacing at |want|, subnormal spacing below 2^-1022).
double ulp_error(double got, long double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  long double rounded_max = std::nextafter((long double)DBL_MAX, (long double)INFINITY);
  if (std::isinf(want) || std::fabs(want) >= rounded_max) return got == double(want) ? 0 : INFINITY;
  if (std::isinf(got) || std::isnan(got)) return INFINITY;
  int e;
  std::frexp(want, &e);  // |want| in [2^(e-1), 2^e)
  long double ulp = std::ldexp(1.0L, std::max(e - 1, -1022) - 52);
  return double(std::fabs((long double)got - want) / ulp);
}

struct Worst {
  double ulps = 0;
  double at = 0;
  double got = 0;
  long double want = 0;
  long points = 0;
  void add(double x, double g, long double w) {
    ++points;
    double u = ulp_error(g, w);
    if (!(u <= ulps)) ulps = u, at = x, got = g, want = w;
  }
};

using Expansion = std::function<double(double)>;
using Reference = std::function<long double(long double)>;

// Random points: uniform on [lo, hi], log-uniform in magnitude on
// [2^elo, 2^ehi] with both signs, and uniformly random bit patterns.
std::vector<double> uniform(double lo, double hi, int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}
std::vector<double> log_uniform(int elo, int ehi, int n, unsigned seed, bool negative_too = true) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(elo, ehi);
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::exp2(d(rng)) * (negative_too && (rng() & 1) ? -1 : 1);
  return v;
}
std::vector<double> random_bits(int n, unsigned seed, bool positive) {
  std::mt19937_64 rng(seed);
  std::vector<double> v;
  while (int(v.size()) < n) {
    double x = std::bit_cast<double>(rng() & (positive ? INT64_MAX : ~uint64_t(0)));
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

Worst measure(const Expansion& f, const Reference& ref, const std::vector<std::vector<double>>& sets) {
  Worst w;
  for (const auto& set : sets)
    for (double x : set) w.add(x, f(x), ref(x));
  return w;
}

void report(const char* name, const Worst& w, double bound) {
  std::printf("f64 %-6s max %.3f ulp over %ld points (at %a: %a, want %La); bound %.1f\n", name, w.ulps, w.points,
              w.at, w.got, w.want, bound);
  INFO(name << ": " << w.ulps << " ulp at x = " << w.at << " (" << std::hexfloat << w.at << "): got " << w.got
            << ", want " << double(w.want));
  CHECK(w.ulps <= bound);
}

// Exact results the expansion must give (specials, signed zeros).
void exact(const Expansion& f, double x, double want) {
  double g = f(x);
  INFO("at x = " << x << ": got " << g << ", want " << want);
  if (std::isnan(want)) {
    CHECK(std::isnan(g));
  } else {
    CHECK(std::bit_cast<uint64_t>(g) == std::bit_cast<uint64_t>(want));
  }
}

HostEmitter host;
double h_exp(double x) { return m::exp(host, x); }
double h_exp2(double x) { return m::exp2(host, x); }
double h_log(double x) { return m::log(host, x); }
double h_log2(double x) { return m::log2(host, x); }
double h_rsqrt(double x) { return m::rsqrt(host, x); }
double h_sin(double x) { return m::sin(host, x); }
double h_cos(double x) { return m::cos(host, x); }
double h_tanh(double x) { return m::tanh(host, x); }
double h_erf(double x) { return m::erf(host, x); }

constexpr int kPoints = 40000;
const double kInf = INFINITY, kNaN = NAN;
const double kMinSub = std::numeric_limits<double>::denorm_min();

}  // namespace

// ------------------------------------------------------------------ [math]

TEST_CASE("f64 exp and exp2 are within 1 ulp, overflow to inf and underflow through the subnormals", "[math]") {
  auto exp_ref = [](long double x) { return std::exp(x); };
  report("exp", measure(h_exp, exp_ref, {uniform(-746, 710, kPoints, 1), uniform(-745.2, -708, kPoints / 4, 2),
                                         log_uniform(-60, 0, kPoints / 4, 3)}), 1.0);
  auto exp2_ref = [](long double x) { return std::exp2(x); };
  report("exp2", measure(h_exp2, exp2_ref, {uniform(-1076, 1025, kPoints, 4), uniform(-1075, -1022, kPoints / 4, 5),
                                            log_uniform(-60, 0, kPoints / 4, 6)}), 1.0);
  for (const Expansion& f : {Expansion(h_exp), Expansion(h_exp2)}) {
    exact(f, 0.0, 1.0);
    exact(f, -0.0, 1.0);
    exact(f, kInf, kInf);
    exact(f, -kInf, 0.0);
    exact(f, kNaN, kNaN);
    exact(f, 1e300, kInf);
    exact(f, -1e300, 0.0);
    exact(f, 5e-324, 1.0);
  }
  exact(h_exp, 709.79, kInf);  // just past the largest double
  exact(h_exp, -745.14, 0.0);  // just below half the smallest subnormal
  exact(h_exp, -745.13, kMinSub);
  exact(h_exp2, 1024.0, kInf);
  exact(h_exp2, -1074.0, kMinSub);
  exact(h_exp2, -1075.5, 0.0);
  for (int k = -1074; k <= 1023; ++k) exact(h_exp2, k, std::ldexp(1.0, k));  // powers of two exactly
}

TEST_CASE("f64 log and log2 are within 1 ulp; log(0) = -inf, negative -> NaN", "[math]") {
  auto near_one = [](int n, unsigned seed) {
    auto v = log_uniform(-53, -1, n, seed);
    for (auto& x : v) x += 1.0;
    return v;
  };
  auto sets = std::vector<std::vector<double>>{random_bits(kPoints, 7, true), near_one(kPoints / 2, 8),
                                               uniform(0.5, 2.0, kPoints / 2, 9),
                                               log_uniform(-1074, -1022, kPoints / 4, 10, false)};
  report("log", measure(h_log, [](long double x) { return std::log(x); }, sets), 1.0);
  report("log2", measure(h_log2, [](long double x) { return std::log2(x); }, sets), 1.0);
  for (const Expansion& f : {Expansion(h_log), Expansion(h_log2)}) {
    exact(f, 1.0, 0.0);
    exact(f, 0.0, -kInf);
    exact(f, -0.0, -kInf);
    exact(f, kInf, kInf);
    exact(f, -1.0, kNaN);
    exact(f, -kInf, kNaN);
    exact(f, -kMinSub, kNaN);
    exact(f, kNaN, kNaN);
  }
  for (int k = -1074; k <= 1023; ++k) exact(h_log2, std::ldexp(1.0, k), k);  // exact at powers of two
  exact(h_log, kMinSub, double(std::log((long double)kMinSub)));
}

TEST_CASE("f64 rsqrt is within 1 ulp", "[math]") {
  report("rsqrt", measure(h_rsqrt, [](long double x) { return 1 / std::sqrt(x); },
                          {random_bits(kPoints, 11, true), uniform(0.25, 4, kPoints / 2, 12)}), 1.0);
  exact(h_rsqrt, 0.0, kInf);
  exact(h_rsqrt, -0.0, -kInf);
  exact(h_rsqrt, kInf, 0.0);
  exact(h_rsqrt, -1.0, kNaN);
  exact(h_rsqrt, kNaN, kNaN);
  exact(h_rsqrt, 4.0, 0.5);
  exact(h_rsqrt, 0x1p-1074, 0x1p537);
}

TEST_CASE("f64 sin and cos are within 1 ulp over the whole range", "[math]") {
  // Doubles near multiples of pi/2 (the hard cases of the reduction), up to
  // the Cody-Waite limit and beyond it, and the double nearest to one
  // (Muller's worst case, 2^-60.9 from a multiple of pi/2).
  std::vector<double> near;
  std::mt19937_64 rng(13);
  for (int i = 0; i < kPoints / 4; ++i) {
    long double k = std::floor(std::ldexp(1.0L, int(rng() % 48)) * (1 + double(rng() % 1000) / 1000));
    double x = double(k * (std::numbers::pi_v<long double> / 2));
    near.push_back(x);
    for (double lo = x, hi = x, d = 0; d < 2; ++d) near.push_back(lo = std::nextafter(lo, 0.0)), near.push_back(hi = std::nextafter(hi, kInf));
  }
  near.push_back(std::ldexp(6381956970095103.0, 797));
  for (double p : {0x1p40, 0x1p50, 0x1p52, 0x1p53, 0x1p1023, DBL_MAX})
    for (double x = p, i = 0; i < 4; ++i, x = std::nextafter(x, 0.0)) near.push_back(x), near.push_back(-x);
  auto sets = std::vector<std::vector<double>>{uniform(-10, 10, kPoints, 14), uniform(-1e6, 1e6, kPoints / 2, 15),
                                               log_uniform(-30, 40, kPoints / 2, 16), random_bits(kPoints, 17, false),
                                               near};
  report("sin", measure(h_sin, [](long double x) { return std::sin(x); }, sets), 1.0);
  report("cos", measure(h_cos, [](long double x) { return std::cos(x); }, sets), 1.0);
  exact(h_sin, 0.0, 0.0);
  exact(h_sin, -0.0, -0.0);
  exact(h_cos, 0.0, 1.0);
  exact(h_cos, -0.0, 1.0);
  exact(h_sin, 0x1p-1074, 0x1p-1074);
  exact(h_sin, -0x1p-1000, -0x1p-1000);
  for (double x : {kInf, -kInf, kNaN}) {
    exact(h_sin, x, kNaN);
    exact(h_cos, x, kNaN);
  }
}

TEST_CASE("f64 Payne-Hanek reduction agrees with Cody-Waite's below its limit", "[math]") {
  // The large-argument path on arguments the short one reduces exactly.
  Worst w;
  for (double x : log_uniform(-10, 40, kPoints / 2, 18)) {
    double h, l, k;
    m::reduce_payne_hanek(host, x, h, l, k);
    double s, c;
    m::sincos_reduced(host, h, l, s, c);
    int q = int(int64_t(k) & 3);
    double r = q == 0 ? s : q == 1 ? c : q == 2 ? -s : -c;
    w.add(x, r, std::sin((long double)x));
  }
  report("sin/PH", w, 1.0);
}

TEST_CASE("f64 tanh is within 1 ulp and erf within 1.5 ulp", "[math]") {
  auto tanh_sets = std::vector<std::vector<double>>{uniform(-25, 25, kPoints, 19), uniform(-1.5, 1.5, kPoints, 20),
                                                    log_uniform(-60, 5, kPoints / 2, 21)};
  report("tanh", measure(h_tanh, [](long double x) { return std::tanh(x); }, tanh_sets), 1.0);
  auto erf_sets = std::vector<std::vector<double>>{uniform(-7, 7, kPoints, 22), uniform(-2, 2, kPoints, 23),
                                                   log_uniform(-60, 3, kPoints / 2, 24)};
  report("erf", measure(h_erf, [](long double x) { return std::erf(x); }, erf_sets), 1.5);
  for (const Expansion& f : {Expansion(h_tanh), Expansion(h_erf)}) {
    exact(f, 0.0, 0.0);
    exact(f, -0.0, -0.0);
    exact(f, kInf, 1.0);
    exact(f, -kInf, -1.0);
    exact(f, 1e300, 1.0);
    exact(f, kNaN, kNaN);
  }
  exact(h_tanh, 0x1p-1074, 0x1p-1074);
  exact(h_tanh, 30.0, 1.0);
  exact(h_erf, 6.5, 1.0);
  exact(h_erf, -6.5, -1.0);
}

// ------------------------------------------------------------------ [codegen], [gpu]

namespace {

constexpr int kBlock = 256;
constexpr int kFunctions = 10;

// Every f64 transcendental function (and sqrt) of one input tile, each a
// row of `out`.
void f64_math(ptr<double> out, ptr<double> in, scalar<int32_t> n) {
  auto offs = program_id(0) * kBlock + arange(0, kBlock);  // [kBlock] i32
  auto mask = offs < n;
  auto x = load(in + offs, mask, 1.0);  // [kBlock] f64
  tile<double> r[kFunctions] = {exp(x), exp2(x), log(x), log2(x), rsqrt(x),
                                sin(x), cos(x),  tanh(x), erf(x), sqrt(x)};
  for (int i = 0; i < kFunctions; ++i) store(out + i * n + offs, r[i], mask);
}
const char* kNames[kFunctions] = {"exp", "exp2", "log", "log2", "rsqrt", "sin", "cos", "tanh", "erf", "sqrt"};

// The documented bound of each expansion, and the function itself on the
// host (the expansion over plain doubles, which the GPU must match bit for
// bit) and in long double (the truth, within 2^-63).
const double kBound[kFunctions] = {1, 1, 1, 1, 1, 1, 1, 1, 1.5, 0.5};
const Expansion kHost[kFunctions] = {h_exp, h_exp2, h_log, h_log2, h_rsqrt, h_sin, h_cos, h_tanh, h_erf,
                                     [](double x) { return std::sqrt(x); }};
const Reference kTruth[kFunctions] = {
    [](long double x) { return std::exp(x); },  [](long double x) { return std::exp2(x); },
    [](long double x) { return std::log(x); },  [](long double x) { return std::log2(x); },
    [](long double x) { return 1 / std::sqrt(x); }, [](long double x) { return std::sin(x); },
    [](long double x) { return std::cos(x); },  [](long double x) { return std::tanh(x); },
    [](long double x) { return std::erf(x); },  [](long double x) { return std::sqrt(x); }};

// Distance in representable doubles (0 for equal values, signed zeros
// apart by 1).
double ulp_distance(double a, double b) {
  auto key = [](double x) {
    int64_t i = std::bit_cast<int64_t>(x);
    return i < 0 ? (long double)INT64_MIN - i : (long double)i;
  };
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
  return double(std::fabs(key(a) - key(b)));
}

std::vector<double> gpu_inputs() {
  std::vector<double> v = {0.0, -0.0, INFINITY, -INFINITY, NAN, 5e-324, -5e-324, 2.2e-308, 1.0, -1.0, 0.5, 2.0,
                           709.78, 709.79, -745.13, -745.14, 1024.0, -1074.0, 1e300, -1e300, DBL_MAX, -DBL_MAX,
                           0x1p40, -0x1p40, std::nextafter(0x1p40, 0.0), std::ldexp(6381956970095103.0, 797),
                           1.5707963267948966, 3.141592653589793, 22.0, 6.0, 0.84375, 1e-10};
  for (auto set : {uniform(-800, 800, 3000, 31), uniform(-8, 8, 3000, 32), log_uniform(-1074, 1023, 3000, 33),
                   random_bits(2000, 34, false), uniform(0, 4, 1000, 35)})
    v.insert(v.end(), set.begin(), set.end());
  return v;
}

}  // namespace

TEST_CASE("f64 math compiles for every target without vendor libraries, and ptxas accepts it", "[codegen]") {
  Kernel k = compile(f64_math, {.name = "f64_math"});
  for (std::string arch : {"sm_80", "sm_90a", "gfx90a", "gfx942", "gfx1100"}) {
    INFO(arch);
    auto ck = codegen::compile(*k.impl(), codegen_checks::aligned(k), arch);
    if (arch.starts_with("sm_")) {
      CHECK(codegen_checks::count(ck.assembly, R"(\bcall)") == 0);  // all inline
      CHECK(codegen_checks::count(ck.assembly, R"(fma\.rn\.f64)") > 100);
      codegen_checks::check_assembles(ck.assembly, arch);
    }
    std::string llvm_ir = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), arch, codegen::Stage::Llvm);
    CHECK(codegen_checks::count(llvm_ir, R"(declare [^\n]*@(?!llvm\.))") == 0);  // no libm or ocml function
    CHECK(llvm_ir.find("llvm.exp.f64") == std::string::npos);
    CHECK(llvm_ir.find("llvm.sin.f64") == std::string::npos);
  }
}

TEST_CASE("f64 math on the GPU matches the interpreter within the documented ulps", "[gpu]") {
  REQUIRE_GPU();
  Kernel k = compile(f64_math, {.name = "f64_math"});
  std::vector<double> in = gpu_inputs();
  int n = int(in.size());
  auto run = [&](Device& d) {
    auto x = d.upload(in);
    auto out = d.alloc<double>(size_t(n) * kFunctions);
    d(k, Grid{uint32_t(cdiv(n, kBlock))}, out, x, n);
    d.synchronize();
    return out.download<double>();
  };
  Device interp = Device::get("interp"), gpu = Device::get("cuda");
  std::vector<double> want = run(interp), got = run(gpu);
  for (int f = 0; f < kFunctions; ++f) {
    double worst = 0;
    int differ = 0;
    for (int i = 0; i < n; ++i) {
      double x = in[i], g = got[size_t(f) * n + i], w = want[size_t(f) * n + i];
      INFO(kNames[f] << "(" << std::hexfloat << x << "): GPU " << g << ", interpreter " << w << ", host "
                     << kHost[f](x));
      // The GPU runs what the [math] tests measured.
      CHECK(std::bit_cast<uint64_t>(g) == std::bit_cast<uint64_t>(kHost[f](x)));
      // It and the interpreter (the C++ library) are apart by at most both
      // errors (glibc's cos is 8 ulp off at Muller's worst case, say).
      double d = ulp_distance(g, w);
      worst = std::max(worst, d);
      differ += d > 0;
      CHECK(d <= std::ceil(kBound[f] + ulp_error(w, kTruth[f](x))));
    }
    std::printf("f64 %-5s GPU vs interpreter: %d of %d inputs differ, by at most %.0f ulp\n", kNames[f], differ, n,
                worst);
  }
}
