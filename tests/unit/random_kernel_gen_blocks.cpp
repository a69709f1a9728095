// The random kernel generator, part 2: shape ops, reductions, scans, dots,
// tl::range loops with carried values, tl::if_, stores, and the driver that
// draws one op per step and closes the program (see random_kernel.h).
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

bool Gen::gen_shape_op() {
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

bool Gen::gen_reduce() {
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

bool Gen::gen_dot() {
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
void Gen::carried_interval(const Val& v, double& lo, double& hi) {
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

bool Gen::gen_for() {
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

bool Gen::gen_if() {
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

void Gen::gen_store(int v, std::mt19937_64& r) {
  const Val& val = V(v);
  Instr in;
  in.kind = Kind::Store;
  in.args = {v};
  in.mask = val.shape.empty() || val.shape.size() > 2 ? int(r() % 2) * int(val.shape.empty()) : int(r() % (val.shape.size() + 1));
  in.slot = p.out_elems[size_t(idx(val.dt))];
  p.out_elems[size_t(idx(val.dt))] += val.numel() * p.grid;
  emit(std::move(in), true);
}

void Gen::step() {
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

void Gen::run() {
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

Program generate(uint64_t seed, int budget, const GenOptions& opts) {
  Program p;
  p.seed = seed;
  p.budget = budget;
  p.opts = opts;
  Gen g(p, seed, budget, opts);
  g.run();
  return p;
}

}  // namespace randk
