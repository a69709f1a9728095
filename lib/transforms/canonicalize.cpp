// Canonicalization: constant folding and algebraic simplification, the
// rewrites that turn what tracing a C++ kernel writes (constants splatted into
// tiles, `+ 0` offsets, casts to the type a value already has, reshapes that
// undo each other) into the smaller IR the later stages expect.
//
// Folding follows the semantics written in ops.def exactly, and skips a case
// rather than guess:
// - integers wrap at the width of their dtype, with its signedness (i1 holds
//   0 and 1); integer division or remainder by zero, MIN / -1, and negative
//   shift counts are left alone;
// - float results are computed in double and rounded once with tl::round_to
//   (double keeps more than 2p+2 bits of f32 and the narrow formats, so
//   add/sub/mul/div rounded twice equal the once-rounded result);
//   transcendental functions, sqrt and fma are not folded, since their
//   results depend on the implementation;
// - minimum/maximum of +0 and -0 is not folded (the sign is not specified).
// Float identities are only those exact for every input including NaN, -0
// and inf: x * 1, x / 1, x - 0, x + (-0). x * 0 -> 0 and x - x -> 0 hold for
// integers only.
//
// Control flow: an `if` with a constant condition is replaced by the ops of
// the branch it takes; a `for` whose constant bounds give no iteration is
// replaced by its initial values.
//
// Ops are rewritten in place of their single result; the rewritten op is
// erased (it is pure). Each sweep visits the ops in program order and is
// linear in their number: replaced values are recorded and each later use is
// rewritten when its op is reached, never by a walk per replacement. A
// sweep folds whole chains (each op sees its operands already folded), so
// the sweeps repeat only until nothing changes, typically twice.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "transforms/passes.h"

