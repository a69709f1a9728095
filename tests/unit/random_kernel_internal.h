// The random kernel generator's internals (random_kernel_*.cpp): the
// dtypes' number formats (mantissa bits, ulps, ranges), the input regions,
// and the generator (Gen), whose ops are drawn in random_kernel_gen_ops.cpp
// (leaves and elementwise ops) and random_kernel_gen_blocks.cpp (shape ops,
// reductions, dots, loops, ifs, stores, the driver). Not a public header of
// the tests: random_kernel.h is.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "random_kernel.h"

namespace randk {

using namespace tl;
using K = ir::OpKind;

// ---- dtypes --------------------------------------------------------------------------

// The kernels' element types in the order of their pointer parameters
// (random_kernel.h; u16 has none).
inline constexpr DType kParamTypes[] = {DType::i1,  DType::i8,     DType::i16,    DType::i32, DType::i64,
                                        DType::u8,  DType::u32,    DType::u64,    DType::f8e4m3,
                                        DType::f8e5m2, DType::f16, DType::bf16, DType::f32, DType::f64};
inline DType dt_of(int i) { return kParamTypes[i]; }
inline int idx(DType d) {
  for (int i = 0; i < int(std::size(kParamTypes)); ++i)
    if (kParamTypes[i] == d) return i;
  throw std::logic_error("random kernels: no parameter of type " + std::string(dtype_name(d)));
}
inline bool isf(DType d) { return is_float(d); }
inline bool is_f8(DType d) { return d == DType::f8e4m3 || d == DType::f8e5m2; }
inline int mant_bits(DType d) {
  switch (d) {
    case DType::f8e4m3: return 3;
    case DType::f8e5m2: return 2;
    case DType::f16: return 10;
    case DType::bf16: return 7;
    case DType::f32: return 23;
    default: return 52;
  }
}
inline int min_exp(DType d) {
  switch (d) {
    case DType::f8e4m3: return -6;
    case DType::f8e5m2: case DType::f16: return -14;
    case DType::bf16: case DType::f32: return -126;
    default: return -1022;
  }
}
// Magnitudes the generator stays below (well inside each format's finite
// range; for f8e5m2 also where sums of two values are exact in f32).
inline double cap(DType d) {
  switch (d) {
    case DType::f8e4m3: return 64;
    case DType::f8e5m2: return 64;
    case DType::f16: return 2048;
    case DType::bf16: case DType::f32: case DType::f64: return 1 << 20;
    default: return 0;
  }
}
// Half an ulp of the largest magnitude `m` (at least half the smallest quantum).
inline double half_ulp(DType d, double m) {
  int e = m > 0 ? std::ilogb(m) : min_exp(d);
  e = std::max(e, min_exp(d));
  return std::ldexp(1.0, e - mant_bits(d) - 1);
}
inline double ulp(DType d, double m) { return 2 * half_ulp(d, m); }
inline double unit_roundoff(DType d) { return std::ldexp(1.0, -mant_bits(d) - 1); }
// (1 + u)^k - 1: the bound of k roundings' relative error, which Higham's
// gamma_k = k u / (1 - k u) bounds only while k u < 1 (past that gamma is
// negative: an f8 sum of 32 values, u = 2^-4, gave a bound of -264).
inline double gamma(int k, double u) { return std::expm1(k * std::log1p(u)); }

inline double int_min(DType d) {
  switch (d) {
    case DType::i1: case DType::u8: case DType::u16: case DType::u32: case DType::u64: return 0;
    case DType::i8: return -128;
    case DType::i16: return -32768;
    case DType::i32: return -2147483648.0;
    default: return -9223372036854775808.0;
  }
}
inline double int_max(DType d) {
  switch (d) {
    case DType::i1: return 1;
    case DType::i8: return 127;
    case DType::i16: return 32767;
    case DType::i32: return 2147483647.0;
    case DType::i64: return 9223372036854775807.0;
    case DType::u8: return 255;
    case DType::u16: return 65535;
    case DType::u32: return 4294967295.0;
    default: return 18446744073709551615.0;
  }
}
inline double fmax_of(DType d) {
  switch (d) {
    case DType::f8e4m3: return 448;
    case DType::f8e5m2: return 57344;
    case DType::f16: return 65504;
    case DType::f64: return 1.7e308;
    default: return 3.4e38;
  }
}
// Every value of `from` is one of `to` (a conversion that never rounds).
inline bool widens(DType from, DType to) {
  return mant_bits(to) >= mant_bits(from) && min_exp(to) - mant_bits(to) <= min_exp(from) - mant_bits(from) &&
         fmax_of(to) >= fmax_of(from);
}
inline double maxabs(const Val& v) { return std::max(std::fabs(v.lo), std::fabs(v.hi)); }

// "[4x8]", and "v12" for value 12 (random_kernel_errors.cpp, with the listing).
std::string shape_str(const std::vector<int64_t>& s);
std::string vname(int id);

// Input value distributions: region r of dtype d.
inline void region_interval(DType d, int r, double& lo, double& hi) {
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

inline uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  x ^= x >> 31; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 29;
  return x;
}

inline const DType kAll[] = {DType::i1, DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u32,
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
  int gen_load(DType d, std::vector<int64_t> shape, int region = -1);
  int gen_const(DType d, std::vector<int64_t> shape, double lit);
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
  int any_value(std::function<bool(const Val&)> ok);

  // ---- ops
  Val binary_result(K op, const Val& a, const Val& b, bool& ok);
  bool gen_binary();
  bool gen_mixed();
  bool gen_binary_lit();
  bool gen_compare();
  bool gen_select();
  bool gen_fma();
  bool gen_unary();
  bool gen_clamp();
  int clamp_to(int a, double lo, double hi, bool close);
  bool gen_cast();
  bool gen_bitcast();
  bool gen_shape_op();
  bool gen_reduce();
  bool gen_dot();
  static void carried_interval(const Val& v, double& lo, double& hi);
  bool gen_for();
  bool gen_if();
  void gen_store(int v, std::mt19937_64& r);
  void step();
  void run();
};

// Every Store of `code` and its nested blocks, in program order.
inline void walk_stores(const std::vector<Instr>& code, std::vector<const Instr*>& out) {
  for (const Instr& in : code) {
    if (in.kind == Kind::Store) out.push_back(&in);
    walk_stores(in.body, out);
    walk_stores(in.else_body, out);
  }
}

}  // namespace randk
