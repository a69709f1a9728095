// Warp specialization of tensor-copy pipelines (see warp_specialize.h).
#include "codegen/warp_specialize.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "codegen/shared_sizes.h"
#include "codegen/target_info.h"
#include "transforms/passes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

int consumer_registers(int consumer_warps, int block_registers) {
  int left = block_registers - kProducerRegisters * 4 * 32;
  return std::min(240, left / (consumer_warps * 32) / 8 * 8);
}

namespace {

const Type kI32 = ir::scalar_type(DType::i32);
const Type kI1 = ir::scalar_type(DType::i1);

// The ring an mbarrier view is a slot of (null: not a slot).
Value* ring_of(const Value* bar) {
  return bar->def && bar->def->kind == OpKind::LocalSlot ? bar->def->operands[0] : nullptr;
}

// The first tensor copy in `o` (an `if`) completing on a slot of `full`.
const Op* copy_on(const Op& o, const Value* full) {
  if (o.kind != OpKind::If) return nullptr;
  for (const auto& r : o.regions)
    for (const auto& x : r->ops)
      if (x->kind == OpKind::TmaLoad && ring_of(x->operands[2]) == full) return x.get();
  return nullptr;
}

bool is_arg_of(const Value* v, const ir::Region& r) { return v->is_arg() && v->owner == &r; }

// `f` on `op` and every op in its regions.
void walk_op(Op& op, const std::function<void(Op*)>& f) {
  f(&op);
  for (auto& r : op.regions) ir::walk(*r, f);
}

// What the pass found in a loop it can specialize.
struct Pipeline {
  Op* loop = nullptr;
  Value* full = nullptr;      // the ring of full mbarriers, smem<Sx1xi64>
  Type bar_view;              // one of its slots
  int slots = 0;
  Value* slot = nullptr;      // the loop's carried slot
  Op* refill = nullptr;       // the `if` issuing iteration i + S - 1's copies
  Value* fill_slot = nullptr; // ... into this slot
  Value* iv_lead = nullptr;   // ... of this iteration
  std::vector<Op*> slice;     // the body's ops the refill reads, in order
  Op* dot_wait = nullptr;     // {pending = 1} after the asynchronous dot
  std::vector<Op*> prologue;  // the copies before the loop
  Op* last_init = nullptr;    // the full ring's last mbarrier_init
};

class Specializer {
 public:
  Specializer(ir::Function& fn, const LayoutPlan& plan, const TargetInfo& t) : fn_(fn), plan_(plan), t_(t) {}

  // Specializes the first top-level loop that can be and that the options
  // (`mode`, a loop's own warp_specialize) let be; the reasons none was
  // (empty when one was). A loop that demands it and cannot have it is an
  // error.
  std::string run(int mode) {
    auto demanded = [&](const Op& loop) { return loop.attr_int_or("warp_specialize", mode) == 1; };
    auto refuse = [&](const Op& loop, const std::string& why) {
      throw Error(loop.loc.str() + ": this loop demands warp specialization (warp_specialize = true), but " + why);
    };
    ir::walk(fn_.body, [&](Op* o) {
      if (o->kind == OpKind::For && o->parent != &fn_.body && o->attr_int_or("warp_specialize", 0) == 1)
        refuse(*o, "it is not at the kernel's top level");
    });
    std::string common;
    if (!t_.has_warp_specialization)
      common = t_.name + " has no partitions of warps with registers of their own (sm_90a's setmaxnreg)";
    else if (plan_.num_ctas != 1)
      common = "the kernel runs on a cluster of " + std::to_string(plan_.num_ctas) + " CTAs";
    else if (plan_.num_warps % 4)
      common = "the kernel's " + std::to_string(plan_.num_warps) + " warps are not whole warpgroups";
    std::string why;
    for (auto it = fn_.body.ops.begin(); it != fn_.body.ops.end(); ++it) {
      Op& loop = **it;
      if (loop.kind != OpKind::For || loop.attr_int_or("warp_specialize", mode) == 0) continue;
      Pipeline p;
      std::string no = common.empty() ? analyze(loop, p) : common;
      if (no.empty()) {
        specialize(it, p);
        return "";
      }
      if (loop.has_attr("warp_specialize") && demanded(loop)) refuse(loop, no);
      why += (why.empty() ? "" : "; ") + std::string("the loop at ") + loop.loc.str() + ": " + no;
    }
    return why.empty() ? (common.empty() ? "it has no loop at its top level that may have it" : common) : why;
  }