namespace tl::transforms {

namespace {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

// ---------------------------------------------------------------------------
// Constant values.

// The value of a `constant` op. Integers are kept canonical: the low
// bit_width(dtype) bits, sign-extended for signed dtypes and zero-extended
// otherwise, so that C++ arithmetic on int64/uint64 then gives the dtype's
// results after renormalizing.
struct Scalar {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
};

int64_t normalize_int(DType t, uint64_t bits) {
  int w = bit_width(t);
  if (w >= 64) return int64_t(bits);
  uint64_t mask = (uint64_t(1) << w) - 1;
  bits &= mask;
  if (is_signed(t) && (bits >> (w - 1)) & 1) bits |= ~mask;
  return int64_t(bits);
}

int64_t int_min(DType t) { return normalize_int(t, uint64_t(1) << (bit_width(t) - 1)); }

std::optional<Scalar> constant_of(const Value* v) {
  if (!v->def || v->def->kind != OpKind::Constant || v->type.is_ptr) return std::nullopt;
  auto it = v->def->attrs.find("value");
  if (it == v->def->attrs.end()) return std::nullopt;
  DType t = v->type.dtype;
  Scalar s;
  if (is_float(t)) {
    s.is_float = true;
    if (auto* d = std::get_if<double>(&it->second)) s.f = *d;
    else if (auto* n = std::get_if<int64_t>(&it->second)) {
      // Beyond 2^53 the double would round before round_to rounds again.
      if (*n > (int64_t(1) << 53) || *n < -(int64_t(1) << 53)) return std::nullopt;
      s.f = double(*n);
    } else {
      return std::nullopt;
    }
    s.f = round_to(t, s.f);  // the value the constant holds at its dtype
    return s;
  }
  auto* n = std::get_if<int64_t>(&it->second);
  if (!n) return std::nullopt;
  s.i = normalize_int(t, uint64_t(*n));
  return s;
}

}  // namespace

bool for_step_known_positive(const ir::Op& for_op) {
  if (for_op.kind != OpKind::For || for_op.operands.size() < 3) return false;
  auto step = constant_of(for_op.operands[2]);
  return step && !step->is_float && (is_signed(for_op.operands[2]->type.dtype) ? step->i > 0 : step->i != 0);
}

namespace {

bool is_int_const(const Value* v, int64_t want) {
  auto c = constant_of(v);
  return c && !c->is_float && c->i == normalize_int(v->type.dtype, uint64_t(want));
}

// Float constant equal to `want` bit for bit (so -0.0 and 0.0 differ).
bool is_float_const(const Value* v, double want) {
  auto c = constant_of(v);
  return c && c->is_float && std::bit_cast<uint64_t>(c->f) == std::bit_cast<uint64_t>(want);
}

bool is_int_type(const Type& t) { return !t.is_ptr && is_int(t.dtype); }
bool is_float_type(const Type& t) { return !t.is_ptr && is_float(t.dtype); }

// ---------------------------------------------------------------------------
// Folding of one element.

std::optional<int64_t> fold_int_binary(OpKind k, DType t, int64_t a, int64_t b) {
  const bool sgn = is_signed(t);
  const int w = bit_width(t);
  const uint64_t ua = uint64_t(a), ub = uint64_t(b);
  switch (k) {
    case OpKind::Add: return normalize_int(t, ua + ub);
    case OpKind::Sub: return normalize_int(t, ua - ub);
    case OpKind::Mul: return normalize_int(t, ua * ub);
    case OpKind::Div:
    case OpKind::Rem:
      if (b == 0) return std::nullopt;  // an error at run time; keep it there
      if (sgn) {
        if (a == int_min(t) && b == -1) return std::nullopt;  // overflows
        return normalize_int(t, uint64_t(k == OpKind::Div ? a / b : a % b));
      }
      return normalize_int(t, k == OpKind::Div ? ua / ub : ua % ub);
    case OpKind::And: return normalize_int(t, ua & ub);
    case OpKind::Or: return normalize_int(t, ua | ub);
    case OpKind::Xor: return normalize_int(t, ua ^ ub);
    case OpKind::Shl:
    case OpKind::Shr:
      if (sgn && b < 0) return std::nullopt;  // ops.def does not say
      if (ub >= uint64_t(w)) return (k == OpKind::Shr && sgn && a < 0) ? -1 : 0;
      if (k == OpKind::Shl) return normalize_int(t, ua << ub);
      return sgn ? normalize_int(t, uint64_t(a >> ub)) : normalize_int(t, ua >> ub);
    case OpKind::Minimum:
    case OpKind::Maximum: {
      bool a_less = sgn ? a < b : ua < ub;
      bool pick_a = (k == OpKind::Minimum) == a_less;
      return pick_a ? a : b;
    }
    default: return std::nullopt;
  }
}

std::optional<double> fold_float_binary(OpKind k, DType t, double a, double b) {
  switch (k) {
    case OpKind::Add: return round_to(t, a + b);
    case OpKind::Sub: return round_to(t, a - b);
    case OpKind::Mul: return round_to(t, a * b);
    case OpKind::Div: return round_to(t, a / b);
    case OpKind::Rem: return round_to(t, std::fmod(a, b));  // exact
    case OpKind::Minimum:
    case OpKind::Maximum:
      if (std::isnan(a)) return b;  // one NaN: the other operand (PTX min/max)
      if (std::isnan(b)) return a;
      if (a == 0 && b == 0 && std::signbit(a) != std::signbit(b)) return std::nullopt;
      return k == OpKind::Minimum ? std::fmin(a, b) : std::fmax(a, b);
    default: return std::nullopt;
  }
}

std::optional<bool> fold_cmp(const std::string& pred, const Scalar& a, const Scalar& b, DType t) {
  // A three-way comparison would lose NaN; spell each predicate out.
  if (a.is_float) {
    double x = a.f, y = b.f;
    if (pred == "eq") return x == y;
    if (pred == "ne") return x != y;  // true when either is NaN
    if (pred == "lt") return x < y;
    if (pred == "le") return x <= y;
    if (pred == "gt") return x > y;
    if (pred == "ge") return x >= y;
    return std::nullopt;
  }
  bool less, equal = a.i == b.i;
  less = is_signed(t) ? a.i < b.i : uint64_t(a.i) < uint64_t(b.i);
  if (pred == "eq") return equal;
  if (pred == "ne") return !equal;
  if (pred == "lt") return less;
  if (pred == "le") return less || equal;
  if (pred == "gt") return !less && !equal;
  if (pred == "ge") return !less;
  return std::nullopt;
}

std::optional<Scalar> fold_unary(OpKind k, DType t, const Scalar& a) {
  Scalar r = a;
  if (a.is_float) {
    switch (k) {
      case OpKind::Neg: r.f = -a.f; return r;
      case OpKind::Abs: r.f = std::fabs(a.f); return r;
      case OpKind::Floor: r.f = std::floor(a.f); return r;
      case OpKind::Ceil: r.f = std::ceil(a.f); return r;
      default: return std::nullopt;
    }
  }
  const uint64_t ua = uint64_t(a.i);
  switch (k) {
    case OpKind::Neg: r.i = normalize_int(t, uint64_t(0) - ua); return r;
    case OpKind::Not: r.i = normalize_int(t, ~ua); return r;
    case OpKind::Abs:
      r.i = (is_signed(t) && a.i < 0) ? normalize_int(t, uint64_t(0) - ua) : a.i;
      return r;
    default: return std::nullopt;
  }
}

// cast, element by element, following ops.def.
std::optional<Scalar> fold_cast(DType from, DType to, const Scalar& a) {
  Scalar r;
  r.is_float = is_float(to);
  if (!a.is_float) {
    if (to == DType::i1) { r.i = a.i != 0; return r; }
    if (is_int(to)) { r.i = normalize_int(to, uint64_t(a.i)); return r; }
    // int -> float, rounded to nearest even once. Through double (exact up to
    // 2^53) and round_to for the narrow formats only while float holds the
    // integer exactly; f32 and f64 convert directly.
    const bool sgn = is_signed(from);
    const uint64_t ua = uint64_t(a.i);
    if (to == DType::f64) r.f = sgn ? double(a.i) : double(ua);
    else if (to == DType::f32) r.f = sgn ? double(float(a.i)) : double(float(ua));
    else {
      const int64_t exact_limit = int64_t(1) << 24;
      bool fits = sgn ? (a.i >= -exact_limit && a.i <= exact_limit) : ua <= uint64_t(exact_limit);
      if (!fits) return std::nullopt;
      r.f = round_to(to, sgn ? double(a.i) : double(ua));
    }
    return r;
  }
  if (is_float(to)) { r.f = round_to(to, a.f); return r; }
  // float -> int: truncate toward zero, saturate, NaN -> 0.
  if (std::isnan(a.f)) {
    if (to == DType::i1) return std::nullopt;  // "NaN -> 0" and "!= 0" disagree
    r.i = 0;
    return r;
  }
  if (to == DType::i1) { r.i = a.f != 0; return r; }
  const double t = std::trunc(a.f);
  const int w = bit_width(to);
  if (is_signed(to)) {
    const double lo = -std::ldexp(1.0, w - 1), hi = std::ldexp(1.0, w - 1);  // exact doubles
    if (t <= lo) r.i = int_min(to);
    else if (t >= hi) r.i = normalize_int(to, uint64_t(int_min(to)) - 1);  // max
    else r.i = int64_t(t);
  } else {
    const double hi = std::ldexp(1.0, w);
    if (t <= 0) r.i = 0;
    else if (t >= hi) r.i = normalize_int(to, ~uint64_t(0));
    else r.i = normalize_int(to, uint64_t(t));
  }
  return r;
}

// ---------------------------------------------------------------------------
// Rewrites of one op. Each returns the value replacing the op's single
// result, or null when it does not apply.

class Rewriter {
 public:
  // `at` is the op's position in `region`: new ops go right before it.
  Rewriter(ir::Region& region, ir::Region::iterator at) : op_(at->get()), region_(region), at_(at) {}

