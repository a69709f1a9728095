// Tensor descriptors as tensor copies (see tma_descriptors.h).
#include "codegen/tma_descriptors.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace tl::codegen {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

namespace {

bool is_argument(const ir::Function& fn, const Value* v) {
  return std::any_of(fn.body.args.begin(), fn.body.args.end(), [&](const auto& a) { return a.get() == v; });
}

const Op* constant_def(const Value* v) { return v->def && v->def->kind == OpKind::Constant ? v->def : nullptr; }

// map_operand's factors of `v` into `o`; false where `v` is none.
bool factors_of(const ir::Function& fn, const Value* v, runtime::TensorMapParam::Operand& o) {
  for (size_t i = 0; i < fn.body.args.size(); ++i)
    if (fn.body.args[i].get() == v) {
      o.args.push_back(int(i));
      return o.args.size() <= 8;
    }
  if (const Op* c = constant_def(v)) {
    o.value *= c->attr_int("value");
    return true;
  }
  const Op* d = v->def;
  return d && d->kind == OpKind::Mul && v->type.is_scalar() && factors_of(fn, d->operands[0], o) &&
         factors_of(fn, d->operands[1], o);
}

// Whether `a` and `b` compute one value: the same value, equal constants,
// or products of such (in the same order).
bool same_value(const Value* a, const Value* b) {
  if (a == b) return true;
  if (a->type != b->type || !a->def || !b->def || a->def->kind != b->def->kind) return false;
  if (a->def->kind == OpKind::Constant) return a->def->attrs.at("value") == b->def->attrs.at("value");
  return a->def->kind == OpKind::Mul && same_value(a->def->operands[0], b->def->operands[0]) &&
         same_value(a->def->operands[1], b->def->operands[1]);
}

// The end of the function's leading constants, products and tensor maps
// (entry_tensor_map's, and any the kernel begins with): what is there
// dominates the whole function, and a new map goes after it.
ir::Region::iterator entry_end(ir::Function& fn) {
  auto it = fn.body.ops.begin();
  while (it != fn.body.ops.end() &&
         ((*it)->kind == OpKind::Constant || (*it)->kind == OpKind::Mul || (*it)->kind == OpKind::TensorMap))
    ++it;
  return it;
}

// `v` (a map_operand) computed again by `b`, which inserts at the end of
// the entry of `fn` (entry_end), or an equal product already there.
Value* at_entry(ir::Builder& b, ir::Function& fn, Value* v) {
  if (!v->def) return v;  // an argument
  if (v->def->kind == OpKind::Constant) return b.create1(OpKind::Constant, {}, v->type, {{"value", v->def->attrs.at("value")}});
  for (auto it = fn.body.ops.begin(); it != b.pos(); ++it)
    if ((*it)->kind == OpKind::Mul && same_value((*it)->result(), v)) return (*it)->result();
  Value* x = at_entry(b, fn, v->def->operands[0]);
  Value* y = at_entry(b, fn, v->def->operands[1]);
  return b.create1(OpKind::Mul, {x, y}, v->type);
}

// The users of every value of `fn`.
std::unordered_map<const Value*, std::vector<Op*>> users_of(const ir::Function& fn) {
  std::unordered_map<const Value*, std::vector<Op*>> users;
  ir::walk(const_cast<ir::Region&>(fn.body), [&](Op* o) {
    for (const Value* v : o->operands) users[v].push_back(o);
  });
  return users;
}

bool dot_operand(const Op* u, const Value* v) {
  return u->kind == OpKind::Dot && (u->operands[0] == v || u->operands[1] == v) && u->operands[2] != v;
}

// The block a descriptor_load reads or a descriptor_store writes (a load
// of rank > 2 squeezed to its last two dimensions after
// squeeze_tensor_copies).
const Type& block_type(const Op& op) {
  return op.kind == OpKind::DescriptorStore ? op.operands.back()->type : op.result()->type;
}

// The descriptor's rank: its block's, whatever the result's.
size_t descriptor_rank(const Op& op) { return op.attr_ints("block").size(); }

// Whether every reader of `v` (a block, or a reshape or trans of it) is a
// dot's operand: directly, through a trans, or through a reshape that drops
// the block's leading 1s (to rank 2) and then either.
bool read_by_dots(const Value* v, std::unordered_map<const Value*, std::vector<Op*>>& users,
                  std::string* other) {
  const auto& uses = users[v];
  if (uses.empty()) {
    *other = "no reader";
    return false;
  }
  for (const Op* u : uses) {
    if (dot_operand(u, v)) continue;
    bool through = (u->kind == OpKind::Trans && v->type.rank() == 2) ||
                   (u->kind == OpKind::Reshape && v->type.rank() > 2 && u->result()->type.rank() == 2 &&
                    v->type.shape[size_t(v->type.rank()) - 2] == u->result()->type.shape[0]);
    if (through && read_by_dots(u->result(), users, other)) continue;
    if (other->empty()) other->assign("a reader other than a dot ('" + std::string(u->name()) + "' at " + u->loc.str() + ")");
    return false;
  }
  return true;
}

// The stored tile of a block of `shape`, rows contiguous (the tensor's
// last dimension is its contiguous one).
SwizzledTile block_tile(const std::vector<int64_t>& shape, int elem_bytes) {
  return SwizzledTile::plan(shape[0], shape[1], 1, elem_bytes);
}

}  // namespace

