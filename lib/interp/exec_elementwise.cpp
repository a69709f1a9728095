// Elementwise ops: arithmetic with integer wrap-around and float rounding
// once per op, comparisons, select, math functions, casts, bitcasts and
// pointer arithmetic. Each op dispatches on its dtype once and then runs a
// plain loop. An operand holding one element is broadcast (a constant inside
// a reduce region evaluated for many lanes at once).
#include <cmath>

#include "interp/element.h"
#include "interp/program.h"

namespace tl::interp {

namespace {

using K = ir::OpKind;

template <class V>
auto& storage(Slot& s) {
  if constexpr (std::is_same_v<V, double>) return s.f;
  else return s.i;
}
template <class V>
const auto& storage(const Slot& s) {
  if constexpr (std::is_same_v<V, double>) return s.f;
  else return s.i;
}

int64_t lanes(const Slot& a) { return a.n; }
int64_t lanes(const Slot& a, const Slot& b) { return std::max(a.n, b.n); }
int64_t step_of(const Slot& s) { return s.n == 1 ? 0 : 1; }

// r[k] = f(a[k], b[k]) with broadcast of single-element operands.
template <class VA, class VR, class F>
void map2(const Slot& a, const Slot& b, Slot& r, F&& f) {
  int64_t n = lanes(a, b), sa = step_of(a), sb = step_of(b);
  r.resize(n);
  const auto& av = storage<VA>(a);
  const auto& bv = storage<VA>(b);
  auto& rv = storage<VR>(r);
  for (int64_t k = 0; k < n; ++k) rv[size_t(k)] = f(av[size_t(k * sa)], bv[size_t(k * sb)], k);
}
template <class VA, class VR, class F>
void map1(const Slot& a, Slot& r, F&& f) {
  int64_t n = lanes(a);
  r.resize(n);
  const auto& av = storage<VA>(a);
  auto& rv = storage<VR>(r);
  for (int64_t k = 0; k < n; ++k) rv[size_t(k)] = f(av[size_t(k)]);
}

template <DType D>
void int_binary(Exec& ex, const Instr& in, const Slot& a, const Slot& b, Slot& r) {
  constexpr bool uns = !is_signed(D);  // i1 behaves as unsigned
  constexpr uint64_t width = uint64_t(bit_width(D));
  auto div_by_zero = [&](int64_t k) {
    const ir::Type& t = ex.type_of(in.out[0]);
    ex.fail(in, "integer division by zero" + (t.is_tile() ? " at index " + index_str(t.shape, k) + " of a " + t.str() : ""));
  };
  switch (in.kind) {
    case K::Add: return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) { return wrap_int<D>(uint64_t(x) + uint64_t(y)); });
    case K::Sub: return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) { return wrap_int<D>(uint64_t(x) - uint64_t(y)); });
    case K::Mul: return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) { return wrap_int<D>(uint64_t(x) * uint64_t(y)); });
    case K::MulHi:
      // Values are held sign- or zero-extended by their dtype: below 64
      // bits the product is exact in 64 (signed: |x y| < 2^62).
      return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) -> int64_t {
        if constexpr (width == 64) {
          if constexpr (uns) return int64_t(uint64_t((unsigned __int128)uint64_t(x) * uint64_t(y) >> 64));
          else return int64_t((__int128)x * y >> 64);
        } else {
          if constexpr (uns) return wrap_int<D>((uint64_t(x) * uint64_t(y)) >> width);
          else return wrap_int<D>(uint64_t((x * y) >> width));
        }
      });
    case K::Div:
      return map2<int64_t, int64_t>(a, b, r, [&](int64_t x, int64_t y, int64_t k) -> int64_t {
        if (y == 0) div_by_zero(k);
        if constexpr (uns) return wrap_int<D>(uint64_t(x) / uint64_t(y));
        else return y == -1 ? wrap_int<D>(0 - uint64_t(x)) : wrap_int<D>(uint64_t(x / y));
      });
    case K::Rem:
      return map2<int64_t, int64_t>(a, b, r, [&](int64_t x, int64_t y, int64_t k) -> int64_t {
        if (y == 0) div_by_zero(k);
        if constexpr (uns) return wrap_int<D>(uint64_t(x) % uint64_t(y));
        else return y == -1 ? 0 : x % y;
      });
    case K::And: return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) { return wrap_int<D>(uint64_t(x & y)); });
    case K::Or: return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) { return wrap_int<D>(uint64_t(x | y)); });
    case K::Xor: return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) { return wrap_int<D>(uint64_t(x ^ y)); });
    case K::Shl:
      // Counts are read as unsigned: negative or >= width shifts everything out.
      return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) -> int64_t {
        uint64_t c = uint64_t(y);
        return c >= width ? 0 : wrap_int<D>(uint64_t(x) << c);
      });
    case K::Shr:
      return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) -> int64_t {
        uint64_t c = uint64_t(y);
        if constexpr (uns) return c >= width ? 0 : wrap_int<D>(uint64_t(x) >> c);
        else return c >= width ? (x < 0 ? -1 : 0) : (x >> c);  // arithmetic shift of a sign-extended value
      });
    case K::Minimum:
      return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) {
        if constexpr (uns) return uint64_t(x) < uint64_t(y) ? x : y;
        else return x < y ? x : y;
      });
    case K::Maximum:
      return map2<int64_t, int64_t>(a, b, r, [](int64_t x, int64_t y, int64_t) {
        if constexpr (uns) return uint64_t(x) > uint64_t(y) ? x : y;
        else return x > y ? x : y;
      });
    default: ex.fail(in, "interp: '" + std::string(in.op->name()) + "' is not an integer binary op");
  }
}