  Value* run() {
    if (op_->results.size() != 1 || !op_->regions.empty() || !op_is_pure(op_->kind)) return nullptr;
    if (Value* v = fold()) return v;
    return simplify();
  }

 private:
  Op* op_;
  ir::Region& region_;
  ir::Region::iterator at_;

  const Type& result_type() const { return op_->result()->type; }
  Value* operand(int i) const { return op_->operands.at(i); }

  Value* make_constant(const Scalar& s) {
    ir::Builder b(&region_, at_);
    b.loc = op_->loc;
    if (s.is_float) return b.constant_float(result_type(), s.f);
    return b.constant_int(result_type(), s.i);
  }
  Value* make_int(int64_t v) {
    Scalar s;
    s.i = normalize_int(result_type().dtype, uint64_t(v));
    return make_constant(s);
  }
  Value* make_op(OpKind k, std::vector<Value*> operands, ir::Attrs attrs) {
    ir::Builder b(&region_, at_);
    b.loc = op_->loc;
    return b.create1(k, std::move(operands), result_type(), std::move(attrs));
  }

  // Constant folding: every operand a constant (scalar or splatted).
  Value* fold() {
    if (result_type().is_ptr) return nullptr;
    std::vector<Scalar> in;
    for (Value* v : op_->operands) {
      auto c = constant_of(v);
      if (!c) return nullptr;
      in.push_back(*c);
    }
    const OpKind k = op_->kind;
    const DType rt = result_type().dtype;
    switch (k) {
      // A constant is uniform, so moving its elements around keeps it.
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::Trans:
        if (in.size() != 1 || operand(0)->type.dtype != rt) return nullptr;
        return make_constant(in[0]);
      case OpKind::Cast: {
        if (in.size() != 1) return nullptr;
        auto r = fold_cast(operand(0)->type.dtype, rt, in[0]);
        return r ? make_constant(*r) : nullptr;
      }
      case OpKind::Cmp: {
        if (in.size() != 2 || in[0].is_float != in[1].is_float) return nullptr;
        auto r = fold_cmp(op_->attr_str_or("pred", ""), in[0], in[1], operand(0)->type.dtype);
        return r ? make_int(*r) : nullptr;
      }
      case OpKind::Neg: case OpKind::Not: case OpKind::Abs: case OpKind::Floor: case OpKind::Ceil: {
        if (in.size() != 1 || operand(0)->type.dtype != rt) return nullptr;
        auto r = fold_unary(k, rt, in[0]);
        return r ? make_constant(*r) : nullptr;
      }
      case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
      case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Shl: case OpKind::Shr:
      case OpKind::Minimum: case OpKind::Maximum: {
        if (in.size() != 2 || operand(0)->type.dtype != rt || operand(1)->type.dtype != rt) return nullptr;
        if (in[0].is_float) {
          auto r = fold_float_binary(k, rt, in[0].f, in[1].f);
          if (!r) return nullptr;
          Scalar s;
          s.is_float = true;
          s.f = *r;
          return make_constant(s);
        }
        auto r = fold_int_binary(k, rt, in[0].i, in[1].i);
        return r ? make_int(*r) : nullptr;
      }
      default: return nullptr;  // select is handled by simplify()
    }
  }

