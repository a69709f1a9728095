// The random kernels' error model (error_bounds) and their listing
// (Program::str).
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
#include "random_kernel_internal.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace randk {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += "x";
    r += std::to_string(s[i]);  // not "x" + to_string(): GCC 12 warns falsely there (-Wrestrict)
  }
  return r + "]";
}

std::string vname(int id) { return std::string("v") + std::to_string(id); }

namespace {

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

}  // namespace

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

}  // namespace randk