template <DType D>
void float_binary(Exec& ex, const Instr& in, const Slot& a, const Slot& b, Slot& r) {
  // Each result is computed in double and rounded once to D; for f32 and the
  // narrow formats double holds the exact sum/product/quotient well enough
  // that this equals the correctly rounded result.
  switch (in.kind) {
    case K::Add: return map2<double, double>(a, b, r, [](double x, double y, int64_t) { return round_float<D>(x + y); });
    case K::Sub: return map2<double, double>(a, b, r, [](double x, double y, int64_t) { return round_float<D>(x - y); });
    case K::Mul: return map2<double, double>(a, b, r, [](double x, double y, int64_t) { return round_float<D>(x * y); });
    case K::Div: return map2<double, double>(a, b, r, [](double x, double y, int64_t) { return round_float<D>(x / y); });
    case K::Rem: return map2<double, double>(a, b, r, [](double x, double y, int64_t) { return round_float<D>(std::fmod(x, y)); });
    case K::Minimum: return map2<double, double>(a, b, r, [](double x, double y, int64_t) { return fmin_nan(x, y); });
    case K::Maximum: return map2<double, double>(a, b, r, [](double x, double y, int64_t) { return fmax_nan(x, y); });
    default: ex.fail(in, "interp: '" + std::string(in.op->name()) + "' does not take floats");
  }
}

template <DType D>
void compare(const Instr& in, const Slot& a, const Slot& b, Slot& r) {
  using V = StorageOf<D>;
  auto run = [&](auto cmp) { map2<V, int64_t>(a, b, r, [&](V x, V y, int64_t) -> int64_t { return cmp(x, y); }); };
  // Floats: C++ comparisons are the ordered ones, and != is true with a NaN.
  if constexpr (is_int(D) && !is_signed(D)) {
    auto u = [](V x) { return uint64_t(x); };
    switch (CmpPred(in.int_attr)) {
      case CmpPred::eq: return run([](V x, V y) { return x == y; });
      case CmpPred::ne: return run([](V x, V y) { return x != y; });
      case CmpPred::lt: return run([&](V x, V y) { return u(x) < u(y); });
      case CmpPred::le: return run([&](V x, V y) { return u(x) <= u(y); });
      case CmpPred::gt: return run([&](V x, V y) { return u(x) > u(y); });
      case CmpPred::ge: return run([&](V x, V y) { return u(x) >= u(y); });
    }
  } else {
    switch (CmpPred(in.int_attr)) {
      case CmpPred::eq: return run([](V x, V y) { return x == y; });
      case CmpPred::ne: return run([](V x, V y) { return x != y; });
      case CmpPred::lt: return run([](V x, V y) { return x < y; });
      case CmpPred::le: return run([](V x, V y) { return x <= y; });
      case CmpPred::gt: return run([](V x, V y) { return x > y; });
      case CmpPred::ge: return run([](V x, V y) { return x >= y; });
    }
  }
}