  // Algebraic identities; operands need not be constant.
  Value* simplify() {
    const OpKind k = op_->kind;
    const Type& rt = result_type();
    const size_t n = op_->operands.size();
    auto same_type_as_result = [&](Value* v) { return v->type == rt; };
    const bool integer = is_int_type(rt);
    const bool floating = is_float_type(rt);

    if (n == 2) {
      Value* a = operand(0);
      Value* b = operand(1);
      switch (k) {
        case OpKind::Add:
          if (integer && is_int_const(b, 0) && same_type_as_result(a)) return a;
          if (integer && is_int_const(a, 0) && same_type_as_result(b)) return b;
          // x + (-0.0) == x for every x (x + 0.0 turns -0 into +0).
          if (floating && is_float_const(b, -0.0) && same_type_as_result(a)) return a;
          if (floating && is_float_const(a, -0.0) && same_type_as_result(b)) return b;
          break;
        case OpKind::Sub:
          if (integer && is_int_const(b, 0) && same_type_as_result(a)) return a;
          if (floating && is_float_const(b, 0.0) && same_type_as_result(a)) return a;
          if (integer && a == b) return make_int(0);
          break;
        case OpKind::Mul:
          if (integer && is_int_const(b, 1) && same_type_as_result(a)) return a;
          if (integer && is_int_const(a, 1) && same_type_as_result(b)) return b;
          if (floating && is_float_const(b, 1.0) && same_type_as_result(a)) return a;
          if (floating && is_float_const(a, 1.0) && same_type_as_result(b)) return b;
          if (integer && (is_int_const(a, 0) || is_int_const(b, 0))) return make_int(0);
          break;
        case OpKind::Div:
          if (integer && is_int_const(b, 1) && same_type_as_result(a)) return a;
          if (floating && is_float_const(b, 1.0) && same_type_as_result(a)) return a;
          break;
        case OpKind::And:
          if (a == b && same_type_as_result(a)) return a;
          if (integer && (is_int_const(a, 0) || is_int_const(b, 0))) return make_int(0);
          if (integer && is_int_const(b, -1) && same_type_as_result(a)) return a;  // all ones
          if (integer && is_int_const(a, -1) && same_type_as_result(b)) return b;
          break;
        case OpKind::Or:
          if (a == b && same_type_as_result(a)) return a;
          if (integer && is_int_const(b, 0) && same_type_as_result(a)) return a;
          if (integer && is_int_const(a, 0) && same_type_as_result(b)) return b;
          break;
        case OpKind::Xor:
          if (integer && a == b) return make_int(0);
          if (integer && is_int_const(b, 0) && same_type_as_result(a)) return a;
          if (integer && is_int_const(a, 0) && same_type_as_result(b)) return b;
          break;
        case OpKind::Shl:
        case OpKind::Shr:
          if (integer && is_int_const(b, 0) && same_type_as_result(a)) return a;
          break;
        case OpKind::Minimum:
        case OpKind::Maximum:
          if (a == b && same_type_as_result(a)) return a;
          break;
        case OpKind::Cmp:
          // x == x is false for a NaN, so only integers.
          if (a == b && is_int_type(a->type)) {
            const std::string pred = op_->attr_str_or("pred", "");
            if (pred == "eq" || pred == "le" || pred == "ge") return make_int(1);
            if (pred == "ne" || pred == "lt" || pred == "gt") return make_int(0);
          }
          break;
        case OpKind::AddPtr:
          if (is_int_const(b, 0) && same_type_as_result(a)) return a;
          break;
        default: break;
      }
    }

    if (k == OpKind::Select && n == 3) {
      Value* cond = operand(0);
      Value* a = operand(1);
      Value* b = operand(2);
      if (auto c = constant_of(cond); c && !c->is_float) {
        Value* chosen = c->i != 0 ? a : b;
        if (same_type_as_result(chosen)) return chosen;
      }
      if (a == b && same_type_as_result(a)) return a;
    }

    if (n == 1) {
      Value* x = operand(0);
      Op* def = x->def;
      switch (k) {
        case OpKind::Cast:
        case OpKind::Bitcast:
        case OpKind::Broadcast:
        case OpKind::Reshape:
          if (same_type_as_result(x)) return x;
          break;
        default: break;
      }
      // Chains of the same kind collapse to one op from the first input.
      if (def && def->operands.size() == 1) {
        Value* origin = def->operands[0];
        // Reshapes (expand_dims is one) compose: row-major order is kept.
        if (k == OpKind::Reshape && (def->kind == OpKind::Reshape || def->kind == OpKind::ExpandDims) &&
            origin->type.is_tile())
          return same_type_as_result(origin) ? origin : make_op(OpKind::Reshape, {origin}, {});
        // broadcast(broadcast(x)) = broadcast(x): the same size-1 dims grow.
        if (k == OpKind::Broadcast && def->kind == OpKind::Broadcast)
          return same_type_as_result(origin) ? origin : make_op(OpKind::Broadcast, {origin}, {});
        if (k == OpKind::Neg && def->kind == OpKind::Neg && same_type_as_result(origin)) return origin;
        if (k == OpKind::Not && def->kind == OpKind::Not && same_type_as_result(origin)) return origin;
      }
      if (k == OpKind::Trans && op_->has_attr("order")) {
        const auto& outer = op_->attr_ints("order");
        if (is_identity(outer) && same_type_as_result(x)) return x;
        if (def && def->kind == OpKind::Trans && def->has_attr("order")) {
          // trans(trans(y, inner), outer): result dim i = y dim inner[outer[i]].
          const auto& inner = def->attr_ints("order");
          if (inner.size() != outer.size()) return nullptr;
          std::vector<int64_t> composed(outer.size());
          for (size_t i = 0; i < outer.size(); ++i) {
            if (outer[i] < 0 || size_t(outer[i]) >= inner.size()) return nullptr;
            composed[i] = inner[size_t(outer[i])];
          }
          Value* origin = def->operands.at(0);
          if (is_identity(composed) && same_type_as_result(origin)) return origin;
          return make_op(OpKind::Trans, {origin}, {{"order", composed}});
        }
      }
    }
    return nullptr;
  }

