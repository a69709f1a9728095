// Random kernels: the generator, the tracer of a generated Program, the
// error model, buffers and comparison, shrinking, and running a check in a
// child process. See random_kernel.h for the approach.
//
// Error model (NVIDIA targets; what error_bounds computes). Each value v has
// a bound e(v) on |gpu - interpreter| per element. Inputs are bit-identical
// (e = 0). An op whose inputs have e = 0 and that both devices round
// correctly (ops.def: "computed exactly and rounded once") gives e = 0:
// add, sub, mul, fma, neg, abs, min, max, select, every cast and bitcast,
// div of every float type but f32, float rem (fmod is exact), floor, ceil,
// sqrt (sqrt.rn), integer ops; sum/max/min/argmax reductions too, because
// ops.def fixes their combine order (a balanced tree) for every back end.
// With inexact inputs, a correctly rounded op f gives
//   e(f) <= L * e(in) + 1 ulp(|f| max)        (each side rounds within 1/2 ulp)
// with L the Lipschitz constant of f over the inputs' intervals. Ops whose
// GPU form is an approximation add its documented error g and the
// interpreter's half ulp:  e(f) <= L * e(in) + g + 1/2 ulp.  The g used:
//   f32 div          div.full.f32, 2 ulp (ops.def; PTX ISA), plus 1/2 ulp for
//                    the divide-by-one-value path (lower_llvm.cpp: reciprocal
//                    then multiply): g = (2^-22 + 2^-24) |q| max
//   exp2             ex2.approx.f32: 2 ulp, g = 2^-22 |r| max (CUDA C++
//                    Programming Guide, intrinsic functions: exp2f)
//   exp              ex2.approx(fl(x * fl(log2 e))): the two roundings of the
//                    argument, 2^-23 |x| log2e relative, times ln 2 in the
//                    result: g = (2^-22 + 2^-23 |x| max) |r| max
//   log2             lg2.approx.f32: 2^-22 absolute in [0.5, 2], else 2 ulp
//                    (Guide: __log2f): g = 2^-22 max(1, |r| max)
//   log              fl(lg2(x) * fl(ln 2)): g = ln2 * g(log2) + 2^-23 |r| max
//   rsqrt            rsqrt.approx.f32: 2 ulp (Guide: rsqrtf), g = 2^-22 |r| max
//   sin, cos         sin/cos.approx.f32 on [-pi, pi]: 2^-21.41 and 2^-21.19
//                    absolute (Guide: __sinf, __cosf): g = 2^-21
//   tanh             tanh.approx.f32: relative 2^-10.987 (PTX ISA):
//                    g = 2^-10.98 |r| max
//   erf              the expansion in lower_llvm.cpp: erfc = t exp(P(t)),
//                    t = 1/(1 + |x|/2): fit 1.2e-7; t from div.full (3e-7
//                    absolute) times |P'(t)| <= 29.5; ten Horner steps of
//                    magnitude <= 8 rounding at 2^-21 each; the exp of an
//                    argument below 18 in magnitude (2e-6): g = 2e-5
//   f16, bf16, f8    computed in f32 and rounded: g(f32) + 1 ulp of the dtype
// Sums in another order than the interpreter's (scans, dots, and reductions
// of inexact inputs) use the worst-case bound of recursive summation,
// gamma_k = (1 + u)^k - 1 (Higham's k u / (1 - k u) where k u < 1) times the
// sum of magnitudes (Higham, Accuracy and Stability of Numerical Algorithms,
// 4.2), once for each device:
//   cumsum over n    e <= n e(x) + 2 gamma_(n-1) n |x| max
//   cumprod over n   e <= n |x|^(n-1) e(x) + 2 gamma_(n-1) |x|^n
//   dot over K       e <= K (|a| e(b) + |b| e(a) + e(a)e(b)) + e(acc)
//                         + 2 gamma_(K+1) (|acc| + K |a||b|), with u = 2^-23
//                    (matrix units may truncate instead of rounding), and f32
//                    inputs rounded to tf32 on different ways (RNE on the
//                    interpreter, truncation by mma): e(a) += 2^-10 |a|.
// With fp_fusion (the default) a multiply feeding an add may not be
// rounded on the GPU (one fma): such a multiply is inexact, e = 1/2 ulp.
// Comparisons, floor/ceil, float->int casts, argmax/argmin and float rem
// are discontinuous: the generator applies them to exact values only, and
// the model checks that it did.
#include "random_kernel.h"

#include "ir/ir.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <variant>

namespace randk {

using namespace tl;
using K = ir::OpKind;

namespace {

// ---- dtypes --------------------------------------------------------------------------

DType dt_of(int i) { return DType(i); }
int idx(DType d) { return int(d); }
bool isf(DType d) { return is_float(d); }
bool is_f8(DType d) { return d == DType::f8e4m3 || d == DType::f8e5m2; }
int mant_bits(DType d) {
  switch (d) {
    case DType::f8e4m3: return 3;
    case DType::f8e5m2: return 2;
    case DType::f16: return 10;
    case DType::bf16: return 7;
    case DType::f32: return 23;
    default: return 52;
  }
}
int min_exp(DType d) {
  switch (d) {
    case DType::f8e4m3: return -6;
    case DType::f8e5m2: case DType::f16: return -14;
    case DType::bf16: case DType::f32: return -126;
    default: return -1022;
  }
}
// Magnitudes the generator stays below (well inside each format's finite
// range; for f8e5m2 also where sums of two values are exact in f32).
double cap(DType d) {
  switch (d) {
    case DType::f8e4m3: return 64;
    case DType::f8e5m2: return 64;
    case DType::f16: return 2048;
    case DType::bf16: case DType::f32: case DType::f64: return 1 << 20;
    default: return 0;
  }
}
// Half an ulp of the largest magnitude `m` (at least half the smallest quantum).
double half_ulp(DType d, double m) {
  int e = m > 0 ? std::ilogb(m) : min_exp(d);
  e = std::max(e, min_exp(d));
  return std::ldexp(1.0, e - mant_bits(d) - 1);
}
double ulp(DType d, double m) { return 2 * half_ulp(d, m); }
double unit_roundoff(DType d) { return std::ldexp(1.0, -mant_bits(d) - 1); }
// (1 + u)^k - 1: the bound of k roundings' relative error, which Higham's
// gamma_k = k u / (1 - k u) bounds only while k u < 1 (past that gamma is
// negative: an f8 sum of 32 values, u = 2^-4, gave a bound of -264).
double gamma(int k, double u) { return std::expm1(k * std::log1p(u)); }

double int_min(DType d) {
  switch (d) {
    case DType::i1: case DType::u8: case DType::u32: case DType::u64: return 0;
    case DType::i8: return -128;
    case DType::i16: return -32768;
    case DType::i32: return -2147483648.0;
    default: return -9223372036854775808.0;
  }
}
double int_max(DType d) {
  switch (d) {
    case DType::i1: return 1;
    case DType::i8: return 127;
    case DType::i16: return 32767;
    case DType::i32: return 2147483647.0;
    case DType::i64: return 9223372036854775807.0;
    case DType::u8: return 255;
    case DType::u32: return 4294967295.0;
    default: return 18446744073709551615.0;
  }
}
double fmax_of(DType d) {
  switch (d) {
    case DType::f8e4m3: return 448;
    case DType::f8e5m2: return 57344;
    case DType::f16: return 65504;
    case DType::f64: return 1.7e308;
    default: return 3.4e38;
  }
}
// Every value of `from` is one of `to` (a conversion that never rounds).
bool widens(DType from, DType to) {
  return mant_bits(to) >= mant_bits(from) && min_exp(to) - mant_bits(to) <= min_exp(from) - mant_bits(from) &&
         fmax_of(to) >= fmax_of(from);
}
double maxabs(const Val& v) { return std::max(std::fabs(v.lo), std::fabs(v.hi)); }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r + "]";
}

// Input value distributions: region r of dtype d.
void region_interval(DType d, int r, double& lo, double& hi) {
  if (d == DType::i1) { lo = r == 2 ? 1 : 0; hi = 1; return; }
  if (isf(d)) {
    if (r == 0) { lo = -4; hi = 4; }
    else if (r == 1) { lo = 0.5; hi = 2; }
    else { lo = -8; hi = 8; }
    return;
  }
  if (r == 1) { lo = int_min(d); hi = int_max(d); return; }
  if (r == 2) { lo = 1; hi = 64; return; }
  if (is_unsigned(d)) { lo = 0; hi = 200; }
  else { lo = -100; hi = 100; }
}

// ---- the generator -----------------------------------------------------------------------

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x ^= x >> 31; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 29;
  return x;
}

const DType kAll[] = {DType::i1, DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u32,
                      DType::u64, DType::f8e4m3, DType::f8e5m2, DType::f16, DType::bf16, DType::f32, DType::f64};

struct Gen {
  Program& p;
  GenOptions opts;
  std::mt19937_64 rng, close_rng;
  int budget;
  int steps = 0;
  int next_id = 0, next_close_id = 1000000;
  int depth = 0;
  int cur_iv = -1;      // innermost loop's induction variable
  int cur_trips = 1;    // product of the enclosing loops' trip counts (for offsets)
  std::vector<std::vector<int>> scopes;
  std::vector<std::vector<Instr>*> blocks;
  std::map<std::string, int> avoided;

  Gen(Program& p, uint64_t seed, int budget, GenOptions o)
      : p(p), opts(o), rng(mix(seed, 1)), close_rng(mix(seed, 2)), budget(budget) {}

  uint64_t u(uint64_t n) { return n <= 1 ? 0 : rng() % n; }
  bool chance(double q) { return double(rng() >> 11) * 0x1.0p-53 < q; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[u(v.size())]; }

  void avoid(const std::string& why) { avoided[why]++; }

  int add_val(Val v) {
    p.vals.push_back(std::move(v));
    int id = int(p.vals.size()) - 1;
    scopes.back().push_back(id);
    return id;
  }
  // Loops and ifs reserve their id before their bodies (listing order).
  Instr& emit(Instr in, bool close = false) {
    if (in.id < 0) in.id = close ? next_close_id++ : next_id++;
    blocks.back()->push_back(std::move(in));
    return blocks.back()->back();
  }
  const Val& V(int id) const { return p.vals[size_t(id)]; }

  // Visible values matching `pred`, newest first preferred.
  template <class F>
  std::optional<int> find(F&& pred) {
    std::vector<int> c;
    for (auto& s : scopes)
      for (int id : s)
        if (pred(V(id))) c.push_back(id);
    if (c.empty()) return std::nullopt;
    // Bias towards recent values: deep chains of ops.
    size_t n = c.size();
    size_t k = chance(0.5) ? n - 1 - u(std::min<size_t>(n, 4)) : u(n);
    return c[k];
  }