std::optional<runtime::TensorMapParam::Operand> map_operand(const ir::Function& fn, const Value* v) {
  runtime::TensorMapParam::Operand o;
  if (!factors_of(fn, v, o)) return std::nullopt;
  return o;
}

std::string tensor_copy_refusal(const ir::Function& fn, const Op& op, const transforms::AxisAnalysis& axis) {
  if (op.kind != OpKind::DescriptorLoad && op.kind != OpKind::DescriptorStore)
    return "not a descriptor_load or descriptor_store";
  const bool store = op.kind == OpKind::DescriptorStore;
  const Type& t = block_type(op);
  const std::vector<int64_t>& block = op.attr_ints("block");
  const size_t r = block.size();
  const int eb = byte_size(t.dtype);
  if (r < 2) return "a block of rank 1 (tensor copies of rank 2 to 5 only)";
  // A block of rank > 2 is a 2-D box of a higher-rank map (a head's keys
  // of [B * H, N, D], say): its leading sizes 1.
  for (size_t d = 0; d + 2 < r; ++d)
    if (block[d] != 1)
      return "a block of rank " + std::to_string(r) + " with size " + std::to_string(block[d]) + " in dimension " +
             std::to_string(d) + " (tensor copies of a 2-D box only, so far: sizes 1 but in the last two)";
  const std::vector<int64_t> box2 = {block[r - 2], block[r - 1]};
  // 8-bit blocks (f8 dots) have not run on the H200 yet.
  if (eb != 2 && eb != 4)
    return "elements of " + std::to_string(eb) + " bytes (tensor copies of 2- and 4-byte elements only, so far)";
  const Value* base = op.operands[0];
  if (!is_argument(fn, base)) return "a base the kernel computes (the launcher encodes the map)";
  if (axis.get(base).divisibility[0] < 16) return "a base not proven 16-byte aligned";
  for (size_t i = 1; i <= 2 * r; ++i)
    if (!map_operand(fn, op.operands[i]))
      return std::string(i <= r ? "a size" : "a stride") +
             " the kernel computes other than as a product of arguments and constants (the launcher encodes the map)";
  const transforms::AxisInfo& last = axis.get(op.operands[2 * r]);
  if (!last.value || *last.value != 1) return "a last stride not known to be 1";
  for (size_t d = 0; d + 1 < r; ++d)
    if (axis.get(op.operands[1 + r + d]).divisibility[0] * eb % 16)
      return "a stride of dimension " + std::to_string(d) + " not proven a multiple of 16 bytes";
  if (axis.get(op.operands[1 + 2 * r + (r - 1)]).divisibility[0] * eb % 16)
    return "an innermost coordinate not proven a multiple of 16 bytes";
  // A store's copy writes whole 16-byte pieces of a row (measured: the
  // elements past the innermost size up to the next 16 bytes too).
  if (store && axis.get(op.operands[r]).divisibility[0] * eb % 16)
    return "an innermost size not proven a multiple of 16 bytes";
  TensorBox box = tensor_box_of(block_tile(box2, eb));
  if (!box.why.empty()) return "a block stored as " + box.why;
  if (store) return "";
  // Its readers last: this walks the function.
  auto users = users_of(fn);
  std::string other;
  return read_by_dots(op.result(), users, &other) ? "" : other;
}

