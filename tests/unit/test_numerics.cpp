// Numerics of the user-facing operations (notes/frontend_api.md): each is
// traced through tl::compile and run on the interpreter against a plain C++
// reference on random inputs, at odd sizes handled with masks. References
// follow ops.def: each op computed exactly and rounded once to its dtype,
// reductions in the balanced-tree order, scans sequentially, dot rounding
// once per call.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

constexpr int BLOCK = 256;
constexpr int N_ODD = 1000;  // four programs, the last one partly masked

std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}
std::vector<int32_t> random_ints(size_t n, int32_t lo, int32_t hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> u(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

bool same(float a, float b) { return std::isnan(a) ? std::isnan(b) : std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }
float r32(double v) { return float(v); }  // round once to f32

// --- f32 elementwise: out = OP(x, y) --------------------------------------
template <int OP>
void f32_binary(ptr<float> x, ptr<float> y, ptr<float> out, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;
  auto a = load(x + offs, mask, 1.0f);
  auto b = load(y + offs, mask, 1.0f);
  auto r = [&] {
    if constexpr (OP == 0) return a + b;
    else if constexpr (OP == 1) return a - b;
    else if constexpr (OP == 2) return a * b;
    else if constexpr (OP == 3) return a / b;
    else if constexpr (OP == 4) return a % b;
    else if constexpr (OP == 5) return minimum(a, b);
    else if constexpr (OP == 6) return maximum(a, b);
    else if constexpr (OP == 7) return where(a < b, a, b * 2.0f);
    else if constexpr (OP == 8) return fma(a, b, a);
    else if constexpr (OP == 9) return clamp(a, -0.5f, 0.5f);
    else if constexpr (OP == 10) return -a + 3.0f;
    else return a * 2 + 1;  // C++ ints weakly typed: stay f32
  }();
  store(out + offs, r, mask);
}

double f32_binary_ref(int op, float a, float b) {
  switch (op) {
    case 0: return r32(double(a) + b);
    case 1: return r32(double(a) - b);
    case 2: return r32(double(a) * b);
    case 3: return r32(double(a) / b);
    case 4: return r32(std::fmod(double(a), double(b)));
    case 5: return std::isnan(a) ? b : std::isnan(b) ? a : std::min(a, b);
    case 6: return std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b);
    case 7: return a < b ? a : r32(double(b) * 2);
    case 8: return std::fmaf(a, b, a);
    case 9: return std::isnan(a) ? -0.5f : std::min(std::max(a, -0.5f), 0.5f);  // maximum(NaN, lo) = lo
    case 10: return r32(double(-a) + 3);
    default: return r32(double(r32(double(a) * 2)) + 1);
  }
}

template <int OP>
void check_f32_binary() {
  auto dev = Device::get("interp");
  auto hx = random_floats(N_ODD, -4, 4, 10 + OP), hy = random_floats(N_ODD, -4, 4, 20 + OP);
  hx[7] = std::nanf("");
  hy[8] = std::nanf("");
  auto bx = dev.upload(hx), by = dev.upload(hy);
  auto bo = dev.alloc<float>(N_ODD);
  dev(compile(f32_binary<OP>), Grid{cdiv(N_ODD, BLOCK)}, bx, by, bo, N_ODD);
  auto o = bo.download<float>();
  for (int i = 0; i < N_ODD; ++i) {
    INFO("op " << OP << ", element " << i << ": " << hx[size_t(i)] << ", " << hy[size_t(i)]);
    CHECK(same(o[size_t(i)], float(f32_binary_ref(OP, hx[size_t(i)], hy[size_t(i)]))));
  }
}

// --- f32 math functions ----------------------------------------------------
template <int OP>
void f32_math(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  auto a = load(x + offs, mask, 1.0f);
  auto r = [&] {
    if constexpr (OP == 0) return exp(a);
    else if constexpr (OP == 1) return exp2(a);
    else if constexpr (OP == 2) return log(abs(a));
    else if constexpr (OP == 3) return log2(abs(a));
    else if constexpr (OP == 4) return sqrt(abs(a));
    else if constexpr (OP == 5) return rsqrt(abs(a));
    else if constexpr (OP == 6) return sin(a);
    else if constexpr (OP == 7) return cos(a);
    else if constexpr (OP == 8) return tanh(a);
    else if constexpr (OP == 9) return erf(a);
    else if constexpr (OP == 10) return floor(a);
    else if constexpr (OP == 11) return ceil(a);
    else return sigmoid(a);
  }();
  store(out + offs, r, mask);
}

float f32_math_ref(int op, float a) {
  double x = a, ax = std::fabs(x);
  switch (op) {
    case 0: return r32(std::exp(x));
    case 1: return r32(std::exp2(x));
    case 2: return r32(std::log(ax));
    case 3: return r32(std::log2(ax));
    case 4: return r32(std::sqrt(ax));
    case 5: return r32(1.0 / std::sqrt(ax));
    case 6: return r32(std::sin(x));
    case 7: return r32(std::cos(x));
    case 8: return r32(std::tanh(x));
    case 9: return r32(std::erf(x));
    case 10: return r32(std::floor(x));
    case 11: return r32(std::ceil(x));
    default: {  // 1 / (1 + exp(-x)), each step rounded
      float e = r32(std::exp(-x));
      float d = r32(double(e) + 1);
      return r32(1.0 / d);
    }
  }
}

template <int OP>
void check_f32_math() {
  auto dev = Device::get("interp");
  auto hx = random_floats(N_ODD, -6, 6, 30 + OP);
  auto bx = dev.upload(hx);
  auto bo = dev.alloc<float>(N_ODD);
  dev(compile(f32_math<OP>), Grid{cdiv(N_ODD, BLOCK)}, bx, bo, N_ODD);
  auto o = bo.download<float>();
  for (int i = 0; i < N_ODD; ++i) {
    INFO("op " << OP << ", x = " << hx[size_t(i)]);
    CHECK(same(o[size_t(i)], f32_math_ref(OP, hx[size_t(i)])));
  }
}

// --- i32 operations ----------------------------------------------------------
template <int OP>
void i32_binary(ptr<int32_t> x, ptr<int32_t> y, ptr<int32_t> out, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  auto a = load(x + offs, mask, 1);
  auto b = load(y + offs, mask, 1);
  auto r = [&] {
    if constexpr (OP == 0) return a + b;
    else if constexpr (OP == 1) return a - b;
    else if constexpr (OP == 2) return a * b;
    else if constexpr (OP == 3) return a / b;
    else if constexpr (OP == 4) return a % b;
    else if constexpr (OP == 5) return a & b;
    else if constexpr (OP == 6) return a | b;
    else if constexpr (OP == 7) return a ^ b;
    else if constexpr (OP == 8) return a << (b & 31);
    else if constexpr (OP == 9) return a >> (b & 31);
    else if constexpr (OP == 10) return cast<int32_t>(a < b) + cast<int32_t>(a == b) * 2 + cast<int32_t>(a >= b) * 4;
    else if constexpr (OP == 11) return ~a + (-b);
    else if constexpr (OP == 12) return minimum(a, b) * 3 - maximum(a, b);
    else return where(a != b, a, b + 1);
  }();
  store(out + offs, r, mask);
}

int32_t i32_ref(int op, int32_t a, int32_t b) {
  auto w = [](int64_t v) { return int32_t(uint32_t(uint64_t(v))); };
  switch (op) {
    case 0: return w(int64_t(a) + b);
    case 1: return w(int64_t(a) - b);
    case 2: return w(int64_t(a) * b);
    case 3: return b == -1 ? w(-int64_t(a)) : a / b;
    case 4: return b == -1 ? 0 : a % b;
    case 5: return a & b;
    case 6: return a | b;
    case 7: return a ^ b;
    case 8: return int32_t(uint32_t(a) << (b & 31));
    case 9: return a >> (b & 31);
    case 10: return (a < b) + (a == b) * 2 + (a >= b) * 4;
    case 11: return w(int64_t(~a) - b);
    case 12: return w(int64_t(std::min(a, b)) * 3 - std::max(a, b));
    default: return a != b ? a : w(int64_t(b) + 1);
  }
}

template <int OP>
void check_i32() {
  auto dev = Device::get("interp");
  auto hx = random_ints(N_ODD, INT32_MIN, INT32_MAX, 40 + OP), hy = random_ints(N_ODD, -1000, 1000, 50 + OP);
  for (auto& v : hy)
    if (v == 0) v = 7;
  hx[3] = INT32_MIN;
  hy[3] = -1;
  hx[4] = hy[4];
  auto bx = dev.upload(hx), by = dev.upload(hy);
  auto bo = dev.alloc<int32_t>(N_ODD);
  dev(compile(i32_binary<OP>), Grid{cdiv(N_ODD, BLOCK)}, bx, by, bo, N_ODD);
  auto o = bo.download<int32_t>();
  for (int i = 0; i < N_ODD; ++i) {
    INFO("op " << OP << ": " << hx[size_t(i)] << ", " << hy[size_t(i)]);
    CHECK(o[size_t(i)] == i32_ref(OP, hx[size_t(i)], hy[size_t(i)]));
  }
}

// --- narrow types and casts --------------------------------------------------
void narrow(ptr<bf16> x, ptr<bf16> y, ptr<bf16> sum, ptr<f16> half, ptr<int32_t> ints, ptr<uint8_t> bytes,
            ptr<int32_t> bits, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  auto a = load(x + offs, mask);  // [BLOCK] bf16
  auto b = load(y + offs, mask);
  store(sum + offs, a * b + a * 2.0f, mask);  // bf16 result per op
  auto f = cast<float>(a) * 1000.0f;           // [BLOCK] f32
  store(half + offs, cast<f16>(f), mask);
  store(ints + offs, cast<int32_t>(f * 1e6f), mask);  // saturates
  store(bytes + offs, cast<uint8_t>(cast<int32_t>(f)), mask);  // wraps to 8 bits
  store(bits + offs, bitcast<int32_t>(f), mask);
}

// --- reductions and scans over [ROWS, COLS] with a column mask ---------------
constexpr int ROWS = 16, COLS = 64;
void reductions(ptr<float> x, ptr<float> sums, ptr<float> maxs, ptr<float> mins, ptr<int32_t> amax,
                ptr<int32_t> amin, ptr<float> csum, ptr<float> colsum, scalar<int32_t> ncols) {
  auto r = col(arange(0, ROWS));               // [ROWS, 1]
  auto c = row(arange(0, COLS));               // [1, COLS]
  auto mask = broadcast_to(c < ncols, {ROWS, COLS});
  auto offs = r * ncols + c;                   // [ROWS, COLS]
  auto v = load(x + offs, mask, 0.0f);         // [ROWS, COLS] f32
  auto rows = arange(0, ROWS);
  store(sums + rows, sum(v, 1));
  store(maxs + rows, max(v, 1));
  store(mins + rows, min(v, 1));
  store(amax + rows, argmax(v, 1));
  store(amin + rows, argmin(v, 1));
  store(csum + offs, cumsum(v, 1), mask);
  store(colsum + arange(0, COLS), sum(v, 0));
}

float tree_sum(std::vector<float> v) {
  while (v.size() > 1) {
    std::vector<float> next;
    for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(v[i] + v[i + 1]);
    if (v.size() % 2) next.push_back(v.back());
    v = next;
  }
  return v[0];
}

// --- dot over odd sizes --------------------------------------------------------
constexpr int BM = 32, BN = 32, BK = 16;
template <class E, int PREC>
void matmul(ptr<E> a, ptr<E> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto rm = program_id(0) * BM + arange(0, BM);  // [BM]
  auto rn = program_id(1) * BN + arange(0, BN);  // [BN]
  auto acc = zeros<float>({BM, BN});
  for (auto k : range(0, K, BK)) {
    auto rk = k + arange(0, BK);                 // [BK]
    auto ta = load(a + col(rm) * K + row(rk), col(rm < M) & row(rk < K), 0.0f);  // [BM, BK]
    auto tb = load(b + col(rk) * N + row(rn), col(rk < K) & row(rn < N), 0.0f);  // [BK, BN]
    if constexpr (PREC == 0) acc = dot(ta, tb, acc);
    else acc = dot(ta, tb, acc, {.input_precision = "ieee"});
  }
  store(c + col(rm) * N + row(rn), acc, col(rm < M) & row(rn < N));
}

float tf32(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  u += 0xfffu + ((u >> 13) & 1u);
  return std::bit_cast<float>(u & ~0x1fffu);
}

// --- shapes and atomics ---------------------------------------------------------
void shapes(ptr<int32_t> x, ptr<int32_t> t, ptr<int32_t> j, ptr<int32_t> s) {
  auto offs = col(arange(0, 8)) * 4 + row(arange(0, 4));  // [8, 4]
  auto v = load(x + offs);                                 // [8, 4]
  store(t + col(arange(0, 4)) * 8 + row(arange(0, 8)), trans(v));
  auto flat = reshape(v, {32});
  auto joined = join(flat, flat * 10);                     // [32, 2]
  store(j + arange(0, 64), reshape(joined, {64}));
  auto [lo, hi] = split(joined);
  store(s + arange(0, 32), hi - lo);
}

void atomic_histogram(ptr<int32_t> bins, ptr<int32_t> counts, ptr<int32_t> maxes, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto mask = offs < n;
  auto b = load(bins + offs, mask, 0);
  atomic_add(counts + b, full<int32_t>({BLOCK}, 1), mask);
  atomic_max(maxes + b, offs, mask);
}

// C++ numbers cast to scalars (Triton's tl.cast of a constant).
void cast_numbers(ptr<f16> h, ptr<int32_t> i, ptr<uint8_t> u, ptr<double> d) {
  store(h, cast<f16>(1.5f));
  store(i, cast<int32_t>(-2.75));       // truncates, as a tile's cast
  store(u, cast<uint8_t>(300LL));       // wraps to 44, as a tile's cast
  store(d, cast<double>('a'));
}

// where with C++ numbers on both sides, typed as Triton types Python's.
void where_numbers(ptr<int32_t> i, ptr<float> f, ptr<uint32_t> u, ptr<int64_t> l, ptr<bool> b, scalar<int32_t> n) {
  auto offs = arange(0, BLOCK);
  auto odd = (offs % 2) == 1;
  auto wi = where(odd, 1, 0);
  auto wf = where(odd, 2.5, -1);
  auto wu = where(odd, 3u, uint8_t(7));
  auto wl = where(odd, int64_t(1) << 40, 5);
  auto wb = where(odd, false, true);
  static_assert(std::is_same_v<decltype(wi), tile<int32_t>> && std::is_same_v<decltype(wf), tile<float>> &&
                std::is_same_v<decltype(wu), tile<uint32_t>> && std::is_same_v<decltype(wl), tile<int64_t>> &&
                std::is_same_v<decltype(wb), tile<bool>>);
  auto m = offs < n;
  store(i + offs, wi, m);
  store(f + offs, wf, m);
  store(u + offs, wu, m);
  store(l + offs, wl, m);
  store(b + offs, wb, m);
}

}  // namespace

