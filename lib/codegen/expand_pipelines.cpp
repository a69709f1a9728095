// Software pipelines as IR (see expand_pipelines.h).
#include "codegen/expand_pipelines.h"

#include <algorithm>
#include <unordered_map>

#include "codegen/pipeline_plan.h"
#include "codegen/shared_sizes.h"
#include "codegen/swizzled_tile.h"
#include "codegen/tma_descriptors.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

namespace {

class Expander {
 public:
  Expander(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads)
      : fn_(fn), plan_(plan), axis_(axis), matrix_loads_(matrix_loads) {}

  // Inner loops first: a loop's expansion does not touch the loops in it.
  void region(ir::Region& r) {
    for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
      for (auto& sub : (*it)->regions) region(*sub);
      if ((*it)->kind != OpKind::For) continue;
      if (auto p = scheduled_pipeline(**it, plan_, axis_, {matrix_loads_})) it = expand(r, it, *p);
    }
  }

 private:
  // One stage's copies, as issue() makes them.
  struct Issued {
    std::vector<Value*> lead;    // the lead carried values of the next iteration
    std::vector<Value*> loaded;  // register prefetch: each load's tile
  };

  Type token() const {
    Type t{DType::i1, false, {}};
    t.kind = ir::TypeKind::token;
    return t;
  }

  // The buffer of pipelined load `ld`: a slot per stage (`slots`), or one
  // without a slot dimension (`slots` = 0), in the swizzled layout.
  Type buffer_type(const Op& ld, int slots) {
    const Value* v = ld.result();
    Type t{v->type.dtype, false, v->type.shape};
    t.kind = ir::TypeKind::shared;
    t.layout = fn_.intern_layout(buffer_slot_layout(plan_.of(v), v->type.shape, byte_size(v->type.dtype)));
    if (slots) t.shape.insert(t.shape.begin(), slots);
    return t;
  }
  Type view_type(const Value* buf) const {
    Type t = buf->type;
    if (size_t(t.rank()) > fn_.layout_of(t).out_dims().size()) t.shape.erase(t.shape.begin());
    return t;
  }
  Value* slot_view(ir::Builder& b, Value* buf, Value* slot, int stage) {
    return b.create1(OpKind::LocalSlot, {buf, slot}, view_type(buf), {{"stage", int64_t(stage)}});
  }

