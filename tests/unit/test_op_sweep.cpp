// The op sweep (issue 11): every op of include/tiledsl/detail/ops.def with
// every element type of dtype.h — each axis of rank 1, 2 and 3 tiles for
// reductions and scans, each comparison predicate, dot precision and
// accumulator, load/store hint and atomic order and scope — traced through
// the public API and compiled for sm_80, sm_90a, gfx90a, gfx942 and gfx1100
// without a GPU, the PTX assembled by ptxas when the CUDA toolkit is
// installed. Each combination either compiles or fails as the expectation
// table (kExpected) says: rejected by the C++ types of the API, or a
// tl::Error at trace time or in code generation whose message holds a given
// fragment and names the kernel's source line. Nothing may crash, an
// unexpected error fails the sweep, and so does an expected error that no
// longer happens.
//
// Kernels are C++ functions, so one kernel function (sweep_kernel) reads the
// combinations to trace from a thread_local list and dispatches each one's
// element types to the typed API. Every combination is first traced alone
// (a fraction of a millisecond: that checks trace-time errors, the result's
// element type and that the op is in the kernel); those expected to compile
// are then compiled to assembly as the inspector device does (--emit=asm),
// a few cheap ones to a kernel (see cost()); a kernel that fails is compiled
// again one combination at a time to name the culprit. ptxas assembles 16
// kernels' PTX per run. One TEST_CASE per op family and target, so ctest
// runs them in parallel and a crash takes down a single entry.
//
// Cost (2 cores): about 13,000 combinations, some 200 s of CPU, three fifths
// of it on the AMD targets, whose LLVM back end takes about twice NVPTX's
// time per kernel; `ctest -E "op sweep: .* on (sm_80|gfx90a)"` keeps the
// three most different targets. For diagnosis: TILEDSL_SWEEP_BATCH=1
// compiles every combination alone (to find the one of a kernel that
// crashes; the default cost budget per kernel is 12), TILEDSL_SWEEP_ONLY=regex
// keeps the combinations whose label matches, TILEDSL_SWEEP_TIMES=1 prints
// each compile's CPU time, TILEDSL_SWEEP_DUMP=dir writes each kernel's
// assembly there.
#include <catch2/catch.hpp>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/compile.h"
#include "codegen_checks.h"
#include "ir/ir.h"
#include "runtime/kernel.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

using Shape = std::vector<int64_t>;
using ir::OpKind;

// ------------------------------------------------------------------ the sweep's vocabulary

// What a combination exercises: an op of ops.def as the public API spells it.
#define SWEEP_OPS(X)                                                                                         \
  X(Full, "full") X(Arange, "arange") X(ProgramId, "program_id") X(NumPrograms, "num_programs")              \
  X(Splat, "splat") X(Broadcast, "broadcast_to") X(ExpandDims, "expand_dims") X(Reshape, "reshape")         \
  X(Permute, "permute") X(Join, "join") X(Split, "split")                                                    \
  X(Add, "+") X(Sub, "-") X(Mul, "*") X(Div, "/") X(Rem, "%") X(And, "&") X(Or, "|") X(Xor, "^")            \
  X(Shl, "<<") X(Shr, ">>") X(Minimum, "minimum") X(Maximum, "maximum") X(Cmp, "cmp") X(Where, "where")     \
  X(Fma, "fma")                                                                                              \
  X(Neg, "neg") X(BitNot, "~") X(LogicalNot, "!") X(Abs, "abs") X(Exp, "exp") X(Exp2, "exp2") X(Log, "log") \
  X(Log2, "log2") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt") X(Sin, "sin") X(Cos, "cos") X(Tanh, "tanh")            \
  X(Erf, "erf") X(Floor, "floor") X(Ceil, "ceil")                                                            \
  X(Cast, "cast") X(Bitcast, "bitcast") X(PtrBitcast, "bitcast<ptr>") X(AddPtr, "ptr+")                      \
  X(Sum, "sum") X(Max, "max") X(Min, "min") X(Argmax, "argmax") X(Argmin, "argmin") X(Reduce, "reduce")     \
  X(Cumsum, "cumsum") X(Cumprod, "cumprod")                                                                  \
  X(Dot, "dot") X(DotTrans, "dot(a, trans(b))") X(DotLoop, "dot in a K loop")                               \
  X(DotJoin, "dot(reshape(join(x, 2x)))")                                                                    \
  X(Load, "load") X(Store, "store") X(AtomicAdd, "atomic_add") X(AtomicMax, "atomic_max")                   \
  X(AtomicMin, "atomic_min") X(AtomicXchg, "atomic_xchg") X(AtomicAnd, "atomic_and")                        \
  X(AtomicOr, "atomic_or") X(AtomicXor, "atomic_xor") X(AtomicCas, "atomic_cas")                            \
  X(For, "range") X(ForScalar, "range (scalar carried)") X(ForNested, "range in range") X(If, "if_")        \
  X(Assert, "device_assert") X(Print, "device_print")

enum class Op : uint8_t {
#define X(E, N) E,
  SWEEP_OPS(X)
#undef X
};
const char* op_str(Op op) {
  static const char* const names[] = {
#define X(E, N) N,
      SWEEP_OPS(X)
#undef X
  };
  return names[int(op)];
}

constexpr DType kAll[] = {DType::i1,     DType::i8,     DType::i16, DType::i32,  DType::i64,
                          DType::u8,     DType::u32,    DType::u64, DType::f8e4m3, DType::f8e5m2,
                          DType::f16,    DType::bf16,   DType::f32, DType::f64};

