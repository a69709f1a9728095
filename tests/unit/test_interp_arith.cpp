// Numerics of the interpreter's arithmetic, against plain C++ references,
// with kernels built by hand (ir::Builder): integer wrap-around, division
// and shifts, float rounding (narrow-float ties, fma, math functions), NaN
// rules of min/max and comparisons, and casts (saturating, rounding,
// bitcast). Shapes and memory are in test_interp_memory.cpp, reductions
// and control flow in test_interp.cpp.
#include <bit>
#include <catch2/catch.hpp>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "interp/interp.h"
#include "interp_test_util.h"
#include "kernel_builder.h"
#include "tiledsl/runtime.h"

using namespace kb;
using tl::dtype_v;
using namespace interp_test;

// ---------------------------------------------------------------------------
// Integer arithmetic

TEST_CASE("interp: i8 and u8 arithmetic wraps at 8 bits", "[interp]") {
  std::vector<int8_t> a{127, -128, 100, -100, 7, -7};
  std::vector<int8_t> b{1, -1, 100, 100, -2, 2};
  std::vector<int8_t> add, sub, mul;
  for (size_t i = 0; i < a.size(); ++i) {
    add.push_back(int8_t(uint8_t(a[i] + b[i])));
    sub.push_back(int8_t(uint8_t(a[i] - b[i])));
    mul.push_back(int8_t(uint8_t(a[i] * b[i])));
  }
  check_bits(binary<int8_t>(OpKind::Add, a, b), add);
  check_bits(binary<int8_t>(OpKind::Sub, a, b), sub);
  check_bits(binary<int8_t>(OpKind::Mul, a, b), mul);
  CHECK(binary<int8_t>(OpKind::Add, a, b)[0] == -128);

  std::vector<uint8_t> ua{255, 0, 200, 16}, ub{1, 1, 100, 16};
  check_bits(binary<uint8_t>(OpKind::Add, ua, ub), std::vector<uint8_t>{0, 1, 44, 32});
  check_bits(binary<uint8_t>(OpKind::Sub, ua, ub), std::vector<uint8_t>{254, 255, 100, 0});
  check_bits(binary<uint8_t>(OpKind::Mul, ua, ub), std::vector<uint8_t>{255, 0, 32, 0});
  // u8 compares unsigned: 255 > 1.
  check_bits(binary<uint8_t>(OpKind::Maximum, ua, ub), std::vector<uint8_t>{255, 1, 200, 16});
}

TEST_CASE("interp: i32 overflow wraps, division truncates, remainder takes the dividend's sign", "[interp]") {
  std::vector<int32_t> a{INT32_MAX, INT32_MIN, -7, 7, -7, INT32_MIN, 123456789};
  std::vector<int32_t> b{1, -1, 2, -2, -2, -1, 1000};
  std::vector<int32_t> add, mul, div, rem;
  for (size_t i = 0; i < a.size(); ++i) {
    add.push_back(int32_t(uint32_t(a[i]) + uint32_t(b[i])));
    mul.push_back(int32_t(uint32_t(a[i]) * uint32_t(b[i])));
    div.push_back(b[i] == -1 ? int32_t(0u - uint32_t(a[i])) : a[i] / b[i]);
    rem.push_back(b[i] == -1 ? 0 : a[i] % b[i]);
  }
  check_bits(binary<int32_t>(OpKind::Add, a, b), add);
  check_bits(binary<int32_t>(OpKind::Mul, a, b), mul);
  check_bits(binary<int32_t>(OpKind::Div, a, b), div);
  check_bits(binary<int32_t>(OpKind::Rem, a, b), rem);
  CHECK(binary<int32_t>(OpKind::Div, a, b)[2] == -3);   // toward zero
  CHECK(binary<int32_t>(OpKind::Rem, a, b)[2] == -1);
  CHECK(binary<int32_t>(OpKind::Div, a, b)[5] == INT32_MIN);  // INT_MIN / -1 wraps

  std::vector<uint32_t> ua{0xffffffffu, 7, 0x80000000u}, ub{2, 0xffffffffu, 3};
  check_bits(binary<uint32_t>(OpKind::Div, ua, ub), std::vector<uint32_t>{0x7fffffffu, 0, 0x2aaaaaaau});
  check_bits(binary<uint32_t>(OpKind::Rem, ua, ub), std::vector<uint32_t>{1, 7, 2});
  check_bits(binary<uint32_t>(OpKind::Minimum, ua, ub), std::vector<uint32_t>{2, 7, 3});

  std::vector<int64_t> la{INT64_MAX, INT64_MIN}, lb{1, -1};
  check_bits(binary<int64_t>(OpKind::Add, la, lb), std::vector<int64_t>{INT64_MIN, INT64_MAX});
  check_bits(binary<int64_t>(OpKind::Div, la, lb), std::vector<int64_t>{INT64_MAX, INT64_MIN});
  std::vector<uint64_t> ula{~0ull}, ulb{2};
  check_bits(binary<uint64_t>(OpKind::Div, ula, ulb), std::vector<uint64_t>{~0ull / 2});
}

