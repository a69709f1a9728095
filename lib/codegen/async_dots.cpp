// Asynchronous warpgroup dots (see async_dots.h).
#include "codegen/async_dots.h"

#include <algorithm>
#include <unordered_map>

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

class AsyncDots {
 public:
  AsyncDots(ir::Function& fn, const LayoutPlan& plan) : fn_(fn), plan_(plan) {}

  void run() { region(fn_.body); }

 private:
  void region(ir::Region& r) {
    for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
      for (auto& sub : (*it)->regions) region(*sub);
      if ((*it)->kind == OpKind::For) loop(r, it);
    }
  }

  // The one warpgroup dot of a loop's body, if it can run asynchronously:
  // its carried accumulator's index among the loop's results, else -1.
  int candidate(Op& loop, Op*& dot) {
    ir::Region& body = *loop.regions[0];
    int warpgroup_dots = 0;
    ir::walk(body, [&](Op* o) {
      if (o->kind == OpKind::Dot && plan_.dots.at(o).on_warpgroups()) {
        ++warpgroup_dots;
        dot = o;
      }
    });
    if (warpgroup_dots != 1 || dot->parent != &body || dot->attr_int_or("async", 0)) return -1;
    const DotLayouts& d = plan_.dots.at(dot);
    if (!dot->operands[0]->type.is_shared() || !dot->operands[1]->type.is_shared()) return -1;
    if (dot->result()->type.dtype != d.instr->acc) return -1;
    // The accumulator: a carried value only the dot reads, the result only
    // the yield, at the same place.
    int k = -1;
    for (size_t a = 1; a < body.args.size(); ++a)
      if (body.args[a].get() == dot->operands[2]) k = int(a) - 1;
    if (k < 0 || ir::count_uses(body, dot->operands[2]) != 1 || ir::count_uses(body, dot->result()) != 1) return -1;
    const Op& yield = *body.ops.back();
    if (yield.kind != OpKind::Yield || yield.operands[size_t(k)] != dot->result()) return -1;
    return k;
  }

  // A loop of several warpgroup dots (async_dots.h): those reading B from
  // a buffer are issued without waiting where their result is read only
  // by the yield, or first read after a later such dot was issued (each
  // then waited for right before that read, with the later ones still in
  // flight); one dot_wait {pending = 0} before the yield retires the rest.
  // (Left in flight around the loop, waited for at their first read in the
  // next iteration with the later dots still in flight, they made the
  // target's assembler serialize every warpgroup instruction of the kernel:
  // it does not follow wait groups around a loop's back edge, docs/perf.md
  // run 59.)
  void carried_products(Op& loop) {
    ir::Region& body = *loop.regions[0];
    Op& yield = *body.ops.back();
    if (yield.kind != OpKind::Yield) return;
    // Each top-level op's position, and the first op after `dot` other
    // than the yield that reads its result (through its regions too).
    std::unordered_map<const Op*, int> pos;
    for (auto& o : body.ops) pos[o.get()] = int(pos.size());
    auto first_reader = [&](Op* dot) -> Op* {
      for (auto o = std::next(body.find(dot)); o != body.ops.end(); ++o) {
        if (o->get() == &yield) return nullptr;
        bool reads = false;
        ir::walk(**o, [&](Op* n) {
          reads = reads || std::find(n->operands.begin(), n->operands.end(), dot->result()) != n->operands.end();
        });
        if (reads) return o->get();
      }
      return nullptr;
    };
    std::vector<Op*> issued;  // the dots made asynchronous, in order
    std::vector<std::pair<Op*, Op*>> read_in_loop;  // dot, its first reader
    for (auto& o : body.ops) {
      Op& dot = *o;
      if (dot.kind != OpKind::Dot || dot.attr_int_or("async", 0)) continue;
      const DotLayouts& d = plan_.dots.at(&dot);
      if (!d.on_warpgroups() || !dot.operands[1]->type.is_shared() || (!d.a_in_registers && !dot.operands[0]->type.is_shared())) continue;
      if (dot.result()->type.dtype != d.instr->acc) continue;
      bool to_yield = std::find(yield.operands.begin(), yield.operands.end(), dot.result()) != yield.operands.end();
      Op* reader = first_reader(&dot);
      if (!reader && !(to_yield && ir::count_uses(body, dot.result()) == 1)) continue;
      if (reader) {
        // Worth it only with a later product in flight during the read.
        bool later = false;
        for (auto& p : body.ops)
          if (p->kind == OpKind::Dot && pos[p.get()] > pos[&dot] && pos[p.get()] < pos[reader] &&
              plan_.dots.at(p.get()).on_warpgroups())
            later = true;
        if (!later) continue;
        read_in_loop.push_back({&dot, reader});
      }
      dot.attrs["async"] = int64_t(1);
      issued.push_back(&dot);
    }
    // Each dot read in the loop is waited for right before its first
    // reader, the dots issued after it still pending.
    for (auto [dot, reader] : read_in_loop) {
      int pending = 0;
      for (Op* d : issued)
        if (pos[d] > pos[dot] && pos[d] < pos[reader]) ++pending;
      ir::Builder w(&body, body.find(reader));
      w.loc = dot->loc;
      Value* waited = w.create1(OpKind::DotWait, {dot->result()}, dot->result()->type, {{"pending", int64_t(pending)}});
      ir::replace_uses(body, dot->result(), waited);
      waited->def->operands[0] = dot->result();  // replace_uses rewrote the wait's own operand
    }
    std::vector<Value*> results;
    std::vector<ir::Type> types;
    for (Op* dot : issued)
      if (std::find_if(read_in_loop.begin(), read_in_loop.end(), [&](auto& p) { return p.first == dot; }) ==
          read_in_loop.end()) {
        results.push_back(dot->result());
        types.push_back(dot->result()->type);
      }
    if (results.empty()) return;
    ir::Builder w(&body, std::prev(body.ops.end()));
    w.loc = loop.loc;
    Op* wait = w.create(OpKind::DotWait, results, types, {{"pending", int64_t(0)}});
    for (size_t i = 0; i < results.size(); ++i)
      std::replace(yield.operands.begin(), yield.operands.end(), results[i], wait->result(int(i)));
    // A dot in flight reads its A from registers (a value carried around
    // the loop) until it retires: the casts making the next iteration's A
    // (P from the softmax) move after the wait, else the target's
    // assembler waits for the dot where they begin, before the work they
    // end (FlashAttention-3 converts P after its last wait too).
    for (Op* dot : issued) {
      Value* a = dot->operands[0];
      if (!plan_.dots.at(dot).a_in_registers || !a->is_arg() || a->owner != &body || a->index < 1) continue;
      std::vector<Op*> chain;  // from the yield back
      for (Value* v = yield.operands[size_t(a->index) - 1]; v->def && v->def->parent == &body;
           v = v->def->operands[0]) {
        Op* d = v->def;
        if ((d->kind != OpKind::Cast && d->kind != OpKind::ConvertLayout) || ir::count_uses(body, v) != 1) break;
        chain.push_back(d);
      }
      for (auto o = chain.rbegin(); o != chain.rend(); ++o)
        body.ops.splice(body.find(&yield), body.ops, body.find(*o));
    }
  }

  void loop(ir::Region& r, ir::Region::iterator it) {
    Op& loop = **it;
    Op* dot = nullptr;
    int k = candidate(loop, dot);
    if (k < 0) {
      carried_products(loop);
      return;
    }
    ir::Region& body = *loop.regions[0];
    dot->attrs["async"] = int64_t(1);
    ir::Builder in(&body, std::next(body.find(dot)));
    in.loc = dot->loc;
    Value* waited = in.create1(OpKind::DotWait, {dot->result()}, dot->result()->type, {{"pending", int64_t(1)}});
    body.ops.back()->operands[size_t(k)] = waited;
    // After the loop: every read of its result waits for the last dot.
    Value* res = loop.result(k);
    ir::Builder after(&r, std::next(it));
    after.loc = loop.loc;
    Op* last = after.create(OpKind::DotWait, {res}, {res->type}, {{"pending", int64_t(0)}});
    ir::replace_uses(r, res, last->result());
    last->operands[0] = res;  // replace_uses rewrote the wait's own operand
  }

  ir::Function& fn_;
  const LayoutPlan& plan_;
};

}  // namespace

void async_dots(ir::Function& fn, const LayoutPlan& plan) { AsyncDots(fn, plan).run(); }

}  // namespace tl::codegen
