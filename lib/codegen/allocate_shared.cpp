// Shared-memory allocation by liveness (see allocate_shared.h).
#include "codegen/allocate_shared.h"

#include <algorithm>
#include <unordered_map>

#include "codegen/shared_sizes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Something to place: a buffer (`local_alloc`) or an op's scratch, live
// from program point `first` to `last` (ops numbered in program order, a
// region's ops within their parent's span).
struct Allocation {
  Op* op = nullptr;
  bool scratch = false;  // written as the op's `scratch` (else `offset`)
  int64_t bytes = 0, align = 128;
  int first = 0, last = 0;
  std::vector<std::pair<int, int>> more;  // further spans it is live in, beside [first, last]
  int64_t at = 0;
};

// Whether `a` and `b` are live at a common point.
bool overlap(const Allocation& a, const Allocation& b) {
  auto spans = [](const Allocation& x) {
    std::vector<std::pair<int, int>> s = x.more;
    s.push_back({x.first, x.last});
    return s;
  };
  for (auto [f, l] : spans(a))
    for (auto [g, m] : spans(b))
      if (f <= m && g <= l) return true;
  return false;
}

class Allocator {
 public:
  Allocator(ir::Function& fn, const LayoutPlan& plan) : fn_(fn), plan_(plan) {}

  // The first byte past everything placed, and the largest allocation;
  // with `place`, each op gets its offset or scratch attribute.
  int64_t run(const Allocation*& largest, bool place) {
    number(fn_.body);
    uses(fn_.body);
    collect(fn_.body);
    // In order of their first point, each at the lowest offset that no
    // allocation live at the same time holds.
    std::stable_sort(all_.begin(), all_.end(), [](const Allocation& a, const Allocation& b) { return a.first < b.first; });
    const int64_t start = shared_start(plan_);
    int64_t peak = start;
    for (size_t i = 0; i < all_.size(); ++i) {
      Allocation& a = all_[i];
      std::vector<std::pair<int64_t, int64_t>> taken;
      for (size_t j = 0; j < i; ++j)
        if (overlap(all_[j], a)) taken.push_back({all_[j].at, all_[j].at + all_[j].bytes});
      std::sort(taken.begin(), taken.end());
      int64_t at = align_up(start, a.align);
      for (auto [lo, hi] : taken) {
        if (at + a.bytes <= lo) break;
        at = std::max(at, align_up(hi, a.align));
      }
      a.at = at;
      peak = std::max(peak, at + a.bytes);
      if (place) a.op->attrs[a.scratch ? "scratch" : "offset"] = at;
      if (!largest || a.bytes > largest->bytes) largest = &a;
    }
    return peak;
  }

 private:
  struct Span {
    int first, last;
  };

  void number(const ir::Region& r) {
    for (const auto& o : r.ops) {
      int first = next_++;
      for (const auto& sub : o->regions) number(*sub);
      span_[o.get()] = {first, next_ - 1};
    }
  }

  // The op of `r` that `o` is, or is inside. The default partition of a
  // warp_specialize in `r` counts as ops of `r` (its ops run in program
  // order after what precedes the warp_specialize).
  static const Op* in_region(const Op* o, const ir::Region* r) {
    while (o && o->parent != r) {
      const Op* up = o->parent ? o->parent->parent : nullptr;
      if (up && up->kind == OpKind::WarpSpecialize && up->parent == r) return o;
      o = up;
    }
    return o;
  }

  // Each buffer's last use (its uses inside a loop: the loop's end), and
  // which buffers asynchronous copies write or warpgroup dots (asynchronous
  // ones) read.
  void uses(const ir::Region& r) {
    for (const auto& o : r.ops) {
      for (const Value* v : o->operands) {
        if (!v->type.is_shared()) continue;
        const Value* b = buffer_of(v);
        if (!b->def) continue;
        // A use in a partition other than the default one comes before the
        // default partition's last use of the buffer (warp_specialize.h's
        // contract); a buffer only such partitions use lives through the
        // warp_specialize.
        if (const Op* side = ir::side_partition(o.get())) {
          if (const Op* ws = in_region(side, b->def->parent)) side_use_[b] = std::max(side_use_[b], span_.at(ws).last);
          continue;
        }
        const Op* at = in_region(o.get(), b->def->parent);
        if (!at) continue;
        int& last = last_use_[b];
        last = std::max(last, span_.at(at).last);
        if (o->kind == OpKind::AsyncCopy) copied_[b] = at;
        if (o->kind == OpKind::Dot && o->attr_int_or("async", 0)) async_read_[b] = at;
        if (o->kind == OpKind::TmaStore && o->attr_str_or("wait", "") == "none") stored_[b] = o.get();
        if (o->kind == OpKind::Dot && plan_.dots.at(o.get()).on_warpgroups()) {
          int64_t& align = operand_align_[b];
          align = std::max(align, plan_.dots.at(o.get()).instr->operand_align);
        }
        // Tensor copies swizzle by address: their buffers start on the
        // 1024-byte atom of the widest swizzle.
        if ((o->kind == OpKind::TmaLoad || o->kind == OpKind::TmaStore) && v == o->operands[1]) {
          int64_t& align = operand_align_[b];
          align = std::max<int64_t>(align, 1024);
        }
      }
      for (const auto& sub : o->regions) uses(*sub);
    }
  }