// One combination: an op, its element types, shapes and mode.
struct Combo {
  Op op;
  DType in;                  // element type of the operands
  DType to = DType::i1;      // cast/bitcast target, addptr offset, dot accumulator (when has_to)
  bool has_to = false;
  Shape shape = {};          // operand shape ([M, K, N] for dots)
  int axis = 0;              // reduce/scan/expand_dims axis; program_id axis
  Shape extra = {};          // reshape target, permute order, broadcast source
  std::string mode = {};     // cmp predicate, dot precision, hint, sem/scope, "reverse", ...
  DType result = DType::i1;  // element type the results must have
  OpKind kind = OpKind::Constant;  // the Tile IR op that must be in the traced kernel

  std::string label() const {
    auto shape_s = [](const Shape& s) {
      std::string r = "[";
      for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
      return r + "]";
    };
    std::string l = std::string(op_str(op)) + "<" + std::string(dtype_name(in));
    if (has_to) l += "," + std::string(dtype_name(to));
    l += ">" + shape_s(shape);
    if (op == Op::ExpandDims || op == Op::ProgramId || op == Op::NumPrograms || op == Op::Sum || op == Op::Max ||
        op == Op::Min || op == Op::Argmax || op == Op::Argmin || op == Op::Reduce || op == Op::Cumsum ||
        op == Op::Cumprod)
      l += " axis=" + std::to_string(axis);
    if (!extra.empty()) l += " " + shape_s(extra);
    if (!mode.empty()) l += " " + mode;
    return l;
  }
};

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

// A combination the C++ types of the API reject (a requires-clause): not
// traced; the expectation table must say so.
struct Inexpressible {};

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
             const ptr<uint8_t>*, const ptr<uint32_t>*, const ptr<uint64_t>*, const ptr<f8e4m3>*,
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
                  ptr<uint8_t> p_u8, ptr<uint32_t> p_u32, ptr<uint64_t> p_u64, ptr<f8e4m3> p_e4m3,
                  ptr<f8e5m2> p_e5m2, ptr<f16> p_f16, ptr<bf16> p_bf16, ptr<float> p_f32, ptr<double> p_f64,
                  scalar<int32_t> n) {
  Io io{{&p_i1, &p_i8, &p_i16, &p_i32, &p_i64, &p_u8, &p_u32, &p_u64, &p_e4m3, &p_e5m2, &p_f16, &p_bf16, &p_f32,
         &p_f64},
        &n};
  for (size_t j = 0; j < g_batch->size(); ++j) {
    const Combo& c = *(*g_batch)[j];
    io.combo = &c;
    io.slot = int(j);
    with_dtype(c.in, [&]<class E>() { trace_combo<E>(c, io); });
  }
}

// ------------------------------------------------------------------ the combinations

enum class Family { Shape, Binary, Unary, Cast, Reduce, ArgReduce, GenericReduce, Scan, Dot, Memory, Atomic, Control };

const char* family_str(Family f) {
  switch (f) {
    case Family::Shape: return "creation and shape";
    case Family::Binary: return "elementwise binary";
    case Family::Unary: return "elementwise unary";
    case Family::Cast: return "casts and pointers";
    case Family::Reduce: return "sum max min";
    case Family::ArgReduce: return "argmax argmin";
    case Family::GenericReduce: return "generic reduce";
    case Family::Scan: return "cumsum cumprod";
    case Family::Dot: return "dot";
    case Family::Memory: return "load store";
    case Family::Atomic: return "atomics";
    case Family::Control: return "control flow and debugging";
  }
  return "?";
}

DType accumulation(DType d) {
  if (is_float(d)) return bit_width(d) < 32 ? DType::f32 : d;
  return bit_width(d) < 32 ? DType::i32 : d;
}

// Reductions and scans: every axis of a rank-1, rank-2 and rank-3 tile.
const std::vector<std::pair<Shape, int>> kAxes = {
    {{128}, 0}, {{16, 32}, 0}, {{16, 32}, 1}, {{4, 8, 16}, 0}, {{4, 8, 16}, 1}, {{4, 8, 16}, 2}};
// f8 computes through software conversions, and a 1-byte type takes
// 16-element vectors wherever its minor dimension allows: tiles whose minor
// dimension is 4 keep the same lowering at a quarter of the code (an f8
// reduction of [16, 32] along axis 0 compiles for 0.4 s).
const std::vector<std::pair<Shape, int>> kAxesF8 = {
    {{128}, 0}, {{32, 4}, 0}, {{32, 4}, 1}, {{4, 8, 4}, 0}, {{4, 8, 4}, 1}, {{4, 8, 4}, 2}};

bool is_f8(DType d) { return d == DType::f8e4m3 || d == DType::f8e5m2; }

// f8 inputs of a dot run on a matrix unit there (elsewhere on FMAs, whose
// code for a [64, 32] x [32, 64] tile takes 3 to 5 s to compile; gfx942's
// f8 MFMA is not used yet).
bool f8_matrix_unit(const std::string& target) { return target == "sm_90a"; }

