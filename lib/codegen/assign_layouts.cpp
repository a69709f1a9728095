// Layout assignment (see assign_layouts.h): anchors at memory ops, a
// backward walk that pushes each op's operand requirements to values not
// yet placed, then a forward walk that places the rest from their operands.
#include "codegen/assign_layouts.h"
#include "codegen/select_dot_instructions.h"

#include <algorithm>
#include <bit>
#include <set>


namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

bool is_tile(const Value* v) { return v->type.is_tile(); }

// Loads, stores and atomics: the ops that anchor layouts.
bool is_memory_op(const Op& op) {
  return op.kind == OpKind::Load || op.kind == OpKind::Store || op.kind == OpKind::AtomicRmw ||
         op.kind == OpKind::AtomicCas;
}
}  // namespace

const Value* moved_from(const Value* v) {
  const Op* d = v->def;
  if (!d) return nullptr;
  if (d->kind == OpKind::ConvertLayout) return d->operands[0];
  if (d->kind == OpKind::LocalLoad) {
    const Op* alloc = d->operands[0]->def;
    if (alloc && alloc->kind == OpKind::LocalAlloc && !alloc->operands.empty()) return alloc->operands[0];
  }
  return nullptr;
}

bool is_uniform(const Value* v) {
  return v->def && (v->def->kind == OpKind::Splat || v->def->kind == OpKind::Constant);
}

bool same_threads(const LinearLayout& a, const LinearLayout& b) {
  auto repeat_of = [](const LinearLayout& l, const std::string& in) {
    for (const auto& d : l.in_dims())
      if (d.name == in) return std::make_pair(d.repeat, d.repeat_stride);
    return std::make_pair(int32_t(1), LinearLayout::Coords{});
  };
  for (const auto& in : {kLane, kWarp, kBlock})
    if (a.bases(in) != b.bases(in) || repeat_of(a, in) != repeat_of(b, in)) return false;
  return true;
}

bool permutes_registers(const LinearLayout& from, const LinearLayout& to) {
  if (from.out_dims().size() != to.out_dims().size() || !same_threads(from, to)) return false;
  std::set<LinearLayout::Coords> held;
  for (int32_t r = 0; r < from.in_size(kReg); ++r) held.insert(from.apply({{kReg, r}}));
  for (int32_t r = 0; r < to.in_size(kReg); ++r)
    if (!held.count(to.apply({{kReg, r}}))) return false;
  return true;
}

std::vector<int> bits_along(const LinearLayout& l, const std::string& in, int axis) {
  std::vector<int> bits;
  for (const auto& d : l.in_dims())
    if (d.name == in)
      for (size_t bit = 0; bit < d.bases.size(); ++bit)
        if (d.bases[bit][size_t(axis)] != 0) bits.push_back(int(bit));
  return bits;
}

int repeat_along(const LinearLayout& l, const std::string& in, int axis) {
  for (const auto& d : l.in_dims())
    if (d.name == in && d.repeat > 1 && d.repeat_stride[size_t(axis)] != 0) return int(d.repeat);
  return 1;
}

int groups_along(const LinearLayout& l, const std::string& in, int axis) {
  return (1 << bits_along(l, in, axis).size()) * repeat_along(l, in, axis);
}

bool crosses_ctas(const LinearLayout& from, const LinearLayout& to) {
  if (from.in_bits(kBlock) == 0 && to.in_bits(kBlock) == 0) return false;
  const auto& fb = from.bases(kBlock);
  bool replicated = std::all_of(fb.begin(), fb.end(), [](const LinearLayout::Coords& c) {
    return std::all_of(c.begin(), c.end(), [](int32_t x) { return x == 0; });
  });
  return !replicated && fb != to.bases(kBlock);
}

const LinearLayout& LayoutPlan::of(const Value* v) const {
  if (v->type.layout) return fn->layout_of(v->type);
  auto it = layouts.find(v);
  if (it == layouts.end()) throw Error("internal: no layout for a " + v->type.str() + " value");
  return it->second;
}