TEST_CASE("numerics: C++ numbers cast to scalars", "[numerics]") {
  auto dev = Device::get("interp");
  auto h = dev.alloc<f16>(1);
  auto i = dev.alloc<int32_t>(1);
  auto u = dev.alloc<uint8_t>(1);
  auto d = dev.alloc<double>(1);
  dev(compile(cast_numbers, {.name = "cast_numbers"}), Grid{1}, h, i, u, d);
  CHECK(float(h.download<f16>()[0]) == 1.5f);
  CHECK(i.download<int32_t>()[0] == -2);
  CHECK(u.download<uint8_t>()[0] == 44);
  CHECK(d.download<double>()[0] == 97.0);
}

TEST_CASE("numerics: where with C++ numbers on both sides", "[numerics]") {
  auto dev = Device::get("interp");
  const int n = 100;
  auto i = dev.alloc<int32_t>(n);
  auto f = dev.alloc<float>(n);
  auto u = dev.alloc<uint32_t>(n);
  auto l = dev.alloc<int64_t>(n);
  auto b = dev.alloc<bool>(n);
  dev(compile(where_numbers, {.name = "where_numbers"}), Grid{1}, i, f, u, l, b, n);
  auto hi = i.download<int32_t>();
  auto hf = f.download<float>();
  auto hu = u.download<uint32_t>();
  auto hl = l.download<int64_t>();
  std::vector<bool> hb = b.download<bool>();  // bools, a byte each on the device
  for (int k = 0; k < n; ++k) {
    INFO("element " << k);
    bool odd = k % 2 == 1;
    REQUIRE(hi[size_t(k)] == (odd ? 1 : 0));
    REQUIRE(hf[size_t(k)] == (odd ? 2.5f : -1.0f));
    REQUIRE(hu[size_t(k)] == (odd ? 3u : 7u));
    REQUIRE(hl[size_t(k)] == (odd ? int64_t(1) << 40 : 5));
    REQUIRE(hb[size_t(k)] == !odd);
  }
  // And a std::vector<bool> uploaded comes back as it went.
  std::vector<bool> bits(n);
  for (int k = 0; k < n; ++k) bits[size_t(k)] = k % 3 == 0;
  CHECK(dev.upload(bits).download<bool>() == bits);
}