std::vector<Combo> combos_of(Family f, const std::string& target) {
  std::vector<Combo> v;
  auto add = [&](Combo c) { v.push_back(std::move(c)); };
  const Shape tile2{16, 32};
  // The operand shape of elementwise ops and casts (see kAxesF8).
  auto tile_of = [&](DType a, DType b) { return is_f8(a) || is_f8(b) ? Shape{128, 4} : tile2; };
  switch (f) {
    case Family::Shape:
      add({.op = Op::Arange, .in = DType::i32, .shape = {64}, .result = DType::i32, .kind = OpKind::Arange});
      for (int axis = 0; axis < 3; ++axis) {
        add({.op = Op::ProgramId, .in = DType::i32, .axis = axis, .result = DType::i32, .kind = OpKind::ProgramId});
        add({.op = Op::NumPrograms, .in = DType::i32, .axis = axis, .result = DType::i32,
             .kind = OpKind::NumPrograms});
      }
      for (DType d : kAll) {
        add({.op = Op::Full, .in = d, .shape = tile2, .result = d, .kind = OpKind::Constant});
        add({.op = Op::Full, .in = d, .shape = {}, .result = d, .kind = OpKind::Constant});
        add({.op = Op::Splat, .in = d, .shape = tile2, .result = d, .kind = OpKind::Splat});
        add({.op = Op::Broadcast, .in = d, .shape = tile2, .extra = {1, 32}, .result = d, .kind = OpKind::Broadcast});
        add({.op = Op::Broadcast, .in = d, .shape = tile2, .extra = {16, 1}, .result = d, .kind = OpKind::Broadcast});
        for (int axis : {0, 1}) add({.op = Op::ExpandDims, .in = d, .shape = {128}, .axis = axis, .result = d,
                                     .kind = OpKind::ExpandDims});
        for (int axis : {0, 2}) add({.op = Op::ExpandDims, .in = d, .shape = tile2, .axis = axis, .result = d,
                                     .kind = OpKind::ExpandDims});
        add({.op = Op::Reshape, .in = d, .shape = tile2, .extra = {512}, .result = d, .kind = OpKind::Reshape});
        add({.op = Op::Reshape, .in = d, .shape = tile2, .extra = {4, 4, 32}, .result = d, .kind = OpKind::Reshape});
        add({.op = Op::Reshape, .in = d, .shape = {4, 8, 16}, .extra = {32, 16}, .result = d, .kind = OpKind::Reshape});
        add({.op = Op::Permute, .in = d, .shape = tile2, .extra = {1, 0}, .result = d, .kind = OpKind::Trans});
        for (Shape order : {Shape{0, 2, 1}, Shape{1, 2, 0}, Shape{2, 1, 0}})
          add({.op = Op::Permute, .in = d, .shape = {4, 8, 16}, .extra = order, .result = d, .kind = OpKind::Trans});
        add({.op = Op::Join, .in = d, .shape = {128}, .result = d, .kind = OpKind::Join});
        add({.op = Op::Join, .in = d, .shape = tile2, .result = d, .kind = OpKind::Join});
        add({.op = Op::Split, .in = d, .shape = {128, 2}, .result = d, .kind = OpKind::Split});
        add({.op = Op::Split, .in = d, .shape = {16, 16, 2}, .result = d, .kind = OpKind::Split});
        add({.op = Op::Split, .in = d, .shape = {2}, .result = d, .kind = OpKind::Split});  // into scalars
      }
      break;
    case Family::Binary:
      for (DType d : kAll) {
        const std::pair<Op, OpKind> ops[] = {
            {Op::Add, OpKind::Add}, {Op::Sub, OpKind::Sub}, {Op::Mul, OpKind::Mul}, {Op::Div, OpKind::Div},
            {Op::Rem, OpKind::Rem}, {Op::And, OpKind::And}, {Op::Or, OpKind::Or}, {Op::Xor, OpKind::Xor},
            {Op::Shl, OpKind::Shl}, {Op::Shr, OpKind::Shr}, {Op::Minimum, OpKind::Minimum},
            {Op::Maximum, OpKind::Maximum}, {Op::Where, OpKind::Select}, {Op::Fma, OpKind::Fma}};
        for (auto [op, kind] : ops) add({.op = op, .in = d, .shape = tile_of(d, d), .result = d, .kind = kind});
        for (const char* pred : {"lt", "le", "gt", "ge", "eq", "ne"})
          add({.op = Op::Cmp, .in = d, .shape = tile_of(d, d), .mode = pred, .result = DType::i1, .kind = OpKind::Cmp});
      }
      break;
    case Family::Unary:
      for (DType d : kAll) {
        const std::pair<Op, OpKind> ops[] = {
            {Op::Neg, OpKind::Neg},   {Op::BitNot, OpKind::Not}, {Op::Abs, OpKind::Abs},
            {Op::Exp, OpKind::Exp},   {Op::Exp2, OpKind::Exp2},  {Op::Log, OpKind::Log},
            {Op::Log2, OpKind::Log2}, {Op::Sqrt, OpKind::Sqrt},  {Op::Rsqrt, OpKind::Rsqrt},
            {Op::Sin, OpKind::Sin},   {Op::Cos, OpKind::Cos},    {Op::Tanh, OpKind::Tanh},
            {Op::Erf, OpKind::Erf},   {Op::Floor, OpKind::Floor}, {Op::Ceil, OpKind::Ceil}};
        for (auto [op, kind] : ops) add({.op = op, .in = d, .shape = tile_of(d, d), .result = d, .kind = kind});
        // !x: `not` on bools, x == 0 otherwise.
        add({.op = Op::LogicalNot, .in = d, .shape = tile_of(d, d), .result = DType::i1,
             .kind = d == DType::i1 ? OpKind::Not : OpKind::Cmp});
      }
      break;
    case Family::Cast:
      for (DType d : kAll)
        for (DType t : kAll) {
          if (t == d) continue;  // the identity is no op
          add({.op = Op::Cast, .in = d, .to = t, .has_to = true, .shape = tile_of(d, t), .result = t,
               .kind = OpKind::Cast});
          add({.op = Op::Bitcast, .in = d, .to = t, .has_to = true, .shape = tile_of(d, t), .result = t,
               .kind = OpKind::Bitcast});
        }
      for (DType d : kAll) {
        DType t = d == DType::i32 ? DType::f32 : DType::i32;
        add({.op = Op::PtrBitcast, .in = d, .to = t, .has_to = true, .shape = {256}, .result = t,
             .kind = OpKind::Bitcast});
      }
      for (DType d : {DType::i1, DType::i8, DType::bf16, DType::f32, DType::f64})
        for (DType t : kAll)
          add({.op = Op::AddPtr, .in = d, .to = t, .has_to = true, .shape = tile2, .result = d,
               .kind = OpKind::AddPtr});
      break;
    case Family::Reduce:
    case Family::ArgReduce:
    case Family::GenericReduce:
    case Family::Scan:
      for (DType d : kAll)
        for (auto& [shape, axis] : is_f8(d) ? kAxesF8 : kAxes) {
          auto one = [&](Op op, DType result, OpKind kind, std::string mode = "") {
            add({.op = op, .in = d, .shape = shape, .axis = axis, .mode = mode, .result = result, .kind = kind});
          };
          if (f == Family::Reduce) {
            one(Op::Sum, accumulation(d), OpKind::Reduce);
            one(Op::Max, d, OpKind::Reduce);
            one(Op::Min, d, OpKind::Reduce);
          } else if (f == Family::ArgReduce) {
            one(Op::Argmax, DType::i32, OpKind::Reduce);
            one(Op::Argmin, DType::i32, OpKind::Reduce);
          } else if (f == Family::GenericReduce) {
            one(Op::Reduce, d, OpKind::Reduce);
          } else {
            // The direction is the scan's, not its combine's: cumsum takes both.
            one(Op::Cumsum, accumulation(d), OpKind::Scan);
            one(Op::Cumsum, accumulation(d), OpKind::Scan, "reverse");
            one(Op::Cumprod, accumulation(d), OpKind::Scan);
          }
        }
      break;
    case Family::Dot: {
      // The default accumulator: f32 for float inputs (f64 for f64), i32 for 8-bit integers.
      auto acc_of = [](DType d) { return d == DType::f64 ? DType::f64 : is_float(d) ? DType::f32 : DType::i32; };
      for (DType d : kAll)
        for (const char* prec : {"tf32", "ieee"})
          add({.op = Op::Dot, .in = d, .shape = {16, 16, 16}, .mode = prec, .result = acc_of(d), .kind = OpKind::Dot});
      for (DType d : kAll)
        for (DType acc : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32})
          add({.op = Op::Dot, .in = d, .to = acc, .has_to = true, .shape = {16, 16, 16}, .mode = "tf32",
               .result = acc, .kind = OpKind::Dot});
      // Shapes the matrix units tile (wgmma on sm_90a), and a bad precision.
      for (DType d : {DType::i8, DType::u8, DType::f8e4m3, DType::f8e5m2, DType::f16, DType::bf16, DType::f32})
        if (!is_f8(d) || f8_matrix_unit(target))
          add({.op = Op::Dot, .in = d, .shape = {64, 32, 64}, .mode = "tf32", .result = acc_of(d),
               .kind = OpKind::Dot});
      add({.op = Op::Dot, .in = DType::f32, .shape = {16, 16, 16}, .mode = "tf32x3", .result = DType::f32,
           .kind = OpKind::Dot});
      for (DType d : {DType::i8, DType::f16, DType::bf16, DType::f32}) {
        add({.op = Op::DotTrans, .in = d, .shape = {32, 32, 32}, .mode = "tf32", .result = acc_of(d),
             .kind = OpKind::Dot});
        add({.op = Op::DotJoin, .in = d, .shape = {16, 16, 16}, .mode = "tf32", .result = acc_of(d),
             .kind = OpKind::Dot});
      }
      for (DType d : {DType::f8e4m3, DType::f16, DType::bf16, DType::f32})
        add({.op = Op::DotLoop, .in = d, .shape = is_f8(d) && !f8_matrix_unit(target) ? Shape{16, 16, 16} : Shape{64, 32, 64},
             .mode = "tf32", .result = DType::f32, .kind = OpKind::Dot});
      break;
    }
    case Family::Memory:
      for (DType d : kAll) {
        for (const char* mode : {"", "mask", "mask,other"})
          add({.op = Op::Load, .in = d, .shape = tile2, .mode = mode, .result = d, .kind = OpKind::Load});
        add({.op = Op::Load, .in = d, .shape = {}, .result = d, .kind = OpKind::Load});
        add({.op = Op::Load, .in = d, .shape = {1024}, .result = d, .kind = OpKind::Load});
        for (const char* mode : {"", "mask"})
          add({.op = Op::Store, .in = d, .shape = tile2, .mode = mode, .result = d, .kind = OpKind::Store});
        add({.op = Op::Store, .in = d, .shape = {}, .result = d, .kind = OpKind::Store});
      }
      for (DType d : {DType::i1, DType::i8, DType::bf16, DType::f32, DType::f64}) {
        for (const char* mode : {"cache=.ca", "cache=.cg", "cache=.cs", "cache=.lu", "cache=.cv", "evict=evict_first",
                                 "evict=evict_last", "evict=evict_normal", "volatile"})
          add({.op = Op::Load, .in = d, .shape = tile2, .mode = mode, .result = d, .kind = OpKind::Load});
        for (const char* mode : {"cache=.wb", "cache=.cg", "cache=.cs", "cache=.wt", "evict=evict_first",
                                 "evict=evict_last", "evict=evict_normal"})
          add({.op = Op::Store, .in = d, .shape = tile2, .mode = mode, .result = d, .kind = OpKind::Store});
      }
      // Hints the op does not have.
      add({.op = Op::Load, .in = DType::f32, .shape = tile2, .mode = "cache=.wb", .result = DType::f32,
           .kind = OpKind::Load});
      add({.op = Op::Store, .in = DType::f32, .shape = tile2, .mode = "cache=.ca", .result = DType::f32,
           .kind = OpKind::Store});
      add({.op = Op::Load, .in = DType::f32, .shape = tile2, .mode = "evict=evict_sometimes", .result = DType::f32,
           .kind = OpKind::Load});
      break;
    case Family::Atomic:
      for (DType d : kAll) {
        for (Op op : {Op::AtomicAdd, Op::AtomicMax, Op::AtomicMin, Op::AtomicXchg, Op::AtomicAnd, Op::AtomicOr,
                      Op::AtomicXor})
          add({.op = op, .in = d, .shape = {128}, .result = d, .kind = OpKind::AtomicRmw});
        add({.op = Op::AtomicCas, .in = d, .shape = {128}, .result = d, .kind = OpKind::AtomicCas});
      }
      for (const char* sem : {"relaxed", "acquire", "release", "acq_rel"})
        for (const char* scope : {"cta", "gpu", "sys"}) {
          std::string mode = std::string("sem=") + sem + " scope=" + scope;
          add({.op = Op::AtomicAdd, .in = DType::f32, .shape = {128}, .mode = mode, .result = DType::f32,
               .kind = OpKind::AtomicRmw});
          add({.op = Op::AtomicCas, .in = DType::i32, .shape = {128}, .mode = mode, .result = DType::i32,
               .kind = OpKind::AtomicCas});
        }
      for (DType d : {DType::i32, DType::f32, DType::u64})
        add({.op = Op::AtomicAdd, .in = d, .shape = {}, .result = d, .kind = OpKind::AtomicRmw});
      add({.op = Op::AtomicAdd, .in = DType::i32, .shape = {128}, .mode = "sem=seq_cst", .result = DType::i32,
           .kind = OpKind::AtomicRmw});
      add({.op = Op::AtomicCas, .in = DType::i32, .shape = {128}, .mode = "scope=warp", .result = DType::i32,
           .kind = OpKind::AtomicCas});
      break;
    case Family::Control:
      for (DType d : kAll) {
        add({.op = Op::For, .in = d, .shape = tile2, .result = d, .kind = OpKind::For});
        add({.op = Op::ForScalar, .in = d, .shape = {}, .result = d, .kind = OpKind::For});
        add({.op = Op::If, .in = d, .shape = tile2, .result = d, .kind = OpKind::If});
        add({.op = Op::If, .in = d, .shape = {}, .result = d, .kind = OpKind::If});
        add({.op = Op::Print, .in = d, .shape = {128}, .result = d, .kind = OpKind::Print});
      }
      add({.op = Op::ForNested, .in = DType::f32, .shape = {128}, .result = DType::f32, .kind = OpKind::For});
      add({.op = Op::Assert, .in = DType::i1, .shape = {128}, .result = DType::i1, .kind = OpKind::Assert});
      add({.op = Op::Assert, .in = DType::i1, .shape = {}, .result = DType::i1, .kind = OpKind::Assert});
      break;
  }
  return v;
}