  // ---- shapes
  std::vector<int64_t> pick_shape(int64_t max_numel = 2048) {
    int r = int(u(10));
    if (r == 0) return {};
    std::vector<int64_t> s;
    int lg = std::countr_zero(uint64_t(opts.max_numel));
    if (r < 5) s = {int64_t(1) << u(lg + 1)};
    else s = {int64_t(1) << u(std::min(lg, 6) + 1), int64_t(1) << u(std::min(lg, 6) + 1)};
    return shrink_to(s, max_numel);
  }
  static int64_t numel(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
  }
  static std::vector<int64_t> shrink_to(std::vector<int64_t> s, int64_t max) {
    while (numel(s) > max) *std::max_element(s.begin(), s.end()) /= 2;
    return s;
  }
  int64_t max_numel() const { return std::max<int64_t>(1, opts.max_numel / std::max(1, cur_trips)); }
  // A shape that broadcasts with `s` to `s` (same, scalar, or size-1 dims).
  std::vector<int64_t> compatible_shape(const std::vector<int64_t>& s) {
    switch (u(4)) {
      case 0: return {};
      case 1: {
        std::vector<int64_t> r = s;
        if (!r.empty()) r[u(r.size())] = 1;
        return r;
      }
      case 2:
        if (s.size() >= 2) return std::vector<int64_t>(s.begin() + 1, s.end());
        return s;
      default: return s;
    }
  }
  static bool broadcasts(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      int64_t x = a[a.size() - 1 - i], y = b[b.size() - 1 - i];
      if (x != y && x != 1 && y != 1) return false;
    }
    return true;
  }
  static std::vector<int64_t> bshape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> r(std::max(a.size(), b.size()));
    for (size_t i = 0; i < r.size(); ++i) {
      int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
      r[r.size() - 1 - i] = std::max(x, y);
    }
    return r;
  }

  DType pick_dtype() {
    // Weighted to the types kernels use most.
    static const DType common[] = {DType::f32, DType::f32, DType::bf16, DType::f16, DType::i32, DType::i32,
                                   DType::i1, DType::u32, DType::i64, DType::i8, DType::u8, DType::i16,
                                   DType::u64, DType::f8e4m3, DType::f8e5m2, DType::f64};
    return common[u(std::size(common))];
  }

  // Rounds a float interval outward to what `d` may hold.
  Val fval(DType d, std::vector<int64_t> shape, double lo, double hi, bool exact) {
    double h = half_ulp(d, std::max(std::fabs(lo), std::fabs(hi)));
    Val v;
    v.dt = d; v.shape = std::move(shape); v.lo = lo - h; v.hi = hi + h; v.exact = exact;
    return v;
  }
  Val ival(DType d, std::vector<int64_t> shape, double lo, double hi) {
    Val v;
    v.dt = d; v.shape = std::move(shape); v.exact = true;
    if (lo < int_min(d) || hi > int_max(d)) { lo = int_min(d); hi = int_max(d); }
    v.lo = lo; v.hi = hi;
    return v;
  }
  Val any_val(DType d, std::vector<int64_t> shape, double lo, double hi, bool exact) {
    return isf(d) ? fval(d, std::move(shape), lo, hi, exact) : ival(d, std::move(shape), lo, hi);
  }

  // ---- leaves
  int gen_load(DType d, std::vector<int64_t> shape, int region = -1) {
    Instr in;
    in.kind = Kind::Load;
    in.dt = d;
    in.shape = shape = shrink_to(shape, max_numel());
    in.region = region >= 0 ? region : int(u(kRegions));
    in.mask = shape.empty() ? int(u(2)) : int(u(shape.size() + 1));
    double lo, hi;
    region_interval(d, in.region, lo, hi);
    if (in.mask) {
      in.flag = chance(0.7);  // an `other` value (else 0)
      in.lit = d == DType::i1 ? double(u(2)) : isf(d) ? (chance(0.5) ? lo : 1.0) : lo;
      if (!in.flag) in.lit = 0;
      if (d == DType::i1) { lo = 0; }
      lo = std::min(lo, in.lit);
      hi = std::max(hi, in.lit);
    }
    if (cur_iv >= 0) in.args = {cur_iv};
    Val v;
    v.dt = d; v.shape = shape; v.lo = lo; v.hi = hi; v.exact = true;
    in.out = {add_val(v)};
    emit(std::move(in));
    return blocks.back()->back().out[0];
  }
  int gen_const(DType d, std::vector<int64_t> shape, double lit) {
    Instr in;
    in.kind = Kind::Const;
    in.dt = d;
    in.shape = shape;
    in.lit = lit;
    Val v;
    v.dt = d; v.shape = shape; v.lo = v.hi = lit; v.exact = true;
    in.out = {add_val(v)};
    emit(std::move(in));
    return blocks.back()->back().out[0];
  }
  // A value of dtype `d` whose shape broadcasts with `s`, satisfying `ok`,
  // found or loaded from `region`.
  template <class F>
  int operand_for(DType d, const std::vector<int64_t>& s, F&& ok, int region = -1) {
    if (chance(0.6))
      if (auto id = find([&](const Val& v) {
            return v.dt == d && !v.wild && broadcasts(v.shape, s) && bshape(v.shape, s).size() <= 3 &&
                   numel(bshape(v.shape, s)) <= max_numel() && ok(v);
          }))
        return *id;
    return gen_load(d, compatible_shape(s), region);
  }
  int any_value(std::function<bool(const Val&)> ok) {
    if (chance(0.8))
      if (auto id = find([&](const Val& v) { return !v.wild && ok(v); })) return *id;
    return -1;
  }

  // ---- ops
  Val binary_result(K op, const Val& a, const Val& b, bool& ok) {
    ok = true;
    DType d = a.dt;
    auto s = bshape(a.shape, b.shape);
    double c[4];
    if (isf(d)) {
      double lo, hi;
      bool exact = a.exact && b.exact;
      switch (op) {
        case K::Add: lo = a.lo + b.lo; hi = a.hi + b.hi; break;
        case K::Sub: lo = a.lo - b.hi; hi = a.hi - b.lo; break;
        case K::Mul:
          c[0] = a.lo * b.lo; c[1] = a.lo * b.hi; c[2] = a.hi * b.lo; c[3] = a.hi * b.hi;
          lo = *std::min_element(c, c + 4); hi = *std::max_element(c, c + 4);
          if (p.fp_fusion && !is_f8(d)) exact = false;
          break;
        case K::Div:
          if (!(b.lo >= 0.25 || b.hi <= -0.25)) { ok = false; return {}; }
          c[0] = a.lo / b.lo; c[1] = a.lo / b.hi; c[2] = a.hi / b.lo; c[3] = a.hi / b.hi;
          lo = *std::min_element(c, c + 4); hi = *std::max_element(c, c + 4);
          if (d == DType::f32) exact = false;
          break;
        case K::Rem:
          if (!(a.exact && b.exact && b.lo >= 0.25)) { ok = false; return {}; }
          lo = std::min(0.0, std::max(a.lo, -b.hi)); hi = std::max(0.0, std::min(a.hi, b.hi));
          break;
        case K::Minimum: lo = std::min(a.lo, b.lo); hi = std::min(a.hi, b.hi); break;
        case K::Maximum: lo = std::max(a.lo, b.lo); hi = std::max(a.hi, b.hi); break;
        default: ok = false; return {};
      }
      if (std::max(std::fabs(lo), std::fabs(hi)) > cap(d)) { ok = false; return {}; }
      return fval(d, s, lo, hi, exact);
    }
    if (d == DType::i1) {
      if (op != K::And && op != K::Or && op != K::Xor) { ok = false; return {}; }
      return ival(d, s, 0, 1);
    }
    double lo = int_min(d), hi = int_max(d);
    switch (op) {
      case K::Add: lo = a.lo + b.lo; hi = a.hi + b.hi; break;
      case K::Sub: lo = a.lo - b.hi; hi = a.hi - b.lo; break;
      case K::Mul:
        c[0] = a.lo * b.lo; c[1] = a.lo * b.hi; c[2] = a.hi * b.lo; c[3] = a.hi * b.hi;
        lo = *std::min_element(c, c + 4); hi = *std::max_element(c, c + 4);
        break;
      case K::Div:
      case K::Rem:
        if (b.lo < 1) { ok = false; return {}; }
        if (op == K::Div) { lo = std::min(0.0, a.lo); hi = std::max(0.0, a.hi); }
        else { lo = a.lo < 0 ? -(b.hi - 1) : 0; hi = a.hi > 0 ? b.hi - 1 : 0; }
        break;
      case K::And:
        if (a.lo >= 0 || b.lo >= 0) { lo = 0; hi = a.lo >= 0 && b.lo >= 0 ? std::min(a.hi, b.hi) : a.lo >= 0 ? a.hi : b.hi; }
        break;
      case K::Or: case K::Xor:
        if (a.lo >= 0 && b.lo >= 0 && std::max(a.hi, b.hi) < 1e15) {
          lo = 0; hi = std::exp2(std::ceil(std::log2(std::max(a.hi, b.hi) + 1))) - 1;
        }
        break;
      case K::Shl: break;
      case K::Shr: if (a.lo >= 0) { lo = 0; hi = a.hi; } break;
      case K::Minimum: lo = std::min(a.lo, b.lo); hi = std::min(a.hi, b.hi); break;
      case K::Maximum: lo = std::max(a.lo, b.lo); hi = std::max(a.hi, b.hi); break;
      default: ok = false; return {};
    }
    return ival(d, s, lo, hi);
  }

  bool gen_binary() {
    auto a = any_value([](const Val& v) { return true; });
    if (a < 0) a = gen_load(pick_dtype(), pick_shape(max_numel()));
    Val av = V(a);
    DType d = av.dt;
    std::vector<K> ops;
    if (d == DType::i1) ops = {K::And, K::Or, K::Xor};
    else if (isf(d)) ops = {K::Add, K::Sub, K::Mul, K::Div, K::Rem, K::Minimum, K::Maximum, K::Add, K::Mul};
    else ops = {K::Add, K::Sub, K::Mul, K::Div, K::Rem, K::And, K::Or, K::Xor, K::Shl, K::Shr, K::Minimum, K::Maximum};
    K op = pick(ops);
    bool needs_pos = op == K::Div || op == K::Rem;
    int b;
    if (needs_pos) {
      double min_lo = isf(d) ? 0.25 : 1;
      b = operand_for(d, av.shape, [&](const Val& v) { return v.lo >= min_lo && (op != K::Rem || v.exact); },
                      isf(d) ? 1 : 2);
    } else {
      b = operand_for(d, av.shape, [](const Val&) { return true; });
    }
    bool swap = !needs_pos && chance(0.5);
    const Val& x = V(swap ? b : a);
    const Val& y = V(swap ? a : b);
    bool ok;
    Val r = binary_result(op, x, y, ok);
    if (!ok || numel(r.shape) > max_numel() || r.shape.size() > 3) return false;
    Instr in;
    in.kind = Kind::Binary;
    in.op = op;
    in.args = {swap ? b : a, swap ? a : b};
    in.out = {add_val(r)};
    emit(std::move(in));
    return true;
  }

  // Mixed dtypes, promoted by the front end's rules.
  bool gen_mixed() {
    auto a = any_value([](const Val&) { return true; });
    if (a < 0) return false;
    DType da = V(a).dt, db = pick_dtype();
    if (da == db) return false;
    DType r = detail::promote(da, db);
    bool cmp = chance(0.3);
    Val av = V(a);
    int b = operand_for(db, av.shape, [](const Val&) { return true; });
    Val bv = V(b);
    // Both convert to r first: exactly, or rounded once (int -> float), the
    // same way on both devices.
    if (isf(r) && (maxabs(av) > cap(r) || maxabs(bv) > cap(r))) return false;
    if (cmp && isf(r) && !(av.exact && bv.exact)) return false;
    Val res;
    if (cmp) {
      res = ival(DType::i1, bshape(av.shape, bv.shape), 0, 1);
    } else {
      Val x = av, y = bv;
      x.dt = y.dt = r;
      bool ok;
      res = binary_result(K::Add, x, y, ok);
      if (!ok) return false;
    }
    if (numel(res.shape) > max_numel() || res.shape.size() > 3) return false;
    Instr in;
    in.kind = Kind::BinaryMixed;
    in.op = cmp ? K::Cmp : K::Add;
    in.pred = "lt";
    in.args = {a, b};
    in.out = {add_val(res)};
    emit(std::move(in));
    return true;
  }

  bool gen_binary_lit() {
    auto a = any_value([](const Val& v) { return v.dt != DType::i1; });
    if (a < 0) return false;
    Val av = V(a);
    DType d = av.dt;
    Instr in;
    in.kind = Kind::BinaryLit;
    in.args = {a};
    in.lit_left = chance(0.3);
    bool float_lit_on_int = !isf(d) && chance(0.15);
    if (chance(0.2)) {
      in.op = K::Cmp;
      static const char* preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
      in.pred = preds[u(6)];
      if (isf(d) && !av.exact) return false;
      in.lit = isf(d) ? double(int(u(5)) - 2) * 0.5 : std::clamp(double(int(u(21)) - 10), int_min(d), int_max(d));
      in.out = {add_val(ival(DType::i1, av.shape, 0, 1))};
      emit(std::move(in));
      return true;
    }
    std::vector<K> ops = isf(d) || float_lit_on_int ? std::vector<K>{K::Add, K::Sub, K::Mul, K::Div}
                                                    : std::vector<K>{K::Add, K::Sub, K::Mul, K::Div, K::Rem, K::And,
                                                                     K::Shl, K::Shr, K::Xor};
    in.op = pick(ops);
    if (isf(d) || float_lit_on_int) {
      static const double lits[] = {0.5, 1.5, 2.0, 3.0, -1.0, 0.25, 4.0};
      in.lit = lits[u(std::size(lits))];
      in.flag = float_lit_on_int;
      DType r = float_lit_on_int ? DType::f32 : d;
      if (float_lit_on_int && maxabs(av) > (1 << 24)) return false;
      Val x = av, y;
      x.dt = r;
      y.dt = r; y.lo = y.hi = in.lit; y.exact = true;
      if (in.op == K::Div && in.lit_left && !(av.lo >= 0.25 || av.hi <= -0.25)) return false;
      bool ok;
      Val res = in.lit_left ? binary_result(in.op, y, x, ok) : binary_result(in.op, x, y, ok);
      if (!ok) return false;
      res.shape = av.shape;
      in.out = {add_val(res)};
    } else {
      double lo = is_unsigned(d) ? 0 : -8;
      in.lit = lo + double(u(17));
      if (in.op == K::Div || in.op == K::Rem) { in.lit = 1 + double(u(9)); in.lit_left = false; }
      if (in.op == K::Shl || in.op == K::Shr) { in.lit = double(u(bit_width(d) + 2)); in.lit_left = false; }
      if (in.op == K::And && in.lit < 0) in.lit = -in.lit;
      Val y;
      y.dt = d; y.lo = y.hi = in.lit;
      bool ok;
      Val res = in.lit_left ? binary_result(in.op, y, av, ok) : binary_result(in.op, av, y, ok);
      if (!ok) return false;
      res.shape = av.shape;
      in.out = {add_val(res)};
    }
    emit(std::move(in));
    return true;
  }

  bool gen_compare() {
    auto a = any_value([](const Val& v) { return !isf(v.dt) || v.exact; });
    if (a < 0) return false;
    Val av = V(a);
    int b = operand_for(av.dt, av.shape, [](const Val& v) { return !isf(v.dt) || v.exact; });
    auto s = bshape(av.shape, V(b).shape);
    if (numel(s) > max_numel()) return false;
    Instr in;
    in.kind = Kind::Compare;
    static const char* preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    in.pred = preds[u(6)];
    in.args = {a, b};
    in.out = {add_val(ival(DType::i1, s, 0, 1))};
    emit(std::move(in));
    return true;
  }

  bool gen_select() {
    auto c = any_value([](const Val& v) { return v.dt == DType::i1; });
    if (c < 0) return false;
    Val cv = V(c);
    auto a = any_value([&](const Val& v) { return broadcasts(v.shape, cv.shape); });
    if (a < 0) return false;
    Val av = V(a);
    int b = operand_for(av.dt, bshape(av.shape, cv.shape), [](const Val&) { return true; });
    Val bv = V(b);
    auto s = bshape(bshape(cv.shape, av.shape), bv.shape);
    if (numel(s) > max_numel() || s.size() > 3) return false;
    Instr in;
    in.kind = Kind::Select;
    in.args = {c, a, b};
    in.out = {add_val(any_val(av.dt, s, std::min(av.lo, bv.lo), std::max(av.hi, bv.hi), av.exact && bv.exact))};
    emit(std::move(in));
    return true;
  }

  bool gen_fma() {
    auto a = any_value([](const Val& v) { return isf(v.dt); });
    if (a < 0) return false;
    Val av = V(a);
    int b = operand_for(av.dt, av.shape, [](const Val&) { return true; });
    Val bv = V(b);
    auto s = bshape(av.shape, bv.shape);
    int c = operand_for(av.dt, s, [](const Val&) { return true; });
    Val cv = V(c);
    s = bshape(s, cv.shape);
    bool ok;
    Val ab = binary_result(K::Mul, av, bv, ok);
    if (!ok) return false;
    ab.exact = av.exact && bv.exact;
    Val r = binary_result(K::Add, ab, cv, ok);
    if (!ok || numel(s) > max_numel() || s.size() > 3) return false;
    r.shape = s;
    Instr in;
    in.kind = Kind::Fma;
    in.args = {a, b, c};
    in.out = {add_val(r)};
    emit(std::move(in));
    return true;
  }

  bool gen_unary() {
    auto a = any_value([](const Val& v) { return true; });
    if (a < 0) return false;
    Val av = V(a);
    DType d = av.dt;
    Instr in;
    in.kind = Kind::Unary;
    in.args = {a};
    if (!isf(d)) {
      if (d == DType::i1) in.op = K::Not;
      else in.op = pick(std::vector<K>{K::Neg, K::Not, K::Abs});
      double lo = int_min(d), hi = int_max(d);
      if (in.op == K::Neg && !is_unsigned(d) && av.lo > int_min(d)) { lo = -av.hi; hi = -av.lo; }
      if (in.op == K::Abs && av.lo > int_min(d)) {
        lo = av.lo >= 0 ? av.lo : av.hi <= 0 ? -av.hi : 0;
        hi = std::max(std::fabs(av.lo), std::fabs(av.hi));
      }
      if (d == DType::i1) { lo = 0; hi = 1; }
      in.out = {add_val(ival(d, av.shape, lo, hi))};
      emit(std::move(in));
      return true;
    }
    std::vector<K> ops = {K::Neg, K::Abs, K::Exp, K::Exp2, K::Log, K::Log2, K::Sqrt, K::Rsqrt,
                          K::Sin, K::Cos, K::Tanh, K::Erf, K::Floor, K::Ceil};
    in.op = pick(ops);
    bool math = in.op != K::Neg && in.op != K::Abs && in.op != K::Floor && in.op != K::Ceil && in.op != K::Sqrt;
    double lo = av.lo, hi = av.hi, c = cap(d);
    bool exact = av.exact && !math;
    switch (in.op) {
      case K::Neg: lo = -av.hi; hi = -av.lo; break;
      case K::Abs: lo = av.lo >= 0 ? av.lo : av.hi <= 0 ? -av.hi : 0; hi = maxabs(av); break;
      case K::Floor: case K::Ceil:
        if (!av.exact) return false;
        lo = std::floor(av.lo); hi = std::ceil(av.hi);
        break;
      case K::Exp: if (av.hi > std::log(c) || av.lo < -16) return false; lo = std::exp(av.lo); hi = std::exp(av.hi); break;
      case K::Exp2: if (av.hi > std::log2(c) || av.lo < -16) return false; lo = std::exp2(av.lo); hi = std::exp2(av.hi); break;
      case K::Log: case K::Log2:
        if (av.lo < 0.0625) return false;
        lo = in.op == K::Log ? std::log(av.lo) : std::log2(av.lo);
        hi = in.op == K::Log ? std::log(av.hi) : std::log2(av.hi);
        break;
      case K::Sqrt: if (av.lo < 0.0625 && !(av.exact && av.lo >= 0)) return false; lo = std::sqrt(std::max(0.0, av.lo)); hi = std::sqrt(av.hi); break;
      case K::Rsqrt: if (av.lo < 0.0625) return false; lo = 1 / std::sqrt(av.hi); hi = 1 / std::sqrt(av.lo); break;
      case K::Sin: case K::Cos: if (maxabs(av) > 3.14) return false; lo = -1; hi = 1; break;
      case K::Tanh: lo = std::tanh(av.lo); hi = std::tanh(av.hi); break;
      case K::Erf: if (maxabs(av) > 4) return false; lo = std::erf(av.lo); hi = std::erf(av.hi); break;
      default: return false;
    }
    // Approximations may stray beyond the exact range by their error.
    if (math) { lo -= 1e-4 * (1 + std::fabs(lo)); hi += 1e-4 * (1 + std::fabs(hi)); }
    in.out = {add_val(fval(d, av.shape, lo, hi, exact))};
    emit(std::move(in));
    return true;
  }

  bool gen_clamp() {
    auto a = any_value([](const Val& v) { return v.dt != DType::i1; });
    if (a < 0) return false;
    Val av = V(a);
    double lo, hi;
    if (isf(av.dt)) { lo = -double(u(4)) * 0.5; hi = double(1 + u(4)) * 0.5; }
    else { lo = is_unsigned(av.dt) ? double(u(4)) : double(int(u(9)) - 4); hi = lo + double(u(50)); }
    // An inexact value's error is relative to its own range: clamping a wide
    // one to a narrow window would leave an error as large as the window.
    if (isf(av.dt) && !av.exact && (hi - lo) * 16 < av.hi - av.lo) return false;
    clamp_to(a, lo, hi, false);
    return true;
  }
  int clamp_to(int a, double lo, double hi, bool close) {
    const Val& av = V(a);
    Instr in;
    in.kind = Kind::Clamp;
    in.args = {a};
    in.lit = lo; in.lit2 = hi;
    Val r = av;  // clamp is monotone and exact
    r.lo = std::clamp(av.lo, lo, hi);
    r.hi = std::clamp(av.hi, lo, hi);
    in.out = {add_val(r)};
    emit(std::move(in), close);
    return blocks.back()->back().out[0];
  }

  bool gen_cast() {
    auto a = any_value([](const Val& v) { return true; });
    if (a < 0) return false;
    Val av = V(a);
    DType from = av.dt, to = pick_dtype();
    if (from == to) return false;
    Val r;
    if (!isf(from) && !isf(to)) {
      r = ival(to, av.shape, av.lo, av.hi);
      if (to == DType::i1) r = ival(to, av.shape, 0, 1);
    } else if (!isf(from)) {  // int -> float: rounds once
      if (maxabs(av) > cap(to) && maxabs(av) > fmax_of(to) / 4) return false;
      if (is_f8(to) && maxabs(av) > (1 << 24)) return false;
      r = fval(to, av.shape, av.lo, av.hi, true);
    } else if (!isf(to)) {  // float -> int: truncates, saturates; exact values only
      if (!av.exact) return false;
      if (to == DType::i1) r = ival(to, av.shape, 0, 1);
      else r = ival(to, av.shape, std::clamp(std::trunc(av.lo), int_min(to), int_max(to)),
                    std::clamp(std::trunc(av.hi), int_min(to), int_max(to)));
      if (to != DType::i1 && (av.lo < int_min(to) || av.hi > int_max(to))) r = ival(to, av.shape, int_min(to), int_max(to));
    } else {  // float -> float
      if (maxabs(av) > cap(to)) return false;
      r = fval(to, av.shape, av.lo, av.hi, av.exact);
    }
    Instr in;
    in.kind = Kind::Cast;
    in.dt = to;
    in.args = {a};
    in.out = {add_val(r)};
    emit(std::move(in));
    return true;
  }

  bool gen_bitcast() {
    auto a = any_value([](const Val& v) { return v.dt != DType::i1 && (!isf(v.dt) || v.exact); });
    if (a < 0) return false;
    Val av = V(a);
    std::vector<DType> same;
    for (DType d : kAll)
      if (d != av.dt && d != DType::i1 && bit_width(d) == bit_width(av.dt)) same.push_back(d);
    if (same.empty()) return false;
    DType to = pick(same);
    Val r;
    if (isf(to)) { r = av; r.dt = to; r.wild = true; r.lo = r.hi = 0; }
    else r = ival(to, av.shape, int_min(to), int_max(to));
    Instr in;
    in.kind = Kind::Bitcast;
    in.dt = to;
    in.args = {a};
    in.out = {add_val(r)};
    emit(std::move(in));
    return true;
  }

  bool gen_shape_op() {
    auto a = any_value([](const Val& v) { return true; });
    if (a < 0) return false;
    Val av = V(a);
    int r = av.shape.size();
    Instr in;
    in.args = {a};
    Val res = av;
    switch (u(6)) {
      case 0:  // expand_dims
        if (r >= 3 || r == 0) return false;
        in.kind = Kind::ExpandDims;
        in.axis = int(u(r + 1));
        res.shape.insert(res.shape.begin() + in.axis, 1);
        break;
      case 1: {  // broadcast a size-1 dim
        if (r == 0) return false;
        auto s = av.shape;
        bool any = false;
        for (auto& d : s)
          if (d == 1) { d = int64_t(1) << (1 + u(5)); any = true; }
        if (!any || numel(s) > max_numel()) return false;
        in.kind = Kind::Broadcast;
        in.shape = res.shape = s;
        break;
      }
      case 2:
        if (r != 2 && r != 3) return false;
        in.kind = Kind::Trans;
        std::reverse(res.shape.begin(), res.shape.end());
        break;
      case 3: {
        if (r == 0) return false;
        in.kind = Kind::Reshape;
        int64_t n = av.numel();
        int lg = std::countr_zero(uint64_t(n));
        int rank = 1 + int(u(3));
        std::vector<int64_t> s(size_t(rank), 1);
        for (int i = 0; i < lg; ++i) s[u(rank)] *= 2;
        in.shape = res.shape = s;
        break;
      }
      case 4: {  // join
        if (r >= 3 || av.numel() * 2 > max_numel()) return false;
        int b = operand_for(av.dt, av.shape, [&](const Val& v) { return v.shape == av.shape; });
        if (V(b).shape != av.shape) {
          // operand_for may have loaded a broadcastable shape: make it equal.
          return false;
        }
        in.kind = Kind::Join;
        in.args = {a, b};
        res.shape.push_back(2);
        res.lo = std::min(av.lo, V(b).lo); res.hi = std::max(av.hi, V(b).hi);
        res.exact = av.exact && V(b).exact;
        break;
      }
      default: {  // split
        if (r == 0 || av.shape.back() != 2) return false;
        in.kind = Kind::Split;
        res.shape.pop_back();
        int x = add_val(res), y = add_val(res);
        in.out = {x, y};
        emit(std::move(in));
        return true;
      }
    }
    in.out = {add_val(res)};
    emit(std::move(in));
    return true;
  }

  bool gen_reduce() {
    auto a = any_value([](const Val& v) { return !v.shape.empty(); });
    if (a < 0) a = gen_load(pick_dtype(), pick_shape(max_numel()));
    Val av = V(a);
    if (av.shape.empty()) return false;
    int axis = int(u(av.shape.size()));
    int64_t n = av.shape[size_t(axis)];
    auto s = av.shape;
    s.erase(s.begin() + axis);
    DType d = av.dt;
    Instr in;
    in.args = {a};
    in.axis = chance(0.2) ? axis - int(av.shape.size()) : axis;  // negative axes too
    int kind = int(u(5));
    if (kind == 0 || kind == 1) {  // sum | max/min
      in.kind = Kind::Reduce;
      in.op = kind == 0 ? K::Add : chance(0.5) ? K::Maximum : K::Minimum;
      if (in.op == K::Add) {
        DType acc = detail::accumulation_dtype(d);
        if (isf(acc)) {
          if (maxabs(av) * n > cap(acc)) return false;
          in.out = {add_val(fval(acc, s, std::min(0.0, av.lo * n), std::max(0.0, av.hi * n),
                                 av.exact && !opts.reduce_any_order))};
        } else {
          in.out = {add_val(ival(acc, s, std::min(av.lo, av.lo * n), std::max(av.hi, av.hi * n)))};
        }
      } else {
        in.out = {add_val(any_val(d, s, av.lo, av.hi, av.exact))};
      }
    } else if (kind == 2) {
      if (isf(d) && !av.exact) return false;
      in.kind = Kind::ArgReduce;
      in.flag = chance(0.5);
      in.out = {add_val(ival(DType::i32, s, 0, double(n - 1)))};
    } else if (kind == 3) {
      in.kind = Kind::CustomReduce;
      if (d == DType::i1) return false;
      in.op = isf(d) ? (chance(0.5) ? K::Maximum : K::Add) : pick(std::vector<K>{K::Add, K::Xor, K::Maximum});
      if (in.op == K::Add) {
        if (isf(d)) {
          if (maxabs(av) * n > cap(d)) return false;
          in.out = {add_val(fval(d, s, std::min(0.0, av.lo * n), std::max(0.0, av.hi * n),
                                 av.exact && !opts.reduce_any_order))};
        } else {
          in.out = {add_val(ival(d, s, std::min(av.lo, av.lo * n), std::max(av.hi, av.hi * n)))};
        }
      } else if (in.op == K::Xor) {
        in.out = {add_val(ival(d, s, av.lo >= 0 && av.hi < 1e15 ? 0 : int_min(d),
                               av.lo >= 0 && av.hi < 1e15 ? std::exp2(std::ceil(std::log2(av.hi + 1))) - 1 : int_max(d)))};
      } else {
        in.out = {add_val(any_val(d, s, av.lo, av.hi, av.exact))};
      }
    } else {
      in.kind = Kind::Scan;
      in.shape = av.shape;
      in.flag = chance(0.3);  // reverse
      in.op = chance(0.7) ? K::Add : K::Mul;
      DType acc = detail::accumulation_dtype(d);
      if (isf(acc)) {
        if (in.op == K::Mul) {
          if (n > 16 || maxabs(av) > 1.25) return false;
          double m = std::pow(maxabs(av), double(n));
          in.out = {add_val(fval(acc, av.shape, -m, m, false))};
        } else {
          if (maxabs(av) * n > cap(acc)) return false;
          in.out = {add_val(fval(acc, av.shape, std::min(av.lo, av.lo * n), std::max(av.hi, av.hi * n), false))};
        }
      } else {
        if (in.op == K::Mul) in.out = {add_val(ival(acc, av.shape, int_min(acc), int_max(acc)))};
        else in.out = {add_val(ival(acc, av.shape, std::min(av.lo, av.lo * n), std::max(av.hi, av.hi * n)))};
      }
    }
    emit(std::move(in));
    return true;
  }

  bool gen_dot() {
    static const DType ins[] = {DType::bf16, DType::bf16, DType::f16, DType::f32, DType::i8,
                                DType::u8, DType::f8e4m3, DType::f8e5m2};
    DType d = ins[u(std::size(ins))];
    int big = std::max(1, std::countr_zero(uint64_t(opts.max_dot_dim)) - 3);  // 16 .. max_dot_dim
    auto dim = [&] { return chance(0.85) ? int64_t(16) << u(big) : int64_t(1) << u(4); };
    int64_t M = dim(), N = dim(), Kd = dim();
    if (M * N > max_numel() || M * Kd > max_numel() || Kd * N > max_numel()) return false;
    auto operand = [&](std::vector<int64_t> s) {
      if (chance(0.4))
        if (auto id = find([&](const Val& v) { return v.dt == d && v.shape == s && !v.wild; })) return *id;
      return gen_load(d, s, isf(d) ? (chance(0.5) ? 0 : 2) : 0);
    };
    int a = operand({M, Kd}), b = operand({Kd, N});
    Val av = V(a), bv = V(b);
    if (av.shape != std::vector<int64_t>{M, Kd} || bv.shape != std::vector<int64_t>{Kd, N}) return false;
    Instr in;
    in.kind = Kind::Dot;
    in.flag = d == DType::f32 && chance(0.5);  // "ieee"
    in.args = {a, b};
    double m = double(Kd) * maxabs(av) * maxabs(bv);
    Val r;
    if (isf(d)) {
      double acc_m = 0;
      if (chance(0.5)) {
        int c = find([&](const Val& v) { return v.dt == DType::f32 && v.shape == std::vector<int64_t>{M, N} && !v.wild; })
                    .value_or(-1);
        if (c < 0) c = gen_load(DType::f32, {M, N}, 0);
        in.args.push_back(c);
        acc_m = maxabs(V(c));
      }
      if (m + acc_m > cap(DType::f32)) return false;
      r = fval(DType::f32, {M, N}, -(m + acc_m), m + acc_m, false);
    } else {
      if (chance(0.5)) {
        int c = find([&](const Val& v) { return v.dt == DType::i32 && v.shape == std::vector<int64_t>{M, N} && !v.wild; })
                    .value_or(-1);
        if (c < 0) c = gen_load(DType::i32, {M, N}, 0);
        in.args.push_back(c);
      }
      r = ival(DType::i32, {M, N}, int_min(DType::i32), int_max(DType::i32));
    }
    in.out = {add_val(r)};
    emit(std::move(in));
    return true;
  }

  // The pow2 hull of a float interval: what a loop-carried value stays in.
  static void carried_interval(const Val& v, double& lo, double& hi) {
    double m = std::max(1.0, maxabs(v));
    double top = std::exp2(std::ceil(std::log2(m)) + 1);
    if (v.lo > 0) {
      lo = std::exp2(std::floor(std::log2(v.lo)));
      hi = top;
    } else {
      lo = -top;
      hi = top;
    }
  }

  bool gen_for() {
    if (depth >= 2) return false;
    std::vector<int> inits;
    int want = 1 + int(u(3));
    for (int i = 0; i < want * 3 && int(inits.size()) < want; ++i) {
      auto c = find([&](const Val& v) {
        return !v.wild && v.shape.size() <= 2 && v.numel() <= 1024 && (!isf(v.dt) || maxabs(v) * 4 <= cap(v.dt));
      });
      if (c && std::find(inits.begin(), inits.end(), *c) == inits.end()) inits.push_back(*c);
    }
    if (inits.empty()) return false;
    Instr in;
    in.kind = Kind::For;
    in.id = next_id++;
    in.args = inits;
    in.lo = 0;
    in.traced_hi = chance(0.3);
    in.hi = in.traced_hi ? p.trips : int(u(5));
    int trips = std::max(0, in.hi - in.lo);
    // Values inside the body.
    scopes.emplace_back();
    Val ivv = ival(DType::i32, {}, in.lo, std::max(in.lo, in.hi - 1));
    in.iv = add_val(ivv);
    for (int c : inits) {
      Val v = V(c);
      if (isf(v.dt)) {
        carried_interval(v, v.lo, v.hi);
        v.exact = false;
      } else if (v.dt != DType::i1) {
        v.lo = int_min(v.dt); v.hi = int_max(v.dt);
      } else {
        v.lo = 0; v.hi = 1;
      }
      in.body_args.push_back(add_val(v));
    }
    std::vector<Instr> body;
    blocks.push_back(&body);
    int saved_iv = cur_iv, saved_trips = cur_trips;
    cur_iv = in.iv;
    cur_trips *= std::max(1, trips);
    depth++;
    int n = 1 + int(u(5));
    for (int i = 0; i < n && steps < budget; ++i) step();
    depth--;
    // Yields (from the closing stream): a body value of the same type.
    for (size_t k = 0; k < inits.size(); ++k) {
      const Val carried = V(in.body_args[k]);
      std::vector<int> cand;
      for (int id : scopes.back())
        if (!V(id).wild && V(id).dt == carried.dt && V(id).shape == carried.shape && id != in.body_args[k])
          cand.push_back(id);
      int y = in.body_args[k];
      if (!cand.empty() && close_rng() % 4 != 0) {
        y = cand[close_rng() % cand.size()];
        if (isf(carried.dt) && (V(y).lo < carried.lo || V(y).hi > carried.hi)) y = clamp_to(y, carried.lo, carried.hi, true);
      }
      in.yields.push_back(y);
    }
    cur_iv = saved_iv;
    cur_trips = saved_trips;
    blocks.pop_back();
    scopes.pop_back();
    in.body = std::move(body);
    for (size_t k = 0; k < inits.size(); ++k) {
      Val v = V(in.body_args[k]);
      // Zero trips leave the init value, inside the carried interval too.
      if (!isf(v.dt)) v.exact = true;
      in.out.push_back(add_val(v));
    }
    emit(std::move(in));
    return true;
  }

  bool gen_if() {
    if (depth >= 2) return false;
    // An exact scalar condition: program id, the loop counter, or a loaded integer.
    int x = -1;
    if (cur_iv >= 0 && chance(0.5)) x = cur_iv;
    else if (chance(0.5)) {
      Instr pid;
      pid.kind = Kind::ProgramId;
      pid.out = {add_val(ival(DType::i32, {}, 0, p.grid - 1))};
      emit(std::move(pid));
      x = blocks.back()->back().out[0];
    } else {
      x = gen_load(DType::i32, {}, 0);
    }
    Instr c;
    c.kind = Kind::BinaryLit;
    c.op = K::Cmp;
    static const char* preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    c.pred = preds[u(6)];
    c.lit = double(int(u(5)) - 1);
    c.args = {x};
    c.out = {add_val(ival(DType::i1, {}, 0, 1))};
    emit(std::move(c));
    int cond = blocks.back()->back().out[0];
    std::vector<int> inits;
    int want = 1 + int(u(2));
    for (int i = 0; i < 6 && int(inits.size()) < want; ++i)
      if (auto v = find([](const Val& v) { return !v.wild && v.shape.size() <= 2; }))
        if (std::find(inits.begin(), inits.end(), *v) == inits.end()) inits.push_back(*v);
    if (inits.empty()) return false;
    Instr in;
    in.kind = Kind::If;
    in.id = next_id++;
    in.args = {cond};
    for (int i : inits) in.args.push_back(i);
    bool has_else = chance(0.6);
    auto branch = [&](std::vector<Instr>& code, std::vector<int>& yields) {
      scopes.emplace_back();
      blocks.push_back(&code);
      depth++;
      int n = 1 + int(u(4));
      for (int i = 0; i < n && steps < budget; ++i) step();
      depth--;
      for (int init : inits) {
        std::vector<int> cand;
        for (int id : scopes.back())
          if (!V(id).wild && V(id).dt == V(init).dt && V(id).shape == V(init).shape) cand.push_back(id);
        yields.push_back(!cand.empty() && close_rng() % 4 != 0 ? cand[close_rng() % cand.size()] : init);
      }
      blocks.pop_back();
      scopes.pop_back();
    };
    branch(in.body, in.yields);
    if (has_else) branch(in.else_body, in.else_yields);
    else in.else_yields = inits;
    for (size_t k = 0; k < inits.size(); ++k) {
      // Copies: add_val below may reallocate p.vals.
      const Val i0 = V(inits[k]), t = V(in.yields[k]), e = V(in.else_yields[k]);
      in.out.push_back(add_val(any_val(i0.dt, i0.shape, std::min({i0.lo, t.lo, e.lo}), std::max({i0.hi, t.hi, e.hi}),
                                       i0.exact && t.exact && e.exact)));
      if (!isf(i0.dt)) p.vals[size_t(in.out.back())].exact = true;
    }
    emit(std::move(in));
    return true;
  }

  void gen_store(int v, std::mt19937_64& r) {
    const Val& val = V(v);
    Instr in;
    in.kind = Kind::Store;
    in.args = {v};
    in.mask = val.shape.empty() || val.shape.size() > 2 ? int(r() % 2) * int(val.shape.empty()) : int(r() % (val.shape.size() + 1));
    in.slot = p.out_elems[size_t(idx(val.dt))];
    p.out_elems[size_t(idx(val.dt))] += val.numel() * p.grid;
    emit(std::move(in), true);
  }

  void step() {
    steps++;
    for (int attempt = 0; attempt < 8; ++attempt) {
      bool done = false;
      switch (u(40)) {
        case 0: case 1: case 2: gen_load(pick_dtype(), pick_shape(max_numel())); done = true; break;
        case 3: case 4: case 5: case 6: case 7: case 8: done = gen_binary(); break;
        case 9: case 10: done = gen_mixed(); break;
        case 11: case 12: case 13: done = gen_binary_lit(); break;
        case 14: case 15: done = gen_compare(); break;
        case 16: case 17: done = gen_select(); break;
        case 18: done = gen_fma(); break;
        case 19: case 20: case 21: done = gen_unary(); break;
        case 22: done = gen_clamp(); break;
        case 23: case 24: done = gen_cast(); break;
        case 25: done = gen_bitcast(); break;
        case 26: case 27: case 28: done = gen_shape_op(); break;
        case 29: case 30: case 31: done = gen_reduce(); break;
        case 32: case 33: done = gen_dot(); break;
        case 34: case 35: done = gen_for(); break;
        case 36: done = gen_if(); break;
        case 37: {
          Instr in;
          in.kind = chance(0.5) ? Kind::Arange : Kind::ProgramId;
          if (in.kind == Kind::Arange) {
            in.shape = {int64_t(1) << u(11)};
            in.out = {add_val(ival(DType::i32, in.shape, 0, double(in.shape[0] - 1)))};
          } else {
            in.out = {add_val(ival(DType::i32, {}, 0, p.grid - 1))};
          }
          emit(std::move(in));
          done = true;
          break;
        }
        case 38: {  // a constant tile
          DType d = pick_dtype();
          double lo, hi;
          region_interval(d, 0, lo, hi);
          gen_const(d, pick_shape(max_numel()), d == DType::i1 ? double(u(2)) : isf(d) ? 0.5 * double(int(u(9)) - 4) : lo + double(u(9)));
          done = true;
          break;
        }
        default:  // a store inside a loop or branch
          if (depth > 0) {
            if (auto v = find([](const Val&) { return true; })) {
              Instr in;
              const Val& val = V(*v);
              in.kind = Kind::Store;
              in.args = {*v};
              in.mask = val.shape.empty() || val.shape.size() > 2 ? int(u(2)) * int(val.shape.empty()) : int(u(val.shape.size() + 1));
              in.slot = p.out_elems[size_t(idx(val.dt))];
              p.out_elems[size_t(idx(val.dt))] += val.numel() * p.grid;
              emit(std::move(in));
              done = true;
            }
          }
          break;
      }
      if (done) return;
    }
  }

  void run() {
    p.grid = 1 + uint32_t(u(2));
    p.n = int32_t(u(80));
    p.m = int32_t(u(80));
    p.trips = int32_t(u(5));
    p.fp_fusion = chance(0.5);
    p.num_warps = chance(0.8) ? 4 : (chance(0.5) ? 8 : 2);
    p.out_elems.assign(kNumDtypes, 0);
    scopes.emplace_back();
    blocks.push_back(&p.code);
    while (steps < budget) step();
    // Stores: the values no later op used, then a few others (own stream).
    std::mt19937_64 sr(mix(p.seed, 3));
    std::set<int> used;
    std::function<void(const std::vector<Instr>&)> uses = [&](const std::vector<Instr>& code) {
      for (auto& in : code) {
        for (int a : in.args) used.insert(a);
        for (int y : in.yields) used.insert(y);
        for (int y : in.else_yields) used.insert(y);
        uses(in.body);
        uses(in.else_body);
      }
    };
    uses(p.code);
    std::vector<int> sinks, others;
    for (int id : scopes.back()) (used.count(id) ? others : sinks).push_back(id);
    for (int id : sinks) gen_store(id, sr);
    for (int i = 0; i < 2 && !others.empty(); ++i) gen_store(others[sr() % others.size()], sr);
    p.ops = steps;
    for (auto& [why, count] : avoided) p.notes.push_back(why + " (x" + std::to_string(count) + ")");
  }
};

