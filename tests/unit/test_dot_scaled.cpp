// tl::dot_scaled (Triton's product of microscaled operands: fp4 e2m1, fp8
// e4m3/e5m2, bf16, fp16, with e8m0 scales a 32-value group) and dot's
// out_dtype (tl::dot(a, b, tl::dtype<T>)): the interpreter against a double
// reference that decodes every format by its definition, the errors, the
// code for sm_90a and gfx942, and the GPU against the interpreter.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

enum Format { E2M1, E4M3, E5M2, BF16, FP16 };
constexpr const char* kFormats[] = {"e2m1", "e4m3", "e5m2", "bf16", "fp16"};
constexpr int M = 32, N = 32, K = 64;

// The product of a [M, K] (packed along K for e2m1) and b [K, N], scales
// sa [M, K/32] and sb [N, K/32] when SA / SB, plus c when ACC; into c.
template <class A, class B, int FA, int FB, bool SA, bool SB, bool ACC>
void mx_dot(ptr<A> a, ptr<uint8_t> as, ptr<B> b, ptr<uint8_t> bs, ptr<float> c) {
  constexpr int KA = FA == E2M1 ? K / 2 : K, KB = FB == E2M1 ? K / 2 : K;
  auto ta = load(a + reshape(arange(0, M * KA), {M, KA}));  // [M, KA]
  auto tb = load(b + reshape(arange(0, KB * N), {KB, N}));  // [KB, N]
  std::optional<tile<uint8_t>> sa, sb;
  if constexpr (SA) sa = load(as + reshape(arange(0, M * K / 32), {M, K / 32}));  // [M, K/32] e8m0
  if constexpr (SB) sb = load(bs + reshape(arange(0, N * K / 32), {N, K / 32}));  // [N, K/32] e8m0
  auto offs = reshape(arange(0, M * N), {M, N});                                   // [M, N] i32
  if constexpr (ACC)
    store(c + offs, dot_scaled(ta, sa, kFormats[FA], tb, sb, kFormats[FB], load(c + offs)));
  else
    store(c + offs, dot_scaled(ta, sa, kFormats[FA], tb, sb, kFormats[FB]));
}

// The value of one code of each format, by the OCP MX definitions.
double decode(Format f, uint16_t code) {
  switch (f) {
    case E2M1: {
      int e = (code >> 1) & 3, m = code & 1;
      double mag = e == 0 ? 0.5 * m : (1 + 0.5 * m) * std::ldexp(1.0, e - 1);
      return (code & 8) ? -mag : mag;
    }
    case E4M3: {
      int e = (code >> 3) & 15, m = code & 7;
      if (e == 15 && m == 7) return NAN;
      double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
      return (code & 0x80) ? -mag : mag;
    }
    case E5M2: {
      int e = (code >> 2) & 31, m = code & 3;
      if (e == 31) return m ? NAN : ((code & 0x80) ? -INFINITY : INFINITY);
      double mag = e == 0 ? std::ldexp(m / 4.0, -14) : std::ldexp(1 + m / 4.0, e - 15);
      return (code & 0x80) ? -mag : mag;
    }
    case BF16: return double(std::bit_cast<float>(uint32_t(code) << 16));
    case FP16: return double(float(f16::from_bits(code)));
  }
  return NAN;
}
double scale_of(uint8_t s) { return s == 255 ? NAN : std::ldexp(1.0, int(s) - 127); }

// Random codes of a format, finite ones only (NaN and infinities come from
// the scales in the NaN case).
std::vector<uint16_t> codes(Format f, size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (auto& c : v) {
    do {
      c = f == E2M1 ? uint16_t(rng() & 15) : f <= E5M2 ? uint16_t(rng() & 255) : uint16_t(0);
      if (f == BF16) c = uint16_t(std::bit_cast<uint32_t>(std::ldexp(float(rng() % 2000) / 1000.0f - 1.0f, int(rng() % 5))) >> 16);
      if (f == FP16) c = f16(float(rng() % 2000) / 500.0f - 2.0f).bits;
    } while (!std::isfinite(decode(f, c)));
  }
  return v;
}