template <DType D>
void unary(Exec& ex, const Instr& in, const Slot& a, Slot& r) {
  if constexpr (is_int(D)) {
    switch (in.kind) {
      case K::Neg: return map1<int64_t, int64_t>(a, r, [](int64_t x) { return wrap_int<D>(0 - uint64_t(x)); });
      case K::Not: return map1<int64_t, int64_t>(a, r, [](int64_t x) { return wrap_int<D>(~uint64_t(x)); });
      case K::Abs:
        return map1<int64_t, int64_t>(a, r, [](int64_t x) {
          if constexpr (is_signed(D)) return x < 0 ? wrap_int<D>(0 - uint64_t(x)) : x;  // abs(MIN) wraps to MIN
          else return x;
        });
      default: break;
    }
  } else {
    auto f = [&](auto fn) { map1<double, double>(a, r, [&](double x) { return round_float<D>(fn(x)); }); };
    switch (in.kind) {
      case K::Neg: return f([](double x) { return -x; });
      case K::Abs: return f([](double x) { return std::fabs(x); });
      case K::Exp: return f([](double x) { return std::exp(x); });
      case K::Exp2: return f([](double x) { return std::exp2(x); });
      case K::Log: return f([](double x) { return std::log(x); });
      case K::Log2: return f([](double x) { return std::log2(x); });
      case K::Sqrt: return f([](double x) { return std::sqrt(x); });
      case K::Rsqrt: return f([](double x) { return 1.0 / std::sqrt(x); });
      case K::Sin: return f([](double x) { return std::sin(x); });
      case K::Cos: return f([](double x) { return std::cos(x); });
      case K::Tanh: return f([](double x) { return std::tanh(x); });
      case K::Erf: return f([](double x) { return std::erf(x); });
      case K::Floor: return f([](double x) { return std::floor(x); });
      case K::Ceil: return f([](double x) { return std::ceil(x); });
      default: break;
    }
  }
  ex.fail(in, "interp: '" + std::string(in.op->name()) + "' does not take " + std::string(dtype_name(D)));
}

template <DType S, DType D>
void cast(const Slot& a, Slot& r) {
  using VS = StorageOf<S>;
  using VD = StorageOf<D>;
  map1<VS, VD>(a, r, [](VS x) -> VD {
    if constexpr (D == DType::i1) return x != 0;
    else if constexpr (is_int(S) && is_int(D)) return wrap_int<D>(uint64_t(x));  // x is extended by S's signedness
    else if constexpr (is_int(S)) return int_to_float<S, D>(x);
    else if constexpr (is_int(D)) return float_to_int<D>(x);
    else return round_float<D>(x);
  });
}

template <DType S, DType D>
void bitcast(const Slot& a, Slot& r) {
  using VS = StorageOf<S>;
  using VD = StorageOf<D>;
  map1<VS, VD>(a, r, [](VS x) -> VD {
    unsigned char bytes[8] = {};
    write_elem<S>(bytes, x);
    return read_elem<D>(bytes);
  });
}

// The promise of a hint (ops.def), as the compiler reads it: along each
// dimension d, runs of ints[d] values (at multiples of ints[d]) stepping by
// `int_attr` (1, or a pointer's element size), each starting at a multiple
// of ints[rank + d]. A scalar: ints = {1, divisor}.
void check_hint(const Exec& ex, const Instr& in, const Slot& a) {
  const auto& shape = in.op->result()->type.shape;
  size_t rank = std::max<size_t>(1, shape.size());
  std::vector<int64_t> dims = shape.empty() ? std::vector<int64_t>{a.n} : shape;
  if (shape.empty()) dims[0] = 1;  // every lane a scalar of its own
  int64_t step = in.int_attr, total = 1;
  for (int64_t d : shape) total *= d;
  // A tile may be held as one element standing for all (a splat).
  auto value = [&](int64_t k) { return a.n == 1 ? a.i[0] : a.i[size_t(k)]; };
  int64_t count = shape.empty() ? a.n : total;
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = shape.empty() ? 0 : k, stride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t idx = dims[d] == 1 ? 0 : rest % dims[d];
      rest /= std::max<int64_t>(1, dims[d]);
      int64_t run = in.ints[d], div = in.ints[rank + d], x = value(k);
      std::string at = "element " + std::to_string(k) + " (" + std::to_string(x) + ")";
      if (idx % run == 0) {
        if (x % div)
          ex.fail(in, "a promise of tl::multiple_of does not hold: " + at + " starts a run along dimension " +
                          std::to_string(d) + " and is not a multiple of " + std::to_string(div));
      } else if (x != value(k - stride) + step) {
        ex.fail(in, "a promise of tl::max_contiguous does not hold: " + at + " is not the one before it plus " +
                        std::to_string(step) + " within a run of " + std::to_string(run) + " along dimension " +
                        std::to_string(d));
      }
      stride *= dims[d];
    }
  }
}

}  // namespace