TEST_CASE("numerics: f32 arithmetic, where, fma, clamp and weak C++ scalars", "[numerics]") {
  check_f32_binary<0>();
  check_f32_binary<1>();
  check_f32_binary<2>();
  check_f32_binary<3>();
  check_f32_binary<4>();
  check_f32_binary<5>();
  check_f32_binary<6>();
  check_f32_binary<7>();
  check_f32_binary<8>();
  check_f32_binary<9>();
  check_f32_binary<10>();
  check_f32_binary<11>();
}

TEST_CASE("numerics: f32 math functions", "[numerics]") {
  check_f32_math<0>();
  check_f32_math<1>();
  check_f32_math<2>();
  check_f32_math<3>();
  check_f32_math<4>();
  check_f32_math<5>();
  check_f32_math<6>();
  check_f32_math<7>();
  check_f32_math<8>();
  check_f32_math<9>();
  check_f32_math<10>();
  check_f32_math<11>();
  check_f32_math<12>();
}

TEST_CASE("numerics: i32 arithmetic, bitwise, shifts, comparisons", "[numerics]") {
  check_i32<0>();
  check_i32<1>();
  check_i32<2>();
  check_i32<3>();
  check_i32<4>();
  check_i32<5>();
  check_i32<6>();
  check_i32<7>();
  check_i32<8>();
  check_i32<9>();
  check_i32<10>();
  check_i32<11>();
  check_i32<12>();
  check_i32<13>();
}