TEST_CASE("interp: bitwise ops and shifts, counts past the width", "[interp]") {
  std::vector<int32_t> a{1, 1, 1, -8, -8, -8, 0x12345678, -1};
  std::vector<int32_t> s{31, 32, 40, 1, 31, 100, 4, -1};
  std::vector<int32_t> shl, shr;
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t c = uint32_t(s[i]);
    shl.push_back(c >= 32 ? 0 : int32_t(uint32_t(a[i]) << c));
    shr.push_back(c >= 32 ? (a[i] < 0 ? -1 : 0) : (a[i] >> c));
  }
  check_bits(binary<int32_t>(OpKind::Shl, a, s), shl);
  check_bits(binary<int32_t>(OpKind::Shr, a, s), shr);
  CHECK(binary<int32_t>(OpKind::Shl, a, s)[0] == INT32_MIN);
  CHECK(binary<int32_t>(OpKind::Shr, a, s)[5] == -1);  // negative >> 100 is -1

  std::vector<uint32_t> ua{0x80000000u, 0x80000000u, 0xffu}, us{31, 32, 4};
  check_bits(binary<uint32_t>(OpKind::Shr, ua, us), std::vector<uint32_t>{1, 0, 0xfu});  // logical
  std::vector<int8_t> ba{1, 0x40}, bs{7, 1};
  check_bits(binary<int8_t>(OpKind::Shl, ba, bs), std::vector<int8_t>{-128, -128});

  std::vector<int32_t> x{0x0ff0, -1, 5}, y{0x00ff, 0x1234, 3};
  check_bits(binary<int32_t>(OpKind::And, x, y), std::vector<int32_t>{0x00f0, 0x1234, 1});
  check_bits(binary<int32_t>(OpKind::Or, x, y), std::vector<int32_t>{0x0fff, -1, 7});
  check_bits(binary<int32_t>(OpKind::Xor, x, y), std::vector<int32_t>{0x0f0f, ~0x1234, 6});
  check_bits(unary<int32_t>(OpKind::Not, x), std::vector<int32_t>{~0x0ff0, 0, ~5});
  check_bits(unary<bool>(OpKind::Not, std::vector<bool>{true, false}), std::vector<bool>{false, true});
}

TEST_CASE("interp: integer neg and abs wrap at the minimum", "[interp]") {
  check_bits(unary<int8_t>(OpKind::Neg, std::vector<int8_t>{-128, 5, 0}), std::vector<int8_t>{-128, -5, 0});
  check_bits(unary<int32_t>(OpKind::Abs, std::vector<int32_t>{INT32_MIN, -3, 4}), std::vector<int32_t>{INT32_MIN, 3, 4});
  check_bits(unary<uint8_t>(OpKind::Neg, std::vector<uint8_t>{1, 0}), std::vector<uint8_t>{255, 0});
}

