// The op sweep's kernel side: sweep_kernel traces each combination of a
// batch through the public API with its element types (trace_combo), reading
// operands from and storing results to slots of one buffer per element type.
// The trace-time errors the expectation table names point at lines of this
// file. See test_op_sweep.cpp.
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "op_sweep.h"
#include "tiledsl/tiledsl.h"

namespace op_sweep {

// ------------------------------------------------------------------ kernel side

// Calls f.template operator()<T>() with the C++ element type of `d`.
template <class F>
void with_dtype(DType d, F&& f) {
  switch (d) {
    case DType::i1: return f.template operator()<bool>();
    case DType::i8: return f.template operator()<int8_t>();
    case DType::i16: return f.template operator()<int16_t>();
    case DType::i32: return f.template operator()<int32_t>();
    case DType::i64: return f.template operator()<int64_t>();
    case DType::u8: return f.template operator()<uint8_t>();
    case DType::u16: return f.template operator()<uint16_t>();
    case DType::u32: return f.template operator()<uint32_t>();
    case DType::u64: return f.template operator()<uint64_t>();
    case DType::f8e4m3: return f.template operator()<f8e4m3>();
    case DType::f8e5m2: return f.template operator()<f8e5m2>();
    case DType::f16: return f.template operator()<f16>();
    case DType::bf16: return f.template operator()<bf16>();
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
  }
}

// [d0, d1, d2] i32: the row-major offsets of a tile of `s`.
tile<int32_t> offsets(const Shape& s) {
  auto a = [](int64_t n) { return arange(0, n); };
  if (s.size() == 1) return a(s[0]);
  if (s.size() == 2) return col(a(s[0])) * int(s[1]) + row(a(s[1]));
  return expand_dims(col(a(s[0])), 2) * int(s[1] * s[2]) + expand_dims(col(a(s[1])), 0) * int(s[2]) +
         expand_dims(row(a(s[2])), 0);
}

// The kernel's parameters, one pointer per element type, and where each
// combination of a batch reads its operands and writes its results.
struct Io {
  std::tuple<const ptr<bool>*, const ptr<int8_t>*, const ptr<int16_t>*, const ptr<int32_t>*, const ptr<int64_t>*,
             const ptr<uint8_t>*, const ptr<uint16_t>*, const ptr<uint32_t>*, const ptr<uint64_t>*, const ptr<f8e4m3>*,
             const ptr<f8e5m2>*, const ptr<f16>*, const ptr<bf16>*, const ptr<float>*, const ptr<double>*>
      params;
  const scalar<int32_t>* n = nullptr;
  const Combo* combo = nullptr;
  int slot = 0;  // the combination's index in its batch