TEST_CASE("numerics: bf16 arithmetic and casts", "[numerics]") {
  auto dev = Device::get("interp");
  auto fx = random_floats(N_ODD, -3, 3, 60), fy = random_floats(N_ODD, -3, 3, 61);
  std::vector<bf16> hx(fx.begin(), fx.end()), hy(fy.begin(), fy.end());
  auto bx = dev.upload(hx), by = dev.upload(hy);
  auto sum = dev.alloc<bf16>(N_ODD);
  auto half = dev.alloc<f16>(N_ODD);
  auto ints = dev.alloc<int32_t>(N_ODD);
  auto bytes = dev.alloc<uint8_t>(N_ODD);
  auto bits = dev.alloc<int32_t>(N_ODD);
  dev(compile(narrow), Grid{cdiv(N_ODD, BLOCK)}, bx, by, sum, half, ints, bytes, bits, N_ODD);
  auto s = sum.download<bf16>();
  auto h = half.download<f16>();
  auto in = ints.download<int32_t>();
  auto by8 = bytes.download<uint8_t>();
  auto bt = bits.download<int32_t>();
  for (int i = 0; i < N_ODD; ++i) {
    float a = hx[size_t(i)], b = hy[size_t(i)];
    float ab = float(bf16(float(double(a) * b)));
    float a2 = float(bf16(float(double(a) * 2)));
    CHECK(float(s[size_t(i)]) == float(bf16(float(double(ab) + a2))));
    float f = r32(double(a) * 1000);
    CHECK(float(h[size_t(i)]) == float(f16(f)));
    double big = double(r32(double(f) * 1e6f));
    CHECK(in[size_t(i)] == (big >= 2147483648.0 ? INT32_MAX : big < -2147483648.0 ? INT32_MIN : int32_t(big)));
    CHECK(by8[size_t(i)] == uint8_t(uint32_t(int32_t(f))));
    CHECK(bt[size_t(i)] == std::bit_cast<int32_t>(f));
  }
}