  // The copies of one stage, at `b`: the lead slice for iteration `iv`
  // with lead carried values `lead`, then each load's copies into slot
  // `slot` of its buffer, the slot of iteration `stage` from the current
  // one (insert_barriers.h tells slots apart by it; invariant loads with
  // the first stage only, into their one buffer; after its commit when they
  // form a group of their own), or for a register prefetch the loads
  // themselves. A copy past the loop's end (`iv` >= its bound) is masked
  // off: it writes zeros.
  Issued issue(ir::Builder& b, const Op& loop, const PipelinePlan& p, const std::vector<Value*>& bufs,
               const std::vector<Value*>& lead, Value* iv, Value* slot, int stage, bool first) {
    const ir::Region& body = *loop.regions[0];
    std::unordered_map<const Value*, Value*> map;
    map[body.args[0].get()] = iv;
    for (size_t j = 0; j < p.lead_args.size(); ++j) map[body.args[p.lead_args[j] + 1].get()] = lead[j];
    auto get = [&](Value* v) {
      auto it = map.find(v);
      return it == map.end() ? v : it->second;
    };
    for (const Op* o : p.lead_ops) {
      std::vector<Value*> operands;
      for (Value* x : o->operands) operands.push_back(get(x));
      std::vector<Type> types;
      for (const auto& r : o->results) types.push_back(r->type);
      Op* c = b.create(o->kind, operands, types, o->attrs);
      for (size_t k = 0; k < o->results.size(); ++k) map[o->result(int(k))] = c->result(int(k));
    }
    Value* live = b.create1(OpKind::Cmp, {iv, loop.operands[1]}, ir::scalar_type(DType::i1), {{"pred", std::string("lt")}});
    Issued out;
    std::vector<Value*> tokens;
    std::vector<size_t> tensor_copies;
    auto copy = [&](size_t li) {
      const Op& ld = *p.loads[li];
      if (ld.kind == OpKind::DescriptorLoad) {
        tensor_copies.push_back(li);
        return;
      }
      Value* ptr = get(ld.operands[0]);
      Type mask_type = ptr->type.with_dtype(DType::i1).with_layout(ptr->type.layout);
      Value* mask = b.create1(OpKind::Splat, {live}, mask_type);
      if (ld.operands.size() > 1) mask = b.create1(OpKind::And, {mask, get(ld.operands[1])}, mask_type);
      if (p.prefetch_registers) {
        std::vector<Value*> operands{ptr, mask};
        if (ld.operands.size() > 2) operands.push_back(get(ld.operands[2]));
        ir::Attrs attrs = ld.attrs;
        attrs.erase("pipeline");
        out.loaded.push_back(b.create1(OpKind::Load, operands, ld.result()->type, attrs));
        return;
      }
      Value* dst = p.invariant[li] ? bufs[li] : slot_view(b, bufs[li], slot, stage);
      tokens.push_back(b.create1(OpKind::AsyncCopy, {dst, ptr, mask}, token()));
    };
    auto commit = [&] {
      b.create1(OpKind::AsyncCommit, tokens, token());
      tokens.clear();
    };
    for (size_t li = 0; li < p.loads.size(); ++li)
      if (!p.invariant[li] || (first && !p.invariant_group)) copy(li);
    if (p.async_copies) commit();
    // The stage's tensor copies, issued by one thread where the iteration
    // is live, complete on the stage's full mbarrier.
    if (!tensor_copies.empty()) {
      Value* bar = slot_view(b, full_, slot, stage);
      std::vector<Value*> dsts;
      int64_t bytes = 0;
      for (size_t li : tensor_copies) {
        dsts.push_back(slot_view(b, bufs[li], slot, stage));
        bytes += boxes_[li].panel_bytes() * boxes_[li].panels;
      }
      Op* branch = b.create(OpKind::If, {live}, {});
      ir::Builder then(branch->add_region());
      then.loc = b.loc;
      then.create(OpKind::MbarrierExpectTx, {bar}, {}, {{"bytes", bytes}});
      for (size_t k = 0; k < tensor_copies.size(); ++k) {
        const Op& ld = *p.loads[tensor_copies[k]];
        std::vector<Value*> operands{maps_[tensor_copies[k]], dsts[k], bar};
        const size_t dims = ld.attr_ints("block").size();  // the descriptor's coordinates
        for (size_t d = 0; d < dims; ++d) operands.push_back(get(ld.operands[1 + 2 * dims + d]));
        then.create(OpKind::TmaLoad, operands, {});
      }
      then.create(OpKind::Yield, {}, {});
      ir::Builder(branch->add_region()).create(OpKind::Yield, {}, {});
    }
    if (first && p.invariant_group) {
      for (size_t li = 0; li < p.loads.size(); ++li)
        if (p.invariant[li]) copy(li);
      commit();
    }
    const Op* yield = body.terminator();
    for (size_t k : p.lead_args) out.lead.push_back(get(yield->operands[k]));
    return out;
  }

