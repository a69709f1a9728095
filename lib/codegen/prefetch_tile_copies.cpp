// The next tile's one-shot copies issued while this tile ends (see
// prefetch_tile_copies.h).
#include "codegen/prefetch_tile_copies.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/shared_sizes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

const ir::Type kI1 = ir::scalar_type(DType::i1);
const ir::Type kI32 = ir::scalar_type(DType::i32);

// A tile's copies as tma-descriptors made them, all ops of the loop's
// body: the mbarrier's and buffers' allocations, its init, one expect_tx,
// the copies, one wait and the inval.
struct Group {
  Op* bar = nullptr;
  std::vector<Op*> bufs;
  Op* init = nullptr;
  Op* expect = nullptr;
  std::vector<Op*> loads;
  Op* wait = nullptr;
  Op* inval = nullptr;
};

// The position of each op directly in `r`.
std::unordered_map<const Op*, size_t> positions(ir::Region& r) {
  std::unordered_map<const Op*, size_t> at;
  size_t i = 0;
  for (auto& o : r.ops) at[o.get()] = i++;
  return at;
}

// The op directly in `r` that holds `op` (it, or one it is nested in), or null.
Op* holder_in(ir::Region& r, Op* op) {
  while (op && op->parent != &r) op = op->parent ? op->parent->parent : nullptr;
  return op;
}

std::optional<Group> find_group(Op& loop) {
  ir::Region& body = *loop.regions[0];
  std::unordered_map<const Value*, std::vector<Op*>> users;
  ir::walk(body, [&](Op* o) {
    for (const Value* v : o->operands) users[v].push_back(o);
  });
  for (auto& o : body.ops) {
    if (o->kind != OpKind::MbarrierInit) continue;
    Op* bar = o->operands[0]->def;
    if (!bar || bar->kind != OpKind::LocalAlloc || bar->parent != &body || !bar->operands.empty()) continue;
    Group g;
    g.bar = bar;
    bool ok = true;
    for (Op* u : users[bar->result()]) {
      ok = ok && u->parent == &body;
      switch (u->kind) {
        case OpKind::MbarrierInit: ok = ok && !g.init; g.init = u; break;
        case OpKind::MbarrierExpectTx: ok = ok && !g.expect; g.expect = u; break;
        case OpKind::TmaLoad: ok = ok && u->operands[2] == bar->result(); g.loads.push_back(u); break;
        case OpKind::MbarrierWait: ok = ok && !g.wait; g.wait = u; break;
        case OpKind::MbarrierInval: ok = ok && !g.inval; g.inval = u; break;
        default: ok = false;
      }
    }
    if (!ok || !g.init || !g.expect || g.loads.empty() || !g.wait || !g.inval) continue;
    auto at = positions(body);
    for (Op* l : g.loads) {
      ok = ok && at[g.expect] < at[l] && at[l] < at[g.wait];
      Op* buf = l->operands[1]->def;
      ok = ok && buf && buf->kind == OpKind::LocalAlloc && buf->parent == &body && buf->operands.empty();
      if (ok && std::find(g.bufs.begin(), g.bufs.end(), buf) == g.bufs.end()) g.bufs.push_back(buf);
    }
    ok = ok && at[g.init] < at[g.expect] && at[g.wait] < at[g.inval];
    // The wait's phase a constant 0 (one phase a tile, as made).
    const Value* phase = g.wait->operands[1];
    ok = ok && phase->def && phase->def->kind == OpKind::Constant && phase->def->attr_int("value") == 0;
    if (ok) return g;
  }
  return std::nullopt;
}

// Whether `v`, read in `loop`'s body, can be computed anew from the loop's
// index: a value from outside the loop, the index, or a scalar pure op of
// the body (no regions) of such values.
bool rebuildable(const Value* v, const Op& loop) {
  const ir::Region& body = *loop.regions[0];
  if (v == body.args[0].get()) return true;
  if (v->is_arg()) return v->owner != &body && !ir::is_within(v->owner->parent, &loop);
  const Op* d = v->def;
  if (!ir::is_within(d, &loop)) return true;
  if (d->parent != &body || !d->regions.empty() || !ir::op_is_pure(d->kind)) return false;
  for (const auto& r : d->results)
    if (!r->type.is_scalar()) return false;
  return std::all_of(d->operands.begin(), d->operands.end(), [&](const Value* x) { return rebuildable(x, loop); });
}

// `v` computed at `b` with the loop's index read as `index` (rebuildable).
Value* rebuild(Value* v, Op& loop, Value* index, ir::Builder& b, std::unordered_map<const Value*, Value*>& map) {
  ir::Region& body = *loop.regions[0];
  if (v == body.args[0].get()) return index;
  if (v->is_arg() || !ir::is_within(v->def, &loop)) return v;
  if (auto it = map.find(v); it != map.end()) return it->second;
  for (Value* x : v->def->operands) map[x] = rebuild(x, loop, index, b, map);
  Op* copy = b.region()->insert(b.pos(), ir::clone_op(*v->def, map));
  copy->loc = v->def->loc;
  return map.at(v);
}

