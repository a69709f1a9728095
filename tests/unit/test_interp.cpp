// Numerics of every Tile IR op on the interpreter, against plain C++
// references, with kernels built by hand (ir::Builder): integer wrap-around,
// shifts, narrow-float rounding ties, saturating casts, NaN rules, masked and
// out-of-bounds memory access, assert, print, reduce order, scan, dot
// precisions, atomics and control flow.
#include <bit>
#include <catch2/catch.hpp>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "interp/interp.h"
#include "kernel_builder.h"
#include "tiledsl/runtime.h"

using namespace kb;
using tl::dtype_v;

namespace {

tl::Device interp() { return tl::Device::get("interp"); }

int64_t pow2_at_least(size_t n) {
  int64_t p = 1;
  while (p < int64_t(n)) p *= 2;
  return p;
}

template <class T>
std::vector<T> padded(std::vector<T> v, int64_t n) {
  v.resize(size_t(n), T(1));
  return v;
}

// Host vectors to and from device buffers; std::vector<bool> has no data(),
// so i1 buffers go through bytes.
template <class T>
tl::Buffer to_device(tl::Device& dev, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {
    auto b = dev.alloc(DType::i1, v.size());
    std::vector<uint8_t> bytes(v.begin(), v.end());
    b.copy_from_host(bytes.data(), bytes.size());
    return b;
  } else {
    return dev.upload(v);
  }
}
template <class T>
std::vector<T> from_device(const tl::Buffer& b) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(b.size());
    b.copy_to_host(bytes.data(), bytes.size());
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    return b.download<T>();
  }
}

// out[i] = k(a[i], b[i]) for a binary elementwise op (or cmp with `attrs`).
template <class TR, class TA>
std::vector<TR> binary(OpKind k, const std::vector<TA>& a, const std::vector<TA>& b, tl::ir::Attrs attrs = {}) {
  constexpr DType da = dtype_v<TA>, dr = dtype_v<TR>;
  int64_t n = pow2_at_least(a.size());
  KernelBuilder kb("binary", {P(da), P(da), P(dr)});
  Value* offs = kb.arange(n);
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs));
  Value* y = kb.load(kb.ptrs(kb.arg(1), offs));
  kb.store(kb.ptrs(kb.arg(2), offs), kb.op(k, {x, y}, T(dr, {n}), attrs));
  auto dev = interp();
  auto ba = to_device(dev, padded(a, n)), bb = to_device(dev, padded(b, n));
  auto bo = dev.alloc<TR>(size_t(n));
  dev(kb.kernel(), {1}, ba, bb, bo);
  auto out = from_device<TR>(bo);
  out.resize(a.size());
  return out;
}

// out[i] = k(a[i]) for a unary elementwise op producing TR.
template <class TR, class TA>
std::vector<TR> unary(OpKind k, const std::vector<TA>& a) {
  constexpr DType da = dtype_v<TA>, dr = dtype_v<TR>;
  int64_t n = pow2_at_least(a.size());
  KernelBuilder kb("unary", {P(da), P(dr)});
  Value* offs = kb.arange(n);
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs));
  kb.store(kb.ptrs(kb.arg(1), offs), kb.op(k, {x}, T(dr, {n})));
  auto dev = interp();
  auto ba = to_device(dev, padded(a, n));
  auto bo = dev.alloc<TR>(size_t(n));
  dev(kb.kernel(), {1}, ba, bo);
  auto out = from_device<TR>(bo);
  out.resize(a.size());
  return out;
}

template <class T>
bool same_bits(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x) ? std::isnan(y) : std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(x) == std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(y);
  else return x == y;
}

template <class T>
void check_bits(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << +got[i] << ", want " << +want[i]);
    CHECK(same_bits(got[i], want[i]));
  }
}

float bf(float x) { return float(tl::bf16(x)); }

}  // namespace

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

// ---------------------------------------------------------------------------
// Shapes, select, constants

TEST_CASE("interp: shape ops move elements row-major", "[interp]") {
  // out[i, j] for a [4, 8] tile built from arange, broadcast, trans, join.
  KernelBuilder kb("shapes", {P(DType::i32), P(DType::i32), P(DType::i32), P(DType::i32)});
  Value* r = kb.arange(4);                                                          // [4]
  Value* c = kb.arange(8);                                                          // [8]
  Value* col = kb.op(OpKind::ExpandDims, {r}, T(DType::i32, {4, 1}), {{"axis", int64_t(1)}});
  Value* row = kb.op(OpKind::ExpandDims, {c}, T(DType::i32, {1, 8}), {{"axis", int64_t(0)}});
  Value* colb = kb.op(OpKind::Broadcast, {col}, T(DType::i32, {4, 8}));
  Value* rowb = kb.op(OpKind::Broadcast, {row}, T(DType::i32, {4, 8}));
  Value* ten = kb.ci(T(DType::i32, {4, 8}), 10);
  Value* v = kb.op(OpKind::Add, {kb.op(OpKind::Mul, {colb, ten}, T(DType::i32, {4, 8})), rowb}, T(DType::i32, {4, 8}));  // 10*i + j
  Value* offs32 = kb.arange(32);
  Value* flat = kb.op(OpKind::Reshape, {v}, T(DType::i32, {32}));
  kb.store(kb.ptrs(kb.arg(0), offs32), flat);
  Value* t = kb.op(OpKind::Trans, {v}, T(DType::i32, {8, 4}), {{"order", std::vector<int64_t>{1, 0}}});
  kb.store(kb.ptrs(kb.arg(1), offs32), kb.op(OpKind::Reshape, {t}, T(DType::i32, {32})));
  Value* j = kb.op(OpKind::Join, {r, kb.op(OpKind::Neg, {r}, r->type)}, T(DType::i32, {4, 2}));
  kb.store(kb.ptrs(kb.arg(2), kb.arange(8)), kb.op(OpKind::Reshape, {j}, T(DType::i32, {8})));
  tl::ir::Op* sp = kb.b.create(OpKind::Split, {j}, {T(DType::i32, {4}), T(DType::i32, {4})});
  Value* both = kb.op(OpKind::Sub, {sp->result(0), sp->result(1)}, T(DType::i32, {4}));  // 2 * r
  Value* s = kb.splat(kb.ci(S(DType::i32), 7), {4});
  Value* sel = kb.op(OpKind::Select, {kb.cmp("lt", r, kb.ci(T(DType::i32, {4}), 2)), both, s}, T(DType::i32, {4}));
  kb.store(kb.ptrs(kb.arg(3), kb.arange(4)), sel);

  auto dev = interp();
  auto b0 = dev.alloc<int32_t>(32), b1 = dev.alloc<int32_t>(32), b2 = dev.alloc<int32_t>(8), b3 = dev.alloc<int32_t>(4);
  dev(kb.kernel(), {1}, b0, b1, b2, b3);
  auto o0 = b0.download<int32_t>(), o1 = b1.download<int32_t>();
  for (int i = 0; i < 4; ++i)
    for (int jj = 0; jj < 8; ++jj) {
      CHECK(o0[size_t(i * 8 + jj)] == 10 * i + jj);
      CHECK(o1[size_t(jj * 4 + i)] == 10 * i + jj);
    }
  CHECK(b2.download<int32_t>() == std::vector<int32_t>{0, 0, 1, -1, 2, -2, 3, -3});
  CHECK(b3.download<int32_t>() == std::vector<int32_t>{0, 2, 7, 7});
}