TEST_CASE("interp: integer division by zero names the line and the index", "[interp]") {
  KernelBuilder kb("divz", {P(DType::i32)});
  Value* offs = kb.arange(4);
  Value* p = kb.ptrs(kb.arg(0), offs);
  Value* x = kb.load(p);
  kb.at(77);
  Value* q = kb.op(OpKind::Div, {offs, x}, T(DType::i32, {4}));
  kb.at(78);
  kb.store(p, q);
  auto dev = interp();
  auto buf = dev.upload(std::vector<int32_t>{1, 2, 0, 4});
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {2}, buf),
                      "test.cpp:77: integer division by zero at index [2] of a tile<4xi32> in program (0, 0, 0)");
}

// ---------------------------------------------------------------------------
// Float arithmetic and rounding

TEST_CASE("interp: f32 arithmetic rounds once, as float does", "[interp]") {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-100, 100);
  std::vector<float> a(100), b(100);
  for (auto& v : a) v = u(rng);
  for (auto& v : b) v = u(rng);
  b[3] = 0;
  std::vector<float> add, sub, mul, div, rem;
  for (size_t i = 0; i < a.size(); ++i) {
    add.push_back(a[i] + b[i]);
    sub.push_back(a[i] - b[i]);
    mul.push_back(a[i] * b[i]);
    div.push_back(a[i] / b[i]);
    rem.push_back(std::fmod(a[i], b[i]));
  }
  check_bits(binary<float>(OpKind::Add, a, b), add);
  check_bits(binary<float>(OpKind::Sub, a, b), sub);
  check_bits(binary<float>(OpKind::Mul, a, b), mul);
  check_bits(binary<float>(OpKind::Div, a, b), div);
  check_bits(binary<float>(OpKind::Rem, a, b), rem);
}

TEST_CASE("interp: bf16, f16 and f8 results round to nearest even at ties", "[interp]") {
  auto bf16_add = [](std::vector<float> a, std::vector<float> b) {
    std::vector<tl::bf16> x(a.begin(), a.end()), y(b.begin(), b.end());
    auto r = binary<tl::bf16>(OpKind::Add, x, y);
    return std::vector<float>(r.begin(), r.end());
  };
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: the even one is 1.
  // (1 + 2^-7) + 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  auto r = bf16_add({1.0f, 1.0078125f, 256.0f, -1.0f}, {0.00390625f, 0.00390625f, 1.0f, -0.00390625f});
  CHECK(r == std::vector<float>{1.0f, 1.015625f, 256.0f, -1.0f});

  std::vector<tl::f16> h1{tl::f16(2048.0f), tl::f16(2050.0f), tl::f16(65504.0f)}, h2{tl::f16(1.0f), tl::f16(1.0f), tl::f16(16.0f)};
  auto hr = binary<tl::f16>(OpKind::Add, h1, h2);
  CHECK(float(hr[0]) == 2048.0f);
  CHECK(float(hr[1]) == 2052.0f);
  CHECK(std::isinf(float(hr[2])));  // 65520 ties 65504 (odd) and 65536 (even, overflows): inf

  std::vector<tl::f8e4m3> e1{tl::f8e4m3(1.0f), tl::f8e4m3(1.125f), tl::f8e4m3(448.0f), tl::f8e4m3(448.0f)};
  std::vector<tl::f8e4m3> e2{tl::f8e4m3(0.0625f), tl::f8e4m3(0.0625f), tl::f8e4m3(16.0f), tl::f8e4m3(32.0f)};
  auto er = binary<tl::f8e4m3>(OpKind::Add, e1, e2);
  CHECK(float(er[0]) == 1.0f);
  CHECK(float(er[1]) == 1.25f);
  CHECK(float(er[2]) == 448.0f);
  CHECK(std::isnan(float(er[3])));  // 480 ties up to 512, past e4m3's 448: NaN

  std::vector<tl::f8e5m2> f1{tl::f8e5m2(1.0f), tl::f8e5m2(57344.0f)}, f2{tl::f8e5m2(0.125f), tl::f8e5m2(8192.0f)};
  auto fr = binary<tl::f8e5m2>(OpKind::Add, f1, f2);
  CHECK(float(fr[0]) == 1.0f);          // tie between 1 and 1.25 -> 1
  CHECK(std::isinf(float(fr[1])));      // e5m2 overflows to inf

  // bf16 multiply: exact product rounded once.
  std::vector<tl::bf16> m1{tl::bf16(1.0078125f), tl::bf16(3.0f)}, m2{tl::bf16(1.0078125f), tl::bf16(1.0f / 3)};
  auto mr = binary<tl::bf16>(OpKind::Mul, m1, m2);
  CHECK(float(mr[0]) == bf(1.0078125f * 1.0078125f));
  CHECK(float(mr[1]) == bf(float(3.0 * double(float(tl::bf16(1.0f / 3))))));
}

