// Warp specialization of tensor-copy pipelines (see warp_specialize.h).
#include "codegen/warp_specialize.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "codegen/shared_sizes.h"
#include "codegen/swizzled_tile.h"
#include "codegen/target_info.h"
#include "ir/verifier.h"
#include "transforms/passes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

int consumer_registers(int consumer_warps, int producer_registers, int block_registers) {
  int left = block_registers - producer_registers * 4 * 32;
  return std::min(248, left / (consumer_warps * 32) / 8 * 8);
}

int warp_specialized_threads(int consumer_warps) { return (consumer_warps + 4) * 32; }

int warp_specialized_entry_registers(const TargetInfo& t, int consumer_warps, int programs_per_sm) {
  return t.register_cap(warp_specialized_threads(consumer_warps), programs_per_sm);
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

// What the pass found in a loop it can specialize.
struct Pipeline {
  Op* outer = nullptr;        // a persistent program's loop around `loop` (at the top level), or null
  Op* loop = nullptr;         // the pipelined loop
  ir::Region* host = nullptr; // the region holding `loop`
  Value* full = nullptr;      // the ring of full mbarriers, smem<Sx1xi64>
  Type bar_view;              // one of its slots
  int slots = 0;
  Value* slot = nullptr;      // the loop's carried slot ...
  Value* phase = nullptr;     // ... and phase
  Op* refill = nullptr;       // the `if` issuing iteration i + S - 1's copies
  Value* fill_slot = nullptr; // ... into this slot
  Value* iv_lead = nullptr;   // ... of this iteration
  std::vector<Op*> slice;     // the body's ops the refill reads, in order
  std::vector<Op*> outer_slice;  // the outer body's ops the producer reads, in order
  Op* dot_wait = nullptr;     // {pending = 1} after the asynchronous dot, or {pending = 0} retiring every one
  bool release_current = false;  // the latter: a step lets its own slot go after it
  // In the latter form, where the slot's buffers are free at different
  // waits (attention: K once S has retired, V once P V has): each group of
  // buffers with the wait that frees it, in the body's order. Empty: the
  // whole slot at `dot_wait`.
  struct Release {
    Op* wait = nullptr;
    std::set<const Value*> buffers;
  };
  std::vector<Release> releases;
  Op* drained = nullptr;      // {pending = 0} after the loop (the former)
  std::vector<Op*> prologue;  // the copies before the loop
  std::vector<Op*> inits;     // the full ring's mbarrier_init
  std::vector<Op*> invals;    // ... and mbarrier_inval
  std::vector<Op*> allocs;    // the ring's buffers made in the outer body (hoisted)
  Op* init_barrier = nullptr; // the barrier after the inits in the outer body (dropped)
  // Without an outer loop: the first op before the loop that the
  // producer's warps must not run (the consumers' partition starts there;
  // null: the loop), the ring's set-up after it (moved before it), and the
  // pure ops after it whose values the producer reads (copied into it).
  Op* split = nullptr;
  std::vector<Op*> setup;
  std::vector<Op*> top_slice;
};

class Specializer {
 public:
  Specializer(ir::Function& fn, const LayoutPlan& plan, const TargetInfo& t) : fn_(fn), plan_(plan), t_(t) {}

  // Specializes the first top-level loop that can be and that the options
  // (`mode`, a loop's own warp_specialize) let be; the reasons none was
  // (empty when one was). A loop that demands it and cannot have it is an
  // error. A top-level loop whose body holds the pipelined loop (a
  // persistent program's loop over tiles) is specialized as a whole, each
  // partition running it.
  std::string run(int mode) {
    auto demanded = [&](const Op& loop) { return loop.attr_int_or("warp_specialize", mode) == 1; };
    auto refuse = [&](const Op& loop, const std::string& why) {
      throw Error(loop.loc.str() + ": this loop demands warp specialization (warp_specialize = true), but " + why);
    };
    std::string common;
    if (!t_.has_warp_specialization)
      common = t_.name + " has no partitions of warps with registers of their own (sm_90a's setmaxnreg)";
    else if (plan_.num_warps % 4)
      common = "the kernel's " + std::to_string(plan_.num_warps) + " warps are not whole warpgroups";
    else if (int entry = warp_specialized_entry_registers(t_, plan_.num_warps, plan_.programs_per_sm);
             entry < kPersistentProducerRegisters)
      common = "with programs_per_sm = " + std::to_string(plan_.programs_per_sm) + " a thread of its " +
               std::to_string(warp_specialized_threads(plan_.num_warps)) + " threads (a producer warpgroup's beside its warps) has " +
               std::to_string(entry) + " registers, fewer than a producer keeps (" +
               std::to_string(kPersistentProducerRegisters) + ")";
    std::string why;
    std::set<const Op*> tried;
    for (auto it = fn_.body.ops.begin(); it != fn_.body.ops.end(); ++it) {
      Op& top = **it;
      if (top.kind != OpKind::For) continue;
      // The loop itself, or the first loop in its body that has an option
      // or a ring (a persistent program's).
      std::vector<std::pair<Op*, Op*>> forms{{nullptr, &top}};
      for (auto& o : top.regions[0]->ops)
        if (o->kind == OpKind::For) forms.push_back({&top, o.get()});
      for (auto [outer, loop] : forms) {
        if (loop->attr_int_or("warp_specialize", mode) == 0) continue;
        Pipeline p;
        std::string no = common.empty() ? analyze(outer, *loop, p) : common;
        if (no.empty() && plan_.num_ctas > 1 && !outer)
          no = "on a cluster of " + std::to_string(plan_.num_ctas) +
               " CTAs only a persistent program's loop is specialized (its rings live to the end)";
        if (no.empty()) {
          specialize(it, p);
          return "";
        }
        tried.insert(loop);
        if (loop->has_attr("warp_specialize") && demanded(*loop)) refuse(*loop, no);
        // A plain loop without a ring says nothing worth repeating.
        if (outer && no == kNoRing) continue;
        why += (why.empty() ? "" : "; ") + std::string("the loop at ") + loop->loc.str() + ": " + no;
      }
    }
    ir::walk(fn_.body, [&](Op* o) {
      if (o->kind == OpKind::For && !tried.count(o) && o->attr_int_or("warp_specialize", 0) == 1)
        refuse(*o, "it is neither at the kernel's top level nor in the body of a loop there");
    });
    return why.empty() ? (common.empty() ? "it has no loop at its top level that may have it" : common) : why;
  }

 private:
  static constexpr const char* kNoRing = "its loads are not a pipeline of tensor copies";

  std::string analyze(Op* outer, Op& loop, Pipeline& p) {
    ir::Region& body = *loop.regions[0];
    p.outer = outer;
    p.loop = &loop;
    p.host = loop.parent;
    // The wait for this iteration's copies.
    for (const auto& o : body.ops)
      if (o->kind == OpKind::MbarrierWait && ring_of(o->operands[0]) && is_arg_of(o->operands[1], body) &&
          is_arg_of(o->operands[0]->def->operands[1], body)) {
        p.full = ring_of(o->operands[0]);
        p.bar_view = o->operands[0]->type;
        p.slot = o->operands[0]->def->operands[1];
        p.phase = o->operands[1];
      }
    if (!p.full) return kNoRing;
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
    // The asynchronous dot and its waits, the ring's only reader.
    std::set<const Value*> ring;
    ir::walk(*p.refill, [&](Op* o) {
      if (o->kind == OpKind::TmaLoad) ring.insert(buffer_of(o->operands[1]));
    });
    // The asynchronous dots reading the ring, and the wait that lets their
    // slot go: {pending = 1} after the one dot (the previous step's slot),
    // or one {pending = 0} retiring them all (this step's).
    std::vector<Op*> dots;
    for (const auto& o : body.ops)
      if (o->kind == OpKind::Dot && o->attr_int_or("async", 0))
        for (int i = 0; i < 2; ++i)
          if (o->operands[i]->type.is_shared() && ring.count(buffer_of(o->operands[i]))) {
            dots.push_back(o.get());
            break;
          }
    if (dots.empty())
      return "no dot reads its ring as an asynchronous warpgroup product: a product is one only where each "
             "operand it reads from shared memory is a tensor copy, and one of its loads is not (a descriptor "
             "block whose strides or base TMA cannot take, such as rows not a multiple of 16 bytes, is a masked "
             "load; TILEDSL_DUMP=notes names which)";
    // Each warpgroup product must fit the registers a thread has at entry
    // beside the producer's warpgroup (ptxas counts it there, not after
    // setmaxnreg): else the kernel stays one partition, which has more.
    const int entry = warp_specialized_entry_registers(t_, plan_.num_warps, plan_.programs_per_sm);
    std::string short_of;
    ir::walk(outer ? *outer : loop, [&](Op* o) {
      if (o->kind != OpKind::Dot || !short_of.empty()) return;
      if (auto it = plan_.dots.find(o); it != plan_.dots.end() && it->second.on_warpgroups())
        short_of = warpgroup_register_shortfall(it->second, entry, warp_specialized_threads(plan_.num_warps));
    });
    if (!short_of.empty()) return "its dot " + short_of;
    std::set<const Op*> issued;  // the dots before the op at hand
    for (const auto& o : body.ops) {
      if (std::find(dots.begin(), dots.end(), o.get()) != dots.end()) issued.insert(o.get());
      if (o->kind != OpKind::DotWait) continue;
      if (dots.size() == 1 && o->operands[0] == dots[0]->result() && o->attr_int("pending") == 1) p.dot_wait = o.get();
      // {pending = 0} retires every dot issued before it.
      if (o->attr_int("pending") == 0 && issued.size() == dots.size()) {
        p.dot_wait = o.get();
        p.release_current = true;
      }
    }
    if (!p.dot_wait) return "no wait in its body retires the dots that read its ring";
    if (p.release_current && plan_.num_ctas == 1) group_releases(body, dots, ring, p);
    std::string reader;
    ir::walk(body, [&](Op* o) {
      bool dot = std::find(dots.begin(), dots.end(), o) != dots.end();
      if (dot || o->kind == OpKind::LocalSlot || o->kind == OpKind::Trans || !reader.empty()) return;
      for (const Value* v : o->operands)
        if (v->type.is_shared() && ring.count(buffer_of(v)) && !ir::is_within(o, p.refill))
          reader = "'" + std::string(o->name()) + "' at " + o->loc.str() + " reads its ring besides its dots";
    });
    if (!reader.empty()) return reader;
    // What the refill reads in the body: from the iteration and the slot
    // only, so that the producer can compute it alone.
    std::vector<const Value*> work;
    ir::walk(*p.refill, [&](Op* o) { work.insert(work.end(), o->operands.begin(), o->operands.end()); });
    std::string no = slice_of(body, work, {p.iv_lead, p.fill_slot}, nullptr, p.slice);
    if (!no.empty()) return "its copies depend on " + no;
    // Around the loop, in the region holding it: the ring, the prologue's
    // copies, the wait for the last dot; and before the top-level op,
    // nothing that the producer's warps, which run it too, would do a
    // second time.
    ring.insert(p.full);
    auto it = p.host->find(&loop);
    for (auto o = p.host->ops.begin(); o != it; ++o) {
      Op* x = o->get();
      if (copy_on(*x, p.full)) p.prologue.push_back(x);
      if (x->kind == OpKind::MbarrierInit && ring_of(x->operands[0]) == p.full) p.inits.push_back(x);
      if (outer && x->kind == OpKind::LocalAlloc && ring.count(x->result())) p.allocs.push_back(x);
      if (outer && x->kind == OpKind::Barrier && !p.inits.empty() && o != p.host->ops.begin() &&
          std::prev(o)->get() == p.inits.back())
        p.init_barrier = x;
    }
    if (p.inits.empty()) return "its ring is not initialized before it";
    for (auto o = std::next(it); o != p.host->ops.end(); ++o) {
      Op* x = o->get();
      if (x->kind == OpKind::MbarrierInval && ring_of(x->operands[0]) == p.full) p.invals.push_back(x);
      if (p.release_current) continue;
      const Value* acc = loop.result(dots[0]->operands[2]->index - 1);
      if (x->kind == OpKind::DotWait && x->operands[0] == acc && x->attr_int("pending") == 0) p.drained = x;
    }
    if (outer) {
      // The ring's buffers and mbarriers outlive the outer loop's
      // iterations (its slot and phase go on from one to the next).
      for (const Value* r : ring)
        if (r->def && r->def->parent == p.host &&
            std::find(p.allocs.begin(), p.allocs.end(), r->def) == p.allocs.end())
          return "its ring's buffers are made after it";
      if (!p.release_current && !p.drained) return "its last dot is not waited for after it";
      // What the producer's copy of the outer loop computes: the bounds of
      // the loop and what its copies read from the outer body.
      std::vector<const Value*> need(loop.operands.begin(), loop.operands.begin() + 3);
      for (const Op* o : p.slice) need.insert(need.end(), o->operands.begin(), o->operands.end());
      ir::walk(*p.refill, [&](Op* o) { need.insert(need.end(), o->operands.begin(), o->operands.end()); });
      std::set<const Value*> hoisted;
      for (const Op* a : p.allocs) hoisted.insert(a->result());
      no = slice_of(*p.host, need, hoisted, outer->regions[0]->args[0].get(), p.outer_slice);
      if (!no.empty()) return "its copies depend on " + no + " of the loop around it";
    }
    // Before it: with an outer loop, nothing the producer's warps would
    // do a second time. Without one, the consumers' partition starts at the
    // first such op (the ring's set-up moves before it, the producer
    // copies what it reads of the ops after it).
    auto top_end = fn_.body.find(outer ? outer : &loop);
    for (auto o = fn_.body.ops.begin(); o != top_end && !p.split; ++o) {
      Op* x = o->get();
      bool prologue = std::find(p.prologue.begin(), p.prologue.end(), x) != p.prologue.end();
      if ((!outer && prologue) || quiet(*x)) continue;
      if (outer)
        return "'" + std::string(x->name()) + "' at " + x->loc.str() +
               " comes before it (the producer's warps would run it too)";
      p.split = x;
    }
    if (!p.split) return "";
    // The ring's set-up from the split on: its buffers, its mbarriers'
    // initialization with what that reads, and the barrier after it.
    std::set<const Op*> setup;
    work.clear();
    for (Op* i : p.inits) work.push_back(i->operands[0]), setup.insert(i);
    for (const Value* r : ring) work.push_back(r);
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      if (!v->def || v->def->parent != &fn_.body || !setup.insert(v->def).second) continue;
      if (!v->def->regions.empty() || !(quiet(*v->def) && v->def->kind != OpKind::Barrier))
        return "its ring's set-up reads '" + std::string(v->def->name()) + "' at " + v->def->loc.str();
      work.insert(work.end(), v->def->operands.begin(), v->def->operands.end());
    }
    bool after_split = false;
    for (auto o = fn_.body.ops.begin(); o != top_end; ++o) {
      after_split = after_split || o->get() == p.split;
      bool barrier = (*o)->kind == OpKind::Barrier && o != fn_.body.ops.begin() && std::prev(o)->get() == p.inits.back();
      if (after_split && (setup.count(o->get()) || barrier)) p.setup.push_back(o->get());
    }
    // What the producer reads of the ops from the split on: its loop's
    // bounds and its copies' operands.
    std::vector<const Value*> need(loop.operands.begin(), loop.operands.begin() + 3);
    for (const Op* o : p.slice) need.insert(need.end(), o->operands.begin(), o->operands.end());
    ir::walk(*p.refill, [&](Op* o) { need.insert(need.end(), o->operands.begin(), o->operands.end()); });
    std::set<const Value*> given;
    for (const auto& a : fn_.body.args) given.insert(a.get());
    for (auto o = fn_.body.ops.begin(); o->get() != p.split; ++o)
      for (const auto& r : (*o)->results) given.insert(r.get());
    for (const Op* o : p.setup)
      for (const auto& r : o->results) given.insert(r.get());
    no = slice_of(fn_.body, need, given, nullptr, p.top_slice);
    if (!no.empty()) return "its copies depend on " + no + ", which comes after '" + std::string(p.split->name()) + "' at " +
                            p.split->loc.str() + " (the consumers')";
    return "";
  }

  // In the form that lets its own slot go, the ring's buffers grouped by
  // the first wait after which every dot reading them has retired (a
  // `{pending = n}` wait after c asynchronous dots of the step retires the
  // first c - n; none is pending at the step's start, as the last wait
  // retires all). Two groups or more (attention's K, free after S's wait
  // before the softmax, and V, free after P V's): `p.releases`, each
  // group its own ring of empty mbarriers, so that the producer copies the
  // next K block while V's buffer is still read. Only where the refill's
  // copies are its own ops (they are reordered by group), on a lone CTA.
  void group_releases(ir::Region& body, const std::vector<Op*>& dots, const std::set<const Value*>& ring,
                      Pipeline& p) {
    std::map<const Op*, int> pos;
    std::map<const Op*, Op*> retired;  // a dot -> the first wait retiring it
    std::vector<const Op*> issued;
    int at = 0;
    for (auto& o : body.ops) {
      pos[o.get()] = at++;
      if (o->kind == OpKind::Dot && o->attr_int_or("async", 0)) issued.push_back(o.get());
      if (o->kind != OpKind::DotWait) continue;
      for (int64_t i = 0; i < int64_t(issued.size()) - o->attr_int("pending"); ++i) retired.emplace(issued[i], o.get());
    }
    std::map<int, Pipeline::Release> groups;  // by the wait's position
    for (const Value* buf : ring) {
      Op* wait = nullptr;  // the latest of its readers' waits
      for (Op* d : dots)
        for (int i = 0; i < 2; ++i)
          if (d->operands[i]->type.is_shared() && buffer_of(d->operands[i]) == buf) {
            auto w = retired.find(d);
            if (w == retired.end()) return;
            if (!wait || pos[w->second] > pos[wait]) wait = w->second;
          }
      if (!wait) return;
      groups[pos[wait]].wait = wait;
      groups[pos[wait]].buffers.insert(buf);
    }
    if (groups.size() < 2) return;
    int direct = 0, all = 0;
    for (const auto& x : p.refill->regions[0]->ops) direct += x->kind == OpKind::TmaLoad;
    ir::walk(*p.refill, [&](Op* o) { all += o->kind == OpKind::TmaLoad; });
    if (direct != all) return;
    for (auto& [_, g] : groups) p.releases.push_back(g);
  }

  // Whether the producer's warps may run `o` (of the top level) too: pure
  // ops in registers only (a dot, or any op exchanging through shared
  // memory, would have them write it too), and the set-up of buffers and
  // mbarriers.
  bool quiet(const Op& o) const {
    return o.regions.empty() && o.kind != OpKind::Dot && scratch_bound(o, plan_, {}) == 0 &&
           (ir::op_is_pure(o.kind) || o.kind == OpKind::LocalSlot || o.kind == OpKind::TensorMap ||
            o.kind == OpKind::Barrier || o.kind == OpKind::MbarrierInit ||
            (o.kind == OpKind::LocalAlloc && o.operands.empty()));
  }

  // The ops of `r` (in order, into `out`) that compute `from` (values
  // defined elsewhere are there already), stopping at `given`; an argument
  // of `r` other than `iv` is refused (what the returned text names), and
  // so is an op that is not pure.
  static std::string slice_of(const ir::Region& r, std::vector<const Value*> work, std::set<const Value*> given,
                              const Value* iv, std::vector<Op*>& out) {
    std::set<const Op*> in;
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      if (given.count(v) || v == iv) continue;
      if (is_arg_of(v, r)) return "a value carried around the loop";
      if (!v->def || v->def->parent != &r || !in.insert(v->def).second) continue;
      if (!v->def->regions.empty() || !(ir::op_is_pure(v->def->kind) || v->def->kind == OpKind::LocalSlot))
        return "'" + std::string(v->def->name()) + "' at " + v->def->loc.str();
      work.insert(work.end(), v->def->operands.begin(), v->def->operands.end());
    }
    for (const auto& o : r.ops)
      if (in.count(o.get())) out.push_back(o.get());
    return "";
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

  // The slot before `slot`, at `b`.
  Value* previous(ir::Builder& b, Value* slot, int slots) {
    Value* at_zero = b.create1(OpKind::Cmp, {slot, b.constant_int(kI32, 0)}, kI1, {{"pred", std::string("eq")}});
    return b.create1(OpKind::Select, {at_zero, b.constant_int(kI32, slots - 1),
                                      b.create1(OpKind::Sub, {slot, b.constant_int(kI32, 1)}, kI32)}, kI32);
  }

  // At `b`: where `cond` holds (always: null), one arrival of each warp on
  // the empty mbarrier of `slot`.
  // With a multicast (cluster_empty_), on the empty mbarrier of the slot in
  // every CTA of the cluster.
  void release(ir::Builder& b, Value* cond, Value* empty, Value* slot, const Type& view) {
    ir::Attrs attrs{{"per_warp", int64_t(1)}};
    if (cluster_empty_) attrs["cluster"] = int64_t(1);
    if (!cond) {
      b.create(OpKind::MbarrierArrive, {slot_view(b, empty, slot, view)}, {}, attrs);
      return;
    }
    Op* branch = b.create(OpKind::If, {cond}, {});
    ir::Builder then(branch->add_region());
    then.loc = b.loc;
    then.create(OpKind::MbarrierArrive, {slot_view(then, empty, slot, view)}, {}, attrs);
    then.create(OpKind::Yield, {}, {});
    ir::Builder(branch->add_region()).create(OpKind::Yield, {}, {});
  }

  // On a cluster, the refill's copies of blocks every CTA holds (a dot's
  // B) multicast: each CTA issues its share of the panels into all of them
  // (lower_tma.cpp). Whether any does.
  bool multicast(Op& refill) {
    const int n = plan_.num_ctas;
    if (n <= 1) return false;
    bool any = false;
    ir::walk(refill, [&](Op* o) {
      if (o->kind != OpKind::TmaLoad) return;
      const Type& t = o->operands[1]->type;
      const LinearLayout& l = plan_.of(o->operands[1]);
      if (l.in_bits(kBlock) > 0) return;  // split: each CTA its own part
      std::vector<int64_t> shape(t.shape.end() - 2, t.shape.end());
      auto tile = swizzled_tile_of(l, shape, byte_size(t.dtype));
      if (!tile || tensor_box_of(*tile).panels % n) return;
      o->attrs["multicast"] = int64_t(n);
      any = true;
    });
    return any;
  }

  // A new value carried around `loop`, from `init`, whose body argument it
  // returns; the yield gets `next` once known (set_next).
  static Value* carry(Op& loop, Value* init) {
    loop.operands.push_back(init);
    loop.add_result(init->type);
    return loop.regions[0]->add_arg(init->type);
  }

  void specialize(ir::Region::iterator at, const Pipeline& p) {
    Op& loop = *p.loop;
    ir::Region& body = *loop.regions[0];
    const int warps = plan_.num_warps;
    const size_t slot_k = size_t(p.slot->index) - 1, phase_k = size_t(p.phase->index) - 1;
    ir::Builder pre(&fn_.body, at);
    pre.loc = loop.loc;
    // A persistent program's ring, made and initialized once before its
    // loop (its prologue's copies and its ends go: the producer and the
    // end of the consumers' loop see to them).
    if (p.outer) {
      for (Op* a : p.allocs) {
        auto it = p.host->find(a);
        fn_.body.ops.splice(at, p.host->ops, it);
        a->parent = &fn_.body;
      }
      for (int s = 0; s < p.slots; ++s)
        pre.create(OpKind::MbarrierInit, {slot_view(pre, p.full, pre.constant_int(kI32, s), p.bar_view, s)}, {},
                   {{"count", p.inits[0]->attr_int("count")}});
      for (Op* o : p.inits) p.host->erase(o);
      if (p.init_barrier) p.host->erase(p.init_barrier);
      for (Op* o : p.invals) p.host->erase(o);
    }
    // Without an outer loop, the ring's set-up from the split on moves
    // before it.
    for (Op* o : p.setup) {
      auto it = fn_.body.find(o);
      fn_.body.ops.splice(fn_.body.find(p.split), fn_.body.ops, it);
    }
    // The ring of empty mbarriers: one arrival of each consumer warp (of
    // every CTA of the cluster where a copy multicasts: a slot is refilled
    // in all of them).
    if (!p.outer) pre.set_insertion_before(std::next(p.host->find(p.inits.back()))->get());
    cluster_empty_ = multicast(*p.refill);
    std::vector<Pipeline::Release> releases = p.releases;
    if (releases.empty()) releases.push_back({p.dot_wait, {}});
    // With K let go early, the last wait (P V's) is pinned behind the
    // softmax (lower_dot: the assembler would issue it at the softmax's
    // top), so that P V runs beside it: V's buffer then goes later, which
    // two consumer warpgroups taking turns absorb and four do not (one,
    // not measured, is left as it was).
    if (releases.size() > 1 && warps == 8) releases.back().wait->attrs["pinned"] = int64_t(1);
    // One ring of every group's slots (group g's slot i at g * slots + i):
    // a buffer apiece would cost a kernel at the edge of shared memory
    // the next tile's prefetch (its bound aligns each buffer to 1024 bytes).
    Type ring_type = p.full->type;
    const int groups = int(releases.size());
    ring_type.shape[0] *= groups;
    Value* empty = pre.create1(OpKind::LocalAlloc, {}, ring_type);
    for (int s = 0; s < p.slots * groups; ++s)
      pre.create(OpKind::MbarrierInit, {slot_view(pre, empty, pre.constant_int(kI32, s), p.bar_view, s)}, {},
                 {{"count", int64_t(warps) * (cluster_empty_ ? plan_.num_ctas : 1)}});
    auto group_slot = [&](ir::Builder& b, int g, Value* slot) {  // group g's index of `slot` in `empty`
      return g ? b.create1(OpKind::Add, {slot, b.constant_int(kI32, g * p.slots)}, kI32) : slot;
    };
    // Every thread (of the cluster: a peer's copies and arrivals) sees
    // them before any use.
    if (p.outer)
      pre.create(OpKind::Barrier, {}, {}, plan_.num_ctas > 1 ? ir::Attrs{{"cluster", int64_t(1)}} : ir::Attrs{});
    for (Op* o : p.prologue) p.host->erase(o);

    // The partitions: the top-level loop (or the split before it) and all
    // after it are the consumers'.
    Op& top = p.outer ? *p.outer : loop;
    Op& first = p.split ? *p.split : top;
    ir::Builder ws_at(&fn_.body, fn_.body.find(&first));
    ws_at.loc = top.loc;
    const int producer_registers = p.outer ? kPersistentProducerRegisters : kProducerRegisters;
    Op* ws = ws_at.create(
        OpKind::WarpSpecialize, {}, {},
        {{"warps", std::vector<int64_t>{warps, 1}},
         {"registers", std::vector<int64_t>{consumer_registers(warps, producer_registers,
                                                               warp_specialized_entry_registers(t_, warps, plan_.programs_per_sm) *
                                                                   warp_specialized_threads(warps)),
                                            producer_registers}}});
    ir::Region* consumers = ws->add_region();
    ir::Region* producer = ws->add_region();
    consumers->ops.splice(consumers->ops.end(), fn_.body.ops, fn_.body.find(&first), fn_.body.ops.end());
    for (auto& o : consumers->ops) o->parent = consumers;
    ir::Builder(consumers).create(OpKind::Yield, {}, {});

    // The producer, one warp (the others of its warpgroup idle: a warp
    // lagging behind the one issuing the copies could still wait on an
    // mbarrier the consumers have ended): iteration k's copies into its slot
    // once the slot is free (the wait for phase ^ 1: a fresh mbarrier's
    // first round passes); a persistent program's loop around it, the slot
    // and phase going on from one tile to the next.
    ir::Builder pb(producer);
    pb.loc = loop.loc;
    Value* zero = pb.constant_int(kI32, 0);
    std::unordered_map<const Value*, Value*> map;
    ir::Region* into = producer;
    for (const Op* o : p.top_slice) producer->append(ir::clone_op(*o, map));
    Value *slot0 = zero, *phase0 = zero;
    Op* po = nullptr;
    if (p.outer) {
      po = pb.create(OpKind::For, {p.outer->operands[0], p.outer->operands[1], p.outer->operands[2], zero, zero},
                     {kI32, kI32});
      po->loc = p.outer->loc;
      into = po->add_region();
      map[p.outer->regions[0]->args[0].get()] = into->add_arg(p.outer->operands[0]->type);
      slot0 = into->add_arg(kI32);
      phase0 = into->add_arg(kI32);
      for (const Op* o : p.outer_slice) into->append(ir::clone_op(*o, map));
    }
    ir::Builder ib(into);
    ib.loc = loop.loc;
    auto get = [&](Value* v) {
      auto f = map.find(v);
      return f == map.end() ? v : f->second;
    };
    Op* pl = ib.create(OpKind::For, {get(loop.operands[0]), get(loop.operands[1]), get(loop.operands[2]), slot0, phase0},
                       {kI32, kI32});
    pl->loc = loop.loc;
    ir::Region* pbody = pl->add_region();
    Value* k = pbody->add_arg(loop.operands[0]->type);
    Value* slot = pbody->add_arg(kI32);
    Value* phase = pbody->add_arg(kI32);
    ir::Builder in(pbody);
    in.loc = loop.loc;
    Value* freed = in.create1(OpKind::Xor, {phase, in.constant_int(kI32, 1)}, kI32);
    in.create(OpKind::MbarrierWait, {slot_view(in, empty, slot, p.bar_view), freed}, {});
    map[p.iv_lead] = k;
    map[p.fill_slot] = slot;
    for (const Op* o : p.slice) pbody->append(ir::clone_op(*o, map));
    Op* fill = pbody->append(ir::clone_op(*p.refill, map));
    // A later group's copies last, each group's after its buffers are free.
    ir::Region& copies = *fill->regions[0];
    for (size_t g = 1; g < releases.size(); ++g) {
      std::vector<Op*> moved;
      for (auto& x : copies.ops)
        if (x->kind == OpKind::TmaLoad && releases[g].buffers.count(buffer_of(x->operands[1]))) moved.push_back(x.get());
      ir::Builder wb(&copies, copies.find(copies.terminator()));
      wb.loc = loop.loc;
      wb.create(OpKind::MbarrierWait, {slot_view(wb, empty, group_slot(wb, int(g), slot), p.bar_view), freed}, {});
      for (Op* x : moved) copies.ops.splice(copies.find(copies.terminator()), copies.ops, copies.find(x));
    }
    ir::walk(*pbody, [](Op* x) {
      if (x->kind == OpKind::LocalSlot) x->attrs["stage"] = int64_t(0);  // the producer's own slot
    });
    auto [slot_next, phase_next] = advance(in, slot, phase, p.slots);
    in.create(OpKind::Yield, {slot_next, phase_next}, {});
    if (po) ib.create(OpKind::Yield, {pl->result(0), pl->result(1)}, {});
    ir::Builder(producer).create(OpKind::Yield, {}, {});

    // The consumers: no copies; each step lets its own slot go once its
    // dots have retired (release_current), or the previous step's slot once
    // that step's dot has (not at the first step: none was read), and the
    // last step's once the loop's last dot has.
    body.erase(p.refill);
    for (size_t g = 0; g < releases.size() && p.release_current; ++g) {
      ir::Builder rel(&body, std::next(body.find(releases[g].wait)));
      rel.loc = loop.loc;
      release(rel, nullptr, empty, group_slot(rel, int(g), p.slot), p.bar_view);
    }
    if (!p.release_current) {
      ir::Builder rel(&body, std::next(body.find(p.dot_wait)));
      rel.loc = loop.loc;
      Value* prev = previous(rel, p.slot, p.slots);
      Value* later = rel.create1(OpKind::Cmp, {body.args[0].get(), loop.operands[0]}, kI1, {{"pred", std::string("ne")}});
      release(rel, later, empty, prev, p.bar_view);
    }
    pingpong(p);
    if (p.outer) {
      ir::Region& ob = *p.outer->regions[0];
      loop.operands[3 + slot_k] = carry(*p.outer, zero_at(fn_.body, ws));
      loop.operands[3 + phase_k] = carry(*p.outer, zero_at(fn_.body, ws));
      Op* y = ob.terminator();
      y->operands.push_back(loop.result(int(slot_k)));
      y->operands.push_back(loop.result(int(phase_k)));
      if (!p.release_current) {
        ir::Builder end(&ob, std::next(ob.find(p.drained)));
        end.loc = loop.loc;
        Value* last_slot = previous(end, loop.result(int(slot_k)), p.slots);
        Value* ran = end.create1(OpKind::Cmp, {loop.operands[0], loop.operands[1]}, kI1, {{"pred", std::string("lt")}});
        release(end, ran, empty, last_slot, p.bar_view);
      }
    }
    // The rings end after the consumers' loop; on a cluster they are left
    // alone (a peer may still arrive on them, until the barrier of the
    // whole cluster that ends the kernel, lower_control.cpp).
    if (plan_.num_ctas > 1) {
      transforms::dce(fn_);
      return;
    }
    auto last = consumers->find(&top);
    for (auto it = last; it != consumers->ops.end(); ++it)
      if ((*it)->kind == OpKind::MbarrierInval && ring_of((*it)->operands[0]) == p.full) last = it;
    ir::Builder post(consumers, std::next(last));
    post.loc = loop.loc;
    for (Value* r : {p.outer ? p.full : nullptr, empty})
      for (int s = 0; s < int(r ? r->type.shape[0] : 0); ++s)
        post.create(OpKind::MbarrierInval, {slot_view(post, r, post.constant_int(kI32, s), p.bar_view, s)}, {});
    // What only the refill and the prologue read is dead now.
    transforms::dce(fn_);
  }

  // Two or more consumer warpgroups whose step issues two or more
  // products and then works while the last is in flight (attention: S for
  // the next block and P V, then the softmax): each warpgroup issues its
  // products in its turn and hands the turn to the next, round the
  // warpgroups, so that one's softmax runs while the others' products keep
  // the tensor cores busy (FlashAttention-3's ping-pong; four warpgroups
  // of 64 rows at d 64 gain 0.3-2.5 % from it, docs/perf.md run 91). One
  // named barrier a warpgroup after the partitions' own, at most
  // kMaxPingpongGroups (ir/verifier.h; beyond it, no turns). In a persistent
  // program the turns start and finish around the loop each tile, and the
  // consumers meet at a barrier after the finish: without it a
  // warpgroup, running ahead into the next tile, could arrive on the
  // next one's barrier twice before that one took its last turn.
  void pingpong(const Pipeline& p) {
    const int groups = plan_.num_warps / 4;
    if (plan_.num_warps % 4 || groups < 2 || groups > ir::kMaxPingpongGroups) return;  // ids 3 .. 3 + groups - 1
    ir::Region& body = *p.loop->regions[0];
    std::vector<Op*> dots;
    Op* overlapped = nullptr;  // a wait with a later product still pending
    for (auto& o : body.ops) {
      if (o->kind == OpKind::Dot && o->attr_int_or("async", 0)) dots.push_back(o.get());
      if (o->kind == OpKind::DotWait && o->attr_int("pending") > 0 && dots.size() >= 2) overlapped = o.get();
    }
    if (!overlapped) return;
    const int id = 1 + 2;  // after the two partitions' barriers
    auto turn = [&](ir::Region& r, ir::Region::iterator at, const char* what) {
      ir::Builder b(&r, at);
      b.loc = p.loop->loc;
      ir::Attrs attrs{{"id", int64_t(id)}, {"threads", int64_t(256)}, {"pingpong", std::string(what)}};
      if (groups > 2) attrs["groups"] = int64_t(groups);
      b.create(OpKind::NamedBarrier, {}, {}, attrs);
    };
    turn(body, body.find(dots.front()), "wait");
    turn(body, std::next(body.find(dots.back())), "pass");
    ir::Region& around = *p.loop->parent;
    turn(around, around.find(p.loop), "start");
    turn(around, std::next(around.find(p.loop)), "finish");
    if (p.outer) {
      ir::Builder b(&around, std::next(around.find(p.loop), 2));
      b.loc = p.loop->loc;
      b.create(OpKind::Barrier, {}, {});
    }
  }

  // An i32 zero before `before` in `r`.
  static Value* zero_at(ir::Region& r, Op* before) {
    ir::Builder b(&r, r.find(before));
    return b.constant_int(kI32, 0);
  }

  ir::Function& fn_;
  const LayoutPlan& plan_;
  const TargetInfo& t_;
  bool cluster_empty_ = false;  // the empty ring counts the whole cluster's consumers
};

}  // namespace

void warp_specialize(ir::Function& fn, const LayoutPlan& plan, const TargetInfo& target, int mode) {
  std::string why = Specializer(fn, plan, target).run(mode);
  if (mode == 1 && !why.empty())
    throw Error((fn.loc.known() ? fn.loc.str() + ": " : std::string()) + "@" + fn.name +
                ": warp_specialize = true, but no loop can be warp-specialized: " + why);
}

}  // namespace tl::codegen