// ---- the tracer of a Program ------------------------------------------------------------------

using AnyTile = std::variant<tile<bool>, tile<int8_t>, tile<int16_t>, tile<int32_t>, tile<int64_t>, tile<uint8_t>,
                             tile<uint32_t>, tile<uint64_t>, tile<f8e4m3>, tile<f8e5m2>, tile<f16>, tile<bf16>,
                             tile<float>, tile<double>>;
using AnyPtr = std::variant<ptr<bool>, ptr<int8_t>, ptr<int16_t>, ptr<int32_t>, ptr<int64_t>, ptr<uint8_t>,
                            ptr<uint32_t>, ptr<uint64_t>, ptr<f8e4m3>, ptr<f8e5m2>, ptr<f16>, ptr<bf16>, ptr<float>,
                            ptr<double>>;

template <class T>
struct type_tag {
  using type = T;
};
template <class F>
decltype(auto) with_dtype(DType d, F&& f) {
  switch (d) {
    case DType::i1: return f(type_tag<bool>{});
    case DType::i8: return f(type_tag<int8_t>{});
    case DType::i16: return f(type_tag<int16_t>{});
    case DType::i32: return f(type_tag<int32_t>{});
    case DType::i64: return f(type_tag<int64_t>{});
    case DType::u8: return f(type_tag<uint8_t>{});
    case DType::u32: return f(type_tag<uint32_t>{});
    case DType::u64: return f(type_tag<uint64_t>{});
    case DType::f8e4m3: return f(type_tag<f8e4m3>{});
    case DType::f8e5m2: return f(type_tag<f8e5m2>{});
    case DType::f16: return f(type_tag<f16>{});
    case DType::bf16: return f(type_tag<bf16>{});
    case DType::f32: return f(type_tag<float>{});
    default: return f(type_tag<double>{});
  }
}
template <class T>
constexpr DType D_of = detail::elem_info<T>::dtype;

