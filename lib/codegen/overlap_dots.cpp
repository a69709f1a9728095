// Overlapping a loop's first product with the rest of its iteration (see
// overlap_dots.h).
#include "codegen/overlap_dots.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "codegen/select_dot_instructions.h"
#include "codegen/target_info.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

bool defined_in_op(const Value* v, const Op& o) {
  for (const auto& sub : o.regions)
    if (ir::defined_in(v, *sub)) return true;
  return false;
}

class OverlapDots {
 public:
  OverlapDots(const TargetInfo& t, int num_warps) : t_(t), num_warps_(num_warps) {}

  int region(ir::Region& r) {
    int changed = 0;
    for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
      for (auto& sub : (*it)->regions) changed += region(*sub);
      if ((*it)->kind == OpKind::For) changed += loop(r, it);
    }
    return changed;
  }

 private:
  bool on_warpgroups(const Op& op) const {
    if (op.kind != OpKind::Dot) return false;
    auto mi = chosen_instr(op, t_, num_warps_);
    return mi && mi->operands_in_smem;
  }

  // Whether nothing in `r` writes memory (or prints, or asserts): loads
  // may then move from one iteration to the one before.
  static bool only_reads(ir::Region& r) {
    bool ok = true;
    ir::walk(r, [&](Op* o) {
      bool reads = o->kind == OpKind::Load || o->kind == OpKind::DescriptorLoad;
      bool control = o->kind == OpKind::For || o->kind == OpKind::If || o->kind == OpKind::Yield;
      ok = ok && (ir::op_is_pure(o->kind) || reads || control);
    });
    return ok;
  }

  using Users = std::unordered_map<const Value*, std::vector<Op*>>;

  // Whether `dot`'s result reaches, through the ops of `body` that use it
  // (`users`) and their results, a warpgroup dot other than `dot`.
  bool feeds_warpgroup_dot(ir::Region& body, Users& users, const Op* dot) {
    std::vector<const Value*> work{dot->result()};
    std::unordered_set<const Value*> seen{dot->result()};
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      for (Op* u : users[v]) {
        if (u != dot && on_warpgroups(*u)) return true;
        std::vector<const Value*> next;
        for (const auto& res : u->results) next.push_back(res.get());
        // A yield of a nested region passes the value to its op's results.
        if (u->kind == OpKind::Yield && u->parent != &body && u->parent->parent)
          for (const auto& res : u->parent->parent->results) next.push_back(res.get());
        for (const Value* n : next)
          if (seen.insert(n).second) work.push_back(n);
      }
    }
    return false;
  }

  // The ops of `body` that compute `v` from the loop's index and values
  // from before the loop alone, appended in an order they can run in;
  // false where `v` needs anything else.
  bool slice_of(ir::Region& body, Value* v, std::vector<Op*>& slice, std::unordered_set<const Op*>& in_slice) {
    if (!ir::defined_in(v, body)) return true;
    if (v->is_arg()) return v == body.args[0].get();
    Op* d = v->def;
    if (d->parent != &body || !d->regions.empty()) return false;
    if (in_slice.count(d)) return true;
    bool load = (d->kind == OpKind::Load && !d->attr_int_or("volatile", 0)) || d->kind == OpKind::DescriptorLoad;
    if (!ir::op_is_pure(d->kind) && !load && d->kind != OpKind::Dot) return false;
    for (Value* o : d->operands)
      if (!slice_of(body, o, slice, in_slice)) return false;
    in_slice.insert(d);
    slice.push_back(d);
    return true;
  }

  // Copies `slice` before `pos` of `r`, the loop's index read as `iv`;
  // loads masked by `pred` (their iteration exists). Returns the copy of
  // `v`.
  Value* copy(ir::Region& r, ir::Region::iterator pos, const std::vector<Op*>& slice, const Value* index, Value* iv,
              Value* pred, const Value* v) {
    std::unordered_map<const Value*, Value*> map{{index, iv}};
    for (const Op* o : slice) {
      Op* c = r.insert(pos, ir::clone_op(*o, map));
      if (c->kind != OpKind::Load) continue;
      // The mask: the load's own and the iteration's.
      ir::Builder b(&r, r.find(c));
      b.loc = c->loc;
      const ir::Type& ptr = c->operands[0]->type;
      Value* p = pred;
      if (ptr.is_tile()) p = b.create1(OpKind::Splat, {pred}, ir::Type{DType::i1, false, ptr.shape});
      if (c->operands.size() > 1) c->operands[1] = b.create1(OpKind::And, {c->operands[1], p}, c->operands[1]->type);
      else c->operands.push_back(p);
    }
    return map.at(v);
  }

  int loop(ir::Region& r, ir::Region::iterator it) {
    Op& loop = **it;
    ir::Region& body = *loop.regions[0];
    if (!only_reads(body)) return 0;
    // The first warpgroup dot of the body that starts a chain.
    Users users;
    ir::walk(body, [&](Op* o) {
      for (Value* v : o->operands) users[v].push_back(o);
    });
    Op* dot = nullptr;
    for (const auto& o : body.ops)
      if (on_warpgroups(*o) && feeds_warpgroup_dot(body, users, o.get())) {
        dot = o.get();
        break;
      }
    if (!dot) return 0;
    std::vector<Op*> slice;
    std::unordered_set<const Op*> in_slice;
    for (Value* o : dot->operands)
      if (!slice_of(body, o, slice, in_slice)) return 0;
    slice.push_back(dot);
    in_slice.insert(dot);
    // Each load moved feeds the product alone (else it would be read twice).
    std::unordered_map<const Value*, int> outside_uses;
    ir::walk(body, [&](Op* o) {
      if (!in_slice.count(o))
        for (Value* v : o->operands) ++outside_uses[v];
    });
    for (const Op* o : slice)
      if (o->kind == OpKind::Load || o->kind == OpKind::DescriptorLoad)
        if (outside_uses[o->result()]) return 0;

    Value *lo = loop.operands[0], *hi = loop.operands[1], *step = loop.operands[2];
    const Value* index = body.args[0].get();
    const ir::Type i1 = ir::scalar_type(DType::i1);
    // Iteration lo's product, before the loop.
    ir::Builder pre(&r, it);
    pre.loc = dot->loc;
    Value* first = pre.create1(OpKind::Cmp, {lo, hi}, i1, {{"pred", std::string("lt")}});
    Value* s0 = copy(r, it, slice, index, lo, first, dot->result());
    // The next iteration's, where this iteration's was.
    auto at = body.find(dot);
    ir::Builder in(&body, at);
    in.loc = dot->loc;
    Value* iv_next = in.create1(OpKind::Add, {body.args[0].get(), step}, index->type);
    Value* more = in.create1(OpKind::Cmp, {iv_next, hi}, i1, {{"pred", std::string("lt")}});
    Value* s_next = copy(body, at, slice, index, iv_next, more, dot->result());
    if (!rotate(r, it, dot, s0, s_next, first, more, iv_next)) {
      // It goes around the loop; this iteration reads the one carried in.
      loop.operands.push_back(s0);
      loop.add_result(s0->type);
      Value* s = body.add_arg(s0->type);
      ir::replace_uses(body, dot->result(), s);
      body.ops.back()->operands.push_back(s_next);
    }
    // Its last iteration issues a product nothing reads: peel-last-iteration
    // runs that iteration after the loop without it.
    loop.attrs["peel_last"] = int64_t(1);
    // The originals nothing reads now.
    for (auto o = slice.rbegin(); o != slice.rend(); ++o) {
      bool used = false;
      for (const auto& res : (*o)->results) used = used || ir::count_uses(body, res.get()) > 0;
      if (!used) body.erase(*o);
    }
    return 1;
  }

  // Every value `o` reads, its regions' ops included, that is defined
  // outside it.
  static std::vector<Value*> reads(Op* o) {
    std::vector<Value*> out;
    ir::walk(*o, [&](Op* n) {
      for (Value* v : n->operands)
        if (!defined_in_op(v, *o)) out.push_back(v);
    });
    return out;
  }

  // Whether `o` and its regions only compute (no memory, no products).
  static bool computes_only(Op* o) {
    bool ok = true;
    ir::walk(*o, [&](Op* n) {
      ok = ok && (n->kind == OpKind::If || n->kind == OpKind::Yield || (ir::op_is_pure(n->kind) && n->kind != OpKind::Dot));
    });
    return ok;
  }

  // The second step (overlap_dots.h): where the body, once iteration
  // j + 1's first product `dot` is issued at its top, reads that product's
  // carried value through pure work (B: the softmax) into a second
  // warpgroup product (D2: O += P V) and into carried values of its own
  // (the running max and sum), B moves after D2 and computes iteration
  // j + 1's values from the product just issued. The loop then carries
  // B's values that D2's side reads (P and the rescale, not S); B's
  // carried values are selected by whether iteration j + 1 exists. Before
  // the loop B runs once on iteration lo's product. Returns false, with
  // nothing changed, for a body not of that shape.
  bool rotate(ir::Region& r, ir::Region::iterator it, Op* dot, Value* s0, Value* s_next, Value* first, Value* more,
              Value* iv_next) {
    Op& loop = **it;
    ir::Region& body = *loop.regions[0];
    Op* yield = body.ops.back().get();
    if (yield->kind != OpKind::Yield) return false;
    const Value* index = body.args[0].get();
    const Value* s = dot->result();
    // The ops of the body (top level) that read, through other ops,
    // `from` or the result of an op already in the set.
    auto reaching = [&](std::unordered_set<const Value*> from) {
      std::unordered_set<Op*> set;
      for (auto& o : body.ops) {
        if (o.get() == yield) continue;
        for (Value* v : reads(o.get()))
          if (from.count(v)) {
            set.insert(o.get());
            for (auto& res : o->results) from.insert(res.get());
            break;
          }
      }
      return set;
    };
    std::unordered_set<Op*> on_s = reaching({s});
    Op* d2 = nullptr;
    for (auto& o : body.ops)
      if (on_s.count(o.get()) && on_warpgroups(*o)) {
        d2 = o.get();
        break;
      }
    if (!d2) return false;
    // D2 accumulates into a carried value; nothing but the yield reads it.
    int acc = -1;
    for (size_t k = 0; k < yield->operands.size(); ++k)
      if (yield->operands[k] == d2->result()) acc = int(k);
    if (acc < 0 || ir::count_uses(body, d2->result()) != 1) return false;
    std::unordered_set<Op*> c_side = reaching({body.args[size_t(acc) + 1].get(), d2->result()});
    c_side.insert(d2);
    std::vector<Op*> b;
    for (auto& o : body.ops)
      if (on_s.count(o.get()) && !c_side.count(o.get())) {
        if (!computes_only(o.get())) return false;
        b.push_back(o.get());
      }
    if (b.empty()) return false;
    std::unordered_map<const Value*, std::vector<Op*>> users;  // top-level users
    for (auto& o : body.ops)
      for (Value* v : reads(o.get())) users[v].push_back(o.get());
    // Shape ops only D2's side reads stay there (a broadcast rescale is
    // carried as its [BM] source, not as [BM, D] registers).
    for (auto o = b.rbegin(); o != b.rend(); ++o) {
      OpKind k = (*o)->kind;
      if (k != OpKind::ExpandDims && k != OpKind::Broadcast && k != OpKind::ConvertLayout && k != OpKind::Splat &&
          k != OpKind::Reshape)
        continue;
      bool only_c = true;
      for (Op* u : users[(*o)->result()]) only_c = only_c && c_side.count(u);
      if (only_c) c_side.insert(*o);
    }
    std::erase_if(b, [&](Op* o) { return c_side.count(o) != 0; });
    std::unordered_set<Op*> in_b(b.begin(), b.end());
    // The carried values B updates; B reads no other carried value, and
    // nothing else reads those (it would see the next iteration's).
    std::vector<int> updated;
    for (size_t k = 0; k < yield->operands.size(); ++k) {
      Value* v = yield->operands[k];
      if (!v->is_arg() && in_b.count(v->def)) updated.push_back(int(k));
    }
    auto updated_arg = [&](const Value* v) {
      for (int k : updated)
        if (v == body.args[size_t(k) + 1].get()) return true;
      return false;
    };
    for (Op* o : b)
      for (Value* v : reads(o))
        if (v->is_arg() && v->owner == &body && v != index && !updated_arg(v)) return false;
    for (auto& o : body.ops)
      if (!in_b.count(o.get()))
        for (Value* v : reads(o.get()))
          if (updated_arg(v)) return false;
    // What B reads from other ops of the body: pure work on the index and
    // values from before the loop (the mask's key indices), recomputed
    // with B.
    std::unordered_set<Op*> deps;
    std::vector<Op*> work(b.begin(), b.end());
    while (!work.empty()) {
      Op* o = work.back();
      work.pop_back();
      for (Value* v : reads(o)) {
        // A carried value (but the index) read by what B reads would be
        // read before the loop and one iteration late.
        if (v->is_arg() && v->owner == &body && v != index && !in_b.count(o)) return false;
        if (v->is_arg() || v == s || v->def->parent != &body || in_b.count(v->def) || deps.count(v->def)) continue;
        if (!computes_only(v->def) || on_s.count(v->def) || c_side.count(v->def)) return false;
        deps.insert(v->def);
        work.push_back(v->def);
      }
    }
    std::vector<Op*> order;  // B and its dependencies in program order
    for (auto& o : body.ops)
      if (in_b.count(o.get()) || deps.count(o.get())) order.push_back(o.get());
    // The values crossing from B to D2's side, to be carried.
    std::vector<Value*> cross;
    for (Op* o : b)
      for (auto& res : o->results) {
        bool read = false;
        for (Op* u : users[res.get()]) read = read || c_side.count(u);
        if (read) cross.push_back(res.get());
      }

    std::unordered_map<int, Value*> yielded;  // B's carried values as the body made them
    for (int k : updated) yielded[k] = yield->operands[size_t(k)];
    // Iteration lo's B before the loop, on the product made there.
    std::unordered_map<const Value*, Value*> pre{{index, loop.operands[0]}, {s, s0}};
    for (int k : updated) pre[body.args[size_t(k) + 1].get()] = loop.operands[size_t(k) + 3];
    for (Op* o : order) r.insert(it, ir::clone_op(*o, pre));

    // B's values D2's side reads go around the loop.
    std::vector<Value*> cross_args;
    for (Value* x : cross) {
      loop.operands.push_back(pre.at(x));
      loop.add_result(x->type);
      Value* a = body.add_arg(x->type);
      cross_args.push_back(a);
      for (Op* o : c_side)
        ir::walk(*o, [&](Op* n) { std::replace(n->operands.begin(), n->operands.end(), x, a); });
    }
    // Iteration j + 1's B after D2, on the product issued at the top, in
    // a branch taken where that iteration exists: the last iteration does
    // no softmax for a block past the end (one of hi / step + 1 before).
    // A carried value B makes by a cast (P, D2's A operand) is cast after
    // the branch, where async-dots moves the cast past D2's wait; the
    // branch yields the cast's operand.
    auto cast_after = [&](const Value* x) {
      const Op* d = x->def;
      if (d->kind != OpKind::Cast && d->kind != OpKind::ConvertLayout) return false;
      const Value* from = d->operands[0];
      if (from->is_arg() || !in_b.count(from->def)) return false;
      for (Op* u : users[x])
        if (!c_side.count(u)) return false;
      return true;
    };
    std::vector<Value*> then_vals;
    std::vector<ir::Type> types;
    std::unordered_map<const Value*, Value*> next{{index, iv_next}, {s, s_next}};
    ir::Builder in_body(&body, std::next(body.find(d2)));
    in_body.loc = loop.loc;
    Op* branch = in_body.create(OpKind::If, {more}, {});
    ir::Builder then_b(branch->add_region());
    then_b.loc = loop.loc;
    for (Op* o : order) {
      bool later = false;
      for (Value* x : cross) later = later || (x->def == o && cast_after(x));
      if (!later) then_b.region()->append(ir::clone_op(*o, next));
    }
    ir::Builder else_b(branch->add_region());
    else_b.loc = loop.loc;
    std::vector<Value*> else_vals;
    for (int k : updated) {
      then_vals.push_back(next.at(yielded.at(k)));
      else_vals.push_back(body.args[size_t(k) + 1].get());
    }
    for (size_t i = 0; i < cross.size(); ++i) {
      if (cast_after(cross[i])) {
        const Value* from = cross[i]->def->operands[0];
        then_vals.push_back(next.at(from));
        // Not read: the product's own registers where it has the type
        // (P made from S in place), else zeros.
        else_vals.push_back(from->type == s_next->type ? s_next : else_b.constant_float(from->type, 0.0));
      } else {
        then_vals.push_back(next.at(cross[i]));
        else_vals.push_back(cross_args[i]);
      }
    }
    then_b.create(OpKind::Yield, then_vals, {});
    else_b.create(OpKind::Yield, else_vals, {});
    for (Value* v : then_vals) branch->add_result(v->type);
    size_t res = 0;
    for (int k : updated) yield->operands[size_t(k)] = branch->result(int(res++));
    for (Value* x : cross) {
      Value* v = branch->result(int(res++));
      if (cast_after(x)) {
        std::unordered_map<const Value*, Value*> m{{x->def->operands[0], v}};
        v = in_body.region()->insert(in_body.pos(), ir::clone_op(*x->def, m))->result();
      }
      yield->operands.push_back(v);
    }
    // Before the loop, B's carried values where iteration lo exists.
    auto choose = [](ir::Builder& bld, Value* cond, Value* yes, Value* no) {
      Value* c = cond;
      if (yes->type.is_tile()) c = bld.create1(OpKind::Splat, {cond}, ir::Type{DType::i1, false, yes->type.shape});
      return bld.create1(OpKind::Select, {c, yes, no}, yes->type);
    };
    ir::Builder before(&r, it);
    before.loc = loop.loc;
    for (int k : updated) {
      Value* v = yielded.at(k);
      Value*& init = loop.operands[size_t(k) + 3];
      init = choose(before, first, pre.at(v), init);
    }
    // The originals nothing reads now: B and what only it read (the
    // caller removes the product's slice).
    for (auto o = b.rbegin(); o != b.rend(); ++o) body.erase(*o);
    for (auto o = order.rbegin(); o != order.rend(); ++o) {
      if (!deps.count(*o)) continue;
      bool used = false;
      for (const auto& res : (*o)->results) used = used || ir::count_uses(body, res.get()) > 0;
      if (!used) body.erase(*o);
    }
    return true;
  }

  const TargetInfo& t_;
  int num_warps_;
};

}  // namespace

int overlap_dots(ir::Function& fn, const TargetInfo& t, int num_warps) {
  if (fn.is_gpu()) throw Error("overlap-dots: expected Tile IR (a function without layouts), found GPU IR in @" + fn.name);
  return OverlapDots(t, num_warps).region(fn.body);
}

}  // namespace tl::codegen