  static bool is_identity(const std::vector<int64_t>& order) {
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i] != int64_t(i)) return false;
    return true;
  }
};

// ---------------------------------------------------------------------------
// Control flow with constant conditions. Each records the replacements of the
// op's results and returns true when the op (at `it` in `region`) is to be
// erased.

// if with a constant condition: the chosen region's ops move in front of the
// `if`, and its yielded values replace the results. `moved` is set to the
// first op moved (region.ops.end() when the branch held only its yield), so
// the caller visits the moved ops next.
bool inline_constant_if(ir::Region& region, ir::Region::iterator it, ir::Replacements& repl,
                        ir::Region::iterator& moved) {
  Op* op = it->get();
  if (op->kind != OpKind::If || op->operands.size() != 1 || op->regions.size() != 2) return false;
  auto cond = constant_of(op->operands[0]);
  if (!cond || cond->is_float) return false;
  ir::Region& chosen = *op->regions[cond->i != 0 ? 0 : 1];
  Op* yield = chosen.terminator();
  if (!yield || yield->kind != OpKind::Yield || yield->operands.size() != op->results.size()) return false;
  moved = chosen.ops.size() > 1 ? chosen.ops.begin() : region.ops.end();
  for (auto o = chosen.ops.begin(); std::next(o) != chosen.ops.end(); ++o) (*o)->parent = &region;
  // Iterators stay valid across a splice: `moved` now points into `region`.
  region.ops.splice(it, chosen.ops, chosen.ops.begin(), std::prev(chosen.ops.end()));
  for (size_t k = 0; k < op->results.size(); ++k) repl.add(op->result(int(k)), yield->operands[k]);
  return true;
}