// At `b`: where `cond` holds, the group's expect_tx and copies with their
// coordinates at loop index `index`.
void issue(ir::Builder& b, Value* cond, const Group& g, Op& loop, Value* index) {
  Op* branch = b.create(OpKind::If, {cond}, {});
  ir::Builder then(branch->add_region());
  then.loc = b.loc;
  std::unordered_map<const Value*, Value*> map;
  then.create(OpKind::MbarrierExpectTx, {g.bar->result()}, {}, g.expect->attrs);
  for (Op* l : g.loads) {
    std::vector<Value*> operands;
    for (Value* x : l->operands) operands.push_back(rebuild(x, loop, index, then, map));
    then.create(OpKind::TmaLoad, operands, {}, l->attrs);
  }
  then.create(OpKind::Yield, {}, {});
  ir::Builder(branch->add_region()).create(OpKind::Yield, {}, {});
}

// A bound on the shared memory `fn` needs, nothing sharing bytes.
int64_t unshared_bound(ir::Function& fn, const LayoutPlan& plan) {
  int64_t total = shared_start(plan);
  ir::walk(fn.body, [&](Op* o) {
    if (o->kind == OpKind::LocalAlloc && o->operands.empty()) {
      const int64_t align = 1024;
      total += (smem_buffer_bytes(o->result()->type, fn.layout_of(o->result()->type)) + align - 1) / align * align;
    } else {
      total += scratch_bound(*o, plan, {});
    }
  });
  return total;
}

bool prefetch(ir::Function& fn, Op& loop, const LayoutPlan& plan, int64_t available) {
  ir::Region& body = *loop.regions[0];
  if (!body.terminator()) return false;
  std::optional<Group> found = find_group(loop);
  if (!found) return false;
  const Group& g = *found;
  for (Op* l : g.loads)
    for (const Value* x : l->operands)
      if (x != g.bar->result() && x->def != l->operands[1]->def && !rebuildable(x, loop)) return false;
  // The buffers' readers (through their views), all in the body after the
  // wait; the last op of the body holding one.
  auto at = positions(body);
  std::unordered_set<const Value*> views;
  for (Op* b : g.bufs) views.insert(b->result());
  Op* last = g.wait;
  bool inside = true;
  ir::walk(fn.body, [&](Op* o) {
    if (o->kind == OpKind::TmaLoad && o->operands[2] == g.bar->result()) return;
    for (const Value* x : o->operands) {
      if (!views.count(x)) continue;
      for (const auto& r : o->results)
        if (r->type.is_shared()) views.insert(r.get());
      Op* h = holder_in(body, o);
      if (!h || at[h] <= at[g.wait]) {
        inside = false;
        return;
      }
      if (at[h] > at[last]) last = h;
    }
  });
  if (!inside || unshared_bound(fn, plan) > available) return false;

  // Before the loop: the mbarrier and the buffers, its init, the first
  // tile's copies.
  ir::Region& around = *loop.parent;
  auto move_out = [&](Op* o, ir::Region::iterator at) {  // from the body into `around`, before `at`
    around.ops.splice(at, body.ops, body.find(o));
    o->parent = &around;
  };
  move_out(g.bar, around.find(&loop));
  for (Op* b : g.bufs) move_out(b, around.find(&loop));
  move_out(g.init, around.find(&loop));
  ir::Builder pre(&around, around.find(&loop));
  pre.loc = loop.loc;
  pre.create(OpKind::Barrier, {}, {});  // every thread sees the init before a wait
  Value* lo = loop.operands[0];
  Value* hi = loop.operands[1];
  issue(pre, pre.create1(OpKind::Cmp, {lo, hi}, kI1, {{"pred", std::string("lt")}}), g, loop, lo);

  // The phase, carried.
  loop.operands.push_back(pre.constant_int(kI32, 0));
  loop.add_result(kI32);
  Value* phase = body.add_arg(kI32);
  g.wait->operands[1] = phase;
  ir::Builder tail(&body, body.find(body.terminator()));
  tail.loc = loop.loc;
  body.terminator()->operands.push_back(tail.create1(OpKind::Xor, {phase, tail.constant_int(kI32, 1)}, kI32));

  // The next tile's copies once every reader is done: past the barriers
  // right after the last (a named barrier ends the consumer warpgroups'
  // turns, which a barrier of them all before it would deadlock).
  auto next_at = std::next(body.find(last));
  while (next_at != body.ops.end() &&
         ((*next_at)->kind == OpKind::NamedBarrier || (*next_at)->kind == OpKind::Barrier))
    ++next_at;
  ir::Builder post(&body, next_at);
  post.loc = loop.loc;
  if (next_at == body.ops.begin() || (*std::prev(next_at))->kind != OpKind::Barrier)
    post.create(OpKind::Barrier, {}, {});
  Value* next = post.create1(OpKind::Add, {body.args[0].get(), loop.operands[2]}, body.args[0]->type);
  issue(post, post.create1(OpKind::Cmp, {next, hi}, kI1, {{"pred", std::string("lt")}}), g, loop, next);

  // The group's ops in the body go; the mbarrier ends after the loop.
  Op* inval = g.inval;
  for (Op* o : g.loads) body.erase(o);
  body.erase(g.expect);
  move_out(inval, std::next(around.find(&loop)));
  ir::Builder end(&around, around.find(inval));
  end.loc = loop.loc;
  end.create(OpKind::Barrier, {}, {});
  return true;
}

}  // namespace

void prefetch_tile_copies(ir::Function& fn, const LayoutPlan& plan, int64_t available_shared_bytes) {
  for (Op* loop : tile_loops(fn))
    while (prefetch(fn, *loop, plan, available_shared_bytes)) {
    }
}

}  // namespace tl::codegen