bool reducible(const LinearLayout& l, int axis) {
  // Every lane and warp basis must move along the axis only, or not at all.
  for (const auto& d : l.in_dims()) {
    if (d.name == kReg) continue;
    for (const auto& b : d.bases) {
      if (b[axis] == 0) continue;
      for (size_t i = 0; i < b.size(); ++i)
        if (int(i) != axis && b[i] != 0) return false;
    }
  }
  return true;
}

std::optional<LinearLayout> required_operand_layout(const Op& op, int i, const LayoutPlan& plan) {
  const Value* v = op.operands[i];
  if (!is_tile(v)) return std::nullopt;
  auto res = [&](int k) -> const LinearLayout& { return plan.of(op.results[k].get()); };
  switch (op.kind) {
    case OpKind::Broadcast:
      return broadcast_operand_layout(res(0), v->type.shape);
    case OpKind::ExpandDims:
      return expand_dims_operand_layout(res(0), int(op.attr_int("axis")));
    case OpKind::Trans: {
      // Inverse permutation of the result's layout.
      const auto& order = op.attr_ints("order");
      std::vector<int64_t> inv(order.size());
      for (size_t k = 0; k < order.size(); ++k) inv[order[k]] = int64_t(k);
      return trans_layout(res(0), inv);
    }
    case OpKind::Reshape:
      // A scalar from a one-element tile: every thread holds the element.
      if (!is_tile(op.results[0].get()))
        return default_layout(v->type.shape, 1, plan.num_warps, plan.warp_size, -1, plan.num_ctas);
      return reshape_layout(res(0), v->type.shape);
    case OpKind::Join:
      // The result is built from the first operand's layout; the second
      // joins it in the same one.
      return i == 0 ? std::nullopt : std::optional(plan.of(op.operands[0]));
    case OpKind::Split:
      // Scalars from a [2] tile: every thread holds both elements, in order.
      if (!is_tile(op.results[0].get()))
        return line_layout(v->type.shape, 0, plan.num_warps, plan.warp_size, plan.num_ctas);
      return join_layout(res(0));
    case OpKind::Reduce: {
      // The combine reads the operands register by register, so all take
      // the first one's layout (an argmax's i32 indices beside bf16 values
      // would otherwise hold a different number of registers).
      const auto& l = plan.of(op.operands[0]);
      int axis = int(op.attr_int("axis"));
      if (reducible(l, axis)) return i == 0 ? std::nullopt : std::optional(l);
      return default_layout(v->type.shape, 1, plan.num_warps, plan.warp_size, -1, plan.num_ctas);
    }
    case OpKind::Scan:
      // Every operand in the first one's scan layout (one register count).
      return scan_layout(plan.of(op.operands[0]), v->type.shape, int(op.attr_int("axis")), plan.num_warps,
                         plan.warp_size, plan.num_ctas);
    case OpKind::Store:
    case OpKind::AtomicRmw:
    case OpKind::AtomicCas:
      return i == 0 ? std::nullopt : std::optional(plan.of(op.operands[0]));
    case OpKind::Dot: {
      const DotLayouts& d = plan.dots.at(&op);
      if (i < 2 && d.operand_in_smem(i)) return std::nullopt;
      return i == 0 ? d.a : i == 1 ? d.b : d.c;
    }
    case OpKind::InlineAsm:
      return res(0);
    case OpKind::Load:
    case OpKind::Assert:
    case OpKind::Assume:
    case OpKind::Print:
    case OpKind::For:
    case OpKind::While:
    case OpKind::If:
    case OpKind::Yield:
      if (op.kind == OpKind::Load && !op.results.empty() && is_tile(op.result())) return res(0);
      return std::nullopt;
    default:
      // Elementwise ops: every tile operand in the result's layout.
      if (ir::op_is_elementwise(op.kind) && !op.results.empty() && is_tile(op.result())) return res(0);
      return std::nullopt;
  }
}