TEST_CASE("interp: 3-D broadcast and permutation", "[interp]") {
  KernelBuilder kb("perm", {P(DType::f32)});
  Value* a = kb.op(OpKind::Cast, {kb.arange(8)}, T(DType::f32, {8}));
  Value* a3 = kb.op(OpKind::Reshape, {a}, T(DType::f32, {2, 1, 4}));
  Value* b3 = kb.op(OpKind::Broadcast, {a3}, T(DType::f32, {2, 2, 4}));  // [p, q, r] = 4p + r
  Value* t = kb.op(OpKind::Trans, {b3}, T(DType::f32, {4, 2, 2}), {{"order", std::vector<int64_t>{2, 0, 1}}});
  kb.store(kb.ptrs(kb.arg(0), kb.arange(16)), kb.op(OpKind::Reshape, {t}, T(DType::f32, {16})));
  auto dev = interp();
  auto out = dev.alloc<float>(16);
  dev(kb.kernel(), {1}, out);
  auto o = out.download<float>();
  for (int r = 0; r < 4; ++r)
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q) CHECK(o[size_t(r * 4 + p * 2 + q)] == float(4 * p + r));
}

// ---------------------------------------------------------------------------
// Memory

TEST_CASE("interp: masked loads yield other (or 0), masked stores skip", "[interp]") {
  // Odd size: 10 elements, tile of 16.
  KernelBuilder kb("masked", {P(DType::f32), P(DType::f32), P(DType::f32), S(DType::i32)});
  Value* offs = kb.arange(16);
  Value* mask = kb.cmp("lt", offs, kb.splat(kb.arg(3), {16}));
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs), mask, kb.cf(T(DType::f32, {16}), -1.0));
  Value* z = kb.load(kb.ptrs(kb.arg(0), offs), mask);
  kb.store(kb.ptrs(kb.arg(1), offs), x);
  kb.store(kb.ptrs(kb.arg(2), offs), z, mask);
  auto dev = interp();
  std::vector<float> host(10);
  for (int i = 0; i < 10; ++i) host[size_t(i)] = float(i) + 0.5f;
  auto in = dev.upload(host);
  auto out1 = dev.alloc<float>(16);
  auto out2 = dev.upload(std::vector<float>(16, 9.0f));
  dev(kb.kernel(), {1}, in, out1, out2, 10);
  auto o1 = out1.download<float>(), o2 = out2.download<float>();
  for (int i = 0; i < 16; ++i) {
    CHECK(o1[size_t(i)] == (i < 10 ? float(i) + 0.5f : -1.0f));
    CHECK(o2[size_t(i)] == (i < 10 ? float(i) + 0.5f : 9.0f));
  }
}

TEST_CASE("interp: narrow dtypes load and store their encodings", "[interp]") {
  KernelBuilder kb("copy", {P(DType::bf16), P(DType::f16), P(DType::i1), P(DType::u8)});
  Value* offs = kb.arange(4);
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs));
  kb.store(kb.ptrs(kb.arg(1), offs), kb.op(OpKind::Cast, {x}, T(DType::f16, {4})));
  Value* bits = kb.load(kb.ptrs(kb.arg(2), offs));
  kb.store(kb.ptrs(kb.arg(3), offs), kb.op(OpKind::Cast, {bits}, T(DType::u8, {4})));
  auto dev = interp();
  auto a = dev.upload(std::vector<tl::bf16>{tl::bf16(1.5f), tl::bf16(-2.0f), tl::bf16(1e-3f), tl::bf16(300.0f)});
  auto h = dev.alloc<tl::f16>(4);
  auto m = to_device(dev, std::vector<bool>{true, false, true, true});
  auto u = dev.alloc<uint8_t>(4);
  dev(kb.kernel(), {1}, a, h, m, u);
  auto ho = h.download<tl::f16>();
  CHECK(float(ho[0]) == 1.5f);
  CHECK(float(ho[1]) == -2.0f);
  CHECK(float(ho[2]) == float(tl::f16(float(tl::bf16(1e-3f)))));
  CHECK(float(ho[3]) == 300.0f);
  CHECK(u.download<uint8_t>() == std::vector<uint8_t>{1, 0, 1, 1});
}

TEST_CASE("interp: an out-of-bounds load names the index, the address and its pointer's buffer", "[interp]") {
  KernelBuilder kb("oob", {P(DType::f32), P(DType::f32)});
  kb.at(12);
  Value* offs = kb.arange(16);
  Value* p = kb.ptrs(kb.arg(0), offs);
  kb.at(13);
  Value* x = kb.load(p);
  kb.at(14);
  kb.store(kb.ptrs(kb.arg(1), offs), x);
  auto dev = interp();
  auto in = dev.alloc<float>(10);
  auto out = dev.alloc<float>(16);
  try {
    dev(kb.kernel(), {1}, in, out);
    FAIL("expected an out-of-bounds error");
  } catch (const tl::Error& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.rfind("test.cpp:13: load out of bounds at index [10] of a tile<16xptr<f32>>: address 0x", 0) == 0);
    CHECK(msg.find(" is 0 bytes past the end of the buffer the pointer was derived from (40 bytes at 0x") !=
          std::string::npos);
    CHECK(msg.find(") in program (0, 0, 0)") == msg.size() - std::string(") in program (0, 0, 0)").size());
  }
}

