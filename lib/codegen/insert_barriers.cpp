// Barrier insertion (see insert_barriers.h).
#include "codegen/insert_barriers.h"

#include <deque>
#include <set>
#include <tuple>
#include <unordered_map>

#include "codegen/shared_sizes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

// One access to shared memory.
struct Access {
  int64_t lo = 0, hi = 0;  // its bytes, [lo, hi)
  bool write = false;
  const Value* buffer = nullptr;        // the buffer it goes through, if any
  int stage = -1;                       // a slot of it: iteration i + stage, mod its slots (-1: any)
  const LinearLayout* owner = nullptr;  // each element's one thread, in this layout (null: any thread)
  const Op* origin = nullptr;           // the op after which it is done (a copy's: its wait)

  auto key() const { return std::tie(lo, hi, write, buffer, stage, owner, origin); }
  bool operator<(const Access& o) const { return key() < o.key(); }
  bool operator==(const Access& o) const { return key() == o.key(); }
};

// Whether `a` and `b`, by different threads, need a barrier between them.
bool conflict(const Access& a, const Access& b) {
  if (!a.write && !b.write) return false;
  if (a.hi <= b.lo || b.hi <= a.lo) return false;
  if (a.buffer && a.buffer == b.buffer) {
    if (a.stage >= 0 && b.stage >= 0 && a.stage != b.stage) return false;
    // Each element's one thread is the same thread in every slot.
    if (a.owner && a.owner == b.owner) return false;
  }
  return true;
}

using Accesses = std::set<Access>;

// Groups of asynchronous accesses in flight, oldest first.
using Groups = std::deque<Accesses>;

// What may be in flight after either of two paths: groups line up at the
// newest.
void join_groups(Groups& into, const Groups& from) {
  if (from.size() > into.size()) into.insert(into.begin(), from.size() - into.size(), Accesses{});
  for (size_t k = 0; k < from.size(); ++k) {
    const Accesses& g = from[from.size() - 1 - k];
    into[into.size() - 1 - k].insert(g.begin(), g.end());
  }
}

// What is outstanding at a point of the program.
struct State {
  Accesses done;  // since the last barrier (copies: once waited for)
  Accesses open;  // asynchronous copies not committed yet
  Groups groups;  // committed copies in flight
  Groups dots;    // asynchronous dots' reads in flight, a group each
  Accesses tma;   // tensor copies' writes in flight (origin: the copy)
  Accesses stores;  // tensor stores' reads in flight until a tma_store_wait (origin: the store)

  bool operator==(const State& o) const {
    return done == o.done && open == o.open && groups == o.groups && dots == o.dots && tma == o.tma &&
           stores == o.stores;
  }

  void join(const State& o) {
    done.insert(o.done.begin(), o.done.end());
    open.insert(o.open.begin(), o.open.end());
    tma.insert(o.tma.begin(), o.tma.end());
    stores.insert(o.stores.begin(), o.stores.end());
    join_groups(groups, o.groups);
    join_groups(dots, o.dots);
  }

  // Rewrites every access (its stage) with `f`.
  template <class F>
  void each(F f) {
    auto map = [&](Accesses& s) {
      Accesses out;
      for (Access a : s) out.insert(f(a));
      s = std::move(out);
    };
    map(done);
    map(open);
    map(tma);
    map(stores);
    for (Accesses& g : groups) map(g);
    for (Accesses& g : dots) map(g);
  }
};

// A loop whose body carries a buffer's slot, and the buffer's slot count.
struct SlotLoop {
  const Op* loop = nullptr;
  int slots = 0;
};

class Inserter {
 public:
  Inserter(ir::Function& fn, const LayoutPlan& plan) : fn_(fn), plan_(plan) {}

  void run() {
    number_exchanges(fn_.body);
    find_slot_loops(fn_.body);
    // Barriers only ever get added, so this ends.
    for (bool more = true; more;) {
      changed_ = false;
      State s;
      region(fn_.body, s);
      more = changed_;
    }
    // A loop's first rounds see only what comes from before it, and may
    // have put a barrier before it that one in its body, found later,
    // makes needless: each barrier goes if the rest need no other.
    std::vector<const Op*> order;
    in_order(fn_.body, order);
    for (const Op* at : order) {
      before_.erase(at);
      if (!conflict_free()) before_.insert(at);
    }
    for (const Op* at : before_) {
      ir::Region* r = at->parent;
      auto pos = r->find(const_cast<Op*>(at));
      // Up past the values computed in registers before it (a slot's index,
      // the next iteration's addresses), as soon as what it waits for is
      // done; an exchange's comes right before it, after the work its own
      // writes wait for.
      if (!exchanges_through_scratch(*at))
        while (pos != r->ops.begin() && in_registers(**std::prev(pos))) --pos;
      ir::Builder b(r, pos);
      b.loc = at->loc;
      b.create(OpKind::Barrier, {}, {});
    }
    fn_.attrs["barriers"] = std::string("inserted");
  }