namespace {

class Assigner {
 public:
  Assigner(LayoutPlan& plan, const transforms::AxisAnalysis& axis, const MatrixInstrPicker& pick)
      : plan_(plan), axis_(axis), pick_(pick) {}

  void run(const ir::Function& fn) {
    note_users(fn.body);
    join_elementwise(fn.body);
    group_widths(fn.body);
    note_accumulators(fn.body);
    anchor(fn.body);
    for (int pass = 0; pass < 3; ++pass) backward(fn.body);
    forward(fn.body);
  }

 private:
  LinearLayout dflt(const Value* v, int vec = 0) {
    if (vec == 0) vec = std::max(1, 16 / std::max(1, byte_size(v->type.dtype)));
    return default_layout(v->type.shape, vec, plan_.num_warps, plan_.warp_size, -1, plan_.num_ctas);
  }
  void set(const Value* v, LinearLayout l) {
    if (is_tile(v) && !plan_.has(v)) plan_.layouts.emplace(v, std::move(l));
  }

  // Memory ops get the coalesced layout with the proven vector width; dots
  // their accumulator layout.
  void anchor(const ir::Region& r) {
    for (const auto& op : r.ops) {
      for (const auto& sub : op->regions) anchor(*sub);
      if (op->kind == OpKind::Dot) {
        const DotLayouts& d = plan_.dots.emplace(op.get(), dot_layouts(*op)).first->second;
        set(op->result(), d.c);
        set(op->operands[2], d.c);
        continue;
      }
      if (op->kind == OpKind::DescriptorLoad) {
        // A block kept for a tensor copy: rows along the tensor's
        // contiguous last dimension, 16 bytes a thread; on a cluster, split
        // over its CTAs as the dot reading it needs it (B whole in each).
        auto l = cluster_operand_layout(op->result());
        set(op->result(), l ? *l : dflt(op->result()));
        continue;
      }
      if (!is_memory_op(*op) || !is_tile(op->operands[0])) continue;
      if (auto l = accumulator_anchor(*op)) {
        set(op->operands[0], *l);
        for (const auto& res : op->results) set(res.get(), *l);
        continue;
      }
      if (op->kind == OpKind::Load)
        if (auto l = cluster_operand_layout(op->result())) {  // its pointers too
          set(op->operands[0], *l);
          set(op->result(), *l);
          continue;
        }
      int fast = axis_.fast_dim(*op);
      auto g = group_vec_.find(find(op->operands[0]));
      int vec = g != group_vec_.end() && g->second > 0 ? g->second : axis_.vector_width(*op, fast);
      LinearLayout l =
          default_layout(op->operands[0]->type.shape, vec, plan_.num_warps, plan_.warp_size, fast, plan_.num_ctas);
      set(op->operands[0], l);
      for (const auto& res : op->results) set(res.get(), l);
    }
  }

  // The accumulator layout of each group (below) a dot's result is in.
  void note_accumulators(const ir::Region& r) {
    for (const auto& op : r.ops) {
      for (const auto& sub : op->regions) note_accumulators(*sub);
      if (op->kind != OpKind::Dot) continue;
      const DotLayouts& d = plan_.dots.emplace(op.get(), dot_layouts(*op)).first->second;
      group_acc_.emplace(find(op->result()), d.c);
    }
  }