 private:
  std::string analyze(Op& loop, Pipeline& p) {
    ir::Region& body = *loop.regions[0];
    p.loop = &loop;
    // The wait for this iteration's copies.
    for (const auto& o : body.ops)
      if (o->kind == OpKind::MbarrierWait && ring_of(o->operands[0]) && is_arg_of(o->operands[1], body) &&
          is_arg_of(o->operands[0]->def->operands[1], body)) {
        p.full = ring_of(o->operands[0]);
        p.bar_view = o->operands[0]->type;
        p.slot = o->operands[0]->def->operands[1];
      }
    if (!p.full) return "its loads are not a pipeline of tensor copies";
    p.slots = int(p.full->type.shape[0]);
    bool async_copies = false;
    ir::walk(body, [&](Op* o) { async_copies = async_copies || o->kind == OpKind::AsyncCopy; });
    if (async_copies) return "it also copies with cp.async";
    // The refill: iteration iv_lead's copies into fill_slot, live where
    // iv_lead < the bound.
    const Op* copy = nullptr;
    for (const auto& o : body.ops)
      if (const Op* c = copy_on(*o, p.full)) {
        if (p.refill) return "it refills its ring in two places";
        p.refill = o.get();
        copy = c;
      }
    if (!p.refill) return "it has no refill of its ring";
    const Value* live = p.refill->operands[0];
    if (!live->def || live->def->kind != OpKind::Cmp || live->def->attr_str("pred") != "lt" ||
        live->def->operands[1] != loop.operands[1])
      return "its refill is not predicated on its iteration being live";
    p.iv_lead = live->def->operands[0];
    p.fill_slot = copy->operands[2]->def->operands[1];
    // The asynchronous dot and its wait, the ring's only reader.
    std::set<const Value*> ring;
    walk_op(*p.refill, [&](Op* o) {
      if (o->kind == OpKind::TmaLoad) ring.insert(buffer_of(o->operands[1]));
    });
    Op* dot = nullptr;
    for (const auto& o : body.ops) {
      if (o->kind == OpKind::Dot && o->attr_int_or("async", 0)) dot = o.get();
      if (dot && o->kind == OpKind::DotWait && o->operands[0] == dot->result() && o->attr_int("pending") == 1)
        p.dot_wait = o.get();
    }
    if (!dot || !p.dot_wait) return "its dot is not asynchronous (async-dots)";
    std::string reader;
    ir::walk(body, [&](Op* o) {
      if (o == dot || o->kind == OpKind::LocalSlot || o->kind == OpKind::Trans || !reader.empty()) return;
      for (const Value* v : o->operands)
        if (v->type.is_shared() && ring.count(buffer_of(v)) && !within(o, p.refill))
          reader = "'" + std::string(o->name()) + "' at " + o->loc.str() + " reads its ring besides the dot";
    });
    if (!reader.empty()) return reader;
    bool reads_ring = false;
    for (int i = 0; i < 2; ++i)
      reads_ring = reads_ring || (dot->operands[i]->type.is_shared() && ring.count(buffer_of(dot->operands[i])));
    if (!reads_ring) return "its dot does not read its ring";
    // What the refill reads in the body: from the iteration and the slot
    // only, so that the producer can compute it alone.
    std::set<const Op*> in_slice;
    std::vector<const Value*> work;
    walk_op(*p.refill, [&](Op* o) { work.insert(work.end(), o->operands.begin(), o->operands.end()); });
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      if (v == p.iv_lead || v == p.fill_slot) continue;
      if (is_arg_of(v, body)) return "its copies depend on a value carried around it";
      if (!v->def || v->def->parent != &body || !in_slice.insert(v->def).second) continue;
      walk_op(*v->def, [&](Op* o) { work.insert(work.end(), o->operands.begin(), o->operands.end()); });
    }
    for (const auto& o : body.ops)
      if (in_slice.count(o.get())) p.slice.push_back(o.get());
    // Before the loop: the ring, the prologue's copies, and nothing that
    // the producer's warps, which run it too, would do a second time.
    for (const auto& o : fn_.body.ops) {
      if (o.get() == &loop) break;
      if (copy_on(*o, p.full)) {
        p.prologue.push_back(o.get());
        continue;
      }
      if (o->kind == OpKind::MbarrierInit && ring_of(o->operands[0]) == p.full) p.last_init = o.get();
      bool quiet = o->regions.empty() && !o->has_attr("scratch") &&
                   (ir::op_is_pure(o->kind) || o->kind == OpKind::LocalSlot || o->kind == OpKind::TensorMap ||
                    o->kind == OpKind::Barrier || o->kind == OpKind::MbarrierInit ||
                    (o->kind == OpKind::LocalAlloc && o->operands.empty()));
      if (!quiet)
        return "'" + std::string(o->name()) + "' at " + o->loc.str() +
               " comes before it (the producer's warps would run it too)";
    }
    if (!p.last_init) return "its ring is not initialized before it";
    return "";
  }