// for whose constant bounds give no iteration (hi <= lo, ops.def) and
// whose step is a constant above 0 (for_step_known_positive): the results
// are the initial values and the body never runs.
bool remove_zero_trip_for(ir::Region::iterator it, ir::Replacements& repl) {
  constexpr size_t kBounds = 3;  // lo, hi, step before the initial values
  Op* op = it->get();
  if (op->kind != OpKind::For || op->operands.size() != kBounds + op->results.size()) return false;
  auto lo = constant_of(op->operands[0]);
  auto hi = constant_of(op->operands[1]);
  if (!lo || !hi || lo->is_float || hi->is_float || !for_step_known_positive(*op)) return false;
  const bool no_trips = is_signed(op->operands[0]->type.dtype) ? hi->i <= lo->i : uint64_t(hi->i) <= uint64_t(lo->i);
  if (!no_trips) return false;
  for (size_t k = 0; k < op->results.size(); ++k) repl.add(op->result(int(k)), op->operands[kBounds + k]);
  return true;
}

// One sweep over `region` in program order. Replaced results go into `repl`,
// which rewrites each later op's operands when the sweep reaches it (uses
// follow their definition), so a sweep is linear in the number of ops.
// hint(hint(x)) as one hint of x promising both (Triton's idiom
// max_contiguous(multiple_of(offs, B), B) means runs of B whose first
// values are multiples of B, not that every element is one); the inner
// hint stays for its other readers, if any (dce removes it otherwise).
bool merge_hints(Op& op) {
  if (op.kind != OpKind::Hint || !op.operands[0]->def || op.operands[0]->def->kind != OpKind::Hint) return false;
  const Op& inner = *op.operands[0]->def;
  for (const char* key : {"divisibility", "contiguity"}) {
    if (!inner.has_attr(key)) continue;
    std::vector<int64_t> v = inner.attr_ints(key);
    if (op.has_attr(key)) {
      const auto& mine = op.attr_ints(key);
      for (size_t d = 0; d < v.size() && d < mine.size(); ++d) v[d] = std::max(v[d], mine[d]);
    }
    op.attrs[key] = v;
  }
  op.operands[0] = inner.operands[0];
  return true;
}

bool canonicalize_region(ir::Region& region, ir::Replacements& repl) {
  bool changed = false;
  for (auto it = region.ops.begin(); it != region.ops.end();) {
    Op* op = it->get();
    repl.apply(*op);
    ir::Region::iterator moved;
    if (inline_constant_if(region, it, repl, moved)) {
      auto next = repl.erase(region, it);
      it = moved != region.ops.end() ? moved : next;
      changed = true;
      continue;
    }
    if (remove_zero_trip_for(it, repl)) {
      it = repl.erase(region, it);
      changed = true;
      continue;
    }
    for (auto& sub : op->regions) changed |= canonicalize_region(*sub, repl);
    changed |= merge_hints(*op);
    Value* replacement = Rewriter(region, it).run();
    if (!replacement) {
      ++it;
      continue;
    }
    repl.add(op->result(), replacement);
    it = repl.erase(region, it);
    changed = true;
  }
  return changed;
}

// Every rewrite removes an op or replaces a chain by a shorter one, so this
// ends; the cap only guards against a rewrite bug looping forever.
constexpr int kMaxSweeps = 64;

}  // namespace

bool canonicalize(ir::Function& fn) {
  // Its rewrites make Tile IR types: in GPU IR they would lose layouts.
  if (fn.is_gpu())
    throw Error("canonicalize: expected Tile IR, found GPU IR in @" + fn.name + " (its rewrites do not keep layouts)");
  bool changed = false;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    // Every op is reached in a sweep, so no op reads a removed value after
    // it and the removed ops can go with the table.
    ir::Replacements repl;
    if (!canonicalize_region(fn.body, repl)) break;
    changed = true;
  }
  return changed;
}

}  // namespace tl::transforms