TEST_CASE("interp: an out-of-bounds store writes nothing, 2-D index in the message", "[interp]") {
  KernelBuilder kb("oob2", {P(DType::i32)});
  Value* r = kb.op(OpKind::ExpandDims, {kb.arange(4)}, T(DType::i32, {4, 1}), {{"axis", int64_t(1)}});
  Value* c = kb.op(OpKind::ExpandDims, {kb.arange(4)}, T(DType::i32, {1, 4}), {{"axis", int64_t(0)}});
  Value* rb = kb.op(OpKind::Broadcast, {r}, T(DType::i32, {4, 4}));
  Value* cb = kb.op(OpKind::Broadcast, {c}, T(DType::i32, {4, 4}));
  Value* offs = kb.op(OpKind::Add, {kb.op(OpKind::Mul, {rb, kb.ci(T(DType::i32, {4, 4}), 3)}, rb->type), cb}, rb->type);  // 3i + j
  kb.at(40);
  kb.store(kb.ptrs(kb.arg(0), offs), cb);
  auto dev = interp();
  auto buf = dev.upload(std::vector<int32_t>(12, 5));  // 3i + j reaches 12 at [3, 0]... and [2, 3]? 9: no; [3, 3] = 12
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {1}, buf),
                      Catch::Matchers::StartsWith("test.cpp:40: store out of bounds at index [3, 3] of a tile<4x4xptr<i32>>: address 0x") &&
                          Catch::Matchers::Contains(" is 0 bytes past the end of the buffer the pointer was derived from (48 bytes at 0x"));
  CHECK(buf.download<int32_t>() == std::vector<int32_t>(12, 5));
}

TEST_CASE("interp: a masked-off lane may point anywhere; before-start and straddling accesses fail", "[interp]") {
  KernelBuilder kb("before", {P(DType::f32), S(DType::i32)});
  Value* offs = kb.op(OpKind::Add, {kb.arange(4), kb.splat(kb.arg(1), {4})}, T(DType::i32, {4}));
  Value* mask = kb.cmp("ge", offs, kb.ci(T(DType::i32, {4}), 0));
  Value* p = kb.ptrs(kb.arg(0), offs);
  kb.store(p, kb.load(p, mask), mask);
  auto dev = interp();
  auto buf = dev.upload(std::vector<float>{1, 2, 3, 4});
  dev(kb.kernel(), {1}, buf, -2);  // lanes -2, -1 masked off
  CHECK(buf.download<float>() == std::vector<float>{1, 2, 3, 4});  // no error for the masked-off lanes

  KernelBuilder kb2("before2", {P(DType::f32), S(DType::i32)});
  Value* p2 = kb2.ptrs(kb2.arg(0), kb2.arg(1));
  kb2.at(5);
  kb2.store(p2, kb2.cf(S(DType::f32), 1.0));
  REQUIRE_THROWS_WITH(dev(kb2.kernel(), {1}, buf, -1),
                      Catch::Matchers::StartsWith("test.cpp:5: store out of bounds of a ptr<f32>: address 0x") &&
                          Catch::Matchers::Contains(" is 4 bytes before the start of the buffer the pointer was derived from (16 bytes at 0x") &&
                          Catch::Matchers::EndsWith(") in program (0, 0, 0)"));

  // A 4-byte access starting 2 bytes before the end of a buffer.
  KernelBuilder kb3("straddle", {P(DType::u8)});
  Value* base = kb3.ptrs(kb3.arg(0), kb3.ci(S(DType::i32), 6));
  Value* as_int = kb3.op(OpKind::Cast, {base}, S(DType::i64));
  Value* as_f32 = kb3.op(OpKind::Cast, {as_int}, P(DType::f32));
  kb3.at(9);
  kb3.store(as_f32, kb3.cf(S(DType::f32), 1.0));
  auto bytes = dev.alloc<uint8_t>(8);
  REQUIRE_THROWS_WITH(dev(kb3.kernel(), {1}, bytes),
                      Catch::Matchers::StartsWith("test.cpp:9: store to a misaligned address of a ptr<f32>: address 0x") &&
                          Catch::Matchers::Contains("is not a multiple of 4 (the size of f32)"));
  KernelBuilder kb4("straddle2", {P(DType::f32)});
  Value* base4 = kb4.op(OpKind::Cast, {kb4.op(OpKind::Cast, {kb4.arg(0)}, S(DType::i64))}, P(DType::i64));
  Value* p4 = kb4.ptrs(base4, kb4.ci(S(DType::i32), 1));  // bytes 8..16 of a 12-byte buffer
  kb4.at(11);
  kb4.store(p4, kb4.ci(S(DType::i64), 1));
  auto three = dev.alloc<float>(3);
  REQUIRE_THROWS_WITH(dev(kb4.kernel(), {1}, three),
                      Catch::Matchers::StartsWith("test.cpp:11: store out of bounds of a ptr<i64>: the 8-byte access at address 0x") &&
                          Catch::Matchers::Contains("runs 4 bytes past the end of the buffer the pointer was derived from (12 bytes at 0x"));
}