TEST_CASE("interp: minimum and maximum return the non-NaN operand", "[interp]") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a{nan, 1.0f, nan, 2.0f, -0.0f, 0.0f};
  std::vector<float> b{1.0f, nan, nan, -3.0f, 0.0f, -0.0f};
  auto mn = binary<float>(OpKind::Minimum, a, b);
  auto mx = binary<float>(OpKind::Maximum, a, b);
  CHECK(mn[0] == 1.0f);
  CHECK(mn[1] == 1.0f);
  CHECK(std::isnan(mn[2]));
  CHECK(mn[3] == -3.0f);
  CHECK(std::signbit(mn[4]));
  CHECK(std::signbit(mn[5]));
  CHECK(mx[0] == 1.0f);
  CHECK(mx[1] == 1.0f);
  CHECK(std::isnan(mx[2]));
  CHECK(mx[3] == 2.0f);
  CHECK(!std::signbit(mx[4]));
  CHECK(!std::signbit(mx[5]));
  check_bits(binary<int32_t>(OpKind::Minimum, std::vector<int32_t>{-1, 5}, std::vector<int32_t>{1, 3}), std::vector<int32_t>{-1, 3});
}

TEST_CASE("interp: comparisons are ordered, except ne; unsigned compares unsigned", "[interp]") {
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a{nan, 1.0f, 2.0f, 2.0f}, b{1.0f, nan, 2.0f, 3.0f};
  auto run = [&](const char* p) { return binary<bool>(OpKind::Cmp, a, b, {{"pred", std::string(p)}}); };
  CHECK(run("lt") == std::vector<bool>{false, false, false, true});
  CHECK(run("le") == std::vector<bool>{false, false, true, true});
  CHECK(run("gt") == std::vector<bool>{false, false, false, false});
  CHECK(run("ge") == std::vector<bool>{false, false, true, false});
  CHECK(run("eq") == std::vector<bool>{false, false, true, false});
  CHECK(run("ne") == std::vector<bool>{true, true, false, true});
  std::vector<uint32_t> ua{0xffffffffu, 1}, ub{1, 0xffffffffu};
  CHECK(binary<bool>(OpKind::Cmp, ua, ub, {{"pred", std::string("gt")}}) == std::vector<bool>{true, false});
  std::vector<int32_t> ia{-1, 1}, ib{1, -1};
  CHECK(binary<bool>(OpKind::Cmp, ia, ib, {{"pred", std::string("gt")}}) == std::vector<bool>{false, true});
}