  // A load or store of a tile that meets a dot's accumulator through
  // elementwise ops (its partial sums written out, or read back and added
  // to it) takes the accumulator's layout where a warp's access in it
  // still covers whole 32-byte sectors of a row (f32 from a warpgroup or
  // mma.sync accumulator: 2 elements a thread, 4 lanes along the row), so
  // the accumulator is not converted through shared memory (128 KiB for a
  // 128x256 f32 tile). Narrower elements (bf16 C) keep the coalesced
  // anchor: half sectors would cost more than the conversion.
  std::optional<LinearLayout> accumulator_anchor(const Op& op) {
    if (op.kind != OpKind::Load && op.kind != OpKind::Store) return std::nullopt;
    auto g = group_acc_.find(find(op.operands[0]));
    if (g == group_acc_.end()) return std::nullopt;
    const LinearLayout& l = g->second;
    const Value* data = op.kind == OpKind::Load ? op.result() : op.operands[1];
    int last = int(data->type.shape.size()) - 1;
    if (last < 0 || axis_.fast_dim(op) != last || data->type.shape != op.operands[0]->type.shape) return std::nullopt;
    // A tile with two dims not powers of two (192 x 160) has no row-major
    // buffer to convert through (expand_conversions.h): it stays as it is.
    const auto& sh = data->type.shape;
    if (std::count_if(sh.begin(), sh.end(), [](int64_t d) { return !std::has_single_bit(uint64_t(d)); }) > 1) return l;
    int32_t run = l.contiguous_run(kReg, last);  // a thread's consecutive elements
    if (axis_.vector_width(op, last) < run) return std::nullopt;
    int64_t row = int64_t(run) * l.contiguous_run(kLane, last, run);  // ... continued by the lanes after it
    if (row * byte_size(data->type.dtype) < 32) return std::nullopt;
    return l;
  }

  // Tile values of one shape that meet through elementwise ops (pointer
  // arithmetic on shared offsets, casts, arithmetic on loaded values) and
  // loop-carried or if-yielded values are joined into one group.
  const Value* find(const Value* v) {
    auto it = parent_.find(v);
    if (it == parent_.end() || it->second == v) return v;
    const Value* root = find(it->second);
    parent_[v] = root;
    return root;
  }
  void join(const Value* a, const Value* b) {
    if (!is_tile(a) || !is_tile(b) || a->type.shape != b->type.shape) return;
    const Value *ra = find(a), *rb = find(b);
    if (ra != rb) parent_[ra] = rb;
  }
  void join_elementwise(const ir::Region& r) {
    for (const auto& op : r.ops) {
      for (const auto& sub : op->regions) join_elementwise(*sub);
      if (op->kind == OpKind::Load || op->kind == OpKind::Store || ir::op_is_elementwise(op->kind)) {
        for (const Value* v : op->operands) join(op->operands[0], v);
        for (const auto& res : op->results) join(op->operands[0], res.get());
      }
      if (ir::is_loop(*op))
        for (size_t k = 0; k < op->results.size(); ++k) {
          const Value* init = op->operands[ir::carried_init_index(*op) + k];
          for (const Value* arg : ir::carried_args(*op, k)) join(init, arg);
          join(init, op->results[k].get());
          if (const Value* y = ir::carried_yield(*op, k)) join(init, y);
        }
      if (op->kind == OpKind::If)
        for (size_t k = 0; k < op->results.size(); ++k)
          for (const auto& sub : op->regions)
            if (const Op* y = sub->terminator()) join(op->results[k].get(), y->operands[k]);
    }
  }

  // One per-thread vector for the memory ops of a group, so that their
  // anchors agree and the values between them need no conversion (bf16
  // rows scaled by f32 weights, say, would otherwise anchor 8 and 4
  // elements a thread and meet through shared memory). The widest proven
  // width wins: a narrower op then issues several accesses per thread,
  // which costs less than a conversion. A group whose ops disagree on the
  // fast dimension keeps each op's own layout (-1).
  void group_widths(const ir::Region& r) {
    for (const auto& op : r.ops) {
      for (const auto& sub : op->regions) group_widths(*sub);
      if (!is_memory_op(*op) || !is_tile(op->operands[0])) continue;
      const Value* g = find(op->operands[0]);
      int fast = axis_.fast_dim(*op), vec = axis_.vector_width(*op, fast);
      auto [it, fresh] = group_fast_.emplace(g, fast);
      if (!fresh && it->second != fast) group_vec_[g] = -1;
      int& v = group_vec_[g];
      if (v >= 0) v = std::max(v, vec);
    }
  }

