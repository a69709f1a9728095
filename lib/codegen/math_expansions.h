// Double-precision transcendental functions as straight-line expansions over
// +, -, *, /, fma, sqrt, rint, selects and 64-bit integer operations: what
// every GPU target lowers, with no vendor math library at run time (not
// every LLVM back end has a libcall for llvm.exp/log/sin on f64).
//
// Each algorithm is written once, as a template over an emitter E, so that
// the code the GPU runs is the code the host test measures:
// lib/codegen/math_emitter.h instantiates it with an IRBuilder emitter, and
// tests/unit/test_math_expansions.cpp with plain doubles, measuring the ulp
// error against long double on random points over the whole range and on
// edge cases. E provides:
//   types V (an f64 value), I (an i64 value), B (a predicate);
//   e.c(double) -> V and e.i(int64_t) -> I, constants;
//   V + - * / and unary -, with V or double operands, each an IEEE
//   operation rounded once (the IR emitter allows no contraction), and
//   < <= > >= == (ordered) and != (unordered) giving B; B & | ^ !;
//   I + - & | ~ (wrapping), << and >> (arithmetic) by a constant;
//   e.fma(a, b, c), e.sqrt(x), e.rint(x) (to nearest even), e.fmin/e.fmax
//   (an operand that is NaN gives the other), e.sel(b, x, y) on V and I,
//   e.bits(V) -> I, e.from_bits(I) -> V, e.to_int(V) -> I (of an integer
//   value within +-2^62), e.to_double(I) (signed), e.eq/e.ilt/e.ult(I, I)
//   -> B, e.mul_lo/e.umul_hi(I, I) -> I (the low and high halves of the
//   unsigned 128-bit product), e.shl/e.lshr(I, I) (by 0 to 63),
//   e.table(name, words, index) -> I (words[index] of a constant uint64_t
//   array, named for the IR; index in range),
//   and e.if_(B cond, then_fn, else_values) -> std::array<V, N>: then_fn()'s
//   values where cond holds, else_values elsewhere (a branch around rare
//   work).
//
// Accuracy, measured by the [math] test over the whole double range and
// documented in docs/language.md: see each function. Special values follow
// C's <math.h> (NaN in, NaN out; exp overflows to inf and underflows through
// the subnormals to 0; log of 0 is -inf, of a negative number NaN; sin, cos
// of inf NaN). The constants come from scripts/fit-math-f64.py (mpmath).
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <limits>