 private:
  void in_order(const ir::Region& r, std::vector<const Op*>& out) const {
    for (const auto& o : r.ops) {
      if (before_.count(o.get())) out.push_back(o.get());
      for (const auto& sub : o->regions) in_order(*sub, out);
    }
  }

  // Whether the barriers as they are leave no conflict.
  bool conflict_free() {
    checking_ = true;
    found_ = false;
    State s;
    region(fn_.body, s);
    checking_ = false;
    return !found_;
  }

  // Each reduction's exchange slot, in program order, as the lowering
  // expects them (a cluster's slots alternate in every CTA alike).
  void number_exchanges(ir::Region& r) {
    for (auto& o : r.ops) {
      if (o->kind == OpKind::Reduce) {
        o->attrs.erase("exchange");
        o->attrs.erase("cluster_slot");
        int64_t total = reduce_exchange_bytes(*o, plan_);
        if (total > 0 && total <= kExchangeSlotBytes && o->has_attr("scratch")) o->attrs["exchange"] = int64_t(next_exchange_++ & 1);
        if (reduces_across_ctas(*o, plan_)) o->attrs["cluster_slot"] = int64_t(next_cluster_slot_++ & 1);
      }
      for (auto& sub : o->regions) number_exchanges(*sub);
    }
  }

  // The loop of each buffer whose views it indexes with its carried slot.
  void find_slot_loops(const ir::Region& r) {
    for (const auto& o : r.ops) {
      if (o->kind == OpKind::LocalSlot) {
        const Value* i = o->operands[1];
        const ir::Region* body = r.parent && r.parent->kind == OpKind::For ? &r : nullptr;
        bool carried = false;
        for (size_t k = 1; body && k < body->args.size(); ++k) carried = carried || body->args[k].get() == i;
        // (The first loop: a producer partition's, after the default one,
        // indexes the same buffers.)
        if (carried) slot_loop_.emplace(o->operands[0], SlotLoop{r.parent, int(o->operands[0]->type.shape[0])});
      }
      for (const auto& sub : o->regions) find_slot_loops(*sub);
    }
  }

  // An op that computes in registers only: a barrier may go before it.
  static bool in_registers(const Op& o) {
    if (!o.regions.empty() || o.has_attr("scratch") || o.has_attr("cluster_slot")) return false;
    return o.kind == OpKind::LocalSlot || (o.kind == OpKind::LocalAlloc && o.operands.empty()) ||
           (ir::op_is_pure(o.kind) && o.kind != OpKind::Dot);  // conversions with no scratch: in registers
  }

  // ------------------------------------------------------------- accesses
  const LinearLayout* one_owner(const LinearLayout& l) const {
    bool one = !l.broadcast_mask(kLane) && !l.broadcast_mask(kWarp) && !l.broadcast_mask(kBlock) &&
               l.in_size(kWarp) >= plan_.num_warps;
    return one ? &l : nullptr;
  }

  // The buffer behind a buffer value (a view's), its bytes and slot.
  Access view(const Value* v, const Op& at) const {
    Access a;
    a.origin = &at;
    const Op* slot = nullptr;
    v = buffer_of(v, &slot);
    int stage = slot && slot->has_attr("stage") ? int(slot->attr_int("stage")) : -1;
    const Op* alloc = v->def;
    if (!alloc || alloc->kind != OpKind::LocalAlloc)
      throw Error(at.loc.str() + ": insert-barriers expects the buffer '" + std::string(at.name()) +
                  "' reads or writes to come from a local_alloc, found " +
                  (alloc ? "'" + std::string(alloc->name()) + "'" : std::string("an argument")));
    a.buffer = v;
    const char* place = alloc->operands.empty() ? "offset" : "scratch";
    if (!alloc->has_attr(place))
      throw Error(alloc->loc.str() + ": 'local_alloc' " + (alloc->operands.empty() ? "without an initial value " : "") +
                  "expects attribute '" + place + "' (allocate-shared gives it), found none");
    if (alloc->operands.empty()) {
      a.lo = alloc->attr_int("offset");
      a.hi = a.lo + smem_buffer_bytes(v->type, fn_.layout_of(v->type));
      if (auto it = slot_loop_.find(v); it != slot_loop_.end() && stage >= 0) a.stage = stage % it->second.slots;
    } else {
      a.lo = alloc->attr_int("scratch");
      a.hi = a.lo + scratch_bound(*alloc, plan_, {});
    }
    return a;
  }