  // Users before definitions: push each op's operand requirements.
  void backward(const ir::Region& r) {
    for (auto it = r.ops.rbegin(); it != r.ops.rend(); ++it) {
      const Op& op = **it;
      if (ir::is_loop(op)) {
        // Carried values: one layout for init, region args, yield and result.
        for (auto sub = op.regions.rbegin(); sub != op.regions.rend(); ++sub) backward(**sub);
        for (size_t k = 0; k < op.results.size(); ++k) {
          const Value* res = op.results[k].get();
          if (!is_tile(res)) continue;
          std::vector<Value*> args = ir::carried_args(op, k);
          const Value* yield = ir::carried_yield(op, k);
          std::optional<LinearLayout> l;
          for (const Value* v : args)
            if (!l && plan_.has(v)) l = plan_.of(v);
          if (!l && plan_.has(res)) l = plan_.of(res);
          if (!l && yield && plan_.has(yield)) l = plan_.of(yield);
          if (!l) continue;
          for (const Value* v : args) set(v, *l);
          set(res, *l);
          set(op.operands[ir::carried_init_index(op) + k], *l);
          if (yield) set(yield, *l);
        }
        continue;
      }
      for (const auto& sub : op.regions) backward(*sub);
      if (op.kind == OpKind::If) {
        for (size_t k = 0; k < op.results.size(); ++k)
          if (plan_.has(op.results[k].get()))
            for (const auto& sub : op.regions)
              if (const Op* y = sub->terminator()) set(y->operands[k], plan_.of(op.results[k].get()));
        continue;
      }
      // An elementwise op whose result nobody placed takes the layout of a
      // placed operand (a load's, say), so that a chain like
      // `acc = acc + cast(load(p))` inside a loop settles on the load's
      // layout instead of a default one that would need a conversion on
      // every iteration. Walking twice carries this across a chain.
      if (ir::op_is_elementwise(op.kind) && op.results.size() == 1 && is_tile(op.result()) && !plan_.has(op.result()))
        if (auto l = placed_operand(op)) set(op.result(), *l);
      bool results_placed = std::all_of(op.results.begin(), op.results.end(),
                                        [&](const auto& v) { return !is_tile(v.get()) || plan_.has(v.get()); });
      if (op.results.empty() || !results_placed) continue;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        if (!is_tile(op.operands[i]) || plan_.has(op.operands[i])) continue;
        if (op.kind == OpKind::Reduce || op.kind == OpKind::Scan || op.kind == OpKind::Join) continue;
        // Register bits that only replicate (what a broadcast's operand
        // layout has along the broadcast dimension) are dropped: the
        // producer computes each element once, and the broadcast copies
        // registers.
        if (auto l = required_operand_layout(op, int(i), plan_)) set(op.operands[i], l->remove_broadcast(kReg));
      }
    }
  }

  // Definitions before users: place what the backward walk did not reach.
  void forward(const ir::Region& r) {
    for (const auto& op : r.ops) {
      if (ir::is_loop(*op)) {
        for (size_t k = 0; k < op->results.size(); ++k) {
          const Value* init = op->operands[ir::carried_init_index(*op) + k];
          if (!is_tile(init)) continue;
          std::vector<Value*> args = ir::carried_args(*op, k);
          LinearLayout l = plan_.has(init) ? plan_.of(init) : dflt(init);
          for (const Value* arg : args) set(arg, l);
          set(op->results[k].get(), plan_.of(args.front()));
        }
        for (const auto& sub : op->regions) forward(*sub);
        continue;
      }
      for (const auto& sub : op->regions) forward(*sub);
      for (size_t k = 0; k < op->results.size(); ++k) {
        const Value* res = op->results[k].get();
        if (!is_tile(res) || plan_.has(res)) continue;
        set(res, forward_layout(*op, int(k)));
      }
    }
  }