TEST_CASE("numerics: sum, max, min, argmax, argmin, cumsum with a column mask", "[numerics]") {
  auto dev = Device::get("interp");
  const int ncols = 50;
  auto hx = random_floats(size_t(ROWS * ncols), -10, 10, 70);
  for (int i = 0; i < ROWS; ++i) hx[size_t(i * ncols + 3)] = hx[size_t(i * ncols + 40)];  // ties
  auto bx = dev.upload(hx);
  auto sums = dev.alloc<float>(ROWS), maxs = dev.alloc<float>(ROWS), mins = dev.alloc<float>(ROWS);
  auto amax = dev.alloc<int32_t>(ROWS), amin = dev.alloc<int32_t>(ROWS);
  auto csum = dev.upload(std::vector<float>(size_t(ROWS * ncols), -1.0f));
  auto colsum = dev.alloc<float>(COLS);
  dev(compile(reductions), Grid{1}, bx, sums, maxs, mins, amax, amin, csum, colsum, ncols);
  auto s = sums.download<float>(), mx = maxs.download<float>(), mn = mins.download<float>();
  auto ax = amax.download<int32_t>(), an = amin.download<int32_t>();
  auto cs = csum.download<float>(), cols = colsum.download<float>();
  for (int i = 0; i < ROWS; ++i) {
    std::vector<float> rowv(COLS, 0.0f);  // masked columns load 0
    for (int j = 0; j < ncols; ++j) rowv[size_t(j)] = hx[size_t(i * ncols + j)];
    CHECK(same(s[size_t(i)], tree_sum(rowv)));
    auto mxit = std::max_element(rowv.begin(), rowv.end());
    auto mnit = std::min_element(rowv.begin(), rowv.end());
    CHECK(mx[size_t(i)] == *mxit);
    CHECK(mn[size_t(i)] == *mnit);
    CHECK(ax[size_t(i)] == int32_t(mxit - rowv.begin()));  // first (lowest) index on ties
    CHECK(an[size_t(i)] == int32_t(mnit - rowv.begin()));
    float acc = 0;
    for (int j = 0; j < ncols; ++j) {
      acc = j == 0 ? rowv[0] : acc + rowv[size_t(j)];
      CHECK(same(cs[size_t(i * ncols + j)], acc));
    }
  }
  for (int j = 0; j < COLS; ++j) {
    std::vector<float> colv(ROWS, 0.0f);
    if (j < ncols)
      for (int i = 0; i < ROWS; ++i) colv[size_t(i)] = hx[size_t(i * ncols + j)];
    CHECK(same(cols[size_t(j)], tree_sum(colv)));
  }
}