// ------------------------------------------------------------------ what is expected to fail

enum class Stage { Inexpressible, Trace, Codegen };
const char* stage_str(Stage s) {
  return s == Stage::Inexpressible ? "rejected by the C++ types" : s == Stage::Trace ? "a trace-time error"
                                                                                      : "a code generation error";
}

bool is_nvidia(const std::string& target) { return target.rfind("sm_", 0) == 0; }
bool any_target(const std::string&) { return true; }
bool is_math(Op op) { return op >= Op::Exp && op <= Op::Ceil; }
bool is_bitwise_atomic(Op op) { return op == Op::AtomicAnd || op == Op::AtomicOr || op == Op::AtomicXor; }

// One row of the table: combinations (on targets) that must fail at
// `stage` with `message` in the error. Every row must match a combination
// of each family and target it names.
struct Expected {
  const char* why;
  Family family;
  Stage stage;
  const char* message;  // fragment of the tl::Error (Stage::Inexpressible: none)
  std::function<bool(const Combo&)> when;
  std::function<bool(const std::string&)> on = any_target;
};

const std::vector<Expected> kExpected = {
    // ---- rejected by the C++ types of the API (a requires-clause)
    {"float math functions take float tiles", Family::Unary, Stage::Inexpressible, "",
     [](const Combo& c) { return is_math(c.op) && !is_float(c.in); }},
    {"~ takes integer tiles", Family::Unary, Stage::Inexpressible, "",
     [](const Combo& c) { return c.op == Op::BitNot && is_float(c.in); }},
    {"bitwise operators take integer tiles", Family::Binary, Stage::Inexpressible, "",
     [](const Combo& c) { return (c.op >= Op::And && c.op <= Op::Shr) && is_float(c.in); }},
    {"pointer offsets are integers other than bool", Family::Cast, Stage::Inexpressible, "",
     [](const Combo& c) { return c.op == Op::AddPtr && (is_float(c.to) || c.to == DType::i1); }},

    // ---- trace-time errors (tl::compile), on every target
    {"fma takes float operands", Family::Binary, Stage::Trace, "fma: expected floating-point operands",
     [](const Combo& c) { return c.op == Op::Fma && !is_float(c.in); }},
    {"bitcast keeps the bit width", Family::Cast, Stage::Trace, "bitcast: expected a type of",
     [](const Combo& c) { return c.op == Op::Bitcast && bit_width(c.in) != bit_width(c.to); }},
    {"dot takes float or 8-bit integer inputs", Family::Dot, Stage::Trace,
     "dot: expected float or 8-bit integer inputs",
     [](const Combo& c) { return !is_float(c.in) && c.in != DType::i8 && c.in != DType::u8; }},
    {"a dot of 8-bit integers accumulates in i32", Family::Dot, Stage::Trace,
     "dot: expected an i32 accumulator for",
     [](const Combo& c) { return (c.in == DType::i8 || c.in == DType::u8) && c.has_to && c.to != DType::i32; }},
    {"a dot of floats accumulates in a float", Family::Dot, Stage::Trace, "dot: expected a float accumulator for",
     [](const Combo& c) { return is_float(c.in) && c.has_to && !is_float(c.to); }},
    {"input_precision is tf32 or ieee", Family::Dot, Stage::Trace, "dot: expected input_precision",
     [](const Combo& c) { return c.mode == "tf32x3" && c.in == DType::f32; }},
    {"loads take the cache hints .ca .cg .cs .lu .cv", Family::Memory, Stage::Trace,
     "'load' expects 'cache' to be one of", [](const Combo& c) { return c.op == Op::Load && c.mode == "cache=.wb"; }},
    {"stores take the cache hints .wb .cg .cs .wt", Family::Memory, Stage::Trace,
     "'store' expects 'cache' to be one of", [](const Combo& c) { return c.op == Op::Store && c.mode == "cache=.ca"; }},
    {"eviction hints are evict_first, evict_last, evict_normal", Family::Memory, Stage::Trace,
     "'load' expects 'evict' to be one of", [](const Combo& c) { return c.mode == "evict=evict_sometimes"; }},
    {"atomic and/or/xor take integer pointers", Family::Atomic, Stage::Trace, "expected pointers to integers",
     [](const Combo& c) { return is_bitwise_atomic(c.op) && is_float(c.in); }},
    {"memory orders are relaxed, acquire, release, acq_rel", Family::Atomic, Stage::Trace,
     "atomic_add: expected a memory order (.sem)", [](const Combo& c) { return c.mode == "sem=seq_cst"; }},
    {"memory scopes are cta, gpu, sys", Family::Atomic, Stage::Trace, "atomic_cas: expected a memory scope (.scope)",
     [](const Combo& c) { return c.mode == "scope=warp"; }},

    // ---- code generation errors (what a target cannot lower)
    {"no GPU has f8 atomic add, max, min", Family::Atomic, Stage::Codegen, "is not supported on GPU targets",
     [](const Combo& c) {
       return is_f8(c.in) && (c.op == Op::AtomicAdd || c.op == Op::AtomicMax || c.op == Op::AtomicMin);
     }},
    {"device_print needs the HIP printf buffer on AMD", Family::Control, Stage::Codegen,
     "'print' cannot be lowered: device_print is not supported on AMD targets",
     [](const Combo& c) { return c.op == Op::Print; }, [](const std::string& t) { return !is_nvidia(t); }},
};