TEST_CASE("interp: a store past the end of one buffer fails even where another buffer follows it", "[interp]") {
  // Issue 11: 1,024 stores past the end of `a` used to land silently in the
  // buffer allocated after it. Every store is checked against the buffer its
  // pointer came from (memory.h), wherever the other buffers lie.
  KernelBuilder kb("poke", {P(DType::f32), S(DType::i32)});
  Value* p = kb.ptrs(kb.arg(0), kb.arg(1));
  kb.at(21);
  kb.store(p, kb.cf(S(DType::f32), 7.0));
  auto dev = interp();
  auto a = dev.alloc<float>(1024);
  auto b = dev.upload(std::vector<float>(1024, 1.0f));
  dev(kb.kernel(), {1}, a, 1023);  // the last element of a
  int failed = 0;
  for (int k = 1024; k < 1024 + 4096; ++k) {
    try {
      dev(kb.kernel(), {1}, a, k);
    } catch (const tl::Error& e) {
      std::string msg = e.what();
      INFO(msg);
      ++failed;
      CHECK_THAT(msg, Catch::Matchers::StartsWith("test.cpp:21: store out of bounds of a ptr<f32>: address 0x") &&
                          Catch::Matchers::Contains(" is " + std::to_string(4 * (k - 1024)) +
                                                    " bytes past the end of the buffer the pointer was derived from "
                                                    "(4096 bytes at 0x"));
    }
  }
  CHECK(failed == 4096);
  CHECK(b.download<float>() == std::vector<float>(1024, 1.0f));

  // The tile form: one store of 1,024 lanes past the end writes no lane.
  KernelBuilder kt("overrun", {P(DType::f32)});
  Value* offs = kt.op(OpKind::Add, {kt.arange(1024), kt.ci(T(DType::i32, {1024}), 1024)}, T(DType::i32, {1024}));
  kt.at(34);
  kt.store(kt.ptrs(kt.arg(0), offs), kt.cf(T(DType::f32, {1024}), 7.0));
  REQUIRE_THROWS_WITH(dev(kt.kernel(), {1}, a),
                      Catch::Matchers::StartsWith("test.cpp:34: store out of bounds at index [0] of a tile<1024xptr<f32>>") &&
                          Catch::Matchers::Contains(" is 0 bytes past the end of the buffer the pointer was derived from"));
  CHECK(b.download<float>() == std::vector<float>(1024, 1.0f));
}

TEST_CASE("interp: a pointer moved onto another buffer's address does not reach it", "[interp]") {
  // The one way to point at another buffer is an offset of its exact
  // distance (over 512 GiB between windows): addptr moves such a pointer
  // into window 0, which no buffer owns, and keeps it there.
  tl::interp::Memory mem;
  uint64_t a = mem.allocate(64), b = mem.allocate(64);
  std::vector<float> ones(16, 1.0f);
  std::memcpy(mem.host(b, 64), ones.data(), 64);
  KernelBuilder kb("jump", {P(DType::f32), S(DType::i64), S(DType::i64)});
  Value* p = kb.ptrs(kb.ptrs(kb.arg(0), kb.arg(1)), kb.arg(2));
  kb.at(7);
  kb.store(p, kb.cf(S(DType::f32), 7.0));
  auto prog = tl::interp::compile(kb.fn());
  using tl::interp::ArgValue;
  int64_t to_b = int64_t(b - a) / 4;
  REQUIRE(to_b > 0);
  REQUIRE_THROWS_WITH(
      tl::interp::run(*prog, {1}, {ArgValue::integer(int64_t(a)), ArgValue::integer(to_b), ArgValue::integer(0)}, mem),
      Catch::Matchers::StartsWith("test.cpp:7: store out of bounds of a ptr<f32>: address 0x") &&
          Catch::Matchers::Contains(" lies in no buffer: pointer arithmetic moved it more than 549755813888 bytes "
                                    "(512 GiB) away from the buffer it was derived from in program (0, 0, 0)"));
  // Out and back again stays out: the pointer no longer knows its buffer.
  REQUIRE_THROWS_WITH(
      tl::interp::run(*prog, {1}, {ArgValue::integer(int64_t(a)), ArgValue::integer(to_b), ArgValue::integer(-to_b)}, mem),
      Catch::Matchers::Contains(" lies in no buffer: pointer arithmetic moved it"));
  std::vector<float> hb(16);
  std::memcpy(hb.data(), mem.host(b, 64), 64);
  CHECK(hb == ones);
  // Within the window, far offsets that come back are fine.
  tl::interp::run(*prog, {1}, {ArgValue::integer(int64_t(a)), ArgValue::integer(int64_t(1) << 36), ArgValue::integer(-(int64_t(1) << 36) + 3)}, mem);
  float a3;
  std::memcpy(&a3, mem.host(a + 12, 4), 4);
  CHECK(a3 == 7.0f);

  // A freed buffer's address is not reused while fresh windows remain.
  mem.release(a);
  REQUIRE_THROWS_WITH(
      tl::interp::run(*prog, {1}, {ArgValue::integer(int64_t(a)), ArgValue::integer(0), ArgValue::integer(0)}, mem),
      Catch::Matchers::Contains(" points into a buffer that has been freed in program (0, 0, 0)"));
  uint64_t c = mem.allocate(64);
  CHECK(c != a);
  CHECK(tl::interp::Memory::window(c) != tl::interp::Memory::window(a));
  REQUIRE_THROWS_WITH(mem.release(b + 4), Catch::Matchers::StartsWith("interp: free of 0x") &&
                                              Catch::Matchers::EndsWith(", which is not a live allocation"));
  REQUIRE_THROWS_WITH(mem.host(b + 60, 8), Catch::Matchers::StartsWith("interp: copy of 8 bytes at 0x") &&
                                               Catch::Matchers::EndsWith(", which is not inside a live buffer"));
  REQUIRE_THROWS_WITH(mem.allocate(size_t(1) << 40), "interp: cannot allocate 1099511627776 bytes: a buffer holds at most 549755813888 bytes");
  mem.release(b);
  mem.release(c);
  CHECK(mem.live_allocations() == 0);
}