  // An exchange's bytes: the op's scratch, or the part its exchange slot is.
  Access scratch(const Op& op) const {
    Access a;
    a.origin = &op;
    a.lo = op.attr_int("scratch");
    a.hi = a.lo + scratch_bound(op, plan_, {});
    if (op.has_attr("exchange")) {
      a.lo += op.attr_int("exchange") * kExchangeSlotBytes;
      a.hi = a.lo + reduce_exchange_bytes(op, plan_);
    }
    return a;
  }
  Access cluster_slot(const Op& op, int64_t slot) const {
    Access a;
    a.origin = &op;
    a.lo = slot * kClusterSlotBytes;
    a.hi = a.lo + kClusterSlotBytes;
    return a;
  }

  // ------------------------------------------------------------------ walk
  void region(ir::Region& r, State& s) {
    for (auto& o : r.ops) op(*o, s);
  }

  void op(Op& o, State& s) {
    if (before_.count(&o) || atomic_syncs_threads(o)) s.done.clear();
    switch (o.kind) {
      case OpKind::Barrier: s.done.clear(); return;
      case OpKind::For: return loop(o, s);
      case OpKind::While: return while_loop(o, s);
      case OpKind::If: {
        State other = s;
        region(*o.regions[0], s);
        if (o.regions.size() > 1) region(*o.regions[1], other);
        s.join(other);
        return;
      }
      case OpKind::AsyncCommit:
        s.groups.push_back(std::move(s.open));
        s.open.clear();
        // A loop that commits more than it waits for stays finite.
        while (s.groups.size() > 64) {
          s.groups[1].insert(s.groups[0].begin(), s.groups[0].end());
          s.groups.pop_front();
        }
        return;
      case OpKind::AsyncWait:
        // Copies it completes are written from here on: a barrier after
        // it shows them to every thread.
        retire(s.groups, o, s);
        return;
      case OpKind::DotWait:
        // Dots it retires have read their buffers: a barrier after it
        // lets every thread write them.
        retire(s.dots, o, s);
        return;
      case OpKind::NamedBarrier: return;  // some threads only: nothing is done for all
      case OpKind::TmaStoreWait:
        // The tensor stores issued without a wait have read their buffers
        // (defer_store_waits.h): a barrier after it lets every thread
        // write them.
        for (Access a : s.stores) {
          a.origin = &o;
          s.done.insert(a);
        }
        s.stores.clear();
        return;
      case OpKind::WarpSpecialize: {
        // The partitions run at the same time, each from what is
        // outstanding here; the default one goes on as the program. What
        // the others write they hand over through mbarriers
        // (warp_specialize.h), so they are checked, not carried on.
        const State entry = s;
        region(*o.regions[0], s);
        for (size_t k = 1; k < o.regions.size(); ++k) {
          State side = entry;
          region(*o.regions[k], side);
        }
        return;
      }
      default: break;
    }
    // An mbarrier is written by its initialization and read (its state
    // updated atomically) by every other use, a tensor load's among them.
    switch (o.kind) {
      case OpKind::MbarrierInit:
      case OpKind::MbarrierInval:
      case OpKind::MbarrierExpectTx:
      case OpKind::MbarrierArrive:
      case OpKind::MbarrierWait:
      case OpKind::TmaLoad: {
        Access bar = view(o.operands[o.kind == OpKind::TmaLoad ? 2 : 0], o);
        bar.write = o.kind == OpKind::MbarrierInit || o.kind == OpKind::MbarrierInval;
        // A use reads any slot of a ring: slots rotating through a loop's
        // rounds would keep reads no barrier retires from settling (the
        // initialization and end, the writes, are outside the loops).
        if (!bar.write) bar.stage = -1;
        check(o, {bar}, s);
        s.done.insert(bar);
        break;
      }
      default: break;
    }
    switch (o.kind) {
      case OpKind::MbarrierWait:
      case OpKind::MbarrierInval: {
        // The tensor copies completing on this mbarrier (on any slot of
        // its ring) have landed for every thread that waits: no barrier
        // needs to show them. Its end comes after all of them (ops.def):
        // copies the analysis cannot tell were never issued (a pipeline's
        // predicated stages past the loop's end) are not in flight past it.
        const Value* ring = buffer_of(o.operands[0]);
        for (auto it = s.tma.begin(); it != s.tma.end();)
          it = buffer_of(it->origin->operands[2]) == ring ? s.tma.erase(it) : std::next(it);
        return;
      }
      case OpKind::MbarrierInit:
      case OpKind::MbarrierExpectTx:
      case OpKind::MbarrierArrive: return;
      default: break;
    }
    // What the op reads and writes before any barrier of its own.
    std::vector<Access> acc;
    if (o.kind == OpKind::LocalAlloc && !o.operands.empty()) {
      Access a = view(o.result(), o);
      a.write = true;
      a.owner = one_owner(plan_.of(o.operands[0]));
      acc.push_back(a);
    } else if (o.kind == OpKind::LocalLoad) {
      Access a = view(o.operands[0], o);
      a.owner = one_owner(plan_.of(o.result()));
      acc.push_back(a);
    } else if (o.kind == OpKind::TmaLoad || o.kind == OpKind::TmaStore) {
      Access a = view(o.operands[1], o);
      a.write = o.kind == OpKind::TmaLoad;
      acc.push_back(a);
    } else if (o.kind == OpKind::LocalStore || o.kind == OpKind::AsyncCopy) {
      Access a = view(o.operands[0], o);
      a.write = true;
      a.owner = one_owner(plan_.of(o.operands[1]));
      acc.push_back(a);
    } else if (o.kind == OpKind::Dot) {
      for (int i = 0; i < 2; ++i)
        if (o.operands[i]->type.is_shared()) acc.push_back(view(o.operands[i], o));
    }
    bool exchange = exchanges_through_scratch(o);
    if (exchange) {
      Access w = scratch(o);
      w.write = true;
      acc.push_back(w);
    }
    // Sending on one slot of a cluster's exchange needs every thread past
    // its reads of the other (after the op's own barrier, if it has one).
    bool cluster = o.has_attr("cluster_slot");
    std::vector<Access> checked = acc;
    if (cluster && !exchange) {
      Access w = cluster_slot(o, 1 - o.attr_int("cluster_slot"));
      w.write = true;
      checked.push_back(w);
    }
    check(o, checked, s);
    if (o.kind == OpKind::AsyncCopy) {
      s.open.insert(acc.begin(), acc.end());
      return;
    }
    if (o.kind == OpKind::TmaLoad) {
      // A producer partition's copies land for the default partition,
      // which waits for them (warp_specialize.h).
      if (!ir::side_partition(&o)) s.tma.insert(acc.begin(), acc.end());
      return;
    }
    if (o.kind == OpKind::Dot && o.attr_int_or("async", 0)) {
      s.dots.push_back(Accesses(acc.begin(), acc.end()));
      return;
    }
    if (o.kind == OpKind::TmaStore && o.attr_str_or("wait", "") == "none") {
      s.stores.insert(acc.begin(), acc.end());
      return;
    }
    if (exchange) {
      // The op's barrier between its writes and its reads: only its reads
      // are outstanding after it.
      s.done.clear();
      for (Access& a : acc) a.write = false;
    }
    s.done.insert(acc.begin(), acc.end());
    if (cluster) s.done.insert(cluster_slot(o, o.attr_int("cluster_slot")));
  }