// ------------------------------------------------------------------ running the sweep

struct Outcome {
  enum Kind { Ok, Inexpressible, Error } kind = Ok;
  std::string message;
  Kernel kernel;
};

// Traces `batch` into one kernel.
Outcome trace(const std::vector<const Combo*>& batch, const std::string& name = "sweep") {
  Outcome o;
  g_batch = &batch;
  try {
    o.kernel = compile(sweep_kernel, {.name = name});
  } catch (const Inexpressible&) {
    o.kind = Outcome::Inexpressible;
  } catch (const Error& e) {
    o.kind = Outcome::Error;
    o.message = e.what();
  }
  g_batch = nullptr;
  return o;
}

// Compiles to assembly as the inspector device does (--target=T --emit=asm):
// the whole pipeline but the AMD code object's link. nullopt: it compiled.
std::optional<std::string> codegen_error(const Kernel& k, const std::string& target, std::string* assembly) {
  try {
    std::string text = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), target, codegen::Stage::Asm);
    if (assembly) *assembly = std::move(text);
    return std::nullopt;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

bool has_op(const Kernel& k, OpKind kind) {
  bool found = false;
  ir::walk(k.impl()->fn->body, [&](ir::Op* op) { found |= op->kind == kind; });
  return found;
}

// The error must hold the expected fragment and name a line of this file.
bool clear_error(const std::string& message, const std::string& fragment) {
  static const std::regex line("test_op_sweep\\.cpp:[0-9]+");
  return message.find(fragment) != std::string::npos && std::regex_search(message, line);
}