[[noreturn]] void bad(const char* what) { throw std::logic_error(std::string("random kernel: ") + what); }

thread_local const Program* g_program = nullptr;

struct Tracer {
  const Program& p;
  std::vector<AnyPtr> in, out;
  tile<int32_t> n, m, trips;
  std::vector<std::optional<AnyTile>> env;
  std::optional<tile<int32_t>> pid;

  Tracer(const Program& p, std::vector<AnyPtr> i, std::vector<AnyPtr> o, tile<int32_t> n, tile<int32_t> m,
         tile<int32_t> t)
      : p(p), in(std::move(i)), out(std::move(o)), n(n), m(m), trips(t), env(p.vals.size()) {
    // At the top: a program id first used inside a loop must still dominate later uses.
    pid.emplace(tl::program_id(0));
  }

  const AnyTile& E(int id) {
    if (!env[size_t(id)]) bad("value used before definition");
    return *env[size_t(id)];
  }
  template <class T>
  const tile<T>& get(int id) {
    return std::get<tile<T>>(E(id));
  }
  void set(int id, AnyTile t) { env[size_t(id)].emplace(std::move(t)); }
  const tile<int32_t>& program_id() { return *pid; }

  // Offsets and mask of a [shape] access of program pid (and loop counter iv).
  tile<int32_t> offsets(const std::vector<int64_t>& s, std::optional<tile<bool>>& mask, int kind, int iv) {
    int64_t numel = 1;
    for (auto d : s) numel *= d;
    tile<int32_t> base = program_id() * int32_t(numel);
    if (iv >= 0) base = base + get<int32_t>(iv) * int32_t(numel * p.grid);
    if (s.empty()) {
      if (kind) mask.emplace(program_id() < n);
      return base;
    }
    if (s.size() == 1) {
      auto offs = base + arange(0, s[0]);  // [S0]
      if (kind) mask.emplace(arange(0, s[0]) < n);
      return offs;
    }
    if (s.size() == 2) {
      auto r = arange(0, s[0]), c = arange(0, s[1]);
      auto offs = base + col(r) * int32_t(s[1]) + row(c);  // [S0, S1]
      if (kind == 1) mask.emplace(row(c) < m);
      if (kind == 2) mask.emplace((col(r) < n) & (row(c) < m));
      return offs;
    }
    auto i = expand_dims(expand_dims(arange(0, s[0]), 1), 2);  // [S0, 1, 1]
    auto j = expand_dims(expand_dims(arange(0, s[1]), 0), 2);  // [1, S1, 1]
    auto k = expand_dims(expand_dims(arange(0, s[2]), 0), 0);  // [1, 1, S2]
    return base + (i * int32_t(s[1]) + j) * int32_t(s[2]) + k;
  }