// An operand's buffer from its codes: e2m1 packs two along K (a's rows, b's
// columns), low nibble first.
template <class T>
std::vector<T> operand(Format f, const std::vector<uint16_t>& c, bool is_b) {
  std::vector<T> out;
  if (f == E2M1) {
    if (!is_b) {
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; k += 2) out.push_back(T(c[size_t(m * K + k)] | c[size_t(m * K + k + 1)] << 4));
    } else {
      for (int k = 0; k < K; k += 2)
        for (int n = 0; n < N; ++n) out.push_back(T(c[size_t(k * N + n)] | c[size_t((k + 1) * N + n)] << 4));
    }
    return out;
  }
  for (uint16_t x : c) {
    if constexpr (std::is_same_v<T, uint8_t>) out.push_back(uint8_t(x));
    else out.push_back(T::from_bits(static_cast<decltype(T::bits)>(x)));
  }
  return out;
}

struct Case {
  std::vector<uint16_t> a, b;  // codes, a [M, K], b [K, N]
  std::vector<uint8_t> sa, sb;
  std::vector<float> c0;
};

Case make_case(Format fa, Format fb, unsigned seed, bool nan_scale) {
  Case k{codes(fa, M * K, seed), codes(fb, K * N, seed + 1), {}, {}, {}};
  std::mt19937 rng(seed + 2);
  for (int i = 0; i < M * K / 32; ++i) k.sa.push_back(uint8_t(120 + rng() % 15));
  for (int i = 0; i < N * K / 32; ++i) k.sb.push_back(uint8_t(120 + rng() % 15));
  if (nan_scale) k.sa[2 * 5 + 1] = 255;  // row 5's second group
  for (int i = 0; i < M * N; ++i) k.c0.push_back(float(int(rng() % 17) - 8) / 4.0f);
  return k;
}

// The product in double; each element with the sum of its terms'
// magnitudes (the scale of f32's accumulation error).
std::pair<std::vector<double>, std::vector<double>> reference(Format fa, Format fb, const Case& k, bool sa, bool sb,
                                                              bool acc) {
  std::vector<double> ref(M * N), mag(M * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = acc ? k.c0[size_t(m * N + n)] : 0.0, a = std::abs(s);
      for (int kk = 0; kk < K; ++kk) {
        double x = decode(fa, k.a[size_t(m * K + kk)]) * (sa ? scale_of(k.sa[size_t(m * (K / 32) + kk / 32)]) : 1.0);
        double y = decode(fb, k.b[size_t(kk * N + n)]) * (sb ? scale_of(k.sb[size_t(n * (K / 32) + kk / 32)]) : 1.0);
        s += x * y;
        a += std::abs(x * y);
      }
      ref[size_t(m * N + n)] = s;
      mag[size_t(m * N + n)] = a;
    }
  return {ref, mag};
}

template <class A, class B, int FA, int FB, bool SA, bool SB, bool ACC>
std::vector<float> run(Device& d, const Case& k) {
  Kernel kern = compile(mx_dot<A, B, FA, FB, SA, SB, ACC>, {.name = "mx_dot"});
  auto a = d.upload(operand<A>(Format(FA), k.a, false));
  auto b = d.upload(operand<B>(Format(FB), k.b, true));
  auto as = d.upload(k.sa), bs = d.upload(k.sb);
  auto c = d.upload(k.c0);
  d(kern, Grid{1}, a, as, b, bs, c);
  d.synchronize();
  return c.download<float>();
}

