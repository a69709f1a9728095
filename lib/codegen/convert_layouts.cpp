// Layout conversions as ops (see convert_layouts.h): one walk over the GPU
// IR in program order; each op's operands are brought to the layouts it
// needs, with the conversions inserted before it (a loop result's after
// the loop).
#include "codegen/convert_layouts.h"

#include "codegen/pipeline_plan.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

bool rematerializable(const Value* v, int& budget) {
  if (!v->type.is_tile()) return true;
  if (const Value* src = moved_from(v)) return rematerializable(src, budget);
  const Op* d = v->def;
  if (!d || --budget < 0) return false;
  switch (d->kind) {
    case OpKind::Constant:
    case OpKind::Splat:
    case OpKind::Arange:
      return true;
    case OpKind::ExpandDims:
    case OpKind::Broadcast:
      return rematerializable(d->operands[0], budget);
    default:
      break;
  }
  if (!ir::op_is_elementwise(d->kind) || d->results.size() != 1 || !d->regions.empty()) return false;
  for (const Value* x : d->operands)
    if (!rematerializable(x, budget)) return false;
  return true;
}

namespace {

// The layout reductions, scans, joins and splits make tile result `k` in
// (from their operands, as converted), or nullopt for other ops.
std::optional<LinearLayout> own_result_layout(const Op& op, int k, const LayoutPlan& plan) {
  const Value* res = op.result(k);
  if (!res->type.is_tile()) return std::nullopt;
  switch (op.kind) {
    case OpKind::Reduce: return plan.of(op.operands[0]).slice(int(op.attr_int("axis")));
    case OpKind::Scan: return plan.of(op.operands[0]);
    case OpKind::Join:
      if (op.operands[0]->type.is_tile()) return join_layout(plan.of(op.operands[0]));
      return line_layout(res->type.shape, 0, plan.num_warps, plan.warp_size, plan.num_ctas);
    case OpKind::Split:
      if (k == 1) return plan.of(op.result(0));
      return std::nullopt;
    default: return std::nullopt;
  }
}

// How data held in `from` gets to `to`: registers permuted within each
// thread, or a round trip through shared memory.
std::string move_of(const LinearLayout& from, const LinearLayout& to) {
  return permutes_registers(from, to) ? "registers" : "shared";
}

// A move between the CTAs of a cluster, for `op` (its user or maker), is
// an error at the user's line.
void check_within_ctas(const Op& op, const LinearLayout& from, const LinearLayout& to) {
  if (crosses_ctas(from, to))
    throw Error(op.loc.str() + ": '" + std::string(op.name()) +
                "' with num_ctas > 1 needs tile elements moved between the CTAs of a cluster (a layout conversion "
                "across CTAs), which is not supported yet; use num_ctas = 1");
}

using Users = std::unordered_map<const Value*, std::vector<const Op*>>;

void note_users(const ir::Region& r, Users& users) {
  for (const auto& op : r.ops) {
    for (const Value* v : op->operands) users[v].push_back(op.get());
    for (const auto& sub : op->regions) note_users(*sub, users);
  }
}

// A trans whose result only a dot's A or B reads (or their conversion to
// its fragments through matrix loads): the dot's lowering stages the pair,
// through shared memory or the pipeline's buffers (not an A a warpgroup
// instruction takes from registers).
bool staged_with_dot(const Op& op, const Users& users, const LayoutPlan& plan) {
  if (op.kind != OpKind::Trans) return false;
  auto it = users.find(op.result());
  return it != users.end() && !it->second.empty() && std::all_of(it->second.begin(), it->second.end(), [&](const Op* u) {
           bool a_in_registers = u->kind == OpKind::Dot && u->operands[0] == op.result() && plan.dots.at(u).a_in_registers;
           return (u->kind == OpKind::Dot && u->operands[2] != op.result() && !a_in_registers) ||
                  (u->kind == OpKind::ConvertLayout && u->attr_str_or("move", "") == "matrix_loads");
         });
}

// Whether operand `i` of a dot directly in a loop's body comes from before
// the loop: hoist_dot_operands converts it, once.
bool hoisted_dot_operand(const Op& dot, int i) {
  const ir::Region* body = dot.parent;
  return body && body->parent && body->parent->kind == OpKind::For && !ir::defined_in(dot.operands[i], *body);
}

// The layout operand `i` of `op` must come in, where this pass provides it
// (a dot's A and B are staged by its lowering, but for a warpgroup
// instruction's A in registers, which it takes as it is).
std::optional<LinearLayout> needed_layout(const Op& op, int i, const LayoutPlan& plan) {
  if (op.kind == OpKind::Dot && i < 2 &&
      !(i == 0 && plan.dots.at(&op).a_in_registers && !hoisted_dot_operand(op, i)))
    return std::nullopt;
  return required_operand_layout(op, i, plan);
}

class Converter {
 public:
  Converter(ir::Function& fn, const LayoutPlan& plan, bool matrix_loads)
      : fn_(fn), plan_(plan), matrix_loads_(matrix_loads) {}