  AnyTile load(const Instr& ins) {
    std::optional<tile<bool>> mask;
    auto offs = offsets(ins.shape, mask, ins.mask, ins.args.empty() ? -1 : ins.args[0]);
    offs = offs + int32_t(ins.region * kRegionElems);
    return std::visit(
        [&](const auto& ptrv) -> AnyTile {
          using T = typename std::decay_t<decltype(ptrv)>::element_type::element_type;
          auto q = ptrv + offs;
          if (!mask) return tl::load(q);
          if (!ins.flag) return tl::load(q, *mask);
          if constexpr (std::is_same_v<T, bool>) return tl::load(q, *mask, ins.lit != 0);
          else if constexpr (is_float(D_of<T>)) return tl::load(q, *mask, ins.lit);
          else return tl::load(q, *mask, int64_t(ins.lit));
        },
        in[size_t(idx(ins.dt))]);
  }

  void store(const Instr& ins) {
    const AnyTile& v = E(ins.args[0]);
    std::vector<int64_t> s = std::visit([](const auto& t) { return t.shape(); }, v);
    std::optional<tile<bool>> mask;
    auto offs = offsets(s, mask, ins.mask, -1) + int32_t(ins.slot);
    std::visit(
        [&](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::element_type;
          const auto& o = std::get<ptr<T>>(out[size_t(idx(D_of<T>))]);
          if (mask) tl::store(o + offs, t, *mask);
          else tl::store(o + offs, t);
        },
        v);
  }

  AnyTile binary(K op, const AnyTile& a, const AnyTile& b) {
    return std::visit(
        [&](const auto& x) -> AnyTile {
          using Tt = std::decay_t<decltype(x)>;
          using T = typename Tt::element_type;
          const Tt& y = std::get<Tt>(b);
          if constexpr (std::is_same_v<T, bool>) {
            switch (op) {
              case K::And: return x & y;
              case K::Or: return x | y;
              case K::Xor: return x ^ y;
              default: break;
            }
          } else if constexpr (is_int(D_of<T>)) {
            switch (op) {
              case K::Add: return x + y;
              case K::Sub: return x - y;
              case K::Mul: return x * y;
              case K::Div: return x / y;
              case K::Rem: return x % y;
              case K::And: return x & y;
              case K::Or: return x | y;
              case K::Xor: return x ^ y;
              case K::Shl: return x << y;
              case K::Shr: return x >> y;
              case K::Minimum: return minimum(x, y);
              case K::Maximum: return maximum(x, y);
              default: break;
            }
          } else {
            switch (op) {
              case K::Add: return x + y;
              case K::Sub: return x - y;
              case K::Mul: return x * y;
              case K::Div: return x / y;
              case K::Rem: return x % y;
              case K::Minimum: return minimum(x, y);
              case K::Maximum: return maximum(x, y);
              default: break;
            }
          }
          bad("binary op not defined on this dtype");
        },
        a);
  }

  AnyTile mixed(const Instr& ins, const AnyTile& a, const AnyTile& b) {
    return std::visit(
        [&](const auto& x, const auto& y) -> AnyTile {
          if (ins.op == K::Cmp) return x < y;
          using X = typename std::decay_t<decltype(x)>::element_type;
          using Y = typename std::decay_t<decltype(y)>::element_type;
          if constexpr (std::is_same_v<X, bool> && std::is_same_v<Y, bool>) bad("mixed add of bools");
          else return x + y;
        },
        a, b);
  }

  template <class Tt, class L>
  AnyTile with_lit(const Instr& ins, const Tt& x, L lit) {
    auto c = [&](auto r) -> AnyTile { return r; };
    if (ins.op == K::Cmp) {
      const std::string& pr = ins.pred;
      if (ins.lit_left) {
        if (pr == "eq") return lit == x;
        if (pr == "ne") return lit != x;
        if (pr == "lt") return lit < x;
        if (pr == "le") return lit <= x;
        if (pr == "gt") return lit > x;
        return lit >= x;
      }
      if (pr == "eq") return x == lit;
      if (pr == "ne") return x != lit;
      if (pr == "lt") return x < lit;
      if (pr == "le") return x <= lit;
      if (pr == "gt") return x > lit;
      return x >= lit;
    }
    using T = typename Tt::element_type;
    switch (ins.op) {
      case K::Add: return ins.lit_left ? c(lit + x) : c(x + lit);
      case K::Sub: return ins.lit_left ? c(lit - x) : c(x - lit);
      case K::Mul: return ins.lit_left ? c(lit * x) : c(x * lit);
      case K::Div: return ins.lit_left ? c(lit / x) : c(x / lit);
      default: break;
    }
    if constexpr (is_int(D_of<T>) && std::is_integral_v<L>) {
      switch (ins.op) {
        case K::Rem: return x % lit;
        case K::And: return ins.lit_left ? c(lit & x) : c(x & lit);
        case K::Xor: return ins.lit_left ? c(lit ^ x) : c(x ^ lit);
        case K::Shl: return x << lit;
        case K::Shr: return x >> lit;
        default: break;
      }
    }
    bad("literal op not defined on this dtype");
  }

  AnyTile binary_lit(const Instr& ins, const AnyTile& a) {
    return std::visit(
        [&](const auto& x) -> AnyTile {
          using Tt = std::decay_t<decltype(x)>;
          using T = typename Tt::element_type;
          if constexpr (std::is_same_v<T, bool>) bad("literal op on bool");
          else if constexpr (is_float(D_of<T>)) return with_lit(ins, x, ins.lit);
          else if (ins.flag) return with_lit(ins, x, ins.lit);  // a float literal: f32
          else if constexpr (std::is_same_v<T, uint64_t>) return with_lit(ins, x, uint64_t(ins.lit));
          else return with_lit(ins, x, int64_t(ins.lit));
        },
        a);
  }

  AnyTile compare(const std::string& pr, const AnyTile& a, const AnyTile& b) {
    return std::visit(
        [&](const auto& x) -> AnyTile {
          const auto& y = std::get<std::decay_t<decltype(x)>>(b);
          if (pr == "eq") return x == y;
          if (pr == "ne") return x != y;
          if (pr == "lt") return x < y;
          if (pr == "le") return x <= y;
          if (pr == "gt") return x > y;
          return x >= y;
        },
        a);
  }

  AnyTile select(const tile<bool>& c, const AnyTile& a, const AnyTile& b) {
    return std::visit(
        [&](const auto& x) -> AnyTile {
          const auto& y = std::get<std::decay_t<decltype(x)>>(b);
          return where(c, x, y);
        },
        a);
  }

  AnyTile unary(K op, const AnyTile& a) {
    return std::visit(
        [&](const auto& x) -> AnyTile {
          using T = typename std::decay_t<decltype(x)>::element_type;
          if constexpr (std::is_same_v<T, bool>) {
            // `!x` does not compile on tiles today (ambiguous with the
            // built-in ! through the deleted operator bool): the same op.
            if (op == K::Not) return x == false;
          } else if constexpr (is_int(D_of<T>)) {
            switch (op) {
              case K::Neg: return -x;
              case K::Not: return ~x;
              case K::Abs: return abs(x);
              default: break;
            }
          } else {
            switch (op) {
              case K::Neg: return -x;
              case K::Abs: return abs(x);
              case K::Exp: return exp(x);
              case K::Exp2: return exp2(x);
              case K::Log: return log(x);
              case K::Log2: return log2(x);
              case K::Sqrt: return sqrt(x);
              case K::Rsqrt: return rsqrt(x);
              case K::Sin: return sin(x);
              case K::Cos: return cos(x);
              case K::Tanh: return tanh(x);
              case K::Erf: return erf(x);
              case K::Floor: return floor(x);
              case K::Ceil: return ceil(x);
              default: break;
            }
          }
          bad("unary op not defined on this dtype");
        },
        a);
  }

  AnyTile reduce(const Instr& ins, const AnyTile& a) {
    return std::visit(
        [&](const auto& x) -> AnyTile {
          using Tt = std::decay_t<decltype(x)>;
          using T = typename Tt::element_type;
          switch (ins.kind) {
            case Kind::Reduce:
              if (ins.op == K::Add) return sum(x, ins.axis);
              if (ins.op == K::Maximum) return tl::max(x, ins.axis);
              return tl::min(x, ins.axis);
            case Kind::ArgReduce: return ins.flag ? argmax(x, ins.axis) : argmin(x, ins.axis);
            case Kind::Scan:
              if (ins.op == K::Add) return cumsum(x, ins.axis, ins.flag);
              return cumprod(x, ins.axis, ins.flag);
            default: break;
          }
          if constexpr (!std::is_same_v<T, bool>) {
            if (ins.op == K::Maximum) return tl::reduce(x, ins.axis, [](Tt l, Tt r) { return maximum(l, r); });
            if (ins.op == K::Add) return tl::reduce(x, ins.axis, [](Tt l, Tt r) -> Tt { return l + r; });
            if constexpr (is_int(D_of<T>))
              if (ins.op == K::Xor) return tl::reduce(x, ins.axis, [](Tt l, Tt r) -> Tt { return l ^ r; });
          }
          bad("reduction not defined on this dtype");
        },
        a);
  }