// What a combination costs to compile, in units of an elementwise op on a
// small tile. LLVM's time grows faster than the size of a basic block, so a
// batch gathers cheap combinations only: a costly one is compiled alone.
int cost(const Combo& c) {
  bool f8 = is_f8(c.in) || (c.has_to && is_f8(c.to));
  switch (c.op) {
    case Op::Sum: case Op::Max: case Op::Min: case Op::Argmax: case Op::Argmin: case Op::Reduce:
    case Op::Cumsum: case Op::Cumprod:
      return f8 ? 16 : 4;
    case Op::Dot: case Op::DotTrans: case Op::DotLoop: case Op::DotJoin: return 16;
    default: return f8 ? 4 : 1;
  }
}

// Consecutive combinations, a batch costing at most TILEDSL_SWEEP_BATCH (12).
std::vector<std::vector<const Combo*>> batches_of(const std::vector<const Combo*>& combos) {
  int budget = 12;
  if (const char* s = std::getenv("TILEDSL_SWEEP_BATCH")) budget = std::max(1, std::atoi(s));
  std::vector<std::vector<const Combo*>> out;
  int used = budget;
  for (const Combo* c : combos) {
    if (used + cost(*c) > budget) {
      out.emplace_back();
      used = 0;
    }
    out.back().push_back(c);
    used += cost(*c);
  }
  return out;
}