TEST_CASE("interp: math functions round the double result once", "[interp]") {
  std::vector<float> x{0.5f, 1.0f, 2.25f, 10.0f, -1.5f};
  std::vector<float> pos{0.5f, 1.0f, 2.25f, 10.0f, 1.5f};
  auto ref = [](const std::vector<float>& v, double (*f)(double)) {
    std::vector<float> r;
    for (float e : v) r.push_back(float(f(double(e))));
    return r;
  };
  check_bits(unary<float>(OpKind::Exp, x), ref(x, [](double v) { return std::exp(v); }));
  check_bits(unary<float>(OpKind::Exp2, x), ref(x, [](double v) { return std::exp2(v); }));
  check_bits(unary<float>(OpKind::Log, pos), ref(pos, [](double v) { return std::log(v); }));
  check_bits(unary<float>(OpKind::Log2, pos), ref(pos, [](double v) { return std::log2(v); }));
  check_bits(unary<float>(OpKind::Sqrt, pos), ref(pos, [](double v) { return std::sqrt(v); }));
  check_bits(unary<float>(OpKind::Rsqrt, pos), ref(pos, [](double v) { return 1.0 / std::sqrt(v); }));
  check_bits(unary<float>(OpKind::Sin, x), ref(x, [](double v) { return std::sin(v); }));
  check_bits(unary<float>(OpKind::Cos, x), ref(x, [](double v) { return std::cos(v); }));
  check_bits(unary<float>(OpKind::Tanh, x), ref(x, [](double v) { return std::tanh(v); }));
  check_bits(unary<float>(OpKind::Erf, x), ref(x, [](double v) { return std::erf(v); }));
  check_bits(unary<float>(OpKind::Floor, x), std::vector<float>{0, 1, 2, 10, -2});
  check_bits(unary<float>(OpKind::Ceil, x), std::vector<float>{1, 1, 3, 10, -1});
  check_bits(unary<float>(OpKind::Abs, x), std::vector<float>{0.5f, 1, 2.25f, 10, 1.5f});
  check_bits(unary<float>(OpKind::Neg, x), std::vector<float>{-0.5f, -1, -2.25f, -10, 1.5f});
  CHECK(std::isnan(unary<float>(OpKind::Sqrt, std::vector<float>{-1.0f})[0]));
  // bf16 exp rounds to bf16.
  std::vector<tl::bf16> hx{tl::bf16(1.0f), tl::bf16(0.3f)};
  auto he = unary<tl::bf16>(OpKind::Exp, hx);
  CHECK(float(he[0]) == bf(float(std::exp(1.0))));
  CHECK(float(he[1]) == bf(float(std::exp(double(float(hx[1]))))));
}

TEST_CASE("interp: fma rounds once", "[interp]") {
  KernelBuilder kb("fma", {P(DType::f32)});
  Value* offs = kb.arange(4);
  Value* p = kb.ptrs(kb.arg(0), offs);
  Value* x = kb.load(p);
  Value* y = kb.op(OpKind::Fma, {x, x, kb.cf(T(DType::f32, {4}), -1.0)}, T(DType::f32, {4}));
  kb.store(p, y);
  auto dev = interp();
  float e = 1.0f + std::ldexp(1.0f, -12);
  std::vector<float> host{e, 3.0f, 0.1f, -2.5f};
  auto buf = dev.upload(host);
  dev(kb.kernel(), {1}, buf);
  auto out = buf.download<float>();
  for (size_t i = 0; i < host.size(); ++i) CHECK(same_bits(out[i], std::fmaf(host[i], host[i], -1.0f)));
  CHECK(out[0] == std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));  // a separate multiply would lose 2^-24
}

// ---------------------------------------------------------------------------
// Casts

TEST_CASE("interp: float to int casts truncate, saturate, and map NaN to 0", "[interp]") {
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x{-3.7f, 3.7f, 1e10f, -1e10f, nan, inf, -inf, 2147483520.0f};
  check_bits(unary<int32_t>(OpKind::Cast, x),
             std::vector<int32_t>{-3, 3, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 2147483520});
  check_bits(unary<uint8_t>(OpKind::Cast, std::vector<float>{-5.0f, 300.0f, 254.9f, nan}), std::vector<uint8_t>{0, 255, 254, 0});
  check_bits(unary<int8_t>(OpKind::Cast, std::vector<float>{-200.0f, 200.0f, -128.5f}), std::vector<int8_t>{-128, 127, -128});
  check_bits(unary<uint64_t>(OpKind::Cast, std::vector<double>{1e30, -1.0, 1.8446744073709550e19}),
             std::vector<uint64_t>{~0ull, 0, 18446744073709549568ull});
  check_bits(unary<int64_t>(OpKind::Cast, std::vector<double>{9.3e18, -9.3e18}), std::vector<int64_t>{INT64_MAX, INT64_MIN});
  check_bits(unary<bool>(OpKind::Cast, std::vector<float>{0.0f, -0.0f, 0.5f, nan}), std::vector<bool>{false, false, true, true});
}