TEST_CASE("interp: atomics read-modify-write in program order and return old values", "[interp]") {
  // Every program adds its id + 1 to counter[0]; max into counter[1]; returns old values.
  KernelBuilder kb("atomics", {P(DType::i32), P(DType::i32), P(DType::f32)});
  Value* pid = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* one = kb.ci(S(DType::i32), 1);
  Value* v = kb.op(OpKind::Add, {pid, one}, S(DType::i32));
  Value* old = kb.op(OpKind::AtomicRmw, {kb.arg(0), v}, S(DType::i32), {{"kind", std::string("add")}});
  Value* neg = kb.op(OpKind::Neg, {v}, S(DType::i32));
  kb.op(OpKind::AtomicRmw, {kb.ptrs(kb.arg(0), one), neg}, S(DType::i32), {{"kind", std::string("min")}});
  kb.store(kb.ptrs(kb.arg(1), pid), old);
  // Tile atomic with duplicate addresses and a mask: lanes 0..3 -> f[0], f[1], f[0], f[1]; lane 3 masked.
  Value* lanes = kb.arange(4);
  Value* two = kb.ci(T(DType::i32, {4}), 2);
  Value* idx = kb.op(OpKind::Rem, {lanes, two}, T(DType::i32, {4}));
  Value* mask = kb.cmp("lt", lanes, kb.ci(T(DType::i32, {4}), 3));
  Value* val = kb.cf(T(DType::f32, {4}), 0.5);
  Value* olds = kb.op(OpKind::AtomicRmw, {kb.ptrs(kb.arg(2), idx), val, mask}, T(DType::f32, {4}), {{"kind", std::string("add")}});
  Value* first = kb.combine_op(OpKind::Reduce, {olds}, 0, {}, [&](auto l, auto r) {
    return std::vector<Value*>{kb.op(OpKind::Add, {l[0], r[0]}, S(DType::f32))};
  })[0];
  kb.store(kb.ptrs(kb.arg(2), kb.ci(S(DType::i32), 2 )), first);
  auto dev = interp();
  auto counter = dev.upload(std::vector<int32_t>{0, 0});
  auto olds_out = dev.alloc<int32_t>(5);
  auto f = dev.upload(std::vector<float>{0, 0, 0});
  dev(kb.kernel(), {5}, counter, olds_out, f);
  CHECK(counter.download<int32_t>() == std::vector<int32_t>{15, -5});
  CHECK(olds_out.download<int32_t>() == std::vector<int32_t>{0, 1, 3, 6, 10});
  // Per program: f[0] += 1 (two lanes), f[1] += 0.5; last program's olds: f0_old, f1_old, f0_old+0.5, 0.
  auto fo = f.download<float>();
  CHECK(fo[0] == 5.0f);
  CHECK(fo[1] == 2.5f);
  CHECK(fo[2] == 4.0f + 2.0f + 4.5f);

  KernelBuilder kc("cas", {P(DType::i32)});
  Value* offs = kc.arange(4);
  Value* p = kc.ptrs(kc.arg(0), offs);
  Value* o = kc.op(OpKind::AtomicCas, {p, kc.ci(T(DType::i32, {4}), 1), kc.ci(T(DType::i32, {4}), 9)}, T(DType::i32, {4}));
  kc.store(kc.ptrs(kc.arg(0), kc.op(OpKind::Add, {offs, kc.ci(T(DType::i32, {4}), 4)}, offs->type)), o);
  auto cb = dev.upload(std::vector<int32_t>{1, 2, 1, 0, 0, 0, 0, 0});
  dev(kc.kernel(), {1}, cb);
  CHECK(cb.download<int32_t>() == std::vector<int32_t>{9, 2, 9, 0, 1, 2, 1, 0});

  KernelBuilder kx("bits", {P(DType::u32)});
  Value* q = kx.arg(0);
  kx.op(OpKind::AtomicRmw, {q, kx.ci(S(DType::u32), 0xf0)}, S(DType::u32), {{"kind", std::string("or")}});
  kx.op(OpKind::AtomicRmw, {q, kx.ci(S(DType::u32), 0x3c)}, S(DType::u32), {{"kind", std::string("xor")}});
  kx.op(OpKind::AtomicRmw, {q, kx.ci(S(DType::u32), 0xfffffff0u)}, S(DType::u32), {{"kind", std::string("and")}});
  Value* prev = kx.op(OpKind::AtomicRmw, {q, kx.ci(S(DType::u32), 0xffffffffu)}, S(DType::u32), {{"kind", std::string("max")}});
  kx.store(kx.ptrs(q, kx.ci(S(DType::i32), 1)), prev);
  auto xb = dev.upload(std::vector<uint32_t>{0x0f, 0});
  dev(kx.kernel(), {1}, xb);
  CHECK(xb.download<uint32_t>() == std::vector<uint32_t>{0xffffffffu, (0xffu ^ 0x3cu) & 0xfffffff0u});
}

// ---------------------------------------------------------------------------
// Reduce, scan, dot

namespace {

// The documented combine order: pairs (0,1), (2,3), ..., then pairs of those.
float tree_sum(std::vector<float> v) {
  while (v.size() > 1) {
    std::vector<float> next;
    for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(v[i] + v[i + 1]);
    if (v.size() % 2) next.push_back(v.back());
    v = next;
  }
  return v[0];
}

}  // namespace

TEST_CASE("interp: reduce combines in a balanced tree along the axis", "[interp]") {
  constexpr int M = 8, N = 32;
  KernelBuilder kb("rsum", {P(DType::f32), P(DType::f32), P(DType::f32)});
  Value* r = kb.op(OpKind::ExpandDims, {kb.arange(M)}, T(DType::i32, {M, 1}), {{"axis", int64_t(1)}});
  Value* c = kb.op(OpKind::ExpandDims, {kb.arange(N)}, T(DType::i32, {1, N}), {{"axis", int64_t(0)}});
  Value* offs = kb.op(OpKind::Add, {kb.op(OpKind::Mul, {kb.op(OpKind::Broadcast, {r}, T(DType::i32, {M, N})), kb.ci(T(DType::i32, {M, N}), N)}, T(DType::i32, {M, N})),
                                    kb.op(OpKind::Broadcast, {c}, T(DType::i32, {M, N}))},
                      T(DType::i32, {M, N}));
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs));  // [M, N] f32
  auto add = [&](auto l, auto rr) { return std::vector<Value*>{kb.op(OpKind::Add, {l[0], rr[0]}, S(DType::f32))}; };
  Value* rows = kb.combine_op(OpKind::Reduce, {x}, 1, {}, add)[0];  // [M]
  Value* cols = kb.combine_op(OpKind::Reduce, {x}, 0, {}, add)[0];  // [N]
  kb.store(kb.ptrs(kb.arg(1), kb.arange(M)), rows);
  kb.store(kb.ptrs(kb.arg(2), kb.arange(N)), cols);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> host(M * N);
  for (auto& v : host) v = u(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);  // wide exponents: order matters
  auto dev = interp();
  auto in = dev.upload(host);
  auto ro = dev.alloc<float>(M), co = dev.alloc<float>(N);
  dev(kb.kernel(), {1}, in, ro, co);
  auto rv = ro.download<float>(), cv = co.download<float>();
  for (int i = 0; i < M; ++i) {
    std::vector<float> row(host.begin() + i * N, host.begin() + (i + 1) * N);
    CHECK(same_bits(rv[size_t(i)], tree_sum(row)));
  }
  for (int j = 0; j < N; ++j) {
    std::vector<float> col;
    for (int i = 0; i < M; ++i) col.push_back(host[size_t(i * N + j)]);
    CHECK(same_bits(cv[size_t(j)], tree_sum(col)));
  }
  // The order is observable: sequential summation gives 1 here, the tree 0.
  KernelBuilder k2("order", {P(DType::f32)});
  Value* v4 = k2.load(k2.ptrs(k2.arg(0), k2.arange(4)));
  Value* s = k2.combine_op(OpKind::Reduce, {v4}, 0, {}, [&](auto l, auto rr) {
    return std::vector<Value*>{k2.op(OpKind::Add, {l[0], rr[0]}, S(DType::f32))};
  })[0];
  k2.store(k2.arg(0), s);
  auto b4 = dev.upload(std::vector<float>{1e8f, 1.0f, -1e8f, 1.0f});
  dev(k2.kernel(), {1}, b4);
  CHECK(b4.download<float>()[0] == 0.0f);
}