  static bool within(const Op* o, const Op* outer) {
    for (; o; o = o->parent ? o->parent->parent : nullptr)
      if (o == outer) return true;
    return false;
  }

  // Slot `i` of `ring`: of the current iteration (stage 0), or the
  // constant slot `stage` outside the loops (insert-barriers tells slots
  // apart by it).
  Value* slot_view(ir::Builder& b, Value* ring, Value* i, const Type& view, int stage = 0) {
    return b.create1(OpKind::LocalSlot, {ring, i}, view, {{"stage", int64_t(stage)}});
  }

  // The slot after `slot`, and the phase after `phase` (flipped as the ring
  // wraps), at `b`.
  std::pair<Value*, Value*> advance(ir::Builder& b, Value* slot, Value* phase, int slots) {
    Value* one = b.constant_int(kI32, 1);
    Value* wraps = b.create1(OpKind::Cmp, {slot, b.constant_int(kI32, slots - 1)}, kI1, {{"pred", std::string("eq")}});
    Value* next = b.create1(OpKind::Select, {wraps, b.constant_int(kI32, 0), b.create1(OpKind::Add, {slot, one}, kI32)}, kI32);
    Value* flipped = b.create1(OpKind::Select, {wraps, b.create1(OpKind::Xor, {phase, one}, kI32), phase}, kI32);
    return {next, flipped};
  }

