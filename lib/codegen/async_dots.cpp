// Asynchronous warpgroup dots (see async_dots.h).
#include "codegen/async_dots.h"

#include <algorithm>

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
  // a buffer whose results only the yield reads are issued without
  // waiting, all retired by one dot_wait {pending = 0} before the yield.
  // (Left in flight around the loop, waited for at their first read in the
  // next iteration with the later dots still in flight, they made the
  // target's assembler serialize every warpgroup instruction of the kernel:
  // it does not follow wait groups around a loop's back edge, docs/perf.md
  // run 59.)
  void carried_products(Op& loop) {
    ir::Region& body = *loop.regions[0];
    Op& yield = *body.ops.back();
    if (yield.kind != OpKind::Yield) return;
    std::vector<Value*> results;
    std::vector<ir::Type> types;
    for (auto& o : body.ops) {
      Op& dot = *o;
      if (dot.kind != OpKind::Dot || dot.attr_int_or("async", 0)) continue;
      const DotLayouts& d = plan_.dots.at(&dot);
      if (!d.on_warpgroups() || !dot.operands[1]->type.is_shared() || (!d.a_in_registers && !dot.operands[0]->type.is_shared())) continue;
      if (dot.result()->type.dtype != d.instr->acc || ir::count_uses(body, dot.result()) != 1) continue;
      if (std::find(yield.operands.begin(), yield.operands.end(), dot.result()) == yield.operands.end()) continue;
      dot.attrs["async"] = int64_t(1);
      results.push_back(dot.result());
      types.push_back(dot.result()->type);
    }
    if (results.empty()) return;
    ir::Builder w(&body, std::prev(body.ops.end()));
    w.loc = loop.loc;
    Op* wait = w.create(OpKind::DotWait, results, types, {{"pending", int64_t(0)}});
    for (size_t i = 0; i < results.size(); ++i)
      std::replace(yield.operands.begin(), yield.operands.end(), results[i], wait->result(int(i)));
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