TEST_CASE("interp: two-operand reduce (argmax) keeps the lowest index on ties", "[interp]") {
  constexpr int N = 16;
  KernelBuilder kb("argmax", {P(DType::f32), P(DType::i32)});
  Value* idx = kb.arange(N);
  Value* x = kb.load(kb.ptrs(kb.arg(0), idx));
  auto res = kb.combine_op(OpKind::Reduce, {x, idx}, 0, {}, [&](auto l, auto r) {
    Value* gt = kb.cmp("gt", l[0], r[0]);
    Value* eq = kb.cmp("eq", l[0], r[0]);
    Value* lo = kb.cmp("lt", l[1], r[1]);
    Value* keep = kb.op(OpKind::Or, {gt, kb.op(OpKind::And, {eq, lo}, S(DType::i1))}, S(DType::i1));
    return std::vector<Value*>{kb.op(OpKind::Select, {keep, l[0], r[0]}, S(DType::f32)),
                               kb.op(OpKind::Select, {keep, l[1], r[1]}, S(DType::i32))};
  });
  kb.store(kb.arg(1), res[1]);
  auto dev = interp();
  std::vector<float> host(N, 0.0f);
  host[5] = 3;
  host[9] = 3;
  host[12] = 2;
  auto in = dev.upload(host);
  auto out = dev.alloc<int32_t>(1);
  dev(kb.kernel(), {1}, in, out);
  CHECK(out.download<int32_t>()[0] == 5);
}

TEST_CASE("interp: a reduce region with a non-elementwise op runs lane by lane", "[interp]") {
  // combine(a, b) = if (a > b) {a} else {b}: an if inside the region.
  KernelBuilder kb("rif", {P(DType::i32)});
  Value* x = kb.load(kb.ptrs(kb.arg(0), kb.arange(8)));
  Value* m = kb.combine_op(OpKind::Reduce, {x}, 0, {}, [&](auto l, auto r) {
    return kb.if_(kb.cmp("gt", l[0], r[0]), {S(DType::i32)}, [&] { return std::vector<Value*>{l[0]}; },
                  [&] { return std::vector<Value*>{r[0]}; });
  })[0];
  kb.store(kb.arg(0), m);
  auto dev = interp();
  auto buf = dev.upload(std::vector<int32_t>{3, -1, 7, 2, 9, 0, 4, 8});
  dev(kb.kernel(), {1}, buf);
  CHECK(buf.download<int32_t>()[0] == 9);
}

TEST_CASE("interp: scan is sequential along the axis, forward and reverse", "[interp]") {
  constexpr int M = 4, N = 8;
  for (int reverse = 0; reverse < 2; ++reverse) {
    KernelBuilder kb("cumsum", {P(DType::f32), P(DType::f32)});
    Value* offs = kb.arange(M * N);
    Value* x = kb.op(OpKind::Reshape, {kb.load(kb.ptrs(kb.arg(0), offs))}, T(DType::f32, {M, N}));
    Value* s = kb.combine_op(OpKind::Scan, {x}, 1, {{"reverse", int64_t(reverse)}}, [&](auto l, auto r) {
      return std::vector<Value*>{kb.op(OpKind::Add, {l[0], r[0]}, S(DType::f32))};
    })[0];
    kb.store(kb.ptrs(kb.arg(1), offs), kb.op(OpKind::Reshape, {s}, T(DType::f32, {M * N})));
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(-10, 10);
    std::vector<float> host(M * N);
    for (auto& v : host) v = u(rng);
    auto dev = interp();
    auto in = dev.upload(host);
    auto out = dev.alloc<float>(M * N);
    dev(kb.kernel(), {1}, in, out);
    auto o = out.download<float>();
    for (int i = 0; i < M; ++i) {
      float acc = 0;
      for (int t = 0; t < N; ++t) {
        int j = reverse ? N - 1 - t : t;
        acc = t == 0 ? host[size_t(i * N + j)] : acc + host[size_t(i * N + j)];
        CHECK(same_bits(o[size_t(i * N + j)], acc));
      }
    }
  }
}

namespace {

// Runs dot(a [M,K], b [K,N], acc [M,N] f32-or-i32) and returns the result.
template <class TI, class TO>
std::vector<TO> run_dot(int M, int N, int K, const std::vector<TI>& a, const std::vector<TI>& b, const std::vector<TO>& acc,
                        const char* precision) {
  constexpr DType di = dtype_v<TI>, dout = dtype_v<TO>;
  KernelBuilder kb("dot", {P(di), P(di), P(dout)});
  Value* av = kb.op(OpKind::Reshape, {kb.load(kb.ptrs(kb.arg(0), kb.arange(M * K)))}, T(di, {M, K}));
  Value* bv = kb.op(OpKind::Reshape, {kb.load(kb.ptrs(kb.arg(1), kb.arange(K * N)))}, T(di, {K, N}));
  Value* cp = kb.ptrs(kb.arg(2), kb.arange(M * N));
  Value* cv = kb.op(OpKind::Reshape, {kb.load(cp)}, T(dout, {M, N}));
  Value* d = kb.op(OpKind::Dot, {av, bv, cv}, T(dout, {M, N}), {{"input_precision", std::string(precision)}});
  kb.store(cp, kb.op(OpKind::Reshape, {d}, T(dout, {M * N})));
  auto dev = interp();
  auto ba = dev.upload(a), bb = dev.upload(b), bc = dev.upload(acc);
  dev(kb.kernel(), {1}, ba, bb, bc);
  return bc.template download<TO>();
}

float tf32(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  u += 0xfffu + ((u >> 13) & 1u);
  return std::bit_cast<float>(u & ~0x1fffu);
}

}  // namespace