  void run() {
    note_users(fn_.body, users_);
    region(fn_.body);
  }

 private:
  void region(ir::Region& r) {
    for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
      Op& op = **it;
      for (auto& sub : op.regions) region(*sub);
      if (staged_with_dot(op, users_, plan_)) continue;
      switch (op.kind) {
        case OpKind::For:
        case OpKind::While: loop(r, it); break;
        case OpKind::Yield: yield(r, it); break;
        case OpKind::Store: store(r, it); break;
        case OpKind::Reduce:
        case OpKind::Scan:
        case OpKind::Join:
        case OpKind::Split:
          operands(r, it);
          results(r, it);
          break;
        default: operands(r, it); break;
      }
    }
  }

  // `v` in layout `to`, converted before `at` (or `v` itself when it is
  // there already). Splats and constants are made again in `to`; values
  // held by other threads that are cheap to recompute within `budget` ops
  // are recomputed (remat), others moved.
  // (Layouts are taken by value: interning one may grow the table that
  // plan_.of refers into.)
  Value* convert(ir::Region& r, ir::Region::iterator at, Value* v, LinearLayout to, int budget = kRematBudget,
                 bool force_remat = false) {
    LinearLayout from = plan_.of(v);
    if (from == to) return v;
    ir::Builder b(&r, at);
    b.loc = (*at)->loc;
    ir::Type t = v->type.with_layout(fn_.intern_layout(to));
    if (is_uniform(v)) {
      const Op& d = *v->def;
      return b.create1(d.kind, {d.operands.begin(), d.operands.end()}, t, d.attrs);
    }
    bool remat = force_remat || (!same_threads(from, to) && rematerializable(v, budget));
    if (!remat) check_within_ctas(**at, from, to);
    return b.create1(OpKind::ConvertLayout, {v}, t, {{"move", remat ? std::string("remat") : move_of(from, to)}});
  }

  // Every tile operand in the layout `op` needs. The layouts are worked out
  // first, from the operands as they are (the ones a reduction needs
  // follow from its first operand's).
  void operands(ir::Region& r, ir::Region::iterator it) {
    Op& op = **it;
    std::vector<std::optional<LinearLayout>> want;
    for (size_t i = 0; i < op.operands.size(); ++i) want.push_back(needed_layout(op, int(i), plan_));
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (want[i]) op.operands[i] = convert(r, it, op.operands[i], *want[i]);
  }

  // A loop's initial values in its carried layouts; a result placed apart
  // from its carried value (a later loop took it as its own initial value
  // first) moves to its own layout after the loop.
  void loop(ir::Region& r, ir::Region::iterator it) {
    Op& op = **it;
    auto after = std::next(it);
    for (size_t k = 0; k < op.results.size(); ++k) {
      Value* arg = ir::carried_args(op, k).front();
      if (!arg->type.is_tile()) continue;
      Value*& init = op.operands[ir::carried_init_index(op) + k];
      init = convert(r, it, init, plan_.of(arg));
      move_result(r, after, op.result(int(k)), plan_.of(arg));
    }
    if (op.kind == OpKind::For) hoist_dot_operands(r, it);
  }

  // A dot's A or B defined before its loop reaches the dot's fragment
  // layout once, right before the loop, not in every iteration (warpgroup
  // dots read theirs from shared memory instead, but for an A in
  // registers). Where the target has 8x8 matrix loads and the dot can use
  // them, the move is "matrix_loads": the tile is written to swizzled
  // shared memory and read back with them.
  void hoist_dot_operands(ir::Region& r, ir::Region::iterator it) {
    ir::Region& body = *(*it)->regions[0];
    for (auto& o : body.ops) {
      if (o->kind != OpKind::Dot) continue;
      for (int i = 0; i < 2; ++i) {
        Value* v = o->operands[i];
        const DotLayouts& d = plan_.dots.at(o.get());
        if (d.operand_in_smem(i) || ir::defined_in(v, body) || !v->type.is_tile()) continue;
        LinearLayout need = i == 0 ? d.a : d.b;
        if (matrix_loads_ && staged_for_matrix_loads(*o, i, v, plan_)) {
          ir::Builder b(&r, it);
          b.loc = o->loc;
          o->operands[i] = b.create1(OpKind::ConvertLayout, {v}, v->type.with_layout(fn_.intern_layout(need)),
                                     {{"move", std::string("matrix_loads")},
                                      {"instr", d.instr->name},
                                      {"operand", int64_t(i)}});
        } else {
          o->operands[i] = convert(r, it, v, need);
        }
      }
    }
  }