namespace tl::codegen::math {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ------------------------------------------------------------------ helpers

// 2^k for an integer k in [-1022, 1023], built from its exponent field.
template <class E>
typename E::V pow2i(E& e, typename E::I k) {
  return e.from_bits((k + int64_t(1023)) << 52);
}

template <class E>
typename E::V abs(E& e, typename E::V x) {
  return e.from_bits(e.bits(x) & INT64_MAX);
}

// |x| with the sign of s.
template <class E>
typename E::V copysign(E& e, typename E::V x, typename E::V s) {
  return e.from_bits((e.bits(x) & INT64_MAX) | (e.bits(s) & INT64_MIN));
}

// a + b = s + t exactly (Knuth's TwoSum, any magnitudes).
template <class E>
void two_sum(E&, typename E::V a, typename E::V b, typename E::V& s, typename E::V& t) {
  s = a + b;
  auto bb = s - a;
  t = (a - (s - bb)) + (b - bb);
}

// c[0] + c[1] x + ... by Horner's rule in fma.
template <class E, size_t N>
typename E::V poly(E& e, typename E::V x, const double (&c)[N]) {
  auto p = e.c(c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) p = e.fma(p, x, e.c(c[i]));
  return p;
}

// ------------------------------------------------------------------ exp family

inline constexpr double kInvLn2 = 0x1.71547652b82fep+0;  // 1/ln2, double-double
inline constexpr double kInvLn2Lo = 0x1.777d0ffda0d24p-56;
inline constexpr double kLn2 = 0x1.62e42fefa39efp-1;  // ln2, double-double
inline constexpr double kLn2Lo = 0x1.abc9e3b39803fp-56;
inline constexpr double kLn2Hi42 = 0x1.62e42fefa3800p-1;  // 42 bits: k times it is exact for |k| < 2^11
inline constexpr double kLn2Lo42 = 0x1.ef35793c76730p-45;

// (e^r - 1 - r) / r^2 on |r| <= ln2/2, degree 10 (error 2^-58.4).
inline constexpr double kExpQ[] = {0x1.0000000000000p-1,  0x1.5555555555557p-3,  0x1.5555555555556p-5,
                                   0x1.11111111100dfp-7,  0x1.6c16c16c162d6p-10, 0x1.a01a01abe6323p-13,
                                   0x1.a01a01a6d7831p-16, 0x1.71de0237484cdp-19, 0x1.27e4db67ac2b0p-22,
                                   0x1.af4ddda1c08cdp-26, 0x1.1f72fc83bcbc7p-29};

// e^(r + rc) - 1 - r for |r| <= ln2/2 and |rc| <= ulp(r): r^2 q(r) plus the
// small rc folded in as (1 + r) rc. It is below 0.07, so its rounding
// errors stay far below the last place of 1 + r + it.
template <class E>
typename E::V exp_tail(E& e, typename E::V r, typename E::V rc) {
  return e.fma(r * r, poly(e, r, kExpQ), e.fma(r, rc, rc));
}

// e^(r + rc): 1 + r exactly as a double-double, then the tail.
template <class E>
typename E::V exp_reduced(E& e, typename E::V r, typename E::V rc) {
  auto ph = 1.0 + r;
  auto pl = (1.0 - ph) + r;
  return ph + (pl + exp_tail(e, r, rc));
}

// x + xl = k ln2 + r + rc, |r| <= ln2/2, for |x| <= 746 and |xl| tiny beside
// |x|: r1 = x - k ln2_hi is exact (k ln2_hi has 53 bits, and so does the
// difference), and rc holds what rounding r = r1 + t lost.
template <class E>
void exp_reduce(E& e, typename E::V x, typename E::V xl, typename E::V& kd, typename E::V& r,
                typename E::V& rc) {
  kd = e.rint(x * kInvLn2);
  auto r1 = e.fma(kd, e.c(-kLn2Hi42), x);
  auto t = e.fma(kd, e.c(-kLn2Lo42), xl);
  r = r1 + t;
  rc = (r1 - r) + t;
}

// p 2^kd for an integer kd in [-1076, 1024], in two exact steps, the last of
// which rounds once into the subnormals or overflows to inf.
template <class E>
typename E::V scale(E& e, typename E::V p, typename E::V kd) {
  auto k = e.to_int(kd);
  auto k1 = k >> 1;
  return p * pow2i(e, k1) * pow2i(e, k - k1);
}

// e^(x + xl) (erf's e^(-x^2) as well as exp).
template <class E>
typename E::V exp_dd(E& e, typename E::V x, typename E::V xl) {
  auto xc = e.fmin(e.fmax(x, e.c(-746.0)), e.c(710.0));  // beyond: 0 or inf; NaN becomes -746 here
  typename E::V kd, r, rc;
  exp_reduce(e, xc, xl, kd, r, rc);
  return scale(e, exp_reduced(e, r, rc), kd);
}

// exp: within 1 ulp.
template <class E>
typename E::V exp(E& e, typename E::V x) {
  return e.sel(x != x, x, exp_dd(e, x, e.c(0.0)));
}

// exp2: 2^k e^(r ln2), r = x - k exact, r ln2 in double-double; within 1 ulp.
template <class E>
typename E::V exp2(E& e, typename E::V x) {
  auto xc = e.fmin(e.fmax(x, e.c(-1080.0)), e.c(1030.0));
  auto kd = e.rint(xc);
  auto r = xc - kd;
  auto rh = r * kLn2;
  auto rl = e.fma(r, e.c(kLn2Lo), e.fma(r, e.c(kLn2), -rh));
  return e.sel(x != x, x, scale(e, exp_reduced(e, rh, rl), kd));
}

// e^y - 1 = th + tl (double-double) for |y| <= 50 (tanh's):
// 2^k (r + tail) + (2^k - 1), each sum kept exactly.
template <class E>
void expm1_dd(E& e, typename E::V y, typename E::V& th, typename E::V& tl) {
  typename E::V kd, r, rc;
  exp_reduce(e, y, e.c(0.0), kd, r, rc);
  auto tail = exp_tail(e, r, rc);
  auto sh = r + tail;  // |r| > |tail|: sh + sl is exact
  auto sl = (r - sh) + tail;
  auto p2 = pow2i(e, e.to_int(kd));
  typename E::V t;
  two_sum(e, p2 * sh, p2 - 1.0, th, t);  // both exact
  tl = e.fma(p2, sl, t);
}

// ------------------------------------------------------------------ log family

// (2 atanh(sqrt z) / sqrt z - 2) / z on z <= ((sqrt2 - 1)/(sqrt2 + 1))^2, degree 8.
inline constexpr double kLogP[] = {0x1.5555555555555p-1, 0x1.9999999999998p-2, 0x1.2492492492959p-2,
                                   0x1.c71c71c64c8c3p-3, 0x1.745d17d353835p-3, 0x1.3b137b3463734p-3,
                                   0x1.111d27415aa5ap-3, 0x1.debedb2d30f49p-4, 0x1.e6afccd2df7b4p-4};

// For positive finite x: x = 2^kd (1 + f), 1 + f in [sqrt(1/2), sqrt(2)),
// and log(1 + f) = hi + lo in double-double, fdlibm's form
// f - f^2/2 + s (f^2/2 + R), s = f / (2 + f), log(1 + f) = 2s + s R, with
// f^2/2 split exactly.
template <class E>
void log_parts(E& e, typename E::V x, typename E::V& kd, typename E::V& hi, typename E::V& lo) {
  auto sub = x < 0x1p-1022;
  auto xs = e.sel(sub, x * 0x1p54, x);
  auto bits = e.bits(xs);
  auto k = (bits - int64_t(0x3fe6a09e667f3bcd)) >> 52;  // the bits of sqrt(1/2)
  auto m = e.from_bits(bits - (k << 52));
  kd = e.to_double(k) - e.sel(sub, e.c(54.0), e.c(0.0));
  auto f = m - 1.0;  // exact
  auto s = f / (f + 2.0);
  auto z = s * s;
  auto R = z * poly(e, z, kLogP);
  auto hf = 0.5 * f;
  auto hfsq = hf * f;
  auto hfsq_lo = e.fma(hf, f, -hfsq);
  hi = f - hfsq;
  lo = (((f - hi) - hfsq) - hfsq_lo) + s * (hfsq + R);  // (f - hi) - hfsq is exact
}

template <class E>
typename E::V sane_log_arg(E& e, typename E::V x) {
  return e.sel((x > 0.0) & (x < kInf), x, e.c(1.0));
}

// log and log2's special values over `r`, computed from sane_log_arg(x).
template <class E>
typename E::V log_special(E& e, typename E::V x, typename E::V r) {
  r = e.sel(x == kInf, x, r);
  r = e.sel(x == 0.0, e.c(-kInf), r);
  return e.sel((x < 0.0) | (x != x), e.c(kNaN), r);
}

// log x = k ln2 + hi + lo: within 1 ulp.
template <class E>
typename E::V log(E& e, typename E::V x) {
  typename E::V kd, hi, lo;
  log_parts(e, sane_log_arg(e, x), kd, hi, lo);
  auto kh = kd * kLn2Hi42;  // exact
  auto w = kh + hi;         // |kh| >= |hi| unless k = 0: w + wl is exact
  auto wl = (kh - w) + hi;
  return log_special(e, x, w + (wl + e.fma(kd, e.c(kLn2Lo42), lo)));
}

// log2 x = k + (hi + lo) / ln2, the product in double-double: within 1 ulp.
template <class E>
typename E::V log2(E& e, typename E::V x) {
  typename E::V kd, hi, lo;
  log_parts(e, sane_log_arg(e, x), kd, hi, lo);
  auto vh = hi * kInvLn2;
  auto vl = e.fma(hi, e.c(kInvLn2Lo), e.fma(lo, e.c(kInvLn2), e.fma(hi, e.c(kInvLn2), -vh)));
  auto w = kd + vh;  // |kd| >= 1 > |vh| unless k = 0
  vl = vl + ((kd - w) + vh);
  return log_special(e, x, w + vl);
}

// ------------------------------------------------------------------ rsqrt

// 1/sqrt(x), then one Newton step on the exact residual 1 - x y^2 (x y split
// exactly by an fma), which leaves one rounding: within 1 ulp.
template <class E>
typename E::V rsqrt(E& e, typename E::V x) {
  auto y = 1.0 / e.sqrt(x);
  auto th = x * y;
  auto tl = e.fma(x, y, -th);
  auto res = e.fma(-tl, y, e.fma(-th, y, e.c(1.0)));
  auto better = e.fma(0.5 * y, res, y);
  return e.sel((x > 0.0) & (x < kInf), better, y);  // 0, inf, negative, NaN: 1/sqrt(x)'s
}

// ------------------------------------------------------------------ sin, cos

inline constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
inline constexpr double kPiO2[] = {0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54, -0x1.f1976b7ed8fbcp-110};
// (sin(sqrt z)/sqrt z - 1) / z and (cos(sqrt z) - 1 + z/2) / z^2 on z <= (pi/4)^2, degree 7.
inline constexpr double kSinS[] = {-0x1.5555555555555p-3, 0x1.1111111111111p-7,  -0x1.a01a01a01a019p-13,
                                   0x1.71de3a556c2c8p-19, -0x1.ae64567e73212p-26, 0x1.61245fb506d74p-33,
                                   -0x1.ae7c53cc422c9p-41, 0x1.9242bc285ffe3p-49};
inline constexpr double kCosC[] = {0x1.5555555555555p-5,   -0x1.6c16c16c16c17p-10, 0x1.a01a01a01a019p-16,
                                   -0x1.27e4fb7789d98p-22, 0x1.1eed8eff336bep-29,  -0x1.939749544896ap-37,
                                   0x1.ae7ce8e075fb7p-45,  -0x1.65d2c0599b525p-53};

// Below this |x|: x = k pi/2 + rh + rl by Cody and Waite's reduction, pi/2
// in three doubles (161 bits), with fma: the first product and difference
// are exact (they are for |x| < 2^50), the rest double-double, which leaves
// an absolute error below |k| 2^-158 < 2^-118. No double is nearer than
// 2^-60.9 to a multiple of pi/2 (Muller, "Elementary Functions", 11.3), so
// the reduced argument keeps a relative error below 2^-57. From here on:
// Payne and Hanek's reduction, which is exact to 2^-124.
inline constexpr double kCodyWaiteLimit = 0x1p40;

template <class E>
void reduce_cody_waite(E& e, typename E::V x, typename E::V& rh, typename E::V& rl, typename E::V& kd) {
  kd = e.rint(x * kTwoOverPi);
  auto r1 = e.fma(kd, e.c(-kPiO2[0]), x);  // exact
  auto p2h = kd * kPiO2[1];
  auto p2l = e.fma(kd, e.c(kPiO2[1]), -p2h);  // exact
  typename E::V s, t;
  two_sum(e, r1, -p2h, s, t);
  auto low = e.fma(kd, e.c(-kPiO2[2]), t - p2l);
  rh = s + low;
  rl = (s - rh) + low;
}

// 2/pi in 64-bit words, most significant first, after one zero word (so
// that a window may start before its first bit): Payne and Hanek's table.
inline constexpr uint64_t kTwoOverPiBits[] = {
    0,                  0xa2f9836e4e441529, 0xfc2757d1f534ddc0, 0xdb6295993c439041, 0xfe5163abdebbc561,
    0xb7246e3a424dd2e0, 0x06492eea09d1921c, 0xfe1deb1cb129a73e, 0xe88235f52ebb4484, 0xe99c7026b45f7e41,
    0x3991d639835339f4, 0x9c845f8bbdf9283b, 0x1ff897ffde05980f, 0xef2f118b5a0a6d1f, 0x6d367ecf27cb09b7,
    0x4f463f669e5fea2d, 0x7527bac7ebe5f17b, 0x3d0739f78a5292ea, 0x6bfb5fb11f8d5d08, 0x56033046fc7b6bab};

// x = k pi/2 + rh + rl for finite |x| >= 2^-10. With |x| = m 2^E (m a 53-bit
// integer) and 2/pi = sum b_j 2^-j, the bits j < E - 1 add multiples of 4 to
// x 2/pi: drop them and take the 192 bits from j = E - 1 (a window W), so
// that x 2/pi = m W 2^-190 (mod 4) up to 2^-137; m W mod 2^192 gives the
// quadrant (its top 2 bits) and 126 bits of fraction (the rest, < 2^-126, is
// dropped). The fraction, moved to [-1/2, 1/2), becomes a double-double
// times pi/2.
template <class E>
void reduce_payne_hanek(E& e, typename E::V x, typename E::V& rh, typename E::V& rl, typename E::V& kd) {
  using I = typename E::I;
  using V = typename E::V;
  auto bits = e.bits(x);
  auto exp_field = (bits >> 52) & int64_t(0x7ff);
  I m = (bits & int64_t(0xfffffffffffff)) | int64_t(1) << 52;
  // Bit j of 2/pi is bit g = j + 63 of the table; j = E - 1, E = exp_field - 1075.
  auto g = exp_field - int64_t(1013);
  auto word = g >> 6, shift = g & int64_t(63);
  auto at = [&](int64_t d) { return e.table("two_over_pi", kTwoOverPiBits, word + d); };
  auto a0 = at(0), a1 = at(1), a2 = at(2), a3 = at(3);
  auto back = e.i(63) - shift;
  auto window = [&](I a, I b) { return e.shl(a, shift) | e.lshr(e.lshr(b, back), e.i(1)); };
  I w0 = window(a0, a1), w1 = window(a1, a2), w2 = window(a2, a3);
  // m W mod 2^192 = r2 2^128 + r1 2^64 (+ the dropped low word).
  I lo1 = e.mul_lo(m, w1);
  I r1 = e.umul_hi(m, w2) + lo1;
  I r2 = e.mul_lo(m, w0) + e.umul_hi(m, w1) + e.sel(e.ult(r1, lo1), e.i(1), e.i(0));
  // The fraction in units of 2^-128, signed: f = fh 2^64 + fl in [-2^127, 2^127).
  I fh = (r2 << 2) | e.lshr(r1, e.i(62));
  I fl = r1 << 2;
  auto neg = e.ilt(fh, e.i(0));
  I q = e.lshr(r2, e.i(62)) + e.sel(neg, e.i(1), e.i(0));
  // |f| (a 128-bit negation where negative), as a double-double fraction.
  I ah = e.sel(neg, ~fh + e.sel(e.eq(fl, e.i(0)), e.i(1), e.i(0)), fh);
  I al = e.sel(neg, e.i(0) - fl, fl);
  V top = e.to_double(e.lshr(ah, e.i(11))) * 0x1p-53;
  V rest = e.fma(e.to_double(ah & int64_t(0x7ff)), e.c(0x1p-64), e.to_double(e.lshr(al, e.i(11))) * 0x1p-117);
  V f1, f2;
  two_sum(e, top, rest, f1, f2);
  // times pi/2
  V ph = f1 * kPiO2[0];
  V pl = e.fma(f1, e.c(kPiO2[0]), -ph) + e.fma(f1, e.c(kPiO2[1]), f2 * kPiO2[0]);
  V sh = ph + pl, sl = (ph - sh) + pl;
  // The sign of the fraction, then of x.
  auto flip = neg ^ (x < 0.0);
  rh = e.sel(flip, -sh, sh);
  rl = e.sel(flip, -sl, sl);
  kd = e.to_double(e.sel(x < 0.0, e.i(0) - q, q));
}

// sin and cos of rh + rl, |rh| <= pi/4 (a little more).
template <class E>
void sincos_reduced(E& e, typename E::V rh, typename E::V rl, typename E::V& s, typename E::V& c) {
  auto z = rh * rh;
  auto zl = e.fma(rh, rh, -z);
  // sin(rh + rl) = rh + rh z S(z) + rl (1 - z/2)
  s = rh + e.fma(z * rh, poly(e, z, kSinS), e.fma(-0.5 * z, rl, rl));
  // cos(rh + rl) = (1 - z/2) + z^2 C(z) - rh rl, with 1 - z/2 = w + its exact error
  auto hz = 0.5 * z;
  auto w = 1.0 - hz;
  c = w + ((((1.0 - w) - hz) - 0.5 * zl) + e.fma(z * z, poly(e, z, kCosC), -(rh * rl)));
}

// sin (quarter 0) or cos (quarter 1) of x: within 1 ulp over the whole range.
template <class E>
typename E::V sin_cos(E& e, typename E::V x, int quarter) {
  using V = typename E::V;
  auto ax = abs(e, x);
  auto small = ax < kCodyWaiteLimit;
  V rh, rl, kd;
  reduce_cody_waite(e, e.sel(small, x, e.c(0.0)), rh, rl, kd);  // NaN, inf, large: 0 here
  auto large = (!small) & (ax < kInf);
  auto red = e.if_(large, [&] {
    V h, l, k;
    reduce_payne_hanek(e, e.sel(large, x, e.c(kCodyWaiteLimit)), h, l, k);
    return std::array<V, 3>{h, l, k};
  }, std::array<V, 3>{rh, rl, kd});
  V s, c;
  sincos_reduced(e, red[0], red[1], s, c);
  auto q = e.to_int(red[2]) + int64_t(quarter);
  auto r = e.sel(e.eq(q & int64_t(1), e.i(0)), s, c);
  r = e.sel(e.eq(q & int64_t(2), e.i(0)), r, -r);
  r = e.sel(ax < kInf, r, e.c(kNaN));              // inf, NaN: NaN
  return quarter == 0 ? e.sel(x == 0.0, x, r) : r;  // sin(-0) = -0
}

template <class E>
typename E::V sin(E& e, typename E::V x) {
  return sin_cos(e, x, 0);
}
template <class E>
typename E::V cos(E& e, typename E::V x) {
  return sin_cos(e, x, 1);
}

// ------------------------------------------------------------------ tanh

// tanh |x| = -t / (t + 2), t = e^(-2|x|) - 1, below 1, and 1 - 2 / (t + 2),
// t = e^(2|x|) - 1, from 1 on (no cancellation either way); 1 from 22 on.
// t is a double-double, and the quotient is refined once on it (one
// division in all): within 1 ulp.
template <class E>
typename E::V tanh(E& e, typename E::V x) {
  using V = typename E::V;
  auto a = e.fmin(abs(e, x), e.c(22.0));
  auto big = a >= 1.0;
  V th, tl, dh, dl;
  expm1_dd(e, e.sel(big, 2.0 * a, -2.0 * a), th, tl);
  two_sum(e, th, e.c(2.0), dh, dl);
  dl = dl + tl;
  V nh = e.sel(big, e.c(2.0), -th), nl = e.sel(big, e.c(0.0), -tl);
  auto inv = 1.0 / dh;
  auto q = nh * inv;
  q = e.fma(e.fma(-q, dl, e.fma(-q, dh, nh) + nl), inv, q);
  auto r = copysign(e, e.sel(big, 1.0 - q, q), x);
  return e.sel(x != x, x, r);
}

// ------------------------------------------------------------------ erf

inline constexpr double kTwoOverSqrtPi = 0x1.20dd750429b6dp+0;  // double-double
inline constexpr double kTwoOverSqrtPiLo = 0x1.1ae3a914fed80p-56;
// (erf(sqrt z)/sqrt z - 2/sqrt(pi)) / z on z <= 1, degree 17.
inline constexpr double kErfE[] = {
    -0x1.812746b0379e7p-2,  0x1.ce2f21a042be2p-4,  -0x1.b82ce31288b51p-6, 0x1.565bcd0e6a53fp-8,
    -0x1.c02db40040b86p-11, 0x1.f9a326f9b89b7p-14, -0x1.f4d25c3e0c2d5p-17, 0x1.b9e6c9dc64d36p-20,
    -0x1.5f742ec43446cp-23, 0x1.fcc57203f9ce0p-27, -0x1.51d717efcb59ep-30, 0x1.9e6ad075de589p-34,
    -0x1.d844bbb94f005p-38, 0x1.f67aa75b5b3a8p-42, -0x1.f4f6b57156872p-46, 0x1.d282ffba3a625p-50,
    -0x1.83e0177e75316p-54, 0x1.c1ef1480204e3p-59};
// erfc(a + t) e^((a + t)^2) for t in [0, b - a], degree 17, on [1, 2), [2, 3.5), [3.5, 6].
inline constexpr double kErfcF[3][18] = {
    {0x1.b5d8780f956b2p-2, -0x1.17c4e3f17c050p-2, 0x1.3c27283c32c79p-3, -0x1.44837f89056cfp-4,
     0x1.33cad0ef17db2p-5, -0x1.10fcf1adb81d2p-6, 0x1.c8cb94750b1c1p-8, -0x1.6af2574af8443p-9,
     0x1.1351e029ea733p-10, -0x1.907b099ac8f2bp-12, 0x1.182a5f28e8134p-13, -0x1.798490a1e1024p-15,
     0x1.e7bff28b5e3d3p-17, -0x1.2874d49007172p-18, 0x1.439c594f7e579p-20, -0x1.226ea2ed11d37p-22,
     0x1.702a91dc10053p-25, -0x1.ddfe13df3446dp-29},
    {0x1.058671b52c776p-2, -0x1.b57034efd3f6cp-4, 0x1.5672b9ea13a52p-5, -0x1.fa9d3ac93c45ep-7,
     0x1.649072129e8b4p-8, -0x1.e028e835ffde8p-10, 0x1.369ff4b2e92d4p-11, -0x1.8381c5cbbb579p-13,
     0x1.d3772bd044629p-15, -0x1.11481d44c9f99p-16, 0x1.36039346ec7adp-18, -0x1.54547fc1941e0p-20,
     0x1.652009a7fe314p-22, -0x1.5b1594916233cp-24, 0x1.2651e642d781dp-26, -0x1.8c389425a5071p-29,
     0x1.6c8e7c23ebb82p-32, -0x1.4ed68d0a00254p-36},
    {0x1.3e0a99a0ee914p-3, -0x1.5285d2eb1ef1ep-5, 0x1.5d58113333f3fp-7, -0x1.5e5d7e97a1477p-9,
     0x1.5632134a5741dp-11, -0x1.460aba5d0c4ffp-13, 0x1.2f8371361295ap-15, -0x1.1469f00826c64p-17,
     0x1.ed0ef0a7eb48dp-20, -0x1.aec0ff658ce0cp-22, 0x1.6fadd5c8c16f4p-24, -0x1.2f87fc3dfa9acp-26,
     0x1.d8a4f4e267f69p-29, -0x1.4b611782e057ep-31, 0x1.8692c186b1f22p-34, -0x1.6000a6162ac8dp-37,
     0x1.a46727b5f349fp-41, -0x1.e9ddbe7787f65p-46}};

// erf |x| = |x| (2/sqrt(pi) + z E(z)) below 1; 1 - e^(-x^2) F(|x|) up to 6
// (x^2 split exactly; F's coefficients picked by select); 1 from 6 on
// (erfc 6 < 2^-55): within 1.5 ulp (E's rounding errors, near |x| = 1).
template <class E>
typename E::V erf(E& e, typename E::V x) {
  using V = typename E::V;
  auto a = e.fmin(abs(e, x), e.c(6.0));
  auto z = a * a;
  auto zl = e.fma(a, a, -z);
  // a (c0 + z E(z)): a c0 split exactly, z's rounding error kept.
  auto ch = a * kTwoOverSqrtPi;
  auto cl = e.fma(a, e.c(kTwoOverSqrtPi), -ch);
  auto Ez = poly(e, z, kErfE);
  V small = ch + e.fma(a, e.fma(z, Ez, e.fma(zl, Ez, e.c(kTwoOverSqrtPiLo))), cl);
  auto p2 = a >= 2.0, p3 = a >= 3.5;
  auto pick = [&](double c1, double c2, double c3) { return e.sel(p3, e.c(c3), e.sel(p2, e.c(c2), e.c(c1))); };
  V t = a - pick(1.0, 2.0, 3.5);
  V F = pick(kErfcF[0][17], kErfcF[1][17], kErfcF[2][17]);
  for (int i = 17; i-- > 0;) F = e.fma(F, t, pick(kErfcF[0][i], kErfcF[1][i], kErfcF[2][i]));
  V large = 1.0 - exp_dd(e, -z, -zl) * F;
  V r = copysign(e, e.sel(a < 1.0, small, large), x);
  return e.sel(x != x, x, r);
}

}  // namespace tl::codegen::math