TEST_CASE("numerics: dot over odd sizes: bf16, f32 tf32 (default) and ieee", "[numerics]") {
  auto dev = Device::get("interp");
  const int M = 40, N = 50, K = 70;
  auto fa = random_floats(size_t(M * K), -1, 1, 80), fb = random_floats(size_t(K * N), -1, 1, 81);
  // Reference: per K-block, sum exact products in double from the f32
  // accumulator and round once (one dot call per block).
  auto ref = [&](auto round_in) {
    std::vector<float> c(size_t(M * N));
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float acc = 0;
        for (int k0 = 0; k0 < K; k0 += BK) {
          double s = acc;
          for (int k = k0; k < std::min(K, k0 + BK); ++k)
            s += double(round_in(fa[size_t(i * K + k)])) * double(round_in(fb[size_t(k * N + j)]));
          acc = float(s);
        }
        c[size_t(i * N + j)] = acc;
      }
    return c;
  };
  Grid grid{uint32_t(cdiv(M, BM)), uint32_t(cdiv(N, BN))};
  auto bc = dev.alloc<float>(size_t(M * N));
  SECTION("bf16") {
    std::vector<bf16> ha(fa.begin(), fa.end()), hb(fb.begin(), fb.end());
    auto ba = dev.upload(ha), bb = dev.upload(hb);
    dev(compile(matmul<bf16, 0>), grid, ba, bb, bc, M, N, K);
    auto want = ref([](float x) { return float(bf16(x)); });
    auto got = bc.download<float>();
    for (size_t e = 0; e < want.size(); ++e) CHECK(same(got[e], want[e]));
  }
  SECTION("f32 defaults to tf32") {
    auto ba = dev.upload(fa), bb = dev.upload(fb);
    dev(compile(matmul<float, 0>), grid, ba, bb, bc, M, N, K);
    auto want = ref(tf32);
    auto got = bc.download<float>();
    for (size_t e = 0; e < want.size(); ++e) CHECK(same(got[e], want[e]));
  }
  SECTION("f32 ieee") {
    auto ba = dev.upload(fa), bb = dev.upload(fb);
    dev(compile(matmul<float, 1>), grid, ba, bb, bc, M, N, K);
    auto want = ref([](float x) { return x; });
    auto got = bc.download<float>();
    for (size_t e = 0; e < want.size(); ++e) CHECK(same(got[e], want[e]));
  }
}