  // The layout of an operand of the result's shape that has one, preferring
  // values that hold data over splats and constants (those rematerialize in
  // any layout for free, so they should not decide one).
  std::optional<LinearLayout> placed_operand(const Op& op) {
    const Value* res = op.result();
    for (bool allow_uniform : {false, true})
      for (const Value* v : op.operands) {
        bool uniform = v->def && (v->def->kind == OpKind::Splat || v->def->kind == OpKind::Constant);
        if ((!uniform || allow_uniform) && plan_.has(v) && v->type.shape == res->type.shape) return plan_.of(v);
      }
    return std::nullopt;
  }

  LinearLayout forward_layout(const Op& op, int k) {
    const Value* res = op.results[k].get();
    auto operand = [&](int i) -> std::optional<LinearLayout> {
      if (i < int(op.operands.size()) && plan_.has(op.operands[i])) return plan_.of(op.operands[i]);
      return std::nullopt;
    };
    switch (op.kind) {
      case OpKind::ExpandDims:
        if (auto l = operand(0)) return expand_dims_result_layout(*l, int(op.attr_int("axis")));
        break;
      case OpKind::Trans:
        if (auto l = operand(0)) return trans_layout(*l, op.attr_ints("order"));
        break;
      case OpKind::Reshape:
        if (auto l = operand(0)) return reshape_layout(*l, res->type.shape);
        break;
      case OpKind::Join:
        if (auto l = operand(0)) return join_layout(*l);
        break;
      case OpKind::Reduce: {
        int axis = int(op.attr_int("axis"));
        auto l = required_operand_layout(op, k, plan_);
        LinearLayout src = l ? *l : plan_.of(op.operands[k]);
        return src.slice(axis);
      }
      case OpKind::Scan:
        if (auto l = operand(0))
          return scan_layout(*l, res->type.shape, int(op.attr_int("axis")), plan_.num_warps, plan_.warp_size,
                             plan_.num_ctas);
        break;
      case OpKind::If:
        for (const auto& sub : op.regions)
          if (const Op* y = sub->terminator(); y && plan_.has(y->operands[k])) return plan_.of(y->operands[k]);
        break;
      case OpKind::InlineAsm:
        if (auto l = placed_operand(op)) return *l;
        break;
      default:
        if (ir::op_is_elementwise(op.kind))
          if (auto l = placed_operand(op)) return *l;
        break;
    }
    return dflt(res);
  }

  DotLayouts dot_layouts(const Op& dot) {
    const auto& as = dot.operands[0]->type.shape;
    int64_t M = as[0], K = as[1], N = dot.operands[1]->type.shape[1];
    if (pick_)
      if (auto instr = pick_(dot); instr && fits(*instr, M, N, K)) {
        // On a cluster a warpgroup dot splits M over the CTAs (where it
        // cannot, its layouts name no CTA and the lowering refuses it).
        try {
          return matrix_dot_layouts(*instr, M, N, K, plan_.num_warps,
                                    feeds_dot_a(dot.result()) || from_dot(dot.operands[0]), a_in_registers(dot),
                                    split_ctas(*instr, M, N, K, plan_.num_warps, plan_.num_ctas));
        } catch (const Error& e) {
          // A layout the linear layouts cannot say yet (two repeats of
          // registers: a warpgroup taking several 64-row slices of a tile
          // whose N is not a power of two): the user's line and a way out.
          throw Error(dot.loc.str() + ": 'dot' of " + std::to_string(M) + " x " + std::to_string(N) + " x " +
                      std::to_string(K) + " on " + std::to_string(plan_.num_warps) +
                      " warps is not supported yet on this target (" + e.what() +
                      "); with tile dims that are not powers of two give each warpgroup (4 warps) at most 64 rows "
                      "of the dot, or make the dims powers of two");
        }
      }
    return fma_dot_layouts(M, N, K, plan_.num_warps, plan_.warp_size);
  }