void exec_elementwise(Exec& ex, const Instr& in) {
  Slot& r = ex.slots[size_t(in.out[0])];
  const Slot& a = ex.slots[size_t(in.in[0])];
  switch (in.kind) {
    case K::Hint:
      check_hint(ex, in, a);
      return r.copy_from(a);
    case K::Add: case K::Sub: case K::Mul: case K::MulHi: case K::Div: case K::Rem: case K::And: case K::Or:
    case K::Xor: case K::Shl: case K::Shr: case K::Minimum: case K::Maximum: {
      const Slot& b = ex.slots[size_t(in.in[1])];
      return dispatch_dtype(in.dtype, [&](auto d) {
        constexpr DType D = decltype(d)::value;
        if constexpr (is_int(D)) int_binary<D>(ex, in, a, b, r);
        else float_binary<D>(ex, in, a, b, r);
      });
    }
    case K::Cmp:
      return dispatch_dtype(in.dtype, [&](auto d) { compare<decltype(d)::value>(in, a, ex.slots[size_t(in.in[1])], r); });
    case K::Select: {
      const Slot& x = ex.slots[size_t(in.in[1])];
      const Slot& y = ex.slots[size_t(in.in[2])];
      int64_t n = std::max({a.n, x.n, y.n}), sc = step_of(a), sx = step_of(x), sy = step_of(y);
      r.resize(n);
      auto pick = [&](const auto& xv, const auto& yv, auto& rv) {
        for (int64_t k = 0; k < n; ++k)
          rv[size_t(k)] = a.i[size_t(k * sc)] ? xv[size_t(k * sx)] : yv[size_t(k * sy)];
      };
      if (r.is_float) pick(x.f, y.f, r.f);
      else pick(x.i, y.i, r.i);
      return;
    }
    case K::Fma: {
      const Slot& b = ex.slots[size_t(in.in[1])];
      const Slot& c = ex.slots[size_t(in.in[2])];
      int64_t n = std::max({a.n, b.n, c.n}), sa = step_of(a), sb = step_of(b), sc = step_of(c);
      r.resize(n);
      return dispatch_dtype(in.dtype, [&](auto d) {
        constexpr DType D = decltype(d)::value;
        if constexpr (is_float(D)) {
          for (int64_t k = 0; k < n; ++k) {
            double x = a.f[size_t(k * sa)], y = b.f[size_t(k * sb)], z = c.f[size_t(k * sc)];
            // One rounding: f32 uses the single-precision fma directly.
            if constexpr (D == DType::f32) r.f[size_t(k)] = double(std::fma(float(x), float(y), float(z)));
            else r.f[size_t(k)] = round_float<D>(std::fma(x, y, z));
          }
        }
      });
    }
    case K::Neg: case K::Not: case K::Abs: case K::Exp: case K::Exp2: case K::Log: case K::Log2:
    case K::Sqrt: case K::Rsqrt: case K::Sin: case K::Cos: case K::Tanh: case K::Erf: case K::Floor:
    case K::Ceil:
      return dispatch_dtype(in.dtype, [&](auto d) { unary<decltype(d)::value>(ex, in, a, r); });
    case K::Cast:
      return dispatch_dtype(in.dtype, [&](auto s) {
        dispatch_dtype(in.out_dtype, [&](auto d) { cast<decltype(s)::value, decltype(d)::value>(a, r); });
      });
    case K::Bitcast:
      return dispatch_dtype(in.dtype, [&](auto s) {
        dispatch_dtype(in.out_dtype, [&](auto d) { bitcast<decltype(s)::value, decltype(d)::value>(a, r); });
      });
    case K::AddPtr: {
      // A pointer keeps its buffer's window (memory.h); one moved out of it,
      // or already out, lands in window 0, which no buffer owns, so it can
      // never reach another buffer.
      const Slot& off = ex.slots[size_t(in.in[1])];
      uint64_t size = uint64_t(in.int_attr);
      return map2<int64_t, int64_t>(a, off, r, [&](int64_t p, int64_t o, int64_t) {
        uint64_t q = uint64_t(p) + uint64_t(o) * size;
        return Memory::window(q) == Memory::window(uint64_t(p)) ? int64_t(q) : int64_t(q & Memory::kOffsetMask);
      });
    }
    default: ex.fail(in, "interp: op '" + std::string(in.op->name()) + "' is not implemented");
  }
}

}  // namespace tl::interp