TEST_CASE("numerics: trans, reshape, join, split", "[numerics]") {
  auto dev = Device::get("interp");
  auto hx = random_ints(32, -100, 100, 90);
  auto bx = dev.upload(hx);
  auto t = dev.alloc<int32_t>(32), j = dev.alloc<int32_t>(64), s = dev.alloc<int32_t>(32);
  dev(compile(shapes), Grid{1}, bx, t, j, s);
  auto to = t.download<int32_t>(), jo = j.download<int32_t>(), so = s.download<int32_t>();
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 4; ++c) CHECK(to[size_t(c * 8 + r)] == hx[size_t(r * 4 + c)]);
  for (int e = 0; e < 32; ++e) {
    CHECK(jo[size_t(2 * e)] == hx[size_t(e)]);
    CHECK(jo[size_t(2 * e + 1)] == hx[size_t(e)] * 10);
    CHECK(so[size_t(e)] == hx[size_t(e)] * 9);
  }
}

TEST_CASE("numerics: atomic_add and atomic_max histogram", "[numerics]") {
  auto dev = Device::get("interp");
  auto hb = random_ints(N_ODD, 0, 15, 91);
  auto bins = dev.upload(hb);
  auto counts = dev.upload(std::vector<int32_t>(16, 0));
  auto maxes = dev.upload(std::vector<int32_t>(16, -1));
  dev(compile(atomic_histogram), Grid{cdiv(N_ODD, BLOCK)}, bins, counts, maxes, N_ODD);
  std::vector<int32_t> want_counts(16, 0), want_max(16, -1);
  for (int i = 0; i < N_ODD; ++i) {
    ++want_counts[size_t(hb[size_t(i)])];
    want_max[size_t(hb[size_t(i)])] = i;
  }
  CHECK(counts.download<int32_t>() == want_counts);
  CHECK(maxes.download<int32_t>() == want_max);
}

// --- f64 dot accumulates in f64 ------------------------------------------
namespace {
void f64_dot_identity(ptr<double> out, ptr<double> a) {
  auto r = arange(0, 16);
  auto x = load(a + col(r) * 16 + row(r));                  // [16, 16] f64
  auto eye = cast<double>(col(r) == row(r));                // [16, 16] f64
  tile<double> y = dot(x, eye);                             // [16, 16] f64 accumulator
  store(out + col(r) * 16 + row(r), y);
}
}  // namespace

TEST_CASE("dot of f64 tiles accumulates in f64: a @ I == a exactly", "[numerics]") {
  Kernel k = compile(f64_dot_identity, {.name = "f64_dot_identity"});
  Device d = Device::get("interp");
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> ha(256);
  for (auto& v : ha) v = u(rng);  // 53-bit mantissas: f32 would round them
  auto a = d.upload(ha);
  auto out = d.alloc<double>(256);
  d(k, Grid{1}, out, a);
  d.synchronize();
  CHECK(out.download<double>() == ha);
}

namespace {
// Casts to bf16 of values just past a bf16 midpoint: rounding through f32
// first would land on the midpoint and round to even (down).
void narrow_from_wide(ptr<bf16> out, ptr<double> x, ptr<int64_t> i, ptr<int32_t> j) {
  auto k = arange(0, 4);  // [4] i32
  store(out + k, cast<bf16>(load(x + k)));
  store(out + 4 + k, cast<bf16>(load(i + k)));
  store(out + 8 + k, cast<bf16>(load(j + k)));
}
}  // namespace

