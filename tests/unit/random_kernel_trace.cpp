// Tracing a random Program: random_kernel is the fixed-signature kernel whose
// body replays the Program that compile_program publishes for the duration
// of tl::compile, each Instr as the tl:: operations it stands for (see
// random_kernel.h).
#include "random_kernel_internal.h"

#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace randk {

namespace {

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

}  // namespace

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

}  // namespace randk