// Compiled batches whose PTX one ptxas run assembles (a run costs ~40 ms
// however small its input).
constexpr size_t kModulesPerPtxas = 16;

// PTX modules as one: the first one's header (.version, .target,
// .address_size), and each module's own globals (printf formats) renamed
// apart. Entries have names of their own already; a repeated .extern
// declaration is fine with ptxas.
std::string merge_ptx(const std::vector<std::string>& modules) {
  static const std::regex global_decl("^\\.global[^\\n]*?([A-Za-z_$][\\w$]*)\\s*\\[");
  auto ident = [](char ch, bool first) {
    return std::isalpha(uint8_t(ch)) || ch == '_' || ch == '$' || (!first && std::isdigit(uint8_t(ch)));
  };
  std::string out;
  for (size_t i = 0; i < modules.size(); ++i) {
    const std::string& m = modules[i];
    std::set<std::string> globals;
    std::istringstream lines(m);
    for (std::string line; std::getline(lines, line);) {
      std::smatch g;
      if (line.rfind(".global", 0) == 0 && std::regex_search(line, g, global_decl)) globals.insert(g[1]);
    }
    // One pass over the identifiers: the globals get the module's suffix.
    std::string renamed;
    for (size_t k = 0; k < m.size();) {
      if (!ident(m[k], true)) {
        renamed += m[k++];
        continue;
      }
      size_t e = k;
      while (e < m.size() && ident(m[e], false)) ++e;
      std::string id = m.substr(k, e - k);
      renamed += globals.count(id) ? id + "_m" + std::to_string(i) : id;
      k = e;
    }
    std::istringstream body(renamed);
    for (std::string line; std::getline(body, line);) {
      bool header = line.rfind(".version", 0) == 0 || line.rfind(".target", 0) == 0 ||
                    line.rfind(".address_size", 0) == 0;
      if (i == 0 || !header) out += line + "\n";
    }
  }
  return out;
}

