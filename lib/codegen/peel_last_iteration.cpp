// The last iteration of an overlapped loop run after it (see
// peel_last_iteration.h).
#include "codegen/peel_last_iteration.h"

#include <unordered_map>
#include <vector>

#include "transforms/passes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

namespace {

bool async_dot(const Op& o) { return o.kind == OpKind::Dot && o.attr_int_or("async", 0); }

// Whether the body retires every product before its yield: a dot_wait
// {pending = 0} at its top level after the last asynchronous product.
bool retires_all(const ir::Region& body) {
  bool retired = true;
  for (const auto& o : body.ops) {
    ir::walk(*o, [&](Op* n) { retired = retired && !async_dot(*n); });
    if (o->kind == OpKind::DotWait && o->attr_int("pending") == 0) retired = true;
  }
  return retired;
}

class Peeler {
 public:
  explicit Peeler(LayoutPlan& plan) : plan_(plan) {}

  void peel(Op& loop) {
    ir::Region& r = *loop.parent;
    ir::Region& body = *loop.regions[0];
    Value *lo = loop.operands[0], *hi = loop.operands[1], *step = loop.operands[2];
    index_ = body.args[0].get();
    step_ = step;
    hi_ = hi;
    const Type t = lo->type;
    const Type i1 = ir::scalar_type(DType::i1);
    // The last iteration's index, where there is one.
    ir::Builder b(&r, r.find(&loop));
    b.loc = loop.loc;
    Value* live = b.create1(OpKind::Cmp, {lo, hi}, i1, {{"pred", std::string("lt")}});
    Value* span = b.create1(OpKind::Sub, {b.create1(OpKind::Sub, {hi, lo}, t), b.constant_int(t, 1)}, t);
    Value* steps = span;
    if (is_signed(t.dtype)) {
      const Type u = ir::scalar_type(t.dtype == DType::i64 ? DType::u64 : DType::u32);
      Value* q = b.create1(OpKind::Div, {b.create1(OpKind::Cast, {span}, u), b.create1(OpKind::Cast, {step}, u)}, u);
      steps = b.create1(OpKind::Cast, {q}, t);
    } else {
      steps = b.create1(OpKind::Div, {span, step}, t);
    }
    Value* last = b.create1(OpKind::Add, {lo, b.create1(OpKind::Mul, {steps, step}, t)}, t);
    loop.operands[1] = b.create1(OpKind::Select, {live, last, hi}, t);
    loop.attrs.erase("peel_last");

    // The iteration itself after the loop, where there is one.
    auto after = std::next(r.find(&loop));
    ir::Builder g(&r, after);
    g.loc = loop.loc;
    Op* guard = g.create(OpKind::If, {live}, {});
    ir::Builder then_b(guard->add_region());
    then_b.loc = loop.loc;
    ir::Builder else_b(guard->add_region());
    else_b.loc = loop.loc;
    false_ = then_b.constant_int(i1, 0);
    std::unordered_map<const Value*, Value*> map{{index_, last}};
    for (size_t k = 0; k + 1 < body.args.size(); ++k) map[body.args[k + 1].get()] = loop.result(int(k));
    std::vector<Value*> yielded = clone_region(then_b, body, map);
    then_b.create(OpKind::Yield, yielded, {});
    std::vector<Value*> results;
    for (size_t k = 0; k < loop.results.size(); ++k) results.push_back(loop.result(int(k)));
    else_b.create(OpKind::Yield, results, {});
    for (Value* v : results) guard->add_result(v->type);
    // What read the loop's results reads the guard's.
    for (auto it = std::next(r.find(guard)); it != r.ops.end(); ++it)
      for (size_t k = 0; k < results.size(); ++k)
        ir::walk(**it, [&](Op* o) {
          for (Value*& v : o->operands)
            if (v == results[k]) v = guard->result(int(k));
        });
    guards_.push_back(guard);
    // In the loop every step has a next one (j + st <= last < hi): what
    // that condition guards runs unconditionally there.
    fold_next_exists(body);
    loop.attrs["peeled"] = int64_t(1);
  }

  // After dce: in each peeled iteration, a product whose only reader is a
  // wait whose result is unread goes with the wait (peel_last_iteration.h).
  bool drop_dead_products() {
    bool changed = false;
    for (Op* guard : guards_) {
      ir::Region& then = *guard->regions[0];
      for (bool again = true; again;) {
        again = false;
        int issued = 0;  // products issued so far in the iteration
        for (auto& o : then.ops) {
          if (!async_dot(*o)) continue;
          ++issued;
          Op* dot = o.get();
          Op* wait = nullptr;
          int users = 0;
          ir::walk(then, [&](Op* u) {
            for (Value* v : u->operands)
              if (v == dot->result()) {
                ++users;
                wait = u;
              }
          });
          if (issued != 1 || users != 1 || wait->kind != OpKind::DotWait || wait->parent != &then ||
              wait->operands.size() != 1 || ir::count_uses(then, wait->result()) != 0)
            continue;
          int between = 0;  // products issued after it, before the wait
          for (auto it = std::next(then.find(dot)); it != then.find(wait); ++it)
            ir::walk(**it, [&](Op* n) { between += async_dot(*n); });
          if (between > wait->attr_int("pending")) continue;
          then.erase(wait);
          then.erase(dot);
          changed = again = true;
          break;
        }
      }
    }
    return changed;
  }