  // On a cluster, a loaded block a dot reads: the layout of the dot
  // operand it is (the dot's layouts made now, before the dot's turn), so
  // that each CTA loads the rows of A its part of C needs and the whole of
  // B; nullopt for any other value (it takes the default split). A block
  // the dot reads through a trans (B stored [N, K]) keeps its own default
  // layout, along its contiguous last dimension, split over the CTAs as
  // the operand the trans makes is.
  std::optional<LinearLayout> cluster_operand_layout(const Value* v) {
    if (plan_.num_ctas <= 1) return std::nullopt;
    auto operand_of = [&](const Op* u, const Value* x) -> std::optional<LinearLayout> {
      for (int i = 0; i < 2; ++i)
        if (u->kind == OpKind::Dot && u->operands[i] == x) {
          const DotLayouts& d = plan_.dots.emplace(u, dot_layouts(*u)).first->second;
          return i == 0 ? d.a : d.b;
        }
      return std::nullopt;
    };
    for (const Op* u : users_[v]) {
      if (auto l = operand_of(u, v)) return l;
      if (u->kind != OpKind::Trans || v->type.rank() != 2) continue;
      for (const Op* uu : users_[u->result()])
        if (auto need = operand_of(uu, u->result()))
          return split_as(v->type, *need, u->result()->type.shape, u->attr_ints("order"));
    }
    return std::nullopt;
  }

  // The default layout of a tile of `t` (a trans's operand) whose CTAs hold
  // the parts the trans's result in layout `need` (of `shape`) holds.
  LinearLayout split_as(const ir::Type& t, const LinearLayout& need, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& order) {
    // Result dimension k is operand dimension order[k].
    auto to_operand = [&](const auto& c) {
      std::decay_t<decltype(c)> r(c.size());
      for (size_t k = 0; k < c.size(); ++k) r[size_t(order[k])] = c[k];
      return r;
    };
    std::vector<int64_t> part = to_operand(cta_shape(need, shape));
    int vec = std::max(1, 16 / std::max(1, byte_size(t.dtype)));
    LinearLayout local = default_layout(part, vec, plan_.num_warps, plan_.warp_size);
    std::vector<LinearLayout::InDim> ins = local.in_dims();
    auto block = std::find_if(ins.begin(), ins.end(), [](const auto& d) { return d.name == kBlock; });
    if (block == ins.end()) block = ins.insert(ins.end(), LinearLayout::InDim{kBlock, {}});
    for (const auto& b : need.bases(kBlock)) block->bases.push_back(to_operand(b));
    std::vector<LinearLayout::OutDim> outs;
    for (size_t d = 0; d < t.shape.size(); ++d) outs.push_back({dim_name(int(d)), int32_t(t.shape[d])});
    return LinearLayout(ins, outs);
  }

  void note_users(const ir::Region& r) {
    for (const auto& op : r.ops) {
      for (const Value* v : op->operands) users_[v].push_back(op.get());
      for (const auto& sub : op->regions) note_users(*sub);
    }
  }

  // Whether `v` reaches operand A of a dot through elementwise ops (the
  // probabilities of attention, say).
  bool feeds_dot_a(const Value* v, int depth = 0) {
    if (depth > 32) return false;
    for (const Op* u : users_[v]) {
      if (u->kind == OpKind::Dot && u->operands[0] == v) return true;
      if (ir::op_is_elementwise(u->kind) && u->results.size() == 1 && feeds_dot_a(u->result(), depth + 1)) return true;
    }
    return false;
  }

  // Whether `v` is computed from a dot's result through elementwise ops:
  // then this dot, like that one, keeps whole rows per warp, so the
  // accumulator becomes this operand by a register permutation.
  bool from_dot(const Value* v, int depth = 0) {
    const Op* d = v->def;
    if (!d || depth > 32) return false;
    if (d->kind == OpKind::Dot) return true;
    if (!ir::op_is_elementwise(d->kind)) return false;
    for (const Value* x : d->operands)
      if (x->type.is_tile() && from_dot(x, depth + 1)) return true;
    return false;
  }