  AnyTile dot_of(const Instr& ins) {
    DotOptions o{.input_precision = ins.flag ? "ieee" : "tf32"};
    return std::visit(
        [&](const auto& x) -> AnyTile {
          using Tt = std::decay_t<decltype(x)>;
          using T = typename Tt::element_type;
          const Tt& y = std::get<Tt>(E(ins.args[1]));
          if constexpr (is_float(D_of<T>) && !std::is_same_v<T, double>) {
            if (ins.args.size() > 2) return dot(x, y, get<float>(ins.args[2]), o);
            return dot(x, y, o);
          } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
            if (ins.args.size() > 2) return dot(x, y, get<int32_t>(ins.args[2]), o);
            return dot(x, y, o);
          }
          bad("dot not defined on this dtype");
        },
        E(ins.args[0]));
  }

  void run_block(const std::vector<Instr>& code, std::vector<int>& defined) {
    for (const Instr& ins : code) {
      exec(ins);
      for (int o : ins.out) defined.push_back(o);
    }
  }
  void forget(const std::vector<int>& ids) {
    for (int id : ids) env[size_t(id)].reset();
  }

  void exec(const Instr& ins) {
    switch (ins.kind) {
      case Kind::Load: set(ins.out[0], load(ins)); return;
      case Kind::Const:
        set(ins.out[0], with_dtype(ins.dt, [&](auto tag) -> AnyTile {
              using T = typename decltype(tag)::type;
              if constexpr (std::is_same_v<T, bool>) return full<T>(ins.shape, ins.lit != 0);
              else if constexpr (is_float(D_of<T>)) return full<T>(ins.shape, ins.lit);
              else if constexpr (std::is_same_v<T, uint64_t>) return full<T>(ins.shape, uint64_t(ins.lit));
              else return full<T>(ins.shape, int64_t(ins.lit));
            }));
        return;
      case Kind::Arange: set(ins.out[0], arange(0, ins.shape[0])); return;
      case Kind::ProgramId: set(ins.out[0], program_id()); return;
      case Kind::Binary: set(ins.out[0], binary(ins.op, E(ins.args[0]), E(ins.args[1]))); return;
      case Kind::BinaryMixed: set(ins.out[0], mixed(ins, E(ins.args[0]), E(ins.args[1]))); return;
      case Kind::BinaryLit: set(ins.out[0], binary_lit(ins, E(ins.args[0]))); return;
      case Kind::Compare: set(ins.out[0], compare(ins.pred, E(ins.args[0]), E(ins.args[1]))); return;
      case Kind::Select: set(ins.out[0], select(get<bool>(ins.args[0]), E(ins.args[1]), E(ins.args[2]))); return;
      case Kind::Fma:
        set(ins.out[0], std::visit(
                            [&](const auto& x) -> AnyTile {
                              using Tt = std::decay_t<decltype(x)>;
                              if constexpr (is_float(D_of<typename Tt::element_type>))
                                return fma(x, std::get<Tt>(E(ins.args[1])), std::get<Tt>(E(ins.args[2])));
                              bad("fma of integers");
                            },
                            E(ins.args[0])));
        return;
      case Kind::Unary: set(ins.out[0], unary(ins.op, E(ins.args[0]))); return;
      case Kind::Clamp:
        set(ins.out[0], std::visit(
                            [&](const auto& x) -> AnyTile {
                              using T = typename std::decay_t<decltype(x)>::element_type;
                              if constexpr (is_float(D_of<T>)) return clamp(x, ins.lit, ins.lit2);
                              else if constexpr (std::is_same_v<T, uint64_t>) return clamp(x, uint64_t(ins.lit), uint64_t(ins.lit2));
                              else if constexpr (!std::is_same_v<T, bool>) return clamp(x, int64_t(ins.lit), int64_t(ins.lit2));
                              bad("clamp of bool");
                            },
                            E(ins.args[0])));
        return;
      case Kind::Cast:
        set(ins.out[0], std::visit(
                            [&](const auto& x) -> AnyTile {
                              return with_dtype(ins.dt, [&](auto tag) -> AnyTile {
                                return tl::cast<typename decltype(tag)::type>(x);
                              });
                            },
                            E(ins.args[0])));
        return;
      case Kind::Bitcast:
        set(ins.out[0], std::visit(
                            [&](const auto& x) -> AnyTile {
                              return with_dtype(ins.dt, [&](auto tag) -> AnyTile {
                                return tl::bitcast<typename decltype(tag)::type>(x);
                              });
                            },
                            E(ins.args[0])));
        return;
      case Kind::ExpandDims:
        set(ins.out[0], std::visit([&](const auto& x) -> AnyTile { return expand_dims(x, ins.axis); }, E(ins.args[0])));
        return;
      case Kind::Broadcast:
        set(ins.out[0], std::visit([&](const auto& x) -> AnyTile { return broadcast_to(x, ins.shape); }, E(ins.args[0])));
        return;
      case Kind::Trans:
        set(ins.out[0], std::visit([&](const auto& x) -> AnyTile { return trans(x); }, E(ins.args[0])));
        return;
      case Kind::Reshape:
        set(ins.out[0], std::visit([&](const auto& x) -> AnyTile { return reshape(x, ins.shape); }, E(ins.args[0])));
        return;
      case Kind::Join:
        set(ins.out[0], std::visit(
                            [&](const auto& x) -> AnyTile {
                              return join(x, std::get<std::decay_t<decltype(x)>>(E(ins.args[1])));
                            },
                            E(ins.args[0])));
        return;
      case Kind::Split:
        std::visit(
            [&](const auto& x) {
              auto [lo, hi] = split(x);
              set(ins.out[0], lo);
              set(ins.out[1], hi);
            },
            E(ins.args[0]));
        return;
      case Kind::Reduce: case Kind::ArgReduce: case Kind::CustomReduce: case Kind::Scan:
        set(ins.out[0], reduce(ins, E(ins.args[0])));
        return;
      case Kind::Dot: set(ins.out[0], dot_of(ins)); return;
      case Kind::Store: store(ins); return;
      case Kind::For: {
        for (size_t k = 0; k < ins.args.size(); ++k) set(ins.out[k], E(ins.args[k]));
        std::vector<int> defined;
        auto body = [&](const tile<int32_t>& iv) {
          set(ins.iv, iv);
          for (size_t k = 0; k < ins.args.size(); ++k) set(ins.body_args[k], E(ins.out[k]));
          run_block(ins.body, defined);
          for (size_t k = 0; k < ins.args.size(); ++k) *env[size_t(ins.out[k])] = E(ins.yields[k]);
        };
        if (ins.traced_hi) {
          for (auto iv : range(ins.lo, trips)) body(iv);
        } else {
          for (auto iv : range(ins.lo, ins.hi)) body(iv);
        }
        defined.push_back(ins.iv);
        for (int b : ins.body_args) defined.push_back(b);
        forget(defined);
        return;
      }
      case Kind::If: {
        for (size_t k = 1; k < ins.args.size(); ++k) set(ins.out[k - 1], E(ins.args[k]));
        std::vector<int> defined;
        auto branch = [&](const std::vector<Instr>& code, const std::vector<int>& yields) {
          run_block(code, defined);
          for (size_t k = 0; k < yields.size(); ++k)
            if (yields[k] != ins.args[k + 1]) *env[size_t(ins.out[k])] = E(yields[k]);
        };
        const tile<bool>& c = get<bool>(ins.args[0]);
        if (ins.else_body.empty() && ins.else_yields == std::vector<int>(ins.args.begin() + 1, ins.args.end()))
          if_(c, [&] { branch(ins.body, ins.yields); });
        else
          if_(c, [&] { branch(ins.body, ins.yields); }, [&] { branch(ins.else_body, ins.else_yields); });
        forget(defined);
        return;
      }
    }
  }
};

// ---- error analysis ---------------------------------------------------------------------------

struct Analysis {
  const Program& p;
  std::vector<double> e;
  std::vector<double> store_bounds;
  std::map<int, size_t> store_index;  // Store op id -> position
  explicit Analysis(const Program& p) : p(p), e(p.vals.size(), 0) {}

  const Val& V(int id) const { return p.vals[size_t(id)]; }
  double E(int id) const { return e[size_t(id)]; }
  // An exact-only op: its inputs must have no error.
  void need_exact(const Instr& in, int id) {
    if (E(id) != 0) throw std::logic_error("random kernel: generator applied a discontinuous op to an inexact value (op " +
                                           std::to_string(in.id) + ")");
  }
  // Correctly rounded op: propagated error plus both sides' rounding when inexact.
  static double rounded(double prop, DType d, double m) { return prop > 0 ? prop + ulp(d, m) : 0; }
  // Approximate f32 op with GPU error g (absolute) on dtype d.
  static double approx(double prop, double g, DType d, double m) {
    // f64 math: the expansions' 1.22 ulp at most (math_expansions.h) plus
    // the host library's error, which is not correctly rounded either.
    if (d == DType::f64) return prop + 3 * ulp(d, m);
    if (d == DType::f32) return prop + g + half_ulp(d, m);
    return prop + g + ulp(d, m);  // narrow: f32 result rounded once more
  }

  void block(const std::vector<Instr>& code) {
    for (const Instr& in : code) op(in);
  }