TEST_CASE("interp: dot of bf16, f32 (tf32 and ieee) and i8 inputs", "[interp]") {
  constexpr int M = 16, N = 32, K = 64;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> af(M * K), bf_(K * N), acc(M * N);
  for (auto& v : af) v = u(rng);
  for (auto& v : bf_) v = u(rng);
  for (auto& v : acc) v = u(rng);
  auto ref = [&](auto round_in) {
    std::vector<float> r(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = acc[size_t(i * N + j)];
        for (int k = 0; k < K; ++k) s += double(round_in(af[size_t(i * K + k)])) * double(round_in(bf_[size_t(k * N + j)]));
        r[size_t(i * N + j)] = float(s);
      }
    return r;
  };
  SECTION("ieee f32") { check_bits(run_dot<float, float>(M, N, K, af, bf_, acc, "ieee"), ref([](float x) { return x; })); }
  SECTION("tf32 rounds the inputs to 10 mantissa bits") {
    auto got = run_dot<float, float>(M, N, K, af, bf_, acc, "tf32");
    check_bits(got, ref(tf32));
    CHECK(got != run_dot<float, float>(M, N, K, af, bf_, acc, "ieee"));
  }
  SECTION("bf16") {
    std::vector<tl::bf16> ab(af.begin(), af.end()), bb(bf_.begin(), bf_.end());
    check_bits(run_dot<tl::bf16, float>(M, N, K, ab, bb, acc, "ieee"), ref([](float x) { return bf(x); }));
  }
  SECTION("i8 accumulates exactly in i32") {
    std::vector<int8_t> ai(M * K), bi(K * N);
    std::vector<int32_t> ci(M * N);
    for (auto& v : ai) v = int8_t(int(rng() % 256) - 128);
    for (auto& v : bi) v = int8_t(int(rng() % 256) - 128);
    for (auto& v : ci) v = int32_t(rng() % 1000) - 500;
    ai[0] = bi[0] = -128;
    auto got = run_dot<int8_t, int32_t>(M, N, K, ai, bi, ci, "ieee");
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        int32_t s = ci[size_t(i * N + j)];
        for (int k = 0; k < K; ++k) s += int32_t(ai[size_t(i * K + k)]) * int32_t(bi[size_t(k * N + j)]);
        CHECK(got[size_t(i * N + j)] == s);
      }
  }
}

// ---------------------------------------------------------------------------
// Control flow, program ids, assert, print

TEST_CASE("interp: for loops run ceil((hi - lo) / step) times: 0, 1, 2 and many", "[interp]") {
  // out = sum of iv over the loop, and the number of trips.
  KernelBuilder kb("loop", {P(DType::i32), S(DType::i32), S(DType::i32), S(DType::i32)});
  Value* zero = kb.ci(S(DType::i32), 0);
  auto res = kb.for_loop(kb.arg(1), kb.arg(2), kb.arg(3), {zero, zero}, [&](Value* iv, std::vector<Value*> c) {
    return std::vector<Value*>{kb.op(OpKind::Add, {c[0], iv}, S(DType::i32)),
                               kb.op(OpKind::Add, {c[1], kb.ci(S(DType::i32), 1)}, S(DType::i32))};
  });
  kb.store(kb.arg(0), res[0]);
  kb.store(kb.ptrs(kb.arg(0), kb.ci(S(DType::i32), 1)), res[1]);
  auto dev = interp();
  auto out = dev.alloc<int32_t>(2);
  auto run = [&](int lo, int hi, int step) {
    dev(kb.kernel(), {1}, out, lo, hi, step);
    return out.download<int32_t>();
  };
  CHECK(run(0, 0, 1) == std::vector<int32_t>{0, 0});
  CHECK(run(5, 2, 1) == std::vector<int32_t>{0, 0});
  CHECK(run(3, 4, 1) == std::vector<int32_t>{3, 1});
  CHECK(run(0, 64, 32) == std::vector<int32_t>{32, 2});
  CHECK(run(0, 65, 32) == std::vector<int32_t>{96, 3});
  CHECK(run(-10, 1000, 7) == std::vector<int32_t>{[] { int s = 0; for (int i = -10; i < 1000; i += 7) s += i; return s; }(), 145});
}

TEST_CASE("interp: loop-carried values may be swapped, constant or tiles", "[interp]") {
  // Fibonacci with yield (b, a + b), a loop-invariant carried tile and a
  // tile accumulator.
  KernelBuilder kb("fib", {P(DType::i64), P(DType::f32), S(DType::i32)});
  Value* a0 = kb.ci(S(DType::i64), 0);
  Value* b0 = kb.ci(S(DType::i64), 1);
  Value* inv = kb.cf(T(DType::f32, {8}), 2.0);
  Value* acc = kb.cf(T(DType::f32, {8}), 0.0);
  Value* lanes = kb.op(OpKind::Cast, {kb.arange(8)}, T(DType::f32, {8}));
  auto res = kb.for_loop(kb.ci(S(DType::i32), 0), kb.arg(2), kb.ci(S(DType::i32), 1), {a0, b0, inv, acc},
                         [&](Value*, std::vector<Value*> c) {
                           Value* sum = kb.op(OpKind::Add, {c[0], c[1]}, S(DType::i64));
                           Value* acc2 = kb.op(OpKind::Add, {c[3], kb.op(OpKind::Mul, {lanes, c[2]}, lanes->type)}, lanes->type);
                           return std::vector<Value*>{c[1], sum, inv, acc2};
                         });
  kb.store(kb.arg(0), res[0]);
  kb.store(kb.ptrs(kb.arg(1), kb.arange(8)), kb.op(OpKind::Add, {res[3], res[2]}, lanes->type));
  auto dev = interp();
  auto fib = dev.alloc<int64_t>(1);
  auto tile = dev.alloc<float>(8);
  dev(kb.kernel(), {1}, fib, tile, 90);
  CHECK(fib.download<int64_t>()[0] == 2880067194370816120ll);
  auto t = tile.download<float>();
  for (int i = 0; i < 8; ++i) CHECK(t[size_t(i)] == 180.0f * float(i) + 2.0f);
}