  LayoutPlan& plan_;
  const transforms::AxisAnalysis& axis_;
  const MatrixInstrPicker& pick_;
  std::unordered_map<const Value*, std::vector<const Op*>> users_;
  std::unordered_map<const Value*, const Value*> parent_;  // groups (join_elementwise)
  std::unordered_map<const Value*, int> group_fast_;       // a group's fast dimension
  std::unordered_map<const Value*, int> group_vec_;        // its per-thread vector; -1: none shared
  std::unordered_map<const Value*, LinearLayout> group_acc_;  // a dot accumulator's layout in it
};

}  // namespace

// Writes the plan into the function: its launch shape as attributes, and
// each tile's layout into its type, numbered in the order the printer
// meets values (arguments, then each op's results before its regions), so
// #l1 is the first layout a reader sees.
void write_types(ir::Function& fn, LayoutPlan& plan) {
  fn.attrs["num_warps"] = int64_t(plan.num_warps);
  fn.attrs["warp_size"] = int64_t(plan.warp_size);
  fn.attrs["num_ctas"] = int64_t(plan.num_ctas);
  auto write = [&](Value* v) {
    if (is_tile(v)) v->type.layout = fn.intern_layout(plan.of(v));
  };
  std::function<void(ir::Region&)> region = [&](ir::Region& r) {
    for (auto& op : r.ops) {
      for (auto& res : op->results) write(res.get());
      for (auto& sub : op->regions) {
        for (auto& a : sub->args) write(a.get());
        region(*sub);
      }
    }
  };
  for (auto& a : fn.body.args) write(a.get());
  region(fn.body);
  plan.layouts.clear();
  plan.fn = &fn;
}

LayoutPlan assign_layouts(ir::Function& fn, const transforms::AxisAnalysis& axis, int num_warps,
                          int warp_size, const MatrixInstrPicker& pick, int num_ctas) {
  for (const auto& a : fn.body.args)
    if (a->type.is_tile())
      throw Error(fn.loc.str() + ": 'func @" + fn.name + "' expects pointer and scalar arguments (what a kernel is " +
                  "launched with), found " + a->type.str() + " for argument #" + std::to_string(a->index));
  LayoutPlan plan;
  plan.num_warps = num_warps;
  plan.warp_size = warp_size;
  plan.num_ctas = num_ctas;
  Assigner(plan, axis, pick).run(fn);
  if (num_ctas > 1)
    for (const auto& [dot, d] : plan.dots)
      if (std::string why = cluster_dot_refusal(*dot, d, num_ctas); !why.empty())
        throw Error(dot->loc.str() + ": 'dot' " + why);
  write_types(fn, plan);
  return plan;
}

std::string cluster_dot_refusal(const Op& dot, const DotLayouts& d, int num_ctas) {
  if (num_ctas <= 1 || (d.on_warpgroups() && d.c.in_size(kBlock) == num_ctas)) return "";
  const int64_t M = dot.operands[0]->type.shape[0];
  std::string found = d.instr ? d.instr->name : std::string("the FMA form (no matrix instruction)");
  if (!d.on_warpgroups())
    return "with num_ctas = " + std::to_string(num_ctas) +
           " runs on warpgroup instructions only (sm_90a, a tile of at least 64 rows a warpgroup), found " + found;
  const int groups = d.warps_m / std::max(1, d.instr->warps);
  const int64_t rows = int64_t(num_ctas) * d.instr->m * groups;
  return "with num_ctas = " + std::to_string(num_ctas) + " splits its rows over the CTAs: expected M a multiple of " +
         std::to_string(rows) + " (" + std::to_string(num_ctas) + " CTAs x " + std::to_string(d.instr->m) +
         " rows x " + std::to_string(groups) + (groups == 1 ? " warpgroup" : " warpgroups") + "), found M = " +
         std::to_string(M) + " on " + found;
}

}  // namespace tl::codegen