 private:
  // Copies `src`'s ops but its yield to `b`, reading values through `map`,
  // with what the last iteration knows folded; returns its yield's
  // operands, mapped.
  std::vector<Value*> clone_region(ir::Builder& b, const ir::Region& src, std::unordered_map<const Value*, Value*>& map) {
    auto get = [&](Value* v) {
      auto it = map.find(v);
      return it == map.end() ? v : it->second;
    };
    for (const auto& o : src.ops) {
      if (o->kind == OpKind::Yield) {
        std::vector<Value*> out;
        for (Value* v : o->operands) out.push_back(get(v));
        return out;
      }
      if (next_exists(*o)) {
        map[o->result()] = false_;
        continue;
      }
      if (o->kind == OpKind::If && get(o->operands[0]) == false_) {
        std::vector<Value*> vals = clone_region(b, *o->regions[1], map);
        for (size_t k = 0; k < vals.size(); ++k) map[o->result(int(k))] = vals[k];
        continue;
      }
      Op* c = b.region()->insert(b.pos(), ir::clone_op(*o, map));
      register_dots(*o, *c);
    }
    return {};
  }

  // The top-level `if`s of the loop's body on whether the next step
  // exists, replaced by their first branch's ops.
  void fold_next_exists(ir::Region& body) {
    for (auto it = body.ops.begin(); it != body.ops.end();) {
      Op* o = it->get();
      const Value* c = o->kind == OpKind::If ? o->operands[0] : nullptr;
      if (!c || c->is_arg() || c->def->parent != &body || !next_exists(*c->def)) {
        ++it;
        continue;
      }
      ir::Region& then = *o->regions[0];
      const Op* yield = then.ops.back().get();
      for (size_t k = 0; k < o->results.size(); ++k) ir::replace_uses(body, o->result(int(k)), yield->operands[k]);
      for (auto& m : then.ops) m->parent = &body;
      body.ops.splice(it, then.ops, then.ops.begin(), std::prev(then.ops.end()));
      it = body.ops.erase(it);
    }
  }

  // Whether `o` is `cmp (index + step), hi {lt}`: whether iteration j + st
  // exists, false in the last one.
  bool next_exists(const Op& o) const {
    if (o.kind != OpKind::Cmp || o.attr_str_or("pred", "") != "lt" || o.operands[1] != hi_) return false;
    const Value* a = o.operands[0];
    if (a->is_arg() || a->def->kind != OpKind::Add) return false;
    const auto& x = a->def->operands;
    return (x[0] == index_ && x[1] == step_) || (x[0] == step_ && x[1] == index_);
  }

  // The copies of dots take their originals' layouts in the plan.
  void register_dots(const Op& orig, Op& copy) {
    if (orig.kind == OpKind::Dot) plan_.dots.emplace(&copy, plan_.dots.at(&orig));
    for (size_t i = 0; i < orig.regions.size(); ++i) {
      auto a = orig.regions[i]->ops.begin();
      auto c = copy.regions[i]->ops.begin();
      for (; a != orig.regions[i]->ops.end(); ++a, ++c) register_dots(**a, **c);
    }
  }

  LayoutPlan& plan_;
  const Value* index_ = nullptr;
  const Value* step_ = nullptr;
  const Value* hi_ = nullptr;
  Value* false_ = nullptr;
  std::vector<Op*> guards_;
};

}  // namespace

int peel_last_iteration(ir::Function& fn, LayoutPlan& plan) {
  std::vector<Op*> loops;
  ir::walk(fn.body, [&](Op* o) {
    if (o->kind == OpKind::For && o->attr_int_or("peel_last", 0)) loops.push_back(o);
  });
  Peeler p(plan);
  int peeled = 0;
  for (Op* loop : loops) {
    bool any = false;
    ir::walk(*loop->regions[0], [&](Op* o) { any = any || async_dot(*o); });
    if (!any || !retires_all(*loop->regions[0])) {
      loop->attrs.erase("peel_last");
      continue;
    }
    p.peel(*loop);
    ++peeled;
  }
  if (peeled) {
    transforms::dce(fn);
    if (p.drop_dead_products()) transforms::dce(fn);
  }
  return peeled;
}

}  // namespace tl::codegen