TEST_CASE("interp: nested loops and if with results", "[interp]") {
  KernelBuilder kb("nested", {P(DType::i32)});
  Value* pid = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* zero = kb.ci(S(DType::i32), 0);
  Value* one = kb.ci(S(DType::i32), 1);
  Value* four = kb.ci(S(DType::i32), 4);
  auto outer = kb.for_loop(zero, four, one, {zero}, [&](Value* i, std::vector<Value*> c) {
    auto inner = kb.for_loop(zero, i, one, {c[0]}, [&](Value* j, std::vector<Value*> d) {
      return std::vector<Value*>{kb.op(OpKind::Add, {d[0], j}, S(DType::i32))};
    });
    return inner;
  });
  Value* even = kb.cmp("eq", kb.op(OpKind::Rem, {pid, kb.ci(S(DType::i32), 2)}, S(DType::i32)), zero);
  auto r = kb.if_(even, {S(DType::i32)}, [&] { return std::vector<Value*>{outer[0]}; },
                  [&] { return std::vector<Value*>{kb.op(OpKind::Neg, {outer[0]}, S(DType::i32))}; });
  kb.store(kb.ptrs(kb.arg(0), pid), r[0]);
  auto dev = interp();
  auto out = dev.alloc<int32_t>(3);
  dev(kb.kernel(), {3}, out);
  // sum over i < 4 of sum over j < i of j = 0 + 0 + 1 + 3 = 4
  CHECK(out.download<int32_t>() == std::vector<int32_t>{4, -4, 4});
}

TEST_CASE("interp: a zero step is an error when the loop would run", "[interp]") {
  KernelBuilder kb("step0", {S(DType::i32)});
  kb.at(21);
  Value* zero = kb.ci(S(DType::i32), 0);
  kb.for_loop(zero, kb.ci(S(DType::i32), 4), kb.arg(0), {}, [&](Value*, std::vector<Value*>) { return std::vector<Value*>{}; });
  auto dev = interp();
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {1}, 0), "test.cpp:21: for loop step must be positive, found 0 in program (0, 0, 0)");
}

TEST_CASE("interp: the grid runs x fastest; program_id and num_programs", "[interp]") {
  KernelBuilder kb("order", {P(DType::i32), P(DType::i32)});
  Value* x = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* y = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(1)}});
  Value* z = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(2)}});
  Value* nx = kb.op(OpKind::NumPrograms, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* ny = kb.op(OpKind::NumPrograms, {}, S(DType::i32), {{"axis", int64_t(1)}});
  Value* lin = kb.op(OpKind::Add, {x, kb.op(OpKind::Mul, {nx, kb.op(OpKind::Add, {y, kb.op(OpKind::Mul, {ny, z}, S(DType::i32))}, S(DType::i32))}, S(DType::i32))}, S(DType::i32));
  Value* ticket = kb.op(OpKind::AtomicRmw, {kb.arg(0), kb.ci(S(DType::i32), 1)}, S(DType::i32), {{"kind", std::string("add")}});
  kb.store(kb.ptrs(kb.arg(1), lin), ticket);
  auto dev = interp();
  auto counter = dev.upload(std::vector<int32_t>{0});
  auto out = dev.alloc<int32_t>(24);
  dev(kb.kernel(), {4, 3, 2}, counter, out);
  auto o = out.download<int32_t>();
  for (int i = 0; i < 24; ++i) CHECK(o[size_t(i)] == i);
  dev(kb.kernel(), {0, 3, 2}, counter, out);  // an empty grid runs nothing
  CHECK(counter.download<int32_t>()[0] == 24);
}

TEST_CASE("interp: a failed assert names its line, message, index and program", "[interp]") {
  KernelBuilder kb("check", {P(DType::i32)});
  Value* x = kb.load(kb.ptrs(kb.arg(0), kb.arange(8)));
  Value* ok = kb.cmp("ge", x, kb.ci(T(DType::i32, {8}), 0));
  kb.at(33);
  kb.op0(OpKind::Assert, {ok}, {{"msg", std::string("x must be >= 0")}, {"file", std::string("user.cpp")}, {"line", int64_t(99)}});
  auto dev = interp();
  auto good = dev.upload(std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  dev(kb.kernel(), {2}, good);
  auto bad = dev.upload(std::vector<int32_t>{0, 1, 2, -3, 4, 5, 6, 7});
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {2}, bad),
                      "user.cpp:99: device assertion failed: x must be >= 0 at index [3] in program (0, 0, 0)");
}

TEST_CASE("interp: print writes one line per program", "[interp]") {
  KernelBuilder kb("show", {P(DType::f32)});
  Value* pid = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* x = kb.op(OpKind::Reshape, {kb.load(kb.ptrs(kb.arg(0), kb.arange(4)))}, T(DType::f32, {2, 2}));
  kb.op0(OpKind::Print, {pid, x}, {{"prefix", std::string("x =")}});
  tl::interp::Memory mem;
  uint64_t addr = mem.allocate(16);
  float host[4] = {0.5f, -1.0f, 0.1f, 3.0f};
  std::memcpy(mem.host(addr, 16), host, 16);
  std::ostringstream os;
  auto prog = tl::interp::compile(kb.fn());
  tl::interp::run(*prog, {2}, {tl::interp::ArgValue::integer(int64_t(addr))}, mem, {&os});
  CHECK(os.str() == "x = pid (0, 0, 0): 0, [[0.5, -1], [0.1, 3]]\nx = pid (1, 0, 0): 1, [[0.5, -1], [0.1, 3]]\n");
  mem.release(addr);
}

TEST_CASE("interp: an unsupported op/dtype combination is rejected with its line", "[interp]") {
  KernelBuilder kb("bad", {P(DType::f32)});
  Value* x = kb.load(kb.arg(0));
  kb.at(61);
  kb.op(OpKind::Shl, {x, x}, S(DType::f32));
  REQUIRE_THROWS_WITH(tl::interp::compile(kb.fn()), "test.cpp:61: interp: 'shl' is an integer op, found operands of f32");
}