template <class A, class B, int FA, int FB, bool SA, bool SB, bool ACC>
void check_against_reference(unsigned seed, bool nan_scale = false) {
  INFO(kFormats[FA] << " x " << kFormats[FB] << (SA ? " lhs scaled" : "") << (SB ? " rhs scaled" : "")
                    << (ACC ? " + acc" : "") << (nan_scale ? ", a NaN scale" : ""));
  Case k = make_case(Format(FA), Format(FB), seed, nan_scale);
  Device interp = Device::get("interp");
  auto got = run<A, B, FA, FB, SA, SB, ACC>(interp, k);
  auto [ref, mag] = reference(Format(FA), Format(FB), k, SA, SB, ACC);
  int nans = 0;
  for (int i = 0; i < M * N; ++i) {
    INFO("element " << i << ": got " << got[size_t(i)] << ", want " << ref[size_t(i)]);
    if (std::isnan(ref[size_t(i)])) {
      CHECK(std::isnan(got[size_t(i)]));
      ++nans;
      continue;
    }
    REQUIRE(std::abs(double(got[size_t(i)]) - ref[size_t(i)]) <= 1e-6 * mag[size_t(i)] + 1e-30);
  }
  CHECK(nans == (nan_scale ? N : 0));
}

// The same product through dot's out_dtype: f16 results of bf16 inputs.
void out_dtype_kernel(ptr<bf16> a, ptr<bf16> b, ptr<f16> c, ptr<float> c32) {
  auto offs = reshape(arange(0, 32 * 32), {32, 32});  // [32, 32] i32
  auto x = load(a + offs), y = load(b + offs);        // [32, 32] bf16
  store(c + offs, dot(x, y, tl::dtype<f16>));
  store(c32 + offs, dot(x, y));
}

// Operands that do not fit: for the error tests.
void wrong_format(ptr<uint8_t> a, ptr<float> c) {
  auto offs = reshape(arange(0, 32 * 32), {32, 32});
  store(c + offs, dot_scaled(load(a + offs), std::nullopt, "e3m2", load(a + offs), std::nullopt, "e4m3"));
}
void wrong_type(ptr<bf16> a, ptr<float> c) {
  auto offs = reshape(arange(0, 32 * 32), {32, 32});
  store(c + offs, dot_scaled(load(a + offs), std::nullopt, "e4m3", load(a + offs), std::nullopt, "bf16"));
}
void wrong_scale(ptr<uint8_t> a, ptr<float> c) {
  auto offs = reshape(arange(0, 32 * 32), {32, 32});
  auto s = load(a + reshape(arange(0, 32 * 2), {32, 2}));  // [32, 2]: K = 32 has one group
  store(c + offs, dot_scaled(load(a + offs), s, "e4m3", load(a + offs), std::nullopt, "e4m3"));
}
void wrong_k(ptr<uint8_t> a, ptr<float> c) {
  auto offs = reshape(arange(0, 32 * 32), {32, 32});
  // e2m1 [32, 32] is K = 64; e4m3 [32, 32] has 32 rows.
  store(c + offs, dot_scaled(load(a + offs), std::nullopt, "e2m1", load(a + offs), std::nullopt, "e4m3"));
}

}  // namespace

TEST_CASE("dot_scaled: every format against a double reference", "[dot_scaled][interp]") {
  check_against_reference<uint8_t, uint8_t, E2M1, E4M3, true, true, false>(11);
  check_against_reference<uint8_t, uint8_t, E2M1, E2M1, true, true, true>(12);
  check_against_reference<uint8_t, uint8_t, E5M2, E2M1, true, false, false>(13);
  check_against_reference<f8e4m3, bf16, E4M3, BF16, false, false, true>(14);
  check_against_reference<uint8_t, f8e5m2, E4M3, E5M2, false, true, false>(15);
  check_against_reference<f16, f16, FP16, FP16, false, false, false>(16);
  check_against_reference<bf16, uint8_t, BF16, E2M1, false, true, false>(17);
  // Scale 255 is NaN: the rows it covers are NaN.
  check_against_reference<uint8_t, uint8_t, E4M3, E4M3, true, true, false>(18, true);
}