bool squeeze_tensor_copies(ir::Function& fn) {
  std::vector<Op*> found;
  ir::walk(fn.body, [&](Op* o) {
    if ((o->kind == OpKind::DescriptorLoad || o->kind == OpKind::DescriptorStore) && block_type(*o).rank() > 2)
      found.push_back(o);
  });
  for (Op* op : found) {
    const Type& t = block_type(*op);
    const size_t r = size_t(t.rank());
    Type squeezed = t.with_shape({t.shape[r - 2], t.shape[r - 1]});
    ir::Builder b(op->parent, op->parent->find(op));
    b.loc = op->loc;
    if (op->kind == OpKind::DescriptorStore) {
      op->operands.back() = b.create1(OpKind::Reshape, {op->operands.back()}, squeezed);
      continue;
    }
    Value* v = op->result();
    Value* block = b.create1(OpKind::DescriptorLoad, op->operands, squeezed, op->attrs);
    Value* full = b.create1(OpKind::Reshape, {block}, v->type);
    ir::replace_uses(fn.body, v, full);
    op->parent->erase(op);
  }
  return !found.empty();
}

TensorBox descriptor_box(const Op& op, const ir::Function& fn, const Type& buffer) {
  const Type& t = block_type(op);
  std::vector<int64_t> shape = t.shape;
  auto tile = swizzled_tile_of(fn.layout_of(buffer), shape, byte_size(t.dtype));
  SwizzledTile want = block_tile(shape, byte_size(t.dtype));
  if (!tile || tile->contiguous != 1 || tile->vec != want.vec || tile->per_phase != want.per_phase ||
      tile->max_phase != want.max_phase)
    throw Error("internal: " + op.loc.str() + ": the buffer of '" + std::string(op.name()) + "' " + buffer.str() +
                " is not the swizzled tile its block's tensor copy stores");
  TensorBox box = tensor_box_of(*tile);
  if (!box.why.empty())
    throw Error("internal: " + op.loc.str() + ": '" + std::string(op.name()) + "' kept for a tensor copy of " + box.why);
  return box;
}

Value* entry_tensor_map(ir::Function& fn, const Op& op, const TensorBox& box) {
  const size_t r = descriptor_rank(op);
  std::vector<int64_t> dims(r - 2, 1);  // leading sizes 1 (tensor_copy_refusal)
  dims.push_back(box.rows);
  dims.push_back(box.inner);
  for (const auto& o : fn.body.ops) {
    if (o->kind != OpKind::TensorMap || o->attr_ints("box") != dims || o->attr_int("swizzle") != box.swizzle_bytes)
      continue;
    bool equal = true;
    for (size_t i = 0; i <= 2 * r && equal; ++i) equal = same_value(o->operands[i], op.operands[i]);
    if (equal) return o->result();
  }
  ir::Builder b(&fn.body, entry_end(fn));
  b.loc = op.loc;
  std::vector<Value*> operands{op.operands[0]};
  for (size_t i = 1; i <= 2 * r; ++i) operands.push_back(at_entry(b, fn, op.operands[i]));
  return b.create1(OpKind::TensorMap, operands, op.operands[0]->type,
                   {{"box", dims}, {"swizzle", int64_t(box.swizzle_bytes)}});
}

