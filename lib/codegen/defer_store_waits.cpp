// A persistent program's tensor stores waited for a tile later (see
// defer_store_waits.h).
#include "codegen/defer_store_waits.h"

#include <vector>

#include "codegen/allocate_shared.h"
#include "codegen/shared_sizes.h"

namespace tl::codegen {

using ir::Op;
using ir::OpKind;

namespace {

// The op of `body` holding `store` (it, or an `if` directly in `body`
// whose branches, or `if`s in them, hold it), where the store's buffer is
// made in the store's region and used there only by one local_store
// before it and the store; else null.
Op* deferrable(ir::Function& fn, ir::Region& body, Op& store) {
  Op* holder = &store;
  while (holder->parent != &body) {
    holder = holder->parent->parent;
    if (!holder || holder->kind != OpKind::If) return nullptr;
  }
  Op* alloc = store.operands[1]->def;
  if (!alloc || alloc->kind != OpKind::LocalAlloc || !alloc->operands.empty() || alloc->parent != store.parent)
    return nullptr;
  Op* writer = nullptr;
  bool ok = true;
  ir::walk(fn.body, [&](Op* o) {
    for (size_t i = 0; i < o->operands.size(); ++i) {
      if (o->operands[i] != alloc->result() || (o == &store && i == 1)) continue;
      ok = ok && o->kind == OpKind::LocalStore && i == 0 && o->parent == store.parent && !writer;
      writer = o;
    }
  });
  if (!ok || !writer) return nullptr;
  for (auto& o : store.parent->ops) {  // the writer first
    if (o.get() == writer) return holder;
    if (o.get() == &store) return nullptr;
  }
  return nullptr;
}

}  // namespace

void defer_store_waits(ir::Function& fn, const LayoutPlan& plan, int64_t available_shared_bytes) {
  for (Op* loop : tile_loops(fn)) {
    ir::Region& body = *loop->regions[0];
    ir::Region& around = *loop->parent;
    std::vector<Op*> stores;
    ir::walk(body, [&](Op* o) {
      if (o->kind == OpKind::TmaStore && o->attr_str_or("wait", "") == "read") stores.push_back(o);
    });
    std::vector<std::pair<Op*, Op*>> holders;  // (store, the op of the body holding it)
    for (Op* store : stores)
      if (Op* holder = deferrable(fn, body, *store)) holders.push_back({store, holder});
    if (holders.empty()) continue;
    std::vector<Op*> waits;
    for (auto [store, holder] : holders) {
      store->attrs["wait"] = std::string("none");
      auto at = body.find(holder);
      if (at != body.ops.begin() && (*std::prev(at))->kind == OpKind::TmaStoreWait) continue;  // a store before it there
      ir::Builder before(&body, at);
      before.loc = store->loc;
      waits.push_back(before.create(OpKind::TmaStoreWait, {}, {}));
    }
    ir::Builder after(&around, std::next(around.find(loop)));
    after.loc = loop->loc;
    waits.push_back(after.create(OpKind::TmaStoreWait, {}, {}));
    if (shared_bytes_needed(fn, plan) <= available_shared_bytes) continue;
    // The buffers' longer lives do not fit: the stores wait as they did.
    for (auto [store, holder] : holders) store->attrs["wait"] = std::string("read");
    for (Op* w : waits) w->parent->erase(w);
  }
}

}  // namespace tl::codegen