  static constexpr int kSpan = 1 << 14;  // elements between two operands
  template <class T>
  const ptr<T>& base() const {
    return *std::get<const ptr<T>*>(params);
  }
  int offset(int k) const { return (slot * 8 + k) * kSpan; }
  // Pointers to operand k of shape s (a scalar pointer for rank 0).
  template <class T>
  ptr<T> at(int k, const Shape& s) const {
    if (s.empty()) return base<T>() + offset(k);
    return base<T>() + offset(k) + offsets(s);
  }
  template <class T>
  tile<T> in(int k, const Shape& s) const {
    return load(at<T>(k, s));
  }
  // Stores result k (slots 7, 6, ...), after checking its element type
  // (the traced one: the C++ type may differ, as for a dot of f64).
  template <class T>
  void out(const tile<T>& v, int k = 0) const {
    out_value(v.value(), k);
  }
  void out_value(detail::Value* v, int k) const;
};

void Io::out_value(detail::Value* v, int k) const {
  ir::Type t = detail::type_of(v);
  if (t.dtype != combo->result || t.is_ptr)
    throw Error("sweep: " + combo->label() + " gives " + t.str() + ", expected element type " +
                std::string(dtype_name(combo->result)));
  with_dtype(t.dtype, [&]<class R>() { store(at<R>(7 - k, t.shape), tile<R>(v)); });
}

template <class E>
tile<E> permuted(const tile<E>& x, const Shape& order) {
  if (order == Shape{1, 0}) return trans(x);
  if (order == Shape{0, 2, 1}) return permute(x, {0, 2, 1});
  if (order == Shape{1, 0, 2}) return permute(x, {1, 0, 2});
  if (order == Shape{1, 2, 0}) return permute(x, {1, 2, 0});
  if (order == Shape{2, 0, 1}) return permute(x, {2, 0, 1});
  if (order == Shape{2, 1, 0}) return trans(x);
  throw Error("sweep: no permutation case for this order");
}

LoadOptions load_options(const std::string& mode) {
  LoadOptions o;
  if (mode == "volatile") o.is_volatile = true;
  else if (mode.rfind("cache=", 0) == 0) o.cache = mode.substr(6);
  else if (mode.rfind("evict=", 0) == 0) o.evict = mode.substr(6);
  return o;
}
StoreOptions store_options(const std::string& mode) {
  StoreOptions o;
  if (mode.rfind("cache=", 0) == 0) o.cache = mode.substr(6);
  else if (mode.rfind("evict=", 0) == 0) o.evict = mode.substr(6);
  return o;
}
// mode "sem=S scope=C" (either part may be absent: the defaults).
AtomicOptions atomic_options(const std::string& mode) {
  AtomicOptions o;
  std::smatch m;
  if (std::regex_search(mode, m, std::regex("sem=(\\w+)"))) o.sem = m[1];
  if (std::regex_search(mode, m, std::regex("scope=(\\w+)"))) o.scope = m[1];
  return o;
}

// The body of one combination, with E its operand element type. Returns
// normally after storing the results, or throws Inexpressible.
template <class E>
void trace_combo(const Combo& c, const Io& io) {
  const Shape& s = c.shape;
  auto x = [&](int k) { return io.in<E>(k, s); };
  // An op the API accepts for E: `expr` in terms of a, b (operands 0, 1).
#define SWEEP_BINARY(OP, ...)                                                       \
  case Op::OP:                                                                      \
    if constexpr (requires(const tile<E>& a, const tile<E>& b) { __VA_ARGS__; }) { \
      auto a = x(0);                                                                \
      auto b = x(1);                                                                \
      io.out(__VA_ARGS__);                                                          \
      return;                                                                       \
    }                                                                               \
    break;
#define SWEEP_UNARY(OP, ...) SWEEP_BINARY(OP, __VA_ARGS__)
  switch (c.op) {
    // ---- creation and shape
    case Op::Full: io.out(full<E>(s, 1)); return;
    case Op::Arange: io.out(arange(16, 16 + s[0])); return;
    case Op::ProgramId: io.out(program_id(c.axis)); return;
    case Op::NumPrograms: io.out(num_programs(c.axis)); return;
    case Op::Splat: io.out(broadcast_to(io.in<E>(0, {}), s)); return;
    case Op::Broadcast: io.out(broadcast_to(io.in<E>(0, c.extra), s)); return;
    case Op::ExpandDims: io.out(expand_dims(x(0), c.axis)); return;
    case Op::Reshape: io.out(reshape(x(0), c.extra)); return;
    case Op::Permute: io.out(permuted(x(0), c.extra)); return;
    case Op::Join: io.out(join(x(0), x(1))); return;
    case Op::Split: {
      auto [lo, hi] = split(x(0));
      io.out(lo, 0);
      io.out(hi, 1);
      return;
    }
    // ---- elementwise binary
    SWEEP_BINARY(Add, a + b)
    SWEEP_BINARY(Sub, a - b)
    SWEEP_BINARY(Mul, a * b)
    SWEEP_BINARY(Div, a / b)
    SWEEP_BINARY(Rem, a % b)
    SWEEP_BINARY(And, a & b)
    SWEEP_BINARY(Or, a | b)
    SWEEP_BINARY(Xor, a ^ b)
    SWEEP_BINARY(Shl, a << b)
    SWEEP_BINARY(Shr, a >> b)
    SWEEP_BINARY(Minimum, minimum(a, b))
    SWEEP_BINARY(Maximum, maximum(a, b))
    SWEEP_BINARY(MulHi, umulhi(a, b))
    case Op::Cmp: {
      auto a = x(0), b = x(1);
      if (c.mode == "lt") io.out(a < b);
      else if (c.mode == "le") io.out(a <= b);
      else if (c.mode == "gt") io.out(a > b);
      else if (c.mode == "ge") io.out(a >= b);
      else if (c.mode == "eq") io.out(a == b);
      else io.out(a != b);
      return;
    }
    case Op::Where:
      if constexpr (requires(const tile<E>& a) { where(a < a, a, a); }) {
        auto cond = io.in<bool>(2, s);
        io.out(where(cond, x(0), x(1)));
        return;
      }
      break;
    case Op::Fma:
      if constexpr (requires(const tile<E>& a) { fma(a, a, a); }) {
        io.out(fma(x(0), x(1), x(2)));
        return;
      }
      break;
    // ---- elementwise unary
    SWEEP_UNARY(Neg, -a)
    SWEEP_UNARY(BitNot, ~a)
    SWEEP_UNARY(LogicalNot, !a)
    SWEEP_UNARY(Abs, abs(a))
    SWEEP_UNARY(Exp, exp(a))
    SWEEP_UNARY(Exp2, exp2(a))
    SWEEP_UNARY(Log, log(a))
    SWEEP_UNARY(Log2, log2(a))
    SWEEP_UNARY(Sqrt, sqrt(a))
    SWEEP_UNARY(Rsqrt, rsqrt(a))
    SWEEP_UNARY(Sin, sin(a))
    SWEEP_UNARY(Cos, cos(a))
    SWEEP_UNARY(Tanh, tanh(a))
    SWEEP_UNARY(Erf, erf(a))
    SWEEP_UNARY(Floor, floor(a))
    SWEEP_UNARY(Ceil, ceil(a))
    SWEEP_UNARY(Hint, max_contiguous(multiple_of(a, 1), 1))
    // ---- conversions and pointers
    case Op::Cast:
      with_dtype(c.to, [&]<class T>() { io.out(cast<T>(x(0))); });
      return;
    case Op::Bitcast:
      with_dtype(c.to, [&]<class T>() { io.out(bitcast<T>(x(0))); });
      return;
    case Op::PtrBitcast: {
      // ptr<E> reinterpreted as ptr<i32> (ptr<f32> for E = i32), then loaded through.
      auto through = [&]<class T>() {
        ptr<T> p = bitcast<pointer<T>>(io.base<E>());
        io.out(load(p + io.offset(0) + offsets(s)));
      };
      if (c.to == DType::i32) through.template operator()<int32_t>();
      else through.template operator()<float>();
      return;
    }
    case Op::AddPtr: {
      bool expressible = true;
      with_dtype(c.to, [&]<class T>() {
        if constexpr (requires(const ptr<E>& p, const tile<T>& o) { p + o; }) {
          auto offs = io.in<T>(1, s);  // [s] offsets of element type T
          io.out(load(io.base<E>() + offs));
        } else {
          expressible = false;
        }
      });
      if (!expressible) break;
      return;
    }
    // ---- reductions and scans
    case Op::Sum: io.out(sum(x(0), c.axis)); return;
    case Op::Max: io.out(max(x(0), c.axis)); return;
    case Op::Min: io.out(min(x(0), c.axis)); return;
    case Op::Argmax: io.out(argmax(x(0), c.axis)); return;
    case Op::Argmin: io.out(argmin(x(0), c.axis)); return;
    case Op::Reduce:
      if constexpr (requires(const tile<E>& a) { tile<E>(a + a); }) {
        io.out(reduce(x(0), c.axis, [](const tile<E>& a, const tile<E>& b) { return tile<E>(a + b); }));
        return;
      }
      break;
    case Op::Cumsum: io.out(cumsum(x(0), c.axis, c.mode == "reverse")); return;
    case Op::Cumprod: io.out(cumprod(x(0), c.axis, c.mode == "reverse")); return;
    // ---- dot: shape [M, K, N]
    case Op::Dot:
    case Op::DotTrans:
    case Op::DotLoop:
    case Op::DotJoin: {
      int64_t M = s[0], K = s[1], N = s[2];
      DotOptions opts{.input_precision = c.mode};
      auto operand_a = [&](int k) {
        if (c.op != Op::DotJoin) return io.in<E>(k, {M, K});
        auto h = io.in<E>(k, {M, K / 2});  // [M, K/2]
        return reshape(join(h, tile<E>(h + h)), {M, K});
      };
      auto operand_b = [&](int k) { return c.op == Op::DotTrans ? trans(io.in<E>(k, {N, K})) : io.in<E>(k, {K, N}); };
      if (c.op == Op::DotLoop) {
        auto acc = zeros<float>({M, N});  // [M, N] f32
        for (auto k : range(0, *io.n, int(K))) {
          auto a = load(io.at<E>(0, {M, K}) + k);
          auto b = load(io.at<E>(1, {K, N}) + k * int(N));
          acc = dot(a, b, acc, opts);
        }
        io.out(acc);
      } else if (!c.has_to) {
        io.out(dot(operand_a(0), operand_b(1), opts));
      } else {
        auto with_acc = [&]<class C>() { io.out(dot(operand_a(0), operand_b(1), io.in<C>(2, {M, N}), opts)); };
        switch (c.to) {  // the accumulators combos_of makes
          case DType::f16: with_acc.template operator()<f16>(); break;
          case DType::bf16: with_acc.template operator()<bf16>(); break;
          case DType::f32: with_acc.template operator()<float>(); break;
          case DType::f64: with_acc.template operator()<double>(); break;
          default: with_acc.template operator()<int32_t>(); break;
        }
      }
      return;
    }
    // ---- memory
    case Op::Load: {
      auto p = io.at<E>(0, s);
      if (c.mode == "mask") io.out(load(p, io.in<bool>(1, s)));
      else if (c.mode == "mask,other") io.out(load(p, io.in<bool>(1, s), x(2)));
      else io.out(load(p, load_options(c.mode)));
      return;
    }
    case Op::Store:
      if (c.mode == "mask") store(io.at<E>(7, s), x(0), io.in<bool>(1, s));
      else store(io.at<E>(7, s), x(0), store_options(c.mode));
      return;
    case Op::AtomicAdd:
    case Op::AtomicMax:
    case Op::AtomicMin:
    case Op::AtomicXchg:
    case Op::AtomicAnd:
    case Op::AtomicOr:
    case Op::AtomicXor: {
      auto p = io.at<E>(6, s);
      auto v = x(0);
      AtomicOptions o = atomic_options(c.mode);
      if (s.empty()) {  // a scalar atomic, unmasked
        io.out(atomic_add(p, v, o));
        return;
      }
      auto mask = io.in<bool>(1, s);
      switch (c.op) {
        case Op::AtomicAdd: io.out(atomic_add(p, v, mask, o)); break;
        case Op::AtomicMax: io.out(atomic_max(p, v, mask, o)); break;
        case Op::AtomicMin: io.out(atomic_min(p, v, mask, o)); break;
        case Op::AtomicXchg: io.out(atomic_xchg(p, v, mask, o)); break;
        case Op::AtomicAnd: io.out(atomic_and(p, v, mask, o)); break;
        case Op::AtomicOr: io.out(atomic_or(p, v, mask, o)); break;
        default: io.out(atomic_xor(p, v, mask, o)); break;
      }
      return;
    }
    case Op::AtomicCas: io.out(atomic_cas(io.at<E>(6, s), x(0), x(1), atomic_options(c.mode))); return;
    // ---- control flow and debugging
    case Op::For:
    case Op::ForScalar: {
      tile<E> v = x(0);  // carried
      for (auto i : range(0, *io.n)) {
        auto cond = io.in<bool>(1, s);
        v = where(cond, load(io.at<E>(2, s) + i), v);
      }
      io.out(v);
      return;
    }
    case Op::ForNested: {
      tile<E> v = x(0);
      for (auto i : range(0, *io.n)) {
        for (auto j : range(i, *io.n, 2)) {
          v = where(io.in<bool>(1, s), load(io.at<E>(2, s) + j), v);
        }
      }
      io.out(v);
      return;
    }
    case Op::If: {
      tile<E> v = x(0);
      if_(*io.n > 3, [&] { v = x(1); }, [&] { v = x(2); });
      io.out(v);
      return;
    }
    case Op::Assert: device_assert(io.in<bool>(0, s), "sweep assert"); return;
    case Op::Print: device_print("sweep ", x(0)); return;
  }
#undef SWEEP_BINARY
#undef SWEEP_UNARY
  throw Inexpressible{};
}

// The combinations the kernel traces (set around tl::compile).
thread_local const std::vector<const Combo*>* g_batch = nullptr;

void sweep_kernel(ptr<bool> p_i1, ptr<int8_t> p_i8, ptr<int16_t> p_i16, ptr<int32_t> p_i32, ptr<int64_t> p_i64,
                  ptr<uint8_t> p_u8, ptr<uint16_t> p_u16, ptr<uint32_t> p_u32, ptr<uint64_t> p_u64, ptr<f8e4m3> p_e4m3,
                  ptr<f8e5m2> p_e5m2, ptr<f16> p_f16, ptr<bf16> p_bf16, ptr<float> p_f32, ptr<double> p_f64,
                  scalar<int32_t> n) {
  Io io{{&p_i1, &p_i8, &p_i16, &p_i32, &p_i64, &p_u8, &p_u16, &p_u32, &p_u64, &p_e4m3, &p_e5m2, &p_f16, &p_bf16, &p_f32,
         &p_f64},
        &n};
  for (size_t j = 0; j < g_batch->size(); ++j) {
    const Combo& c = *(*g_batch)[j];
    io.combo = &c;
    io.slot = int(j);
    with_dtype(c.in, [&]<class E>() { trace_combo<E>(c, io); });
  }
}

}  // namespace op_sweep