  void op(const Instr& in) {
    auto out = [&](double v) { e[size_t(in.out[0])] = v; };
    switch (in.kind) {
      case Kind::Load: case Kind::Const: case Kind::Arange: case Kind::ProgramId: out(0); return;
      case Kind::Binary: case Kind::BinaryMixed: case Kind::BinaryLit: {
        const Val& r = V(in.out[0]);
        const Val& a = V(in.args[0]);
        double ea = E(in.args[0]), eb = in.kind == Kind::BinaryLit ? 0 : E(in.args[1]);
        Val b;
        if (in.kind == Kind::BinaryLit) { b.dt = r.dt; b.lo = b.hi = in.lit; }
        else b = V(in.args[1]);
        if (in.kind == Kind::BinaryLit && in.lit_left) { std::swap(ea, eb); }
        const Val& x = in.kind == Kind::BinaryLit && in.lit_left ? b : a;
        const Val& y = in.kind == Kind::BinaryLit && in.lit_left ? a : b;
        if (in.op == K::Cmp) {
          if (isf(a.dt) || isf(b.dt)) { need_exact(in, in.args[0]); if (in.kind != Kind::BinaryLit) need_exact(in, in.args[1]); }
          out(0);
          return;
        }
        if (!isf(r.dt)) { out(0); return; }
        double m = maxabs(r), mx = maxabs(x), my = maxabs(y);
        switch (in.op) {
          case K::Add: case K::Sub: out(rounded(ea + eb, r.dt, m)); return;
          case K::Minimum: case K::Maximum: out(std::max(ea, eb)); return;
          case K::Mul: {
            double prop = mx * eb + my * ea + ea * eb;
            double v = rounded(prop, r.dt, m);
            if (p.fp_fusion && !is_f8(r.dt)) v = prop + ulp(r.dt, m);  // maybe unrounded in an fma
            out(v);
            return;
          }
          case K::Div: {
            double ymin = std::min(std::fabs(y.lo), std::fabs(y.hi));
            double prop = (ea + m * eb) / (ymin - eb);
            if (r.dt == DType::f32) out(prop + (0x1p-22 + 0x1p-23) * m + 2 * half_ulp(r.dt, m));
            else out(rounded(prop, r.dt, m));
            return;
          }
          case K::Rem: need_exact(in, in.args[0]); if (in.kind != Kind::BinaryLit) need_exact(in, in.args[1]); out(0); return;
          default: out(0); return;
        }
      }
      case Kind::Compare:
        if (isf(V(in.args[0]).dt)) { need_exact(in, in.args[0]); need_exact(in, in.args[1]); }
        out(0);
        return;
      case Kind::Select: out(std::max(E(in.args[1]), E(in.args[2]))); return;
      case Kind::Fma: {
        const Val& r = V(in.out[0]);
        double ma = maxabs(V(in.args[0])), mb = maxabs(V(in.args[1]));
        double ea = E(in.args[0]), eb = E(in.args[1]), ec = E(in.args[2]);
        out(rounded(ma * eb + mb * ea + ea * eb + ec, r.dt, maxabs(r)));
        return;
      }
      case Kind::Unary: {
        const Val& a = V(in.args[0]);
        const Val& r = V(in.out[0]);
        double ea = E(in.args[0]), m = maxabs(r), mx = maxabs(a);
        if (!isf(r.dt)) { out(0); return; }
        switch (in.op) {
          case K::Neg: case K::Abs: out(ea); return;
          case K::Floor: case K::Ceil: need_exact(in, in.args[0]); out(0); return;
          case K::Sqrt: out(rounded(ea > 0 ? ea / (2 * std::sqrt(std::max(a.lo - ea, 1e-300))) : 0, r.dt, m)); return;
          case K::Exp2: out(approx(std::log(2.0) * m * ea, 0x1p-22 * m, r.dt, m)); return;
          case K::Exp: out(approx(m * ea, (0x1p-22 + 0x1p-23 * mx) * m * (1 + 0x1p-20), r.dt, m)); return;
          case K::Log2: out(approx(ea / ((a.lo - ea) * std::log(2.0)), 0x1p-22 * std::max(1.0, m), r.dt, m)); return;
          case K::Log:
            out(approx(ea / (a.lo - ea), std::log(2.0) * 0x1p-22 * std::max(1.0, m / std::log(2.0)) + 0x1p-23 * m, r.dt, m));
            return;
          case K::Rsqrt: out(approx(ea * 0.5 * std::pow(a.lo - ea, -1.5), 0x1p-22 * m, r.dt, m)); return;
          case K::Sin: case K::Cos: out(approx(ea, 0x1p-21, r.dt, m)); return;
          case K::Tanh: out(approx(ea, std::exp2(-10.98) * m, r.dt, m)); return;
          case K::Erf: out(approx(ea * 2 / std::sqrt(M_PI), 2e-5, r.dt, m)); return;
          default: out(0); return;
        }
      }
      case Kind::Clamp: out(E(in.args[0])); return;
      case Kind::Cast: {
        const Val& a = V(in.args[0]);
        DType to = in.dt;
        double ea = E(in.args[0]);
        if (!isf(to)) { if (isf(a.dt)) need_exact(in, in.args[0]); out(0); return; }
        if (!isf(a.dt)) { out(0); return; }
        out(widens(a.dt, to) ? ea : rounded(ea, to, maxabs(V(in.out[0]))));
        return;
      }
      case Kind::Bitcast:
        if (isf(V(in.args[0]).dt)) need_exact(in, in.args[0]);
        out(0);
        return;
      case Kind::ExpandDims: case Kind::Broadcast: case Kind::Trans: case Kind::Reshape: out(E(in.args[0])); return;
      case Kind::Join: out(std::max(E(in.args[0]), E(in.args[1]))); return;
      case Kind::Split: e[size_t(in.out[0])] = e[size_t(in.out[1])] = E(in.args[0]); return;
      case Kind::Reduce: case Kind::CustomReduce: {
        const Val& a = V(in.args[0]);
        const Val& r = V(in.out[0]);
        double ea = E(in.args[0]);
        if (!isf(r.dt) || in.op != K::Add) { out(ea); return; }
        int axis = in.axis < 0 ? in.axis + int(a.shape.size()) : in.axis;
        int64_t n = a.shape[size_t(axis)];
        int levels = std::max(1, int(std::ceil(std::log2(double(std::max<int64_t>(2, n))))));
        // Same tree on both devices: exact inputs give exact sums.
        if (p.opts.reduce_any_order) out(n * ea + 2 * gamma(int(n) - 1, unit_roundoff(r.dt)) * n * maxabs(a));
        else out(ea == 0 ? 0 : n * ea + 2 * gamma(levels, unit_roundoff(r.dt)) * n * maxabs(a));
        return;
      }
      case Kind::ArgReduce: need_exact(in, in.args[0]); out(0); return;
      case Kind::Scan: {
        const Val& a = V(in.args[0]);
        const Val& r = V(in.out[0]);
        double ea = E(in.args[0]);
        if (!isf(r.dt)) { out(0); return; }
        int axis = in.axis < 0 ? in.axis + int(a.shape.size()) : in.axis;
        int64_t n = a.shape[size_t(axis)];
        double mx = maxabs(a), u = unit_roundoff(r.dt);
        if (in.op == K::Add) out(n * ea + 2 * gamma(int(n), u) * n * mx);
        else out(n * std::pow(std::max(1.0, mx), double(n - 1)) * ea + 2 * gamma(int(n), u) * std::pow(std::max(1.0, mx), double(n)));
        return;
      }
      case Kind::Dot: {
        const Val &a = V(in.args[0]), &b = V(in.args[1]);
        if (!isf(a.dt)) { out(0); return; }
        int64_t Kd = a.shape[1];
        double ma = maxabs(a), mb = maxabs(b), ea = E(in.args[0]), eb = E(in.args[1]);
        if (a.dt == DType::f32 && !in.flag) { ea += 0x1p-10 * ma; eb += 0x1p-10 * mb; }
        double macc = in.args.size() > 2 ? maxabs(V(in.args[2])) : 0, eacc = in.args.size() > 2 ? E(in.args[2]) : 0;
        out(Kd * (ma * eb + mb * ea + ea * eb) + eacc + 2 * gamma(int(Kd) + 1, 0x1p-23) * (macc + Kd * ma * mb));
        return;
      }
      case Kind::Store: {
        double b = E(in.args[0]);
        auto it = store_index.find(in.id);
        if (it == store_index.end()) {
          store_index[in.id] = store_bounds.size();
          store_bounds.push_back(b);
        } else {
          store_bounds[it->second] = std::max(store_bounds[it->second], b);
        }
        return;
      }
      case Kind::For: {
        int trips = std::max(0, (in.traced_hi ? p.trips : in.hi) - in.lo);
        std::vector<double> cur;
        for (int a : in.args) cur.push_back(E(a));
        for (int t = 0; t < std::max(1, trips); ++t) {
          for (size_t k = 0; k < cur.size(); ++k) e[size_t(in.body_args[k])] = cur[k];
          e[size_t(in.iv)] = 0;
          block(in.body);
          if (trips == 0) break;  // the body's stores still get a (vacuous) bound
          for (size_t k = 0; k < cur.size(); ++k) cur[k] = E(in.yields[k]);
        }
        for (size_t k = 0; k < cur.size(); ++k) e[size_t(in.out[k])] = trips == 0 ? E(in.args[k]) : cur[k];
        return;
      }
      case Kind::If: {
        block(in.body);
        block(in.else_body);
        for (size_t k = 0; k < in.out.size(); ++k)
          e[size_t(in.out[k])] = std::max({E(in.args[k + 1]), E(in.yields[k]), E(in.else_yields[k])});
        return;
      }
    }
  }
};

// ---- listing ---------------------------------------------------------------------------------

std::string vname(int id) { return "v" + std::to_string(id); }
std::string num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

void list(const Program& p, const std::vector<Instr>& code, int indent, std::ostringstream& o) {
  std::string pad(size_t(indent) * 2, ' ');
  auto args = [](const Instr& in) {
    std::string s;
    for (size_t i = 0; i < in.args.size(); ++i) s += (i ? ", " : "") + vname(in.args[i]);
    return s;
  };
  for (const Instr& in : code) {
    o << pad << "#" << in.id << " ";
    auto res = [&](int k = 0) {
      const Val& v = p.vals[size_t(in.out[size_t(k)])];
      std::string e = v.wild ? "" : " in [" + num(v.lo) + ", " + num(v.hi) + "]" + (v.exact || !isf(v.dt) ? "" : " inexact");
      return vname(in.out[size_t(k)]) + ": " + std::string(dtype_name(v.dt)) + shape_str(v.shape) + e;
    };
    switch (in.kind) {
      case Kind::Load:
        o << res() << " = load(in_" << dtype_name(in.dt) << " region " << in.region << (in.mask ? " mask " + std::to_string(in.mask) : "")
          << (in.flag ? " other " + num(in.lit) : "") << (in.args.empty() ? "" : " iv " + vname(in.args[0])) << ")";
        break;
      case Kind::Const: o << res() << " = full(" << num(in.lit) << ")"; break;
      case Kind::Arange: o << res() << " = arange(0, " << in.shape[0] << ")"; break;
      case Kind::ProgramId: o << res() << " = program_id(0)"; break;
      case Kind::Binary: case Kind::BinaryMixed:
        o << res() << " = " << ir::op_name(in.op) << (in.pred.empty() || in.op != K::Cmp ? "" : "." + in.pred) << "(" << args(in) << ")";
        break;
      case Kind::BinaryLit:
        o << res() << " = " << ir::op_name(in.op) << (in.op == K::Cmp ? "." + in.pred : "") << "("
          << (in.lit_left ? num(in.lit) + (in.flag ? "f" : "") + ", " + args(in) : args(in) + ", " + num(in.lit) + (in.flag ? "f" : "")) << ")";
        break;
      case Kind::Compare: o << res() << " = cmp." << in.pred << "(" << args(in) << ")"; break;
      case Kind::Select: o << res() << " = where(" << args(in) << ")"; break;
      case Kind::Fma: o << res() << " = fma(" << args(in) << ")"; break;
      case Kind::Unary: o << res() << " = " << ir::op_name(in.op) << "(" << args(in) << ")"; break;
      case Kind::Clamp: o << res() << " = clamp(" << args(in) << ", " << num(in.lit) << ", " << num(in.lit2) << ")"; break;
      case Kind::Cast: o << res() << " = cast<" << dtype_name(in.dt) << ">(" << args(in) << ")"; break;
      case Kind::Bitcast: o << res() << " = bitcast<" << dtype_name(in.dt) << ">(" << args(in) << ")"; break;
      case Kind::ExpandDims: o << res() << " = expand_dims(" << args(in) << ", " << in.axis << ")"; break;
      case Kind::Broadcast: o << res() << " = broadcast_to(" << args(in) << ", " << shape_str(in.shape) << ")"; break;
      case Kind::Trans: o << res() << " = trans(" << args(in) << ")"; break;
      case Kind::Reshape: o << res() << " = reshape(" << args(in) << ", " << shape_str(in.shape) << ")"; break;
      case Kind::Join: o << res() << " = join(" << args(in) << ")"; break;
      case Kind::Split: o << res(0) << ", " << res(1) << " = split(" << args(in) << ")"; break;
      case Kind::Reduce:
        o << res() << " = " << (in.op == K::Add ? "sum" : in.op == K::Maximum ? "max" : "min") << "(" << args(in) << ", " << in.axis << ")";
        break;
      case Kind::ArgReduce: o << res() << " = " << (in.flag ? "argmax" : "argmin") << "(" << args(in) << ", " << in.axis << ")"; break;
      case Kind::CustomReduce: o << res() << " = reduce(" << args(in) << ", " << in.axis << ", " << ir::op_name(in.op) << ")"; break;
      case Kind::Scan:
        o << res() << " = " << (in.op == K::Add ? "cumsum" : "cumprod") << "(" << args(in) << ", " << in.axis
          << (in.flag ? ", reverse" : "") << ")";
        break;
      case Kind::Dot: o << res() << " = dot(" << args(in) << (in.flag ? ", ieee" : "") << ")"; break;
      case Kind::Store:
        o << "store(out_" << dtype_name(p.vals[size_t(in.args[0])].dt) << " + " << in.slot << ", " << args(in)
          << (in.mask ? ", mask " + std::to_string(in.mask) : "") << ")";
        break;
      case Kind::For: {
        o << "for " << vname(in.iv) << " in range(" << in.lo << ", " << (in.traced_hi ? "trips=" : "") << in.hi << ") carried";
        for (size_t k = 0; k < in.args.size(); ++k) o << " " << vname(in.body_args[k]) << "=" << vname(in.args[k]);
        o << " {\n";
        list(p, in.body, indent + 1, o);
        o << pad << "  yield";
        for (int y : in.yields) o << " " << vname(y);
        o << "\n" << pad << "} ->";
        for (int r : in.out) o << " " << vname(r);
        break;
      }
      case Kind::If: {
        o << "if " << vname(in.args[0]) << " {\n";
        list(p, in.body, indent + 1, o);
        o << pad << "  yield";
        for (int y : in.yields) o << " " << vname(y);
        o << "\n" << pad << "} else {\n";
        list(p, in.else_body, indent + 1, o);
        o << pad << "  yield";
        for (int y : in.else_yields) o << " " << vname(y);
        o << "\n" << pad << "} ->";
        for (size_t k = 0; k < in.out.size(); ++k) o << " " << res(int(k));
        break;
      }
    }
    o << "\n";
  }
}

// ---- buffers ------------------------------------------------------------------------------

template <class T>
void put(std::vector<uint8_t>& b, size_t i, T v) {
  std::memcpy(b.data() + i * sizeof(T), &v, sizeof(T));
}

double decode(DType d, const uint8_t* p) {
  auto rd = [&](auto t) {
    decltype(t) v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (d) {
    case DType::i1: return p[0];
    case DType::i8: return rd(int8_t{});
    case DType::i16: return rd(int16_t{});
    case DType::i32: return rd(int32_t{});
    case DType::i64: return double(rd(int64_t{}));
    case DType::u8: return p[0];
    case DType::u32: return rd(uint32_t{});
    case DType::u64: return double(rd(uint64_t{}));
    case DType::f8e4m3: return float(f8e4m3::from_bits(p[0]));
    case DType::f8e5m2: return float(f8e5m2::from_bits(p[0]));
    case DType::f16: return float(f16::from_bits(rd(uint16_t{})));
    case DType::bf16: return float(bf16::from_bits(rd(uint16_t{})));
    case DType::f32: return rd(float{});
    default: return rd(double{});
  }
}

void walk_stores(const std::vector<Instr>& code, std::vector<const Instr*>& out) {
  for (const Instr& in : code) {
    if (in.kind == Kind::Store) out.push_back(&in);
    walk_stores(in.body, out);
    walk_stores(in.else_body, out);
  }
}

Instr const_like(const Program& p, int v, int id) {
  const Val& val = p.vals[size_t(v)];
  Instr c;
  c.kind = Kind::Const;
  c.dt = val.dt;
  c.shape = val.shape;
  c.out = {v};
  c.id = id;
  if (val.wild) c.lit = 0;
  else if (isf(val.dt)) c.lit = (val.lo + val.hi) / 2;
  else c.lit = std::floor(val.lo / 2 + val.hi / 2);
  if (!isf(val.dt)) c.lit = std::clamp(c.lit, val.lo, val.hi);
  return c;
}

void edit_block(const Program& p, std::vector<Instr>& code, const std::set<int>& repl, const std::set<int>& drop) {
  std::vector<Instr> out;
  for (Instr& in : code) {
    if (in.kind == Kind::Store && drop.count(in.id)) continue;
    if (repl.count(in.id) && in.kind != Kind::Store) {
      for (int o : in.out) out.push_back(const_like(p, o, in.id));
      continue;
    }
    edit_block(p, in.body, repl, drop);
    edit_block(p, in.else_body, repl, drop);
    out.push_back(std::move(in));
  }
  code = std::move(out);
}

void ids_of(const std::vector<Instr>& code, std::vector<int>& ids, bool stores) {
  for (const Instr& in : code) {
    if ((in.kind == Kind::Store) == stores) ids.push_back(in.id);
    ids_of(in.body, ids, stores);
    ids_of(in.else_body, ids, stores);
  }
}

}  // namespace