TEST_CASE("casts to narrow floats round once: f64, i64 and i32 just past a midpoint", "[numerics]") {
  // 1 + 2^-8 is the midpoint of 1 and 1 + 2^-7 in bf16.
  const double above = 1 + 0x1p-8 + 0x1p-30, below = 1 + 0x1p-8 - 0x1p-30;
  CHECK(round_to(DType::bf16, above) == 1 + 0x1p-7);
  CHECK(round_to(DType::bf16, below) == 1.0);
  CHECK(round_to(DType::bf16, -above) == -(1 + 0x1p-7));
  CHECK(round_to(DType::f16, 1 + 0x1p-11 + 0x1p-40) == 1 + 0x1p-10);
  CHECK(round_to(DType::f8e4m3, 1 + 0x1p-4 + 0x1p-35) == 1 + 0x1p-3);
  CHECK(round_to(DType::bf16, 1 + 0x1p-8) == 1.0);  // the midpoint itself: to even
  CHECK(std::isinf(round_to(DType::bf16, 1e300)));
  CHECK(round_to(DType::bf16, 1e-300) == 0.0);
  // 2^30 + 2^22 is a bf16 midpoint; + 1 is above it (f32 would drop the 1).
  const int64_t i_above = (int64_t(1) << 30) + (int64_t(1) << 22) + 1;
  const int64_t big = (int64_t(1) << 60) + (int64_t(1) << 52) + 1;  // past a midpoint, beyond 2^53
  Device d = Device::get("interp");
  Kernel k = compile(narrow_from_wide, {.name = "narrow_from_wide"});
  auto x = d.upload(std::vector<double>{above, below, -above, 3.0});
  auto i = d.upload(std::vector<int64_t>{i_above, -i_above, big, std::numeric_limits<int64_t>::min()});
  auto j = d.upload(std::vector<int32_t>{int32_t(i_above), -int32_t(i_above), int32_t((1 << 30) + (1 << 22)), -7});
  auto out = d.alloc<bf16>(12);
  d(k, Grid{1}, out, x, i, j);
  d.synchronize();
  std::vector<float> got;
  for (bf16 v : out.download<bf16>()) got.push_back(float(v));
  const float a = float(1 + 0x1p-7), ia = float((int64_t(1) << 30) + (int64_t(1) << 23));
  CHECK(got == std::vector<float>{a, 1.0f, -a, 3.0f, ia, -ia, float((int64_t(1) << 60) + (int64_t(1) << 53)),
                                  -0x1p63f, ia, -ia, float(int64_t(1) << 30), -7.0f});
}

namespace {

// umulhi of i32, u32, i64 and u64 over 64 pairs, edge values included.
template <class T>
void mulhi_kernel(ptr<T> a, ptr<T> b, ptr<T> out) {
  auto offs = arange(0, 64);
  store(out + offs, umulhi(load(a + offs), load(b + offs)));
}

template <class T>
T mulhi_ref(T x, T y) {
  if constexpr (sizeof(T) == 8) {
    if constexpr (std::is_signed_v<T>) return T((__int128)x * y >> 64);
    else return T((unsigned __int128)x * y >> 64);
  } else {
    if constexpr (std::is_signed_v<T>) return T((int64_t)x * y >> 32);
    else return T((uint64_t)x * y >> 32);
  }
}

template <class T>
void check_mulhi() {
  auto dev = Device::get("interp");
  std::mt19937_64 rng(80 + sizeof(T) + std::is_signed_v<T>);
  std::vector<T> x(64), y(64);
  const T edges[] = {T(0), T(1), T(-1), std::numeric_limits<T>::max(), std::numeric_limits<T>::min(), T(2), T(3)};
  for (size_t i = 0; i < 64; ++i) {
    x[i] = i < 49 ? edges[i / 7] : T(rng());
    y[i] = i < 49 ? edges[i % 7] : T(rng());
  }
  auto out = dev.alloc<T>(64);
  dev(compile(mulhi_kernel<T>), Grid{1}, dev.upload(x), dev.upload(y), out);
  auto got = out.template download<T>();
  for (size_t i = 0; i < 64; ++i) {
    INFO(int64_t(x[i]) << " x " << int64_t(y[i]));
    CHECK(got[i] == mulhi_ref(x[i], y[i]));
  }
}

void mulhi_mixed(ptr<int32_t> a, ptr<uint32_t> b, ptr<int32_t> out) {
  auto offs = arange(0, 64);
  store(out + offs, umulhi(load(a + offs), load(b + offs)));
}
void mulhi_bool(ptr<int32_t> a, ptr<int32_t> out) {
  auto offs = arange(0, 64);
  auto x = load(a + offs) > 0;
  store(out + offs, cast<int32_t>(umulhi(x, x)));
}

}  // namespace

TEST_CASE("numerics: umulhi is the high half of the double-width product, by signedness", "[numerics]") {
  check_mulhi<int32_t>();
  check_mulhi<uint32_t>();
  check_mulhi<int64_t>();
  check_mulhi<uint64_t>();
  // A literal takes the tile's type; mixed signedness and bools are errors.
  REQUIRE_THROWS_WITH(compile(mulhi_mixed), Catch::Matchers::Contains("umulhi: expected integers of one signedness"));
  REQUIRE_THROWS_WITH(compile(mulhi_bool), Catch::Matchers::Contains("umulhi: expected integers wider than i1"));
}