void sweep(Family family, const std::string& target) {
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t cpu0 = std::clock();
  const bool print_times = std::getenv("TILEDSL_SWEEP_TIMES") != nullptr;
  std::vector<Combo> combos = combos_of(family, target);
  // TILEDSL_SWEEP_ONLY=regex: only the combinations whose label matches (for diagnosis).
  const char* only = std::getenv("TILEDSL_SWEEP_ONLY");
  if (only) std::erase_if(combos, [&](const Combo& c) { return !std::regex_search(c.label(), std::regex(only)); });
  std::vector<int> matched(kExpected.size(), 0);
  std::vector<const Combo*> to_compile;
  int inexpressible = 0, trace_errors = 0, codegen_errors = 0, compiled = 0, failures = 0;

  for (const Combo& c : combos) {
    const Expected* expect = nullptr;
    for (size_t r = 0; r < kExpected.size(); ++r) {
      if (kExpected[r].family != family || !kExpected[r].on(target) || !kExpected[r].when(c)) continue;
      if (expect) {
        FAIL_CHECK(c.label() << ": two rows of the expectation table match: \"" << expect->why << "\" and \""
                             << kExpected[r].why << "\"");
        ++failures;
      }
      expect = &kExpected[r];
      ++matched[r];
    }
    Outcome o = trace({&c});
    if (o.kind == Outcome::Inexpressible || o.kind == Outcome::Error) {
      Stage got = o.kind == Outcome::Inexpressible ? Stage::Inexpressible : Stage::Trace;
      if (!expect) {
        FAIL_CHECK(c.label() << ": unexpected failure, " << stage_str(got) << (o.message.empty() ? "" : ": ")
                             << o.message);
        ++failures;
      } else if (expect->stage != got || (got == Stage::Trace && !clear_error(o.message, expect->message))) {
        FAIL_CHECK(c.label() << ": expected " << stage_str(expect->stage) << " with \"" << expect->message
                             << "\" (" << expect->why << "), found " << stage_str(got) << ": " << o.message);
        ++failures;
      }
      (got == Stage::Inexpressible ? inexpressible : trace_errors)++;
      continue;
    }
    if (expect && expect->stage != Stage::Codegen) {
      FAIL_CHECK(c.label() << ": traced, but " << stage_str(expect->stage) << " was expected (" << expect->why
                           << ")");
      ++failures;
      continue;
    }
    if (!has_op(o.kernel, c.kind)) {
      FAIL_CHECK(c.label() << ": the traced kernel has no '" << ir::op_name(c.kind) << "' op:\n" << o.kernel.ir());
      ++failures;
      continue;
    }
    if (expect) {  // Stage::Codegen
      INFO("compiling " << c.label() << " for " << target);
      auto err = codegen_error(o.kernel, target, nullptr);
      if (!err) {
        FAIL_CHECK(c.label() << ": compiled for " << target << ", but an error with \"" << expect->message
                             << "\" was expected (" << expect->why << ")");
        ++failures;
      } else if (!clear_error(*err, expect->message)) {
        FAIL_CHECK(c.label() << ": expected an error naming its line with \"" << expect->message << "\" ("
                             << expect->why << "), found: " << *err);
        ++failures;
      }
      ++codegen_errors;
      continue;
    }
    to_compile.push_back(&c);
  }

  // The rest must compile: in batches, one at a time where a batch fails.
  int batches = 0, assembled = 0;
  bool have_ptxas = true;
  // PTX waiting for ptxas (module, labels): several modules go through one
  // run; when it fails, each alone, to name the combinations.
  std::vector<std::pair<std::string, std::string>> unassembled;
  auto assemble = [&] {
    if (unassembled.empty() || !have_ptxas) return;
    std::vector<std::string> modules;
    for (auto& [m, l] : unassembled) modules.push_back(m);
    auto run = codegen_checks::run_ptxas(merge_ptx(modules), target);
    if (!run) {
      have_ptxas = false;
    } else {
      ++assembled;
      if (!run->ok)
        for (auto& [m, l] : unassembled)
          if (auto one = codegen_checks::run_ptxas(m, target); one && !one->ok) {
            FAIL_CHECK("ptxas rejects the PTX for " << target << " of:" << l << "\n" << one->log);
            ++failures;
          }
    }
    unassembled.clear();
  };
  for (const std::vector<const Combo*>& batch : batches_of(to_compile)) {
    std::string labels;
    for (const Combo* c : batch) labels += "\n  " + c->label();
    INFO("compiling for " << target << ":" << labels);
    ++batches;
    std::clock_t batch0 = std::clock();
    Outcome o = trace(batch, "sweep_" + std::to_string(batches));  // a name of its own in merged PTX
    std::string ptx;
    std::optional<std::string> err = o.kind == Outcome::Ok ? codegen_error(o.kernel, target, &ptx)
                                                           : std::optional<std::string>(o.message);
    if (print_times)
      std::printf("  %7.1f ms CPU compiling for %s:%s\n", 1e3 * double(std::clock() - batch0) / CLOCKS_PER_SEC,
                  target.c_str(), labels.c_str());
    std::vector<std::pair<const Combo*, std::string>> culprits;
    if (err) {
      for (const Combo* c : batch) {
        INFO("compiling " << c->label() << " alone for " << target);
        Outcome one = trace({c});
        auto e1 = one.kind == Outcome::Ok ? codegen_error(one.kernel, target, nullptr) : one.message;
        if (e1) culprits.push_back({c, *e1});
      }
      for (auto& [c, e] : culprits) {
        FAIL_CHECK(c->label() << ": unexpected error compiling for " << target << ": " << e);
        ++failures;
      }
      if (culprits.empty()) {
        FAIL_CHECK("a batch fails on " << target << " though each combination compiles alone: " << *err);
        ++failures;
      }
      compiled += int(batch.size() - culprits.size());
      continue;
    }
    compiled += int(batch.size());
    if (const char* dir = std::getenv("TILEDSL_SWEEP_DUMP"))
      std::ofstream(std::string(dir) + "/" + target + "." + std::to_string(batches) + ".s")
          << std::regex_replace(labels, std::regex("\n"), "\n//") << "\n" << ptx;
    if (is_nvidia(target)) {
      unassembled.push_back({std::move(ptx), labels});
      if (unassembled.size() == kModulesPerPtxas) assemble();
    }
  }
  if (is_nvidia(target)) {
    assemble();
    if (!have_ptxas) WARN("[SKIP] ptxas not found (/usr/local/cuda/bin/ptxas): PTX not assembled");
  }

  // Every row of the table for this family and target must still match a combination.
  for (size_t r = 0; r < kExpected.size(); ++r)
    if (kExpected[r].family == family && kExpected[r].on(target) && matched[r] == 0 && !only) {
      FAIL_CHECK("the expectation \"" << kExpected[r].why << "\" matches no combination of " << family_str(family)
                                        << " on " << target);
      ++failures;
    }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  std::printf("op sweep: %-28s %-8s %4zu combinations: %4d compiled (%d batches, %d through ptxas), %d expected "
              "errors (%d C++ types, %d trace, %d codegen), %d failures, %.2f s (%.2f s CPU)\n",
              family_str(family), target.c_str(), combos.size(), compiled, batches, assembled,
              inexpressible + trace_errors + codegen_errors, inexpressible, trace_errors, codegen_errors, failures,
              s, cpu);
  CHECK(failures == 0);
}

}  // namespace

// One test case per family and target.
#define SWEEP_CASES(FAMILY, NAME)                                                                  \
  TEST_CASE("op sweep: " NAME " on sm_80", "[sweep]") { sweep(Family::FAMILY, "sm_80"); }         \
  TEST_CASE("op sweep: " NAME " on sm_90a", "[sweep]") { sweep(Family::FAMILY, "sm_90a"); }       \
  TEST_CASE("op sweep: " NAME " on gfx90a", "[sweep]") { sweep(Family::FAMILY, "gfx90a"); }       \
  TEST_CASE("op sweep: " NAME " on gfx942", "[sweep]") { sweep(Family::FAMILY, "gfx942"); }       \
  TEST_CASE("op sweep: " NAME " on gfx1100", "[sweep]") { sweep(Family::FAMILY, "gfx1100"); }

SWEEP_CASES(Shape, "creation and shape")
SWEEP_CASES(Binary, "elementwise binary")
SWEEP_CASES(Unary, "elementwise unary")
SWEEP_CASES(Cast, "casts and pointers")
SWEEP_CASES(Reduce, "sum max min")
SWEEP_CASES(ArgReduce, "argmax argmin")
SWEEP_CASES(GenericReduce, "generic reduce")
SWEEP_CASES(Scan, "cumsum cumprod")
SWEEP_CASES(Dot, "dot")
SWEEP_CASES(Memory, "load store")
SWEEP_CASES(Atomic, "atomics")
SWEEP_CASES(Control, "control flow and debugging")