Type mbarrier_type(ir::Function& fn, int slots) {
  Type t{DType::i64, false, {1}};
  t.kind = ir::TypeKind::shared;
  t.layout = fn.intern_layout(LinearLayout({{kOffset, {}}}, {{dim_name(0), 1}}));
  if (slots) t.shape.insert(t.shape.begin(), slots);
  return t;
}

namespace {

// Whether an op of `fn` may read global memory through an address that
// depends on `base` (its loads', copies' and atomics' addresses, traced
// back through every operand).
bool reads_through(const ir::Function& fn, const Value* base) {
  std::vector<const Value*> work;
  ir::walk(const_cast<ir::Region&>(fn.body), [&](Op* o) {
    switch (o->kind) {
      case OpKind::Load:
      case OpKind::DescriptorLoad:
      case OpKind::TmaLoad:
      case OpKind::AtomicRmw:
      case OpKind::AtomicCas: work.push_back(o->operands[0]); break;
      case OpKind::AsyncCopy: work.push_back(o->operands[1]); break;
      default: break;
    }
  });
  std::unordered_set<const Value*> seen;
  while (!work.empty()) {
    const Value* v = work.back();
    work.pop_back();
    if (v == base) return true;
    if (!seen.insert(v).second || !v->def) continue;
    for (const Value* x : v->def->operands) work.push_back(x);
  }
  return false;
}

// A kept descriptor_store as one tensor copy out of a buffer its threads
// write first (each fences its writes for the copy, which the asynchronous
// proxy reads; insert-barriers puts the barrier between them).
void tensor_store(ir::Function& fn, Op* op, const LayoutPlan& plan) {
  Value* v = op->operands.back();
  const size_t r = descriptor_rank(*op);
  Type buf_type{v->type.dtype, false, v->type.shape};
  buf_type.kind = ir::TypeKind::shared;
  // Rows along the tensor's contiguous last dimension, whatever layout the
  // value's registers are in; on a cluster, each CTA's part of it.
  const LinearLayout& l = plan.of(v);
  if (plan.num_ctas > 1 && (l.in_size(kBlock) < plan.num_ctas || l.broadcast_mask(kBlock)))
    throw Error(op->loc.str() + ": '" + std::string(op->name()) + "' with num_ctas = " + std::to_string(plan.num_ctas) +
                " of a value every CTA of the cluster holds (" + v->type.str() +
                ") is not supported yet: expected a tile split over the CTAs (a dot's result, say)");
  buf_type.layout = fn.intern_layout(tensor_copy_buffer_layout(l, v->type.shape, byte_size(v->type.dtype)));
  TensorBox box = descriptor_box(*op, fn, buf_type);
  Value* map = entry_tensor_map(fn, *op, box);
  ir::Builder b(op->parent, op->parent->find(op));
  b.loc = op->loc;
  Value* buf = b.create1(OpKind::LocalAlloc, {}, buf_type);
  b.create(OpKind::LocalStore, {buf, v}, {});
  b.create(OpKind::FenceAsyncShared, {}, {});
  std::vector<Value*> copy{map, buf};
  for (size_t d = 0; d < r; ++d) copy.push_back(op->operands[1 + 2 * r + d]);
  // The issuing thread waits until the copy has read the buffer; for the
  // global writes too only where the kernel might read them back.
  ir::Attrs attrs;
  if (!reads_through(fn, op->operands[0])) attrs["wait"] = std::string("read");
  b.create(OpKind::TmaStore, copy, {}, attrs);
  op->parent->erase(op);
}

// Whether every reader of `v` is a warpgroup dot reading it from shared
// memory, directly or through a trans (those into `trans`).
bool read_in_place(ir::Function& fn, const Value* v, const LayoutPlan& plan, std::vector<Op*>& trans) {
  auto users = users_of(fn);
  auto by_dot = [&](const Op* u, const Value* x) {
    if (u->kind != OpKind::Dot || u->operands[2] == x) return false;
    const DotLayouts& d = plan.dots.at(u);
    return (u->operands[0] == x && d.operand_in_smem(0)) || (u->operands[1] == x && d.operand_in_smem(1));
  };
  if (users[v].empty()) return false;
  for (Op* u : users[v]) {
    if (by_dot(u, v)) continue;
    if (u->kind != OpKind::Trans || users[u->result()].empty()) return false;
    for (const Op* uu : users[u->result()])
      if (!by_dot(uu, u->result())) return false;
    trans.push_back(u);
  }
  return true;
}

// Whether the block `op` copies is read in place by dots that are all
// done with it before the copy runs again: at the top level (it runs
// once), or in the body of a top-level loop (a persistent program's tile)
// where no dot in that body carries its accumulator around the loop (such
// a dot, asynchronous, would still read the buffer when the next
// iteration's copy writes it; the dots of a loop nested in the body are
// retired when that loop ends, async_dots.h).
bool copied_once(const ir::Function& fn, const Op& op) {
  if (op.parent == &fn.body) return true;
  const Op* around = op.parent->parent;
  if (!around || around->kind != OpKind::For || around->parent != &fn.body) return false;
  const ir::Region& body = *op.parent;
  const Op* yield = body.terminator();
  for (const auto& o : body.ops) {
    if (o->kind != OpKind::Dot) continue;
    bool carried_in = o->operands[2]->is_arg() && o->operands[2]->owner == &body;
    bool carried_out = yield && std::find(yield->operands.begin(), yield->operands.end(), o->result()) !=
                                    yield->operands.end();
    if (carried_in || carried_out) return false;
  }
  return true;
}

// Groups of the descriptor_loads left, in program order: a load joins the
// group before it in its region (one mbarrier, both copies in flight at
// once: attention's Q and first K block, two round trips to memory a tile
// otherwise) when its operands are all defined before the group's first
// load and nothing between them but pure ops and other loads (nothing that
// writes memory, waits or branches); the group's bytes stay below the
// mbarrier's transaction count (2^20).
std::vector<std::vector<Op*>> copy_groups(const std::vector<Op*>& loads,
                                          const std::function<int64_t(const Op&)>& bytes) {
  std::vector<std::vector<Op*>> groups;
  std::unordered_map<const ir::Region*, size_t> open;  // a region's last group
  std::unordered_map<const ir::Region*, int64_t> open_bytes;
  for (Op* op : loads) {
    ir::Region* r = op->parent;
    auto it = open.find(r);
    bool joins = it != open.end() && open_bytes[r] + bytes(*op) < (int64_t(1) << 20);
    if (joins) {
      const std::vector<Op*>& g = groups[it->second];
      // Between the group's last load and this one: quiet ops only.
      auto pos = std::next(r->find(g.back()));
      for (; joins && pos->get() != op; ++pos) {
        OpKind k = (*pos)->kind;
        joins = (*pos)->regions.empty() && (ir::op_is_pure(k) || k == OpKind::Load || k == OpKind::DescriptorLoad);
      }
      // Its operands from before the group's first load (an enclosing
      // region's, or earlier in this one).
      std::unordered_set<const Op*> after;
      for (auto p = r->find(g.front()); joins && p->get() != op; ++p) after.insert(p->get());
      for (const Value* v : op->operands) joins = joins && !(v->def && after.count(v->def));
    }
    if (joins) {
      groups[it->second].push_back(op);
      open_bytes[r] += bytes(*op);
    } else {
      open[r] = groups.size();
      open_bytes[r] = bytes(*op);
      groups.push_back({op});
    }
  }
  return groups;
}

}  // namespace