  void specialize(ir::Region::iterator at, const Pipeline& p) {
    Op& loop = *p.loop;
    ir::Region& body = *loop.regions[0];
    const int warps = plan_.num_warps;
    // The ring of empty mbarriers: one arrival of each consumer warp.
    ir::Builder pre(&fn_.body, std::next(fn_.body.find(p.last_init)));
    pre.loc = loop.loc;
    Type ring_type = p.full->type;
    Value* empty = pre.create1(OpKind::LocalAlloc, {}, ring_type);
    for (int s = 0; s < p.slots; ++s)
      pre.create(OpKind::MbarrierInit, {slot_view(pre, empty, pre.constant_int(kI32, s), p.bar_view, s)}, {},
                 {{"count", int64_t(warps)}});
    for (Op* o : p.prologue) fn_.body.erase(o);

    // The partitions: the loop and all after it are the consumers'.
    ir::Builder ws_at(&fn_.body, at);
    ws_at.loc = loop.loc;
    Op* ws = ws_at.create(OpKind::WarpSpecialize, {}, {},
                          {{"warps", std::vector<int64_t>{warps, 1}},
                           {"registers", std::vector<int64_t>{consumer_registers(warps, t_.block_registers),
                                                              kProducerRegisters}}});
    ir::Region* consumers = ws->add_region();
    ir::Region* producer = ws->add_region();
    consumers->ops.splice(consumers->ops.end(), fn_.body.ops, at, fn_.body.ops.end());
    for (auto& o : consumers->ops) o->parent = consumers;
    ir::Builder(consumers).create(OpKind::Yield, {}, {});

    // The producer, one warp (the others of its warpgroup idle: a warp
    // lagging behind the one issuing the copies could still wait on an
    // mbarrier the consumers have ended): iteration k's copies into its slot
    // once the slot is free (the wait for phase ^ 1: a fresh mbarrier's
    // first round passes).
    ir::Builder pb(producer);
    pb.loc = loop.loc;
    Value* zero = pb.constant_int(kI32, 0);
    Op* pl = pb.create(OpKind::For, {loop.operands[0], loop.operands[1], loop.operands[2], zero, zero}, {kI32, kI32});
    ir::Region* pbody = pl->add_region();
    Value* k = pbody->add_arg(loop.operands[0]->type);
    Value* slot = pbody->add_arg(kI32);
    Value* phase = pbody->add_arg(kI32);
    ir::Builder in(pbody);
    in.loc = loop.loc;
    Value* freed = in.create1(OpKind::Xor, {phase, in.constant_int(kI32, 1)}, kI32);
    in.create(OpKind::MbarrierWait, {slot_view(in, empty, slot, p.bar_view), freed}, {});
    std::unordered_map<const Value*, Value*> map{{p.iv_lead, k}, {p.fill_slot, slot}};
    for (const Op* o : p.slice) pbody->append(ir::clone_op(*o, map));
    pbody->append(ir::clone_op(*p.refill, map));
    ir::walk(*pbody, [](Op* x) {
      if (x->kind == OpKind::LocalSlot) x->attrs["stage"] = int64_t(0);  // the producer's own slot
    });
    auto [slot_next, phase_next] = advance(in, slot, phase, p.slots);
    in.create(OpKind::Yield, {slot_next, phase_next}, {});
    ir::Builder(producer).create(OpKind::Yield, {}, {});

    // The consumers: no copies; each step lets the previous step's slot go
    // once its dot has retired (not at the first step: none was read).
    body.erase(p.refill);
    ir::Builder rel(&body, std::next(body.find(p.dot_wait)));
    rel.loc = loop.loc;
    Value* one = rel.constant_int(kI32, 1);
    Value* at_zero = rel.create1(OpKind::Cmp, {p.slot, rel.constant_int(kI32, 0)}, kI1, {{"pred", std::string("eq")}});
    Value* prev = rel.create1(OpKind::Select, {at_zero, rel.constant_int(kI32, p.slots - 1),
                                               rel.create1(OpKind::Sub, {p.slot, one}, kI32)}, kI32);
    Value* later = rel.create1(OpKind::Cmp, {body.args[0].get(), loop.operands[0]}, kI1, {{"pred", std::string("ne")}});
    Op* branch = rel.create(OpKind::If, {later}, {});
    ir::Builder then(branch->add_region());
    then.loc = loop.loc;
    then.create(OpKind::MbarrierArrive, {slot_view(then, empty, prev, p.bar_view)}, {}, {{"per_warp", int64_t(1)}});
    then.create(OpKind::Yield, {}, {});
    ir::Builder(branch->add_region()).create(OpKind::Yield, {}, {});
    // The empty ring ends with the full one.
    auto end = consumers->find(&loop);
    for (auto it = end; it != consumers->ops.end(); ++it)
      if ((*it)->kind == OpKind::MbarrierInval && ring_of((*it)->operands[0]) == p.full) end = it;
    ir::Builder post(consumers, std::next(end));
    post.loc = loop.loc;
    for (int s = 0; s < p.slots; ++s)
      post.create(OpKind::MbarrierInval, {slot_view(post, empty, post.constant_int(kI32, s), p.bar_view, s)}, {});
    // What only the refill and the prologue read is dead now.
    transforms::dce(fn_);
  }

  ir::Function& fn_;
  const LayoutPlan& plan_;
  const TargetInfo& t_;
};

}  // namespace

void warp_specialize(ir::Function& fn, const LayoutPlan& plan, const TargetInfo& target, int mode) {
  std::string why = Specializer(fn, plan, target).run(mode);
  if (mode == 1 && !why.empty())
    throw Error("@" + fn.name + ": warp_specialize = true, but no loop can be warp-specialized: " + why);
}

}  // namespace tl::codegen