  // Moves the groups beyond a wait's `pending` to what is done at it.
  static void retire(Groups& g, const Op& wait, State& s) {
    while (int64_t(g.size()) > wait.attr_int("pending")) {
      for (Access a : g.front()) {
        a.origin = &wait;
        s.done.insert(a);
      }
      g.pop_front();
    }
  }

  // A barrier before `o` where its accesses conflict with what is
  // outstanding: before the outermost loop around it that the conflicting
  // accesses all come from before. No barrier helps a write to bytes an
  // asynchronous dot may still read: its wait must come first.
  void check(const Op& o, const std::vector<Access>& acc, State& s) {
    for (const Access& a : acc)
      for (const Access& p : s.tma)
        if (conflict(a, p))
          throw Error(o.loc.str() + ": '" + std::string(o.name()) + "' " + (a.write ? "writes" : "reads") +
                      " shared memory a tensor copy may still write (at " + p.origin->loc.str() +
                      "): expected an mbarrier_wait on its mbarrier before it, found none");
    for (const Access& a : acc)
      for (const Accesses& g : s.dots)
        for (const Access& p : g)
          if (conflict(a, p))
            throw Error(o.loc.str() + ": '" + std::string(o.name()) +
                        "' writes shared memory an asynchronous dot may still read (at " + p.origin->loc.str() +
                        "): expected a dot_wait retiring that dot before it, found none");
    for (const Access& a : acc)
      for (const Access& p : s.stores)
        if (conflict(a, p))
          throw Error(o.loc.str() + ": '" + std::string(o.name()) +
                      "' writes shared memory a tensor store may still read (at " + p.origin->loc.str() +
                      "): expected a tma_store_wait before it, found none");
    std::vector<const Op*> from;
    for (const Access& a : acc)
      for (const Access& p : s.done)
        if (conflict(a, p)) from.push_back(p.origin);
    if (from.empty()) return;
    if (checking_) {
      found_ = true;
      s.done.clear();
      return;
    }
    // (A barrier before a warp_specialize is every partition's.)
    const Op* at = &o;
    for (const Op* up = enclosing(&o); up; up = enclosing(up)) {
      if (up->kind != OpKind::For && up->kind != OpKind::WarpSpecialize) continue;
      bool outside = true;
      for (const Op* f : from) outside = outside && !ir::is_within(f, up);
      if (!outside) break;
      at = up;
    }
    if (before_.insert(at).second) changed_ = true;
    // What that barrier leaves outstanding: what the loops' iterations did.
    for (auto it = s.done.begin(); it != s.done.end();) it = ir::is_within(it->origin, at) ? std::next(it) : s.done.erase(it);
  }