TEST_CASE("interp: int casts extend by the source's signedness and truncate", "[interp]") {
  check_bits(unary<int32_t>(OpKind::Cast, std::vector<int8_t>{-1, 127, -128}), std::vector<int32_t>{-1, 127, -128});
  check_bits(unary<int32_t>(OpKind::Cast, std::vector<uint8_t>{255, 0}), std::vector<int32_t>{255, 0});
  check_bits(unary<int8_t>(OpKind::Cast, std::vector<int32_t>{300, -129, 128}), std::vector<int8_t>{44, 127, -128});
  check_bits(unary<uint32_t>(OpKind::Cast, std::vector<int32_t>{-1}), std::vector<uint32_t>{0xffffffffu});
  check_bits(unary<uint64_t>(OpKind::Cast, std::vector<int32_t>{-1}), std::vector<uint64_t>{~0ull});
  check_bits(unary<int64_t>(OpKind::Cast, std::vector<uint32_t>{0xffffffffu}), std::vector<int64_t>{0xffffffffll});
  check_bits(unary<bool>(OpKind::Cast, std::vector<int32_t>{2, 0, -1, 256}), std::vector<bool>{true, false, true, true});
  check_bits(unary<int32_t>(OpKind::Cast, std::vector<bool>{true, false}), std::vector<int32_t>{1, 0});
}

TEST_CASE("interp: int to float and float to float round to nearest even", "[interp]") {
  check_bits(unary<float>(OpKind::Cast, std::vector<int32_t>{16777217, 16777219, -16777217, 3}),
             std::vector<float>{16777216.0f, 16777220.0f, -16777216.0f, 3.0f});
  check_bits(unary<float>(OpKind::Cast, std::vector<uint64_t>{~0ull}), std::vector<float>{18446744073709551616.0f});
  auto b = unary<tl::bf16>(OpKind::Cast, std::vector<int32_t>{257, 259});
  CHECK(float(b[0]) == 256.0f);  // tie -> even
  CHECK(float(b[1]) == 260.0f);
  std::vector<float> f{1.00390625f, 1.01171875f, 3.0e38f, 1e-40f};
  auto fb = unary<tl::bf16>(OpKind::Cast, f);
  CHECK(float(fb[0]) == 1.0f);
  CHECK(float(fb[1]) == 1.015625f);
  CHECK(float(fb[2]) == bf(3.0e38f));
  CHECK(float(fb[3]) == bf(1e-40f));
  auto fh = unary<tl::f16>(OpKind::Cast, std::vector<float>{65520.0f, 65519.0f, 1e-8f});
  CHECK(std::isinf(float(fh[0])));
  CHECK(float(fh[1]) == 65504.0f);
  CHECK(float(fh[2]) == float(tl::f16(1e-8f)));
  auto f8 = unary<tl::f8e4m3>(OpKind::Cast, std::vector<float>{464.0f, 480.0f, 0.3f});
  CHECK(float(f8[0]) == 448.0f);
  CHECK(std::isnan(float(f8[1])));
  CHECK(float(f8[2]) == float(tl::f8e4m3(0.3f)));
  check_bits(unary<float>(OpKind::Cast, std::vector<double>{0.1, 1e300}), std::vector<float>{0.1f, std::numeric_limits<float>::infinity()});
  check_bits(unary<double>(OpKind::Cast, std::vector<tl::bf16>{tl::bf16(1.5f)}), std::vector<double>{1.5});
}

TEST_CASE("interp: bitcast reinterprets the bits", "[interp]") {
  check_bits(unary<int32_t>(OpKind::Bitcast, std::vector<float>{1.0f, -0.0f}), std::vector<int32_t>{0x3f800000, INT32_MIN});
  check_bits(unary<float>(OpKind::Bitcast, std::vector<uint32_t>{0x40490fdbu}), std::vector<float>{std::bit_cast<float>(0x40490fdbu)});
  auto h = unary<tl::f16>(OpKind::Bitcast, std::vector<tl::bf16>{tl::bf16::from_bits(0x3c00)});
  CHECK(h[0].bits == 0x3c00);
  check_bits(unary<int8_t>(OpKind::Bitcast, std::vector<uint8_t>{200}), std::vector<int8_t>{-56});
}