// ---- public -----------------------------------------------------------------------------------

Program generate(uint64_t seed, int budget, const GenOptions& opts) {
  Program p;
  p.seed = seed;
  p.budget = budget;
  p.opts = opts;
  Gen g(p, seed, budget, opts);
  g.run();
  return p;
}

std::vector<double> error_bounds(const Program& p) {
  Analysis a(p);
  a.block(p.code);
  std::vector<const Instr*> stores;
  walk_stores(p.code, stores);
  std::vector<double> r;
  for (const Instr* s : stores) {
    auto it = a.store_index.find(s->id);
    r.push_back(it == a.store_index.end() ? 0 : a.store_bounds[it->second]);
  }
  return r;
}

std::string Program::str() const {
  std::ostringstream o;
  o << "// seed " << seed << " budget " << budget << ": grid " << grid << ", n " << n << ", m " << m << ", trips "
    << trips << ", fp_fusion " << fp_fusion << ", num_warps " << num_warps << "\n";
  list(*this, code, 0, o);
  return o.str();
}

void random_kernel(ptr<bool> i0, ptr<int8_t> i1, ptr<int16_t> i2, ptr<int32_t> i3, ptr<int64_t> i4, ptr<uint8_t> i5,
                   ptr<uint32_t> i6, ptr<uint64_t> i7, ptr<f8e4m3> i8, ptr<f8e5m2> i9, ptr<f16> i10, ptr<bf16> i11,
                   ptr<float> i12, ptr<double> i13, ptr<bool> o0, ptr<int8_t> o1, ptr<int16_t> o2, ptr<int32_t> o3,
                   ptr<int64_t> o4, ptr<uint8_t> o5, ptr<uint32_t> o6, ptr<uint64_t> o7, ptr<f8e4m3> o8,
                   ptr<f8e5m2> o9, ptr<f16> o10, ptr<bf16> o11, ptr<float> o12, ptr<double> o13,
                   scalar<int32_t> n, scalar<int32_t> m, scalar<int32_t> trips) {
  if (!g_program) bad("random_kernel traced without a program (use compile_program)");
  Tracer t(*g_program, {i0, i1, i2, i3, i4, i5, i6, i7, i8, i9, i10, i11, i12, i13},
           {o0, o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11, o12, o13}, n, m, trips);
  std::vector<int> defined;
  t.run_block(g_program->code, defined);
}

tl::Kernel compile_program(const Program& p) {
  struct Publish {
    explicit Publish(const Program& p) { g_program = &p; }
    ~Publish() { g_program = nullptr; }
  } publish(p);
  // Named by the program's text too: shrinking compiles many edits of one seed.
  std::ostringstream name;
  name << "rk_" << std::hex << p.seed << "_" << std::dec << p.budget << "_" << std::hex
       << (std::hash<std::string>{}(p.str()) & 0xffffffu);
  return tl::compile(random_kernel, {.name = name.str(), .num_warps = p.num_warps, .fp_fusion = p.fp_fusion});
}

Buffers make_buffers(const Program& p, uint64_t data_seed) {
  Buffers b;
  for (int d = 0; d < kNumDtypes; ++d) {
    DType dt = dt_of(d);
    size_t sz = size_t(byte_size(dt));
    std::vector<uint8_t> in(size_t(kRegions * kRegionElems) * sz);
    std::mt19937_64 rng(mix(data_seed, uint64_t(d)));
    for (int r = 0; r < kRegions; ++r) {
      double lo, hi;
      region_interval(dt, r, lo, hi);
      for (int64_t i = 0; i < kRegionElems; ++i) {
        size_t at = size_t(r * kRegionElems + i);
        double x01 = double(rng() >> 11) * 0x1.0p-53;
        uint64_t bits = rng();
        double v = isf(dt) ? (r == 2 ? std::floor(lo + x01 * (hi - lo + 1)) : lo + x01 * (hi - lo))
                           : std::floor(lo + x01 * (hi - lo + 1));
        v = std::min(v, hi);
        switch (dt) {
          case DType::i1: put<uint8_t>(in, at, r == 2 ? 1 : uint8_t(bits & 1)); break;
          case DType::i8: put<int8_t>(in, at, r == 1 ? int8_t(bits) : int8_t(v)); break;
          case DType::i16: put<int16_t>(in, at, r == 1 ? int16_t(bits) : int16_t(v)); break;
          case DType::i32: put<int32_t>(in, at, r == 1 ? int32_t(bits) : int32_t(v)); break;
          case DType::i64: put<int64_t>(in, at, r == 1 ? int64_t(bits) : int64_t(v)); break;
          case DType::u8: put<uint8_t>(in, at, r == 1 ? uint8_t(bits) : uint8_t(v)); break;
          case DType::u32: put<uint32_t>(in, at, r == 1 ? uint32_t(bits) : uint32_t(v)); break;
          case DType::u64: put<uint64_t>(in, at, r == 1 ? uint64_t(bits) : uint64_t(v)); break;
          case DType::f8e4m3: put<uint8_t>(in, at, f8e4m3(float(v)).bits); break;
          case DType::f8e5m2: put<uint8_t>(in, at, f8e5m2(float(v)).bits); break;
          case DType::f16: put<uint16_t>(in, at, f16(float(v)).bits); break;
          case DType::bf16: put<uint16_t>(in, at, bf16(float(v)).bits); break;
          case DType::f32: put<float>(in, at, float(v)); break;
          case DType::f64: put<double>(in, at, v); break;
        }
      }
    }
    b.in.push_back(std::move(in));
    b.out.emplace_back(size_t(std::max<int64_t>(1, p.out_elems[size_t(d)])) * sz, uint8_t(0x7b));
  }
  return b;
}

std::vector<std::vector<uint8_t>> run(tl::Device& dev, const tl::Kernel& k, const Program& p, const Buffers& b) {
  std::vector<tl::Buffer> ins, outs;
  std::vector<tl::Arg> args;
  for (int d = 0; d < kNumDtypes; ++d) {
    DType dt = dt_of(d);
    tl::Buffer x = dev.alloc(dt, b.in[size_t(d)].size() / size_t(byte_size(dt)));
    x.copy_from_host(b.in[size_t(d)].data(), b.in[size_t(d)].size());
    ins.push_back(x);
  }
  for (int d = 0; d < kNumDtypes; ++d) {
    DType dt = dt_of(d);
    tl::Buffer x = dev.alloc(dt, b.out[size_t(d)].size() / size_t(byte_size(dt)));
    x.copy_from_host(b.out[size_t(d)].data(), b.out[size_t(d)].size());
    outs.push_back(x);
  }
  for (auto& x : ins) args.emplace_back(x);
  for (auto& x : outs) args.emplace_back(x);
  args.emplace_back(p.n);
  args.emplace_back(p.m);
  args.emplace_back(p.trips);
  dev.launch(k, tl::Grid{p.grid}, args);
  dev.synchronize();
  std::vector<std::vector<uint8_t>> r;
  for (int d = 0; d < kNumDtypes; ++d) {
    std::vector<uint8_t> host(b.out[size_t(d)].size());
    outs[size_t(d)].copy_to_host(host.data(), host.size());
    r.push_back(std::move(host));
  }
  return r;
}

std::string compare(const Program& p, const std::vector<std::vector<uint8_t>>& want,
                    const std::vector<std::vector<uint8_t>>& got) {
  std::vector<const Instr*> stores;
  walk_stores(p.code, stores);
  std::vector<double> bounds = error_bounds(p);
  std::ostringstream o;
  int shown = 0, bad = 0;
  for (size_t s = 0; s < stores.size(); ++s) {
    const Instr& st = *stores[s];
    const Val& v = p.vals[size_t(st.args[0])];
    size_t sz = size_t(byte_size(v.dt)), d = size_t(idx(v.dt));
    int64_t count = v.numel() * p.grid;
    for (int64_t i = 0; i < count; ++i) {
      size_t at = size_t(st.slot + i) * sz;
      const uint8_t *w = want[d].data() + at, *g = got[d].data() + at;
      bool ok;
      double wv = decode(v.dt, w), gv = decode(v.dt, g);
      if (!isf(v.dt)) ok = std::memcmp(w, g, sz) == 0;
      else if (std::isnan(wv) || std::isnan(gv)) ok = std::isnan(wv) && std::isnan(gv);
      else ok = wv == gv || std::fabs(wv - gv) <= bounds[s];  // == for infinities (bitcast bits)
      if (ok) continue;
      ++bad;
      if (shown++ < 6) {
        o << "store #" << st.id << " (" << vname(st.args[0]) << ": " << dtype_name(v.dt) << shape_str(v.shape)
          << ") element " << i << ": interp " << std::setprecision(17) << wv << ", gpu " << gv << ", |diff| "
          << std::fabs(wv - gv) << " > bound " << bounds[s] << "\n";
      }
    }
  }
  if (bad) o << bad << " elements differ\n";
  return o.str();
}

Program edit(const Program& p, const std::vector<int>& replaced, const std::vector<int>& drop_stores) {
  Program q = p;
  std::set<int> repl(replaced.begin(), replaced.end()), drop(drop_stores.begin(), drop_stores.end());
  edit_block(q, q.code, repl, drop);
  return q;
}

Shrunk shrink(uint64_t seed, int budget, const GenOptions& opts, const std::function<bool(const Program&)>& fails) {
  Shrunk s;
  // 1. The smallest budget that still fails (prefixes of one kernel).
  int lo = budget;
  for (int b = 1; b < budget; ++b) {
    ++s.attempts;
    if (fails(generate(seed, b, opts))) { lo = b; break; }
  }
  s.budget = lo;
  Program base = generate(seed, lo, opts);
  // 2. Ops replaced by constants, last first; then stores dropped.
  std::vector<int> ops, stores, repl, drop;
  ids_of(base.code, ops, false);
  ids_of(base.code, stores, true);
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    auto trial = repl;
    trial.push_back(*it);
    ++s.attempts;
    if (fails(edit(base, trial, drop))) repl = trial;
  }
  for (int st : stores) {
    auto trial = drop;
    trial.push_back(st);
    if (trial.size() == stores.size()) break;
    ++s.attempts;
    if (fails(edit(base, repl, trial))) drop = trial;
  }
  s.replaced = repl;
  s.program = edit(base, repl, drop);
  return s;
}

std::string in_child(const std::function<std::string()>& fn, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return fn();
  // The child's stderr goes to a file: what LLVM prints before exit(1).
  char err_path[] = "/tmp/tiledsl-rk-stderr-XXXXXX";
  int err_fd = mkstemp(err_path);
  // The child's temporary files (ptxas inputs) go to a folder of its own,
  // removed after it, however it ended.
  char tmp_dir[] = "/tmp/tiledsl-child-XXXXXX";
  bool have_tmp = mkdtemp(tmp_dir) != nullptr;
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    if (have_tmp) std::filesystem::remove_all(tmp_dir);
    return fn();
  }
  if (pid == 0) {
    // A process group of its own: a timeout kills what it started too
    // (a ptxas it is waiting for).
    setpgid(0, 0);
    if (have_tmp) setenv("TMPDIR", tmp_dir, 1);
    close(fds[0]);
    if (err_fd >= 0) dup2(err_fd, 2);
    std::string msg;
    try {
      msg = fn();
    } catch (const std::exception& e) {
      msg = std::string("exception: ") + e.what();
    } catch (...) {
      msg = "unknown exception";
    }
    size_t off = 0;
    while (off < msg.size()) {
      ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0) break;
      off += size_t(w);
    }
    close(fds[1]);
    _exit(msg.empty() ? 0 : 1);
  }
  close(fds[1]);
  setpgid(pid, pid);  // as the child does, whichever runs first
  std::string msg;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (;;) {
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) { timed_out = true; break; }
    pollfd pf{fds[0], POLLIN, 0};
    int r = poll(&pf, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) { timed_out = true; break; }
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    msg.append(buf, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  if (timed_out) kill(-pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // what it left running (nothing, normally)
  if (have_tmp) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_dir, ec);
  }
  std::string err;
  if (err_fd >= 0) {
    char buf[4096];
    ssize_t n = pread(err_fd, buf, sizeof buf, 0);
    if (n > 0) err.assign(buf, size_t(n));
    close(err_fd);
    unlink(err_path);
  }
  std::string tail = err.empty() ? "" : "; its stderr: " + err;
  if (timed_out) return "timeout after " + std::to_string(timeout_s) + " s" + tail;
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")" +
           (msg.empty() ? "" : ": " + msg) + tail + "\n";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return msg.empty() ? "exit status " + std::to_string(WEXITSTATUS(status)) + tail + "\n" : msg;
}

}  // namespace randk