  // The op whose region holds `o` (null at the function's top).
  static const Op* enclosing(const Op* o) { return o->parent ? o->parent->parent : nullptr; }

  // A loop to its fixed point: what is outstanding at the top of its body
  // is what was before it or at the end of its body, the slots of its
  // buffers one iteration back.
  void loop(Op& l, State& s) {
    const State entry = s;
    State header = entry;
    auto shift = [&](int by) {
      return [&, by](Access a) {
        auto it = a.buffer ? slot_loop_.find(a.buffer) : slot_loop_.end();
        if (it != slot_loop_.end() && it->second.loop == &l && a.stage >= 0)
          a.stage = by == 0 ? -1 : (a.stage + by + it->second.slots) % it->second.slots;
        return a;
      };
    };
    for (int round = 0;; ++round) {
      State end = header;
      region(*l.regions[0], end);
      end.each(shift(-1));
      State next = entry;
      next.join(end);
      if (next == header) break;
      if (round > 256) throw Error("internal: insert-barriers found no fixed point for the loop at " + l.loc.str());
      header = std::move(next);
    }
    // Past the loop its slots are any slots.
    header.each(shift(0));
    s = std::move(header);
  }

  // A while loop: the condition runs from the entry or after the body;
  // the loop ends after a condition.
  void while_loop(Op& l, State& s) {
    const State entry = s;
    State header = entry;
    for (int round = 0;; ++round) {
      State end = header;
      region(*l.regions[0], end);
      region(*l.regions[1], end);
      State next = entry;
      next.join(end);
      if (next == header) break;
      if (round > 256) throw Error("internal: insert-barriers found no fixed point for the loop at " + l.loc.str());
      header = std::move(next);
    }
    region(*l.regions[0], header);
    s = std::move(header);
  }

  ir::Function& fn_;
  const LayoutPlan& plan_;
  std::unordered_map<const Value*, SlotLoop> slot_loop_;
  std::set<const Op*> before_;  // ops a barrier goes before
  bool changed_ = false;
  bool checking_ = false, found_ = false;  // conflict_free's walk
  int next_exchange_ = 0, next_cluster_slot_ = 0;
};

}  // namespace

void insert_barriers(ir::Function& fn, const LayoutPlan& plan) { Inserter(fn, plan).run(); }

bool atomic_syncs_threads(const ir::Op& op) {
  if ((op.kind != OpKind::AtomicRmw && op.kind != OpKind::AtomicCas) || op.operands[0]->type.is_tile()) return false;
  std::string sem = op.attr_str_or("sem", "acq_rel");
  return sem == "release" || sem == "acq_rel";
}

}  // namespace tl::codegen