TEST_CASE("dot's out_dtype rounds the f32 product once", "[dot_scaled][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(out_dtype_kernel, {.name = "out_dtype"});
  auto xs = gpu_oracle::random<bf16>(1024, -2, 2, 3), ys = gpu_oracle::random<bf16>(1024, -2, 2, 4);
  auto a = d.upload(xs), b = d.upload(ys);
  auto c = d.alloc<f16>(1024);
  auto c32 = d.alloc<float>(1024);
  d(k, Grid{1}, a, b, c, c32);
  d.synchronize();
  auto h = c.download<f16>();
  auto f = c32.download<float>();
  for (size_t i = 0; i < h.size(); ++i) {
    INFO(i);
    REQUIRE(h[i].bits == f16(f[i]).bits);
  }
}

TEST_CASE("dot_scaled: errors name the line, the expected and the found", "[dot_scaled][frontend]") {
  CHECK_THROWS_WITH(compile(wrong_format, {.name = "w"}),
                    Catch::Contains("test_dot_scaled.cpp") && Catch::Contains("e2m1, e4m3, e5m2, bf16 or fp16") &&
                        Catch::Contains("\"e3m2\""));
  CHECK_THROWS_WITH(compile(wrong_type, {.name = "w"}),
                    Catch::Contains("test_dot_scaled.cpp") && Catch::Contains("a u8 or f8 tile for format \"e4m3\"") &&
                        Catch::Contains("bf16"));
  CHECK_THROWS_WITH(compile(wrong_scale, {.name = "w"}),
                    Catch::Contains("test_dot_scaled.cpp") && Catch::Contains("lhs_scale of shape [32, 1]") &&
                        Catch::Contains("32x2"));
  CHECK_THROWS_WITH(compile(wrong_k, {.name = "w"}),
                    Catch::Contains("test_dot_scaled.cpp") && Catch::Contains("K = 64 rows"));
}

TEST_CASE("dot_scaled compiles for sm_90a and gfx942", "[dot_scaled][codegen]") {
  codegen_checks::check_stores_on_sm90a_and_gfx942(
      compile(mx_dot<uint8_t, uint8_t, E2M1, E4M3, true, true, true>, {.name = "mx_dot"}));
  codegen_checks::check_stores_on_sm90a_and_gfx942(
      compile(mx_dot<f8e4m3, bf16, E4M3, BF16, false, false, false>, {.name = "mx_dot"}));
}

TEST_CASE("dot_scaled: the GPU against the double reference", "[dot_scaled][gpu]") {
  REQUIRE_GPU();
  // The products are exact (bf16 operands decoded alike, exact in f32); the
  // tensor cores add the K = 64 terms in f32 in their own order and
  // rounding (truncation, at worst): within K * 2^-23 of the sum of the
  // terms' magnitudes. Outputs cancel (one sums to 9224 from terms of
  // magnitude 1.8e6), so the bound is per element, not on the output.
  auto check = [](const std::vector<float>& got, const std::pair<std::vector<double>, std::vector<double>>& want) {
    const auto& [ref, mag] = want;
    for (int i = 0; i < M * N; ++i) {
      INFO("element " << i << ": gpu " << got[size_t(i)] << ", want " << ref[size_t(i)] << " (terms' magnitude " << mag[size_t(i)] << ")");
      if (std::isnan(ref[size_t(i)])) {
        CHECK(std::isnan(got[size_t(i)]));
        continue;
      }
      REQUIRE(std::abs(double(got[size_t(i)]) - ref[size_t(i)]) <= K * 0x1p-23 * mag[size_t(i)] + 1e-30);
    }
  };
  Device gpu = Device::get("cuda");
  Case k = make_case(E2M1, E4M3, 21, true);
  check(run<uint8_t, uint8_t, E2M1, E4M3, true, true, true>(gpu, k), reference(E2M1, E4M3, k, true, true, true));
  Case k2 = make_case(E5M2, E2M1, 22, false);
  check(run<uint8_t, uint8_t, E5M2, E2M1, true, false, false>(gpu, k2), reference(E5M2, E2M1, k2, true, false, false));
  Case k3 = make_case(E4M3, BF16, 23, false);
  check(run<f8e4m3, bf16, E4M3, BF16, false, false, true>(gpu, k3), reference(E4M3, BF16, k3, false, false, true));
}