void tma_descriptors(ir::Function& fn, const LayoutPlan& plan) {
  std::vector<Op*> found;
  ir::walk(fn.body, [&](Op* o) {
    if (o->kind == OpKind::DescriptorLoad || o->kind == OpKind::DescriptorStore) found.push_back(o);
  });
  std::vector<Op*> loads;
  for (Op* op : found) {
    if (op->kind == OpKind::DescriptorStore) tensor_store(fn, op, plan);
    else loads.push_back(op);
  }
  // Each load's buffer, its type, and the copy's box.
  struct Copy {
    Type buf_type;
    TensorBox box;
  };
  std::unordered_map<const Op*, Copy> copies;
  for (Op* op : loads) {
    Value* v = op->result();
    Type buf_type{v->type.dtype, false, v->type.shape};
    buf_type.kind = ir::TypeKind::shared;
    buf_type.layout = fn.intern_layout(buffer_slot_layout(plan.of(v), v->type.shape, byte_size(v->type.dtype)));
    copies.emplace(op, Copy{buf_type, descriptor_box(*op, fn, buf_type)});
  }
  auto bytes = [&](const Op& op) {
    const TensorBox& box = copies.at(&op).box;
    return box.panel_bytes() * box.panels;
  };
  for (const std::vector<Op*>& group : copy_groups(loads, bytes)) {
    // At the group's first load: its mbarrier and buffers, every copy,
    // one wait.
    Op* head = group.front();
    ir::Builder b(head->parent, head->parent->find(head));
    b.loc = head->loc;
    Value* bar = b.create1(OpKind::LocalAlloc, {}, mbarrier_type(fn, 0));
    std::vector<Value*> bufs;
    int64_t total = 0;
    for (Op* op : group) {
      bufs.push_back(b.create1(OpKind::LocalAlloc, {}, copies.at(op).buf_type));
      total += bytes(*op);
    }
    b.create(OpKind::MbarrierInit, {bar}, {}, {{"count", int64_t(1)}});
    b.create(OpKind::MbarrierExpectTx, {bar}, {}, {{"bytes", total}});
    for (size_t i = 0; i < group.size(); ++i) {
      Op* op = group[i];
      const size_t r = descriptor_rank(*op);
      std::vector<Value*> copy{entry_tensor_map(fn, *op, copies.at(op).box), bufs[i], bar};
      for (size_t d = 0; d < r; ++d) copy.push_back(op->operands[1 + 2 * r + d]);
      b.create(OpKind::TmaLoad, copy, {});
    }
    b.create(OpKind::MbarrierWait, {bar, b.constant_int(ir::scalar_type(DType::i32), 0)}, {});
    b.create(OpKind::MbarrierInval, {bar}, {});
    for (size_t i = 0; i < group.size(); ++i) {
      Op* op = group[i];
      Value* v = op->result();
      const Type& buf_type = copies.at(op).buf_type;
      // A block copied once (at the top level, or once a tile of a
      // persistent program: copied_once) and read only by warpgroup dots
      // from shared memory (attention's Q) is read there in place, a
      // trans of it a view of the buffer; any other is loaded into its
      // layout's registers where the load was, a read of the generic
      // proxy, which a later tensor copy into these bytes (the next
      // use's, in a loop) must follow (expand_pipelines.h).
      std::vector<Op*> trans;
      if (copied_once(fn, *op) && read_in_place(fn, v, plan, trans)) {
        for (Op* t : trans) {
          Type tt = buf_type;
          tt.shape = t->result()->type.shape;
          tt.layout = fn.intern_layout(trans_layout(fn.layout_of(buf_type), t->attr_ints("order")));
          t->results[0]->type = tt;
        }
        ir::replace_uses(fn.body, v, bufs[i]);
      } else {
        ir::Builder at(op->parent, op->parent->find(op));
        at.loc = op->loc;
        Value* loaded = at.create1(OpKind::LocalLoad, {bufs[i]}, v->type);
        at.create(OpKind::FenceAsyncShared, {}, {});
        ir::replace_uses(fn.body, v, loaded);
      }
      op->parent->erase(op);
    }
  }
}

}  // namespace tl::codegen
