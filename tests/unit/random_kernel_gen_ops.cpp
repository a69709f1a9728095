// The random kernel generator, part 1: leaves (loads, constants) and the
// elementwise ops (binary, mixed dtypes, literals, comparisons, select, fma,
// unary math, clamp, casts, bitcasts), each keeping its result's interval
// and exactness (see random_kernel.h).
#include "random_kernel_internal.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace randk {

int Gen::gen_load(DType d, std::vector<int64_t> shape, int region) {
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

int Gen::gen_const(DType d, std::vector<int64_t> shape, double lit) {
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

int Gen::any_value(std::function<bool(const Val&)> ok) {
  if (chance(0.8))
    if (auto id = find([&](const Val& v) { return !v.wild && ok(v); })) return *id;
  return -1;
}

Val Gen::binary_result(K op, const Val& a, const Val& b, bool& ok) {
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

bool Gen::gen_binary() {
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
bool Gen::gen_mixed() {
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

bool Gen::gen_binary_lit() {
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

bool Gen::gen_compare() {
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

bool Gen::gen_select() {
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

bool Gen::gen_fma() {
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

bool Gen::gen_unary() {
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

bool Gen::gen_clamp() {
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

int Gen::clamp_to(int a, double lo, double hi, bool close) {
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

bool Gen::gen_cast() {
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

bool Gen::gen_bitcast() {
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

}  // namespace randk