  // Reductions, scans, joins and splits compute a result in a layout of
  // their own (the operand's sliced along the axis, the scan's, the join
  // of the first operand's, the first result's); one assigned another
  // moves there after the op. Call after their operands are converted.
  void results(ir::Region& r, ir::Region::iterator it) {
    Op& op = **it;
    auto after = std::next(it);
    for (size_t k = 0; k < op.results.size(); ++k)
      if (auto own = own_result_layout(op, int(k), plan_)) move_result(r, after, op.result(int(k)), *own);
  }

  // `res` is made in layout `own`; its users read it in the layout it was
  // assigned, through a conversion inserted before `after` (conversions of
  // one op's results stay in result order).
  void move_result(ir::Region& r, ir::Region::iterator after, Value* res, const LinearLayout& own) {
    if (plan_.of(res) == own) return;
    check_within_ctas(*res->def, own, plan_.of(res));
    ir::Type placed = res->type;
    res->type.layout = fn_.intern_layout(own);
    ir::Builder b(&r, after);
    b.loc = res->def->loc;
    Value* moved = b.create1(OpKind::ConvertLayout, {res}, placed, {{"move", move_of(own, fn_.layout_of(placed))}});
    ir::replace_uses(r, res, moved);
    moved->def->operands[0] = res;
  }

  // A loop's yields in its carried layouts, an if's in its results'.
  void yield(ir::Region& r, ir::Region::iterator it) {
    Op& y = **it;
    const Op* parent = r.parent;
    if (!parent || (parent->kind != OpKind::For && parent->kind != OpKind::If && parent->kind != OpKind::While)) return;
    if (parent->kind == OpKind::While && &r == parent->regions[0].get()) return;  // the condition's i1
    for (size_t k = 0; k < y.operands.size(); ++k) {
      const Value* like = ir::is_loop(*parent) ? ir::carried_args(*parent, k).front() : parent->results[k].get();
      if (like->type.is_tile()) y.operands[k] = convert(r, it, y.operands[k], plan_.of(like));
    }
  }

  // A store of a value computed in another layout than its addresses
  // (threads other than the addresses' own hold it) stores it from where
  // it is when the addresses and mask are cheap to recompute there.
  void store(ir::Region& r, ir::Region::iterator it) {
    Op& op = **it;
    Value *ptr = op.operands[0], *value = op.operands[1];
    if (ptr->type.is_tile() && value->type.is_tile() && !is_uniform(value) &&
        !same_threads(plan_.of(value), plan_.of(ptr))) {
      int budget = kStoreRematBudget;
      bool cheap = rematerializable(ptr, budget) && (op.operands.size() <= 2 || rematerializable(op.operands[2], budget));
      if (cheap) {
        LinearLayout lv = plan_.of(value);
        for (size_t i = 0; i < op.operands.size(); ++i)
          if (i != 1) op.operands[i] = convert(r, it, op.operands[i], lv, 0, /*force_remat=*/true);
        return;
      }
    }
    operands(r, it);
  }

  ir::Function& fn_;
  const LayoutPlan& plan_;
  bool matrix_loads_;
  Users users_;  // of the IR before the pass
};

}  // namespace

void convert_layouts(ir::Function& fn, const LayoutPlan& plan, bool matrix_loads) {
  Converter(fn, plan, matrix_loads).run();
}

void check_layouts(const ir::Function& fn, const LayoutPlan& plan) {
  auto number = [&](const LinearLayout& l) {
    for (size_t i = 0; i < fn.layouts.size(); ++i)
      if (fn.layouts[i] == l) return "#l" + std::to_string(i + 1);
    return "{" + l.str() + "}";
  };
  auto bad = [&](const Op& op, const std::string& what, const Value* v, const LinearLayout& want) {
    throw Error(op.loc.str() + ": '" + std::string(op.name()) + "' expects " + what + " in layout " + number(want) +
                " on this target, found " + v->type.str() + " (a convert_layout would move it)");
  };
  Users users;
  note_users(fn.body, users);
  std::function<void(const ir::Region&)> check = [&](const ir::Region& r) {
    for (const auto& o : r.ops) {
      const Op& op = *o;
      for (size_t i = 0; i < op.operands.size() && !staged_with_dot(op, users, plan); ++i) {
        const Value* v = op.operands[i];
        if (!v->type.is_tile()) continue;
        if (auto want = needed_layout(op, int(i), plan); want && !(*want == plan.of(v)))
          bad(op, "operand #" + std::to_string(i), v, *want);
      }
      for (size_t k = 0; k < op.results.size(); ++k)
        if (auto own = own_result_layout(op, int(k), plan); own && !(*own == plan.of(op.result(int(k)))))
          bad(op, "result #" + std::to_string(k), op.result(int(k)), *own);
      for (const auto& sub : op.regions) check(*sub);
    }
  };
  check(fn.body);
}

}  // namespace tl::codegen