  // Expands the loop at `it` as `p` says; returns the iterator of the last
  // op it put after the loop (or of the loop).
  ir::Region::iterator expand(ir::Region& r, ir::Region::iterator it, const PipelinePlan& p) {
    Op& loop = **it;
    ir::Region& body = *loop.regions[0];
    const int S = p.stages;
    const bool buffered = !p.prefetch_registers;
    const Type i32 = ir::scalar_type(DType::i32), iv_type = loop.operands[0]->type;
    ir::Builder pre(&r, it);
    pre.loc = loop.loc;

    // The buffers (allocate-shared places them); for tensor copies their
    // maps (at the function's entry) and a ring of full mbarriers, one a
    // slot, each expecting its stage's copies.
    std::vector<Value*> bufs(p.loads.size(), nullptr);
    for (size_t li = 0; li < p.loads.size() && buffered; ++li)
      bufs[li] = pre.create1(OpKind::LocalAlloc, {}, buffer_type(*p.loads[li], p.invariant[li] ? 0 : p.slots()));
    const bool tensor_copies = p.tensor_copies, async = p.async_copies;
    maps_.assign(p.loads.size(), nullptr);
    boxes_.assign(p.loads.size(), TensorBox{});
    full_ = nullptr;
    if (tensor_copies) {
      for (size_t li = 0; li < p.loads.size(); ++li) {
        if (p.loads[li]->kind != OpKind::DescriptorLoad) continue;
        boxes_[li] = descriptor_box(*p.loads[li], fn_, view_type(bufs[li]));
        maps_[li] = entry_tensor_map(fn_, *p.loads[li], boxes_[li]);
      }
      full_ = pre.create1(OpKind::LocalAlloc, {}, mbarrier_type(fn_, p.slots()));
      for (int s = 0; s < p.slots(); ++s)
        pre.create(OpKind::MbarrierInit, {slot_view(pre, full_, pre.constant_int(i32, s), s)}, {}, {{"count", int64_t(1)}});
      // Every thread sees them before any use (here, not in the
      // predicated stages below, which insert-barriers would each give one).
      pre.create(OpKind::Barrier, {}, {});
    }

    // The prologue: iterations 0 .. S-2 into slots 0 .. S-2.
    std::vector<Value*> lead;
    for (size_t k : p.lead_args) lead.push_back(loop.operands[3 + k]);
    Value* iv = loop.operands[0];
    Issued issued;
    for (int j = 0; j + 1 < S; ++j) {
      if (j > 0) iv = pre.create1(OpKind::Add, {iv, loop.operands[2]}, iv_type);
      issued = issue(pre, loop, p, bufs, lead, iv, pre.constant_int(i32, j), j, j == 0);
      lead = issued.lead;
    }

    // The loop carries the lead values, the prefetched tiles, the slot and
    // (tensor copies) the phase its full mbarrier completes next.
    std::vector<Value*> inits = lead;
    inits.insert(inits.end(), issued.loaded.begin(), issued.loaded.end());
    if (buffered) inits.push_back(pre.constant_int(i32, 0));
    if (tensor_copies) inits.push_back(pre.constant_int(i32, 0));
    std::vector<Value*> args;
    for (Value* v : inits) {
      loop.operands.push_back(v);
      loop.add_result(v->type);
      args.push_back(body.add_arg(v->type));
    }
    std::vector<Value*> lead_args(args.begin(), args.begin() + long(lead.size()));
    Value* phase = tensor_copies ? args.back() : nullptr;
    Value* slot = buffered ? args[args.size() - 1 - size_t(tensor_copies)] : nullptr;

    // The top of the body: this iteration's copies have landed (the
    // barrier after which every thread sees them, and is past the previous
    // iteration's reads of the slot refilled below, is insert-barriers');
    // each buffer's slot; the lead iteration; the next slot.
    ir::Builder top(&body, body.ops.begin());
    top.loc = loop.loc;
    Value* body_iv = body.args[0].get();
    if (async) {
      if (p.invariant_group) {
        // Iteration 0 waits for its own copies only: the invariant group,
        // committed after them, may still be pending (its reads wait).
        Value* at_first = top.create1(OpKind::Cmp, {body_iv, loop.operands[0]}, ir::scalar_type(DType::i1),
                                      {{"pred", std::string("eq")}});
        Op* branch = top.create(OpKind::If, {at_first}, {});
        for (int pending : {S - 1, S - 2}) {
          ir::Builder arm(branch->add_region());
          arm.loc = loop.loc;
          arm.create1(OpKind::AsyncWait, {}, token(), {{"pending", int64_t(pending)}});
          arm.create(OpKind::Yield, {}, {});
        }
      } else {
        top.create1(OpKind::AsyncWait, {}, token(), {{"pending", int64_t(S - 2)}});
      }
      if (warpgroup_reads(loop, plan_)) top.create(OpKind::FenceAsyncShared, {}, {});
    }
    // Tensor copies land for every thread that waits on the slot's phase.
    if (tensor_copies) top.create(OpKind::MbarrierWait, {slot_view(top, full_, slot, 0), phase}, {});
    std::vector<Value*> views(p.loads.size(), nullptr);
    for (size_t li = 0; li < p.loads.size() && buffered; ++li)
      views[li] = p.invariant[li] ? bufs[li] : slot_view(top, bufs[li], slot, 0);
    Value* ahead = top.create1(OpKind::Mul, {loop.operands[2], top.constant_int(iv_type, S - 1)}, iv_type);
    Value* iv_lead = top.create1(OpKind::Add, {body_iv, ahead}, iv_type);
    Value *last = nullptr, *zero = nullptr, *one = nullptr, *slot_next = nullptr, *phase_next = nullptr;
    if (buffered) {
      last = top.constant_int(i32, p.slots() - 1);
      zero = top.constant_int(i32, 0);
      one = top.constant_int(i32, 1);
      Value* inc = top.create1(OpKind::Add, {slot, one}, i32);
      Value* wraps = top.create1(OpKind::Cmp, {slot, last}, ir::scalar_type(DType::i1), {{"pred", std::string("eq")}});
      slot_next = top.create1(OpKind::Select, {wraps, zero, inc}, i32);
      if (tensor_copies)
        phase_next = top.create1(OpKind::Select, {wraps, top.create1(OpKind::Xor, {phase, one}, i32), phase}, i32);
    }

    // Each load as its form says. The refill, iteration i + S - 1, goes
    // into this iteration's slot once it is read (early: right after the
    // last load that changes from one iteration to the next), else into
    // the slot iteration i - 1 read, after this iteration's multiplies so
    // that those start right after the wait.
    const Op* refill_at = nullptr;
    for (size_t li = 0; li < p.loads.size() && p.early_refill; ++li)
      if (!p.invariant[li]) refill_at = p.loads[li];
    // Threads that read slots in the generic proxy (local_load, or dots
    // through ldmatrix) order those reads before the tensor copies that
    // refill them, which are the async proxy's, with a proxy fence before
    // the barrier that precedes the copies: without it an f32 ring read into
    // registers gave wrong rows on the H200. Warpgroup dots read through
    // the async proxy already.
    bool generic_reads = false;
    for (size_t li = 0; li < p.loads.size(); ++li)
      generic_reads = generic_reads || (p.loads[li]->kind == OpKind::DescriptorLoad && p.to_registers[li]);
    for (const auto& o : body.ops)
      generic_reads = generic_reads || (tensor_copies && o->kind == OpKind::Dot && !plan_.dots.at(o.get()).on_warpgroups());
    Issued next;
    auto refill = [&](ir::Builder& fill) {
      if (generic_reads) fill.create(OpKind::FenceAsyncShared, {}, {});
      Value* fill_slot = slot;
      if (!p.early_refill) {
        Value* dec = fill.create1(OpKind::Sub, {slot, one}, i32);
        Value* at_zero = fill.create1(OpKind::Cmp, {slot, zero}, ir::scalar_type(DType::i1), {{"pred", std::string("eq")}});
        fill_slot = fill.create1(OpKind::Select, {at_zero, last, dec}, i32);
      }
      next = issue(fill, loop, p, bufs, lead_args, iv_lead, fill_slot, S - 1, false);
    };
    bool refilled = false;
    for (auto bit = body.ops.begin(); bit != body.ops.end(); ++bit) {
      auto lit = std::find(p.loads.begin(), p.loads.end(), bit->get());
      if (lit == p.loads.end()) continue;
      size_t li = size_t(lit - p.loads.begin());
      Op& ld = **bit;
      ir::Builder at(&body, bit);
      at.loc = ld.loc;
      Value* now = nullptr;
      if (p.prefetch_registers) {
        now = args[lead.size() + li];
      } else if (p.to_registers[li]) {
        // An invariant group is complete once no more than the groups
        // committed after it are pending: the other stages' and, past the
        // refill, this iteration's. Later iterations find it so already.
        if (p.invariant_group && p.invariant[li])
          at.create1(OpKind::AsyncWait, {}, token(), {{"pending", int64_t(S - 2 + int(refilled))}});
        now = at.create1(OpKind::LocalLoad, {views[li]}, ld.result()->type);
        if (ld.kind == OpKind::Load && ld.operands.size() > 2 && !is_zero_constant(ld.operands[2]))
          now = at.create1(OpKind::Select, {ld.operands[1], now, ld.operands[2]}, ld.result()->type);
      } else {
        // Read by dots in place; a trans of it is a view of the buffer.
        now = views[li];
        Type view = view_type(bufs[li]);
        for (const Op* s : p.skip)
          if (s->kind == OpKind::Trans && s->operands[0] == ld.result()) {
            Value* t = s->result();
            Type tt = view;
            tt.shape = t->type.shape;
            tt.layout = fn_.intern_layout(trans_layout(fn_.layout_of(view), s->attr_ints("order")));
            t->type = tt;
          }
      }
      ir::replace_uses(body, ld.result(), now);
      if (&ld == refill_at) {
        ir::Builder fill(&body, bit);
        fill.loc = loop.loc;
        refill(fill);
        refilled = true;
      }
    }
    if (!p.early_refill) {
      ir::Builder fill(&body, std::prev(body.ops.end()));  // before the yield
      fill.loc = loop.loc;
      refill(fill);
    }
    // The loads, and the conversions only they read, are gone.
    for (auto bit = body.ops.begin(); bit != body.ops.end();) {
      const Op* o = bit->get();
      bool gone = std::find(p.loads.begin(), p.loads.end(), o) != p.loads.end() ||
                  (o->kind == OpKind::ConvertLayout && p.skip.count(o));
      bit = gone ? body.ops.erase(bit) : std::next(bit);
    }
    Op* yield = body.terminator();
    yield->operands.insert(yield->operands.end(), next.lead.begin(), next.lead.end());
    yield->operands.insert(yield->operands.end(), next.loaded.begin(), next.loaded.end());
    if (buffered) yield->operands.push_back(slot_next);
    if (tensor_copies) yield->operands.push_back(phase_next);

    loop.attrs.erase("stages");

    // After the loop: copies past the end still write zeros, so they land
    // before the buffers are scratch again; the full mbarriers end (every
    // tensor copy was for a live iteration, and waited for in it).
    if (!buffered) return it;
    ir::Builder post(&r, std::next(it));
    post.loc = loop.loc;
    if (async) post.create1(OpKind::AsyncWait, {}, token(), {{"pending", int64_t(0)}});
    for (int s = 0; s < p.slots() && tensor_copies; ++s)
      post.create(OpKind::MbarrierInval, {slot_view(post, full_, post.constant_int(i32, s), s)}, {});
    return std::prev(post.pos());
  }

  ir::Function& fn_;
  const LayoutPlan& plan_;
  const transforms::AxisAnalysis& axis_;
  bool matrix_loads_;
  // The loop being expanded: per load, its tensor map and box (tensor
  // copies only); the ring of full mbarriers.
  std::vector<Value*> maps_;
  std::vector<TensorBox> boxes_;
  Value* full_ = nullptr;
};

}  // namespace

void expand_pipelines(ir::Function& fn, const LayoutPlan& plan, const transforms::AxisAnalysis& axis, bool matrix_loads) {
  Expander(fn, plan, axis, matrix_loads).region(fn.body);
}

}  // namespace tl::codegen