  void collect(ir::Region& r) {
    for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
      Op& o = **it;
      for (auto& sub : o.regions) collect(*sub);
      Span s = span_.at(&o);
      if (const Op* ws = ir::side_partition(&o)) s = span_.at(ws);  // alive beside all of it
      if (o.kind == OpKind::LocalAlloc) {
        const Value* b = o.result();
        Allocation a;
        a.op = &o;
        a.first = s.first;
        a.last = std::max(s.last, last_use_.count(b) ? last_use_.at(b) : side_use_.count(b) ? side_use_.at(b) : s.last);
        if (o.operands.empty()) {
          a.bytes = smem_buffer_bytes(b->type, fn_.layout_of(b->type));
          // Warpgroup instructions' operands at their boundaries.
          if (auto al = operand_align_.find(b); al != operand_align_.end()) a.align = std::max(a.align, al->second);
        } else {
          a.scratch = true;
          a.bytes = scratch_bound(o, plan_, {});
        }
        // Copies past a loop's end still write until the wait for all of them.
        if (auto c = copied_.find(b); c != copied_.end())
          a.last = std::max(a.last, drained_at(c->second, OpKind::AsyncWait));
        // Asynchronous dots read until the wait for all of them.
        if (auto d = async_read_.find(b); d != async_read_.end())
          a.last = std::max(a.last, drained_at(d->second, OpKind::DotWait));
        if (auto st = stored_.find(b); st != stored_.end()) store_read_until_waited(*st->second, a);
        all_.push_back(a);
      } else if (int64_t bytes = scratch_bound(o, plan_, {}); bytes > 0) {
        Allocation a;
        a.op = &o;
        a.scratch = true;
        a.bytes = bytes;
        a.first = s.first;
        a.last = s.last;
        all_.push_back(a);
      }
    }
  }

  // A tensor store issued without a wait (defer_store_waits.h) reads its
  // buffer until the next tma_store_wait: in its loop's next iteration
  // (the body from its start to that wait), or past the loop's end. Its
  // buffer is live from the store through the rest of its region, past
  // the op of the loop's body holding it (not the `else` of an `if` it is
  // in) to the body's end, then from the body's start to the wait, and
  // from the loop's end to the wait after it.
  void store_read_until_waited(const Op& store, Allocation& a) const {
    a.last = std::max(a.last, span_.at(store.parent->ops.back().get()).last);
    const Op* loop = store.parent->parent;
    while (loop && loop->kind != OpKind::For) loop = loop->parent ? loop->parent->parent : nullptr;
    if (!loop) return;
    const ir::Region& body = *loop->regions[0];
    const Op* holder = &store;
    while (holder->parent != &body) holder = holder->parent->parent;
    a.more.push_back({span_.at(holder).last, span_.at(body.ops.back().get()).last});
    auto waited = [&](const ir::Region& r, auto from) {
      for (auto it = from; it != r.ops.end(); ++it)
        if ((*it)->kind == OpKind::TmaStoreWait) return span_.at(it->get()).last;
      return span_.at(r.ops.back().get()).last;
    };
    a.more.push_back({span_.at(body.ops.front().get()).first, waited(body, body.ops.begin())});
    const ir::Region& around = *loop->parent;
    auto after = std::next(std::find_if(around.ops.begin(), around.ops.end(), [&](const auto& o) { return o.get() == loop; }));
    a.more.push_back({span_.at(loop).last, after == around.ops.end() ? span_.at(loop).last : waited(around, after)});
  }

  // The point of the first `async_wait {pending = 0}` (`dot_wait`) after
  // the op that copies last into a buffer (asynchronous dots read last from
  // it), in its region; the end of that region if there is none.
  int drained_at(const Op* from, OpKind wait) const {
    bool past = false;
    int last = span_.at(from).last;
    for (const auto& o : from->parent->ops) {
      past = past || o.get() == from;
      if (!past) continue;
      last = span_.at(o.get()).last;
      if (o->kind == wait && o->attr_int("pending") == 0 && o.get() != from) break;
    }
    return last;
  }

  ir::Function& fn_;
  const LayoutPlan& plan_;
  int next_ = 0;
  std::unordered_map<const Op*, Span> span_;
  std::unordered_map<const Value*, int> last_use_;
  std::unordered_map<const Value*, int> side_use_;  // of buffers other partitions use: the warp_specialize's end
  std::unordered_map<const Value*, const Op*> copied_;  // the last op of the buffer's region copying into it
  std::unordered_map<const Value*, const Op*> async_read_;  // the last one with an asynchronous dot reading it
  std::unordered_map<const Value*, const Op*> stored_;  // a tensor store reading it with no wait of its own
  std::unordered_map<const Value*, int64_t> operand_align_;  // of buffers warpgroup dots read
  std::vector<Allocation> all_;
};

void clear(ir::Region& r) {
  for (auto& o : r.ops) {
    o->attrs.erase("scratch");
    if (o->kind == OpKind::LocalAlloc) o->attrs.erase("offset");
    for (auto& sub : o->regions) clear(*sub);
  }
}

}  // namespace

int64_t shared_bytes_needed(ir::Function& fn, const LayoutPlan& plan) {
  const Allocation* largest = nullptr;
  return Allocator(fn, plan).run(largest, false);
}

void allocate_shared(ir::Function& fn, const LayoutPlan& plan, const std::string& target, int64_t available) {
  clear(fn.body);
  Allocator a(fn, plan);
  const Allocation* largest = nullptr;
  int64_t needed = a.run(largest, true);
  if (needed > available)
    throw Error("@" + fn.name + " needs " + std::to_string(needed) + " bytes of shared memory, " + target + " has " +
                std::to_string(available) + " (the largest part: " + std::to_string(largest->bytes) + " bytes for '" +
                std::string(largest->op->name()) + "' at " + largest->op->loc.str() + ")");
}

}  // namespace tl::codegen
