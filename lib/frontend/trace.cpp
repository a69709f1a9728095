// The tracer (include/tiledsl/detail/trace.h): the per-thread trace context,
// variable slots, and the loop / if / combine-region frames that turn the
// slots' values at entry and exit into loop-carried values and if results.
//
// Loop-carried detection: opening a loop gives every live slot a fresh body
// argument (even slots sharing one value, so `b = a` before the loop never
// confuses the two), and the body is traced once. At the close, a slot that
// still holds its own argument was not assigned in the body: the argument is
// replaced by the entry value and dropped. Every other slot is carried: its
// argument stays, the entry value becomes the init, the exit value is
// yielded, and the slot then holds the loop's result.
#include <algorithm>
#include <memory>
#include <optional>

#include "ir/ir.h"
#include "tiledsl/compile.h"
#include "tiledsl/detail/trace.h"

namespace tl::detail {

namespace {

struct Slot {
  Value* value = nullptr;
  ir::Loc loc;             // where the variable was created (may be unknown)
  bool alive = false;
  uint32_t live_pos = 0;   // index in Trace::live while alive
  // Set when the slot outlived the loop body, branch or combine function
  // whose value it holds (a std::optional or container declared outside,
  // assigned inside): that value exists only there. Reading the slot is then
  // an error naming `escaped_from` until it is assigned again; loops and ifs
  // opened meanwhile neither carry it nor yield it.
  const char* escaped_from = nullptr;  // "tl::range body", ...
  ir::Loc escaped_loc;                 // that region's line
};

// What a frame remembers of one slot live at its opening.
struct Entry {
  uint32_t slot;
  Value* entry;             // value at entry
  Value* arg = nullptr;     // loops: the slot's body argument
};

struct Frame {
  enum class Kind { Loop, If, Combine } kind;
  int64_t id;
  ir::Loc loc;
  ir::Op* op;               // the for / if / reduce / scan op
  std::vector<Entry> entries;
};

struct Trace {
  uint32_t generation;
  std::unique_ptr<ir::Function> fn;
  ir::Builder builder;
  std::vector<Slot> slots;
  std::vector<uint32_t> live;  // indices of alive slots
  std::vector<Frame> frames;
  std::optional<std::string> pending_error;  // reported by trace_end
  int64_t next_frame = 1;
};

thread_local Trace* active = nullptr;
thread_local uint32_t generations = 0;

Trace& require_trace(const ir::Loc& loc, std::string_view op) {
  if (!active) fail(loc, op, "expected to run inside tl::compile, found no active trace");
  return *active;
}

SlotId make_id(uint32_t generation, uint32_t index) { return (uint64_t(generation) << 32) | (uint64_t(index) + 1); }

Slot* lookup(SlotId s) {
  if (!active || s == kNoSlot || uint32_t(s >> 32) != active->generation) return nullptr;
  uint32_t index = uint32_t(s & 0xffffffffu) - 1;
  return index < active->slots.size() ? &active->slots[index] : nullptr;
}

// Where a value came from, for messages: its op's line, else the slot's.
std::string origin(const Value* v, const Slot& s) {
  if (v->def && v->def->loc.known()) return v->def->loc.str();
  return s.loc.str();
}

void set_insertion_end(Trace& t, ir::Region* r) { t.builder.set_insertion_end(r); }

// The live slots in creation order, so that carried values and if results
// appear in the order the variables were declared.
std::vector<uint32_t> live_in_order(const Trace& t) {
  std::vector<uint32_t> v = t.live;
  std::sort(v.begin(), v.end());
  return v;
}

// The slots a region opened now reads from outside: the live ones, less
// those holding a value of a region already closed (Slot::escaped_from).
std::vector<uint32_t> entry_slots(const Trace& t) {
  std::vector<uint32_t> v;
  for (uint32_t index : live_in_order(t))
    if (!t.slots[index].escaped_from) v.push_back(index);
  return v;
}

// Marks the live slots that are not `f`'s entries and hold a value made in
// its region (`what`: "tl::range body", ...), which is out of scope after
// it: a variable created, or first assigned, inside a loop body or branch
// but declared outside (std::optional, a container). Marked slots already
// holding an older region's value keep that mark.
void mark_escaped(Trace& t, const Frame& f, const char* what) {
  // f.entries are in slot order (entry_slots), so a lookup is a search.
  auto is_entry = [&](uint32_t index) {
    auto it = std::lower_bound(f.entries.begin(), f.entries.end(), index,
                               [](const Entry& e, uint32_t i) { return e.slot < i; });
    return it != f.entries.end() && it->slot == index;
  };
  for (uint32_t index : t.live) {
    Slot& s = t.slots[index];
    if (s.escaped_from || is_entry(index)) continue;
    s.escaped_from = what;
    s.escaped_loc = f.loc;
  }
}

// Loops, ifs and combine functions nest at most ir::kMaxRegionDepth deep:
// the error names the line of the one that would go deeper (user code that
// recurses while tracing, typically), before any stage recurses that far.
void check_depth(const Trace& t, const ir::Loc& loc, std::string_view op) {
  if (int(t.frames.size()) + 1 > ir::kMaxRegionDepth)
    fail(loc, op,
         "expected loops, ifs and combine functions nested at most " + std::to_string(ir::kMaxRegionDepth) +
             " deep, found one at depth " + std::to_string(t.frames.size() + 1));
}

// Restores the slots of a frame being abandoned and moves the insertion point
// out of its op.
void unwind_frame(Trace& t, const Frame& f) {
  for (const Entry& e : f.entries) t.slots[e.slot].value = e.entry;
  set_insertion_end(t, f.op->parent);
}

// Keeps the arguments of `r` marked in `keep` (renumbered), dropping the
// others (a loop's slots its body did not assign).
void keep_args(ir::Region& r, const std::vector<bool>& keep) {
  std::vector<std::unique_ptr<Value>> args;
  for (size_t i = 0; i < r.args.size(); ++i)
    if (keep[i]) {
      r.args[i]->index = int(args.size());
      args.push_back(std::move(r.args[i]));
    }
  r.args = std::move(args);
}

// A loop body traced once cannot destroy a variable it reads that exists
// before the loop (std::optional::reset or emplace, a container cleared or
// resized): every later iteration would read the value from before the
// loop, not what replaced it, since what replaced it is another C++ object.
// `reads`: each region of the loop with the arguments it reads entry i from.
void check_entries_alive(const Frame& f, std::string_view op,
                         const std::vector<std::pair<ir::Region*, std::vector<Value*>>>& reads) {
  const Trace& t = *active;
  for (size_t i = 0; i < f.entries.size(); ++i) {
    const Entry& e = f.entries[i];
    if (t.slots[e.slot].alive) continue;
    int uses = 0;
    for (const auto& [region, args] : reads) uses += ir::count_uses(*region, args.at(i));
    if (uses == 0) continue;
    fail(f.loc, op,
         "expected a variable that exists before the loop and is read in it to outlive its body, found one "
         "(value at loop entry from " + origin(e.entry, t.slots[e.slot]) +
             ") destroyed in the body (std::optional::reset or emplace, a container cleared or resized?): the body "
             "is traced once, so each iteration would read the value from before the loop; assign to the variable "
             "instead (x = value)");
  }
}

// The body arguments of a frame's entries.
std::vector<Value*> entry_args(const Frame& f) {
  std::vector<Value*> args;
  for (const Entry& e : f.entries) args.push_back(e.arg);
  return args;
}

// A carried slot must leave the loop body with the type it entered with.
void check_carried_type(const ir::Loc& loc, std::string_view op, const Entry& e, const Slot& s) {
  if (s.value->type == e.arg->type) return;
  fail(loc, op,
       "expected a loop-carried variable to keep its type " + e.arg->type.str() + " (value at loop entry from " +
           origin(e.entry, s) + "), found " + s.value->type.str() + " (assigned at " + origin(s.value, s) + ")");
}

}  // namespace

void fail(const ir::Loc& loc, std::string_view op, const std::string& msg) {
  throw Error(loc.str() + ": " + std::string(op) + ": " + msg);
}

bool tracing() { return active != nullptr; }

// ---- lifetime ---------------------------------------------------------------

std::vector<Value*> trace_begin(const std::string& name, const std::vector<ir::Type>& params, const ir::Loc& loc) {
  if (active)
    fail(loc, "compile", "expected no kernel being traced on this thread, found tl::compile called while tracing");
  auto t = std::make_unique<Trace>();
  t->generation = ++generations;
  t->fn = std::make_unique<ir::Function>();
  t->fn->name = name;
  t->fn->loc = loc;
  std::vector<Value*> args;
  for (const auto& p : params) args.push_back(t->fn->body.add_arg(p));
  t->builder.set_insertion_end(&t->fn->body);
  active = t.release();
  return args;
}

ir::Function* trace_end() {
  std::unique_ptr<Trace> t(active);
  active = nullptr;
  if (!t) throw Error("trace_end: expected an active trace, found none");
  if (t->pending_error) throw Error(*t->pending_error);
  if (!t->frames.empty())
    fail(t->frames.back().loc, "range", "expected the loop body to be closed, found it still open at the end of the kernel");
  return t->fn.release();
}

void trace_abort() noexcept {
  delete active;
  active = nullptr;
}

void trace_rethrow() {
  std::optional<std::string> pending = active ? active->pending_error : std::nullopt;
  trace_abort();
  if (pending) throw Error(*pending);
  throw;
}

// ---- values and ops ---------------------------------------------------------

ir::Type type_of(const Value* v) { return v->type; }

std::vector<Value*> emit(ir::OpKind kind, const std::vector<Value*>& operands, const std::vector<ir::Type>& results,
                         ir::Attrs attrs, const ir::Loc& loc) {
  Trace& t = require_trace(loc, ir::op_name(kind));
  for (const auto& r : results)  // every tile is made by some op emitted here
    if (exceeds_max_tile(r))
      fail(loc, ir::op_name(kind),
           "expected a tile of at most " + std::to_string(max_tile_elements) +
               " elements (tl::max_tile_elements), found " + r.str() + " in kernel '" + t.fn->name + "'");
  t.builder.loc = loc;
  ir::Op* op = t.builder.create(kind, operands, results, std::move(attrs));
  std::vector<Value*> out;
  for (auto& r : op->results) out.push_back(r.get());
  return out;
}

Value* emit1(ir::OpKind kind, const std::vector<Value*>& operands, const ir::Type& result, ir::Attrs attrs,
             const ir::Loc& loc) {
  return emit(kind, operands, {result}, std::move(attrs), loc)[0];
}

// ---- slots ------------------------------------------------------------------

SlotId slot_new(Value* v, const ir::Loc& loc) {
  Trace& t = require_trace(loc, "tile");
  uint32_t index = uint32_t(t.slots.size());
  t.slots.push_back(Slot{v, loc, true, uint32_t(t.live.size()), nullptr, {}});
  t.live.push_back(index);
  return make_id(t.generation, index);
}

Value* slot_get(SlotId s) {
  Slot* slot = lookup(s);
  if (!slot)
    throw Error(std::string("tile: expected a traced value of the kernel being traced (inside tl::compile), found ") +
                (active ? "one from another trace (a tile kept in a static, global or captured variable from an "
                          "earlier tl::compile? a kernel's tiles exist only while it is traced)"
                        : "no active trace"));
  if (slot->escaped_from)
    fail(slot->escaped_loc, "tile",
         std::string("expected a variable read after a ") + slot->escaped_from +
             " to hold a value from outside it, found one made or last assigned inside it (a std::optional or "
             "container declared outside and assigned inside?): that value exists only there; assign the variable "
             "before the " + slot->escaped_from + " to carry it out, or again before reading it");
  return slot->value;
}

void slot_set(SlotId s, Value* v) {
  Slot* slot = lookup(s);
  if (!slot) {
    slot_get(s);  // throws the explanation
    return;
  }
  slot->value = v;
  slot->escaped_from = nullptr;
}

void slot_free(SlotId s) noexcept {
  Slot* slot = lookup(s);
  if (!slot || !slot->alive) return;
  // Dead slots keep their last value: a frame that recorded the slot at
  // entry still reads it when it closes.
  slot->alive = false;
  Trace& t = *active;
  uint32_t moved = t.live.back();
  t.live[slot->live_pos] = moved;
  t.slots[moved].live_pos = slot->live_pos;
  t.live.pop_back();
}

// ---- loops ------------------------------------------------------------------

int64_t loop_begin(Value* lo, Value* hi, Value* step, ir::Attrs attrs, const ir::Loc& loc, Value** iv) {
  Trace& t = require_trace(loc, "range");
  check_depth(t, loc, "range");
  t.builder.loc = loc;
  ir::Op* op = t.builder.create(ir::OpKind::For, {lo, hi, step}, {}, std::move(attrs));
  ir::Region* body = op->add_region();
  *iv = body->add_arg(lo->type);
  Frame f{Frame::Kind::Loop, t.next_frame++, loc, op, {}};
  for (uint32_t index : entry_slots(t)) {
    Slot& s = t.slots[index];
    Value* arg = body->add_arg(s.value->type);
    f.entries.push_back(Entry{index, s.value, arg});
    s.value = arg;
  }
  t.frames.push_back(std::move(f));
  set_insertion_end(t, body);
  return t.frames.back().id;
}

void loop_end(int64_t frame) {
  Trace& t = require_trace({}, "range");
  if (t.frames.empty() || t.frames.back().id != frame)
    throw Error("range: expected the innermost open loop to close, found another one (loops closed out of order)");
  Frame& f = t.frames.back();
  ir::Op* op = f.op;
  ir::Region* body = op->regions[0].get();

  check_entries_alive(f, "range", {{body, entry_args(f)}});
  std::vector<const Entry*> carried;
  std::vector<Value*> exits;
  for (const Entry& e : f.entries) {
    const Slot& s = t.slots[e.slot];
    if (s.value == e.arg) continue;
    check_carried_type(f.loc, "range", e, s);
    carried.push_back(&e);
    exits.push_back(s.value);
  }
  t.builder.loc = f.loc;
  t.builder.create(ir::OpKind::Yield, exits, {});

  // Unassigned slots: their body argument means the entry value (one walk
  // of the body for all of them: a kernel may hold many live variables).
  std::vector<bool> keep(body->args.size(), false);
  keep[0] = true;  // induction variable
  ir::Replacements unassigned;
  for (const Entry& e : f.entries) {
    if (t.slots[e.slot].value == e.arg) {
      unassigned.add(e.arg, e.entry);
      t.slots[e.slot].value = e.entry;
    } else {
      keep[e.arg->index] = true;
    }
  }
  unassigned.apply_all(*body);
  keep_args(*body, keep);

  for (const Entry* e : carried) {
    op->operands.push_back(e->entry);
    t.slots[e->slot].value = op->add_result(e->arg->type);
  }
  mark_escaped(t, f, "tl::range body");
  set_insertion_end(t, op->parent);
  t.frames.pop_back();
}

void loop_abandon(int64_t frame, bool record_error) noexcept {
  if (!active) return;
  Trace& t = *active;
  auto it = std::find_if(t.frames.begin(), t.frames.end(), [&](const Frame& f) { return f.id == frame; });
  if (it == t.frames.end()) return;
  ir::Loc loc = it->loc;
  while (!t.frames.empty()) {
    Frame f = std::move(t.frames.back());
    t.frames.pop_back();
    unwind_frame(t, f);
    if (f.id == frame) break;
  }
  if (record_error && !t.pending_error) {
    try {
      t.pending_error = loc.str() + ": range: loop at " + loc.str() +
                        " was left without finishing its body (break or return inside a traced loop?)";
    } catch (...) {
    }
  }
}

// ---- while ------------------------------------------------------------------

void trace_while(const ir::Loc& loc, function_ref<Value*()> cond_fn, function_ref<void()> body_fn) {
  Trace& t = require_trace(loc, "while_");
  check_depth(t, loc, "while_");
  t.builder.loc = loc;
  ir::Op* op = t.builder.create(ir::OpKind::While, {}, {});
  ir::Region* cond = op->add_region();
  ir::Region* body = op->add_region();
  Frame f{Frame::Kind::Loop, t.next_frame++, loc, op, {}};
  std::vector<Value*> cond_args;
  for (uint32_t index : entry_slots(t)) {
    Slot& s = t.slots[index];
    cond_args.push_back(cond->add_arg(s.value->type));
    f.entries.push_back(Entry{index, s.value, body->add_arg(s.value->type)});
  }
  t.frames.push_back(std::move(f));
  int64_t id = t.frames.back().id;
  // Runs `trace` with the frame's slots reading `args` (per entry), and
  // checks it left no loop of its own open.
  auto traced = [&](ir::Region* r, const std::vector<Value*>& args, auto&& trace, const char* what) {
    std::vector<Entry>& entries = t.frames.back().entries;
    for (size_t i = 0; i < entries.size(); ++i) t.slots[entries[i].slot].value = args[i];
    set_insertion_end(t, r);
    try {
      trace();
      if (t.frames.empty() || t.frames.back().id != id)
        fail(loc, "while_", std::string("expected every loop opened in the ") + what +
                                " to be closed in it, found one left open");
    } catch (...) {
      if (!t.frames.empty() && t.frames.back().id == id) {
        unwind_frame(t, t.frames.back());
        t.frames.pop_back();
      }
      throw;
    }
  };
  traced(cond, cond_args, [&] {
    Value* c = cond_fn();
    for (size_t i = 0; i < cond_args.size(); ++i) {
      const Slot& s = t.slots[t.frames.back().entries[i].slot];
      if (s.value != cond_args[i])
        fail(loc, "while_", "expected the condition to leave variables unchanged, found one assigned at " +
                                origin(s.value, s));
    }
    if (!(c->type == ir::scalar_type(DType::i1)))
      fail(loc, "while_", "expected the condition to return a scalar bool, found " + c->type.str());
    t.builder.loc = loc;
    t.builder.create(ir::OpKind::Yield, {c}, {});
    mark_escaped(t, t.frames.back(), "tl::while_ condition");
  }, "condition");
  std::vector<Value*> body_args;
  for (const Entry& e : t.frames.back().entries) body_args.push_back(e.arg);
  traced(body, body_args, [&] {
    body_fn();
    check_entries_alive(t.frames.back(), "while_", {{cond, cond_args}, {body, body_args}});
    mark_escaped(t, t.frames.back(), "tl::while_ body");
  }, "body");

  Frame done = std::move(t.frames.back());
  t.frames.pop_back();
  std::vector<Value*> exits;
  std::vector<bool> keep(done.entries.size(), false);
  ir::Replacements unassigned;
  for (size_t i = 0; i < done.entries.size(); ++i) {
    const Entry& e = done.entries[i];
    Slot& s = t.slots[e.slot];
    if (s.value == e.arg) {
      unassigned.add(e.arg, e.entry);
      unassigned.add(cond_args[i], e.entry);
      s.value = e.entry;
      continue;
    }
    check_carried_type(loc, "while_", e, s);
    keep[i] = true;
    exits.push_back(s.value);
  }
  t.builder.loc = loc;
  t.builder.create(ir::OpKind::Yield, exits, {});
  for (ir::Region* r : {cond, body}) {
    unassigned.apply_all(*r);
    keep_args(*r, keep);
  }
  for (size_t i = 0; i < done.entries.size(); ++i)
    if (keep[i]) {
      op->operands.push_back(done.entries[i].entry);
      t.slots[done.entries[i].slot].value = op->add_result(done.entries[i].arg->type);
    }
  set_insertion_end(t, op->parent);
}

// ---- if ---------------------------------------------------------------------

void trace_if(Value* cond, const ir::Loc& loc, function_ref<void()> then_fn, const function_ref<void()>* else_fn) {
  Trace& t = require_trace(loc, "if_");
  check_depth(t, loc, "if_");
  if (!(cond->type == ir::scalar_type(DType::i1)))
    fail(loc, "if_", "expected a scalar bool condition, found " + cond->type.str());
  t.builder.loc = loc;
  ir::Op* op = t.builder.create(ir::OpKind::If, {cond}, {});
  ir::Region* branches[2] = {op->add_region(), op->add_region()};
  Frame f{Frame::Kind::If, t.next_frame++, loc, op, {}};
  for (uint32_t index : entry_slots(t)) f.entries.push_back(Entry{index, t.slots[index].value});
  t.frames.push_back(f);
  int64_t id = f.id;

  // exits[b][i]: value of entry i at the end of branch b.
  std::vector<Value*> exits[2];
  for (int b = 0; b < 2; ++b) {
    set_insertion_end(t, branches[b]);
    try {
      if (b == 0) then_fn();
      else if (else_fn) (*else_fn)();
    } catch (...) {
      if (!t.frames.empty() && t.frames.back().id == id) {
        unwind_frame(t, t.frames.back());
        t.frames.pop_back();
      }
      throw;
    }
    if (t.frames.empty() || t.frames.back().id != id)
      fail(loc, "if_", "expected every loop opened in a branch to be closed in it, found one left open");
    mark_escaped(t, t.frames.back(), "tl::if_ branch");
    for (const Entry& e : t.frames.back().entries) {
      exits[b].push_back(t.slots[e.slot].value);
      t.slots[e.slot].value = e.entry;
    }
  }

  Frame done = std::move(t.frames.back());
  t.frames.pop_back();
  std::vector<Value*> yields[2];
  std::vector<const Entry*> changed;
  for (size_t i = 0; i < done.entries.size(); ++i) {
    const Entry& e = done.entries[i];
    if (exits[0][i] == e.entry && exits[1][i] == e.entry) continue;
    for (int b = 0; b < 2; ++b)
      if (!(exits[b][i]->type == e.entry->type))
        fail(loc, "if_",
             "expected a variable assigned in a branch to keep its type " + e.entry->type.str() + " (value before the if from " +
                 origin(e.entry, t.slots[e.slot]) + "), found " + exits[b][i]->type.str() + " (assigned at " +
                 origin(exits[b][i], t.slots[e.slot]) + ")");
    changed.push_back(&e);
    yields[0].push_back(exits[0][i]);
    yields[1].push_back(exits[1][i]);
  }
  for (int b = 0; b < 2; ++b) {
    set_insertion_end(t, branches[b]);
    t.builder.loc = loc;
    t.builder.create(ir::OpKind::Yield, yields[b], {});
  }
  for (const Entry* e : changed) t.slots[e->slot].value = op->add_result(e->entry->type);
  set_insertion_end(t, op->parent);
}

// ---- combine regions --------------------------------------------------------

std::vector<Value*> emit_combine(ir::OpKind kind, const std::vector<Value*>& operands,
                                 const std::vector<ir::Type>& results, ir::Attrs attrs, const ir::Loc& loc,
                                 function_ref<std::vector<Value*>(const std::vector<Value*>&)> combine) {
  std::string_view name = ir::op_name(kind);
  Trace& t = require_trace(loc, name);
  check_depth(t, loc, name);
  t.builder.loc = loc;
  ir::Op* op = t.builder.create(kind, operands, results, std::move(attrs));
  ir::Region* region = op->add_region();
  std::vector<Value*> args;
  std::vector<ir::Type> elems;
  for (Value* v : operands) elems.push_back(v->type.scalar());
  for (int side = 0; side < 2; ++side)
    for (const auto& e : elems) args.push_back(region->add_arg(e));

  Frame f{Frame::Kind::Combine, t.next_frame++, loc, op, {}};
  for (uint32_t index : entry_slots(t)) f.entries.push_back(Entry{index, t.slots[index].value});
  t.frames.push_back(f);
  int64_t id = f.id;
  set_insertion_end(t, region);
  std::vector<Value*> yields;
  try {
    yields = combine(args);
    if (t.frames.empty() || t.frames.back().id != id)
      fail(loc, name, "expected every loop opened in the combine function to be closed in it, found one left open");
    for (const Entry& e : t.frames.back().entries)
      if (t.slots[e.slot].value != e.entry)
        fail(loc, name,
             "expected the combine function to leave outer variables unchanged, found one assigned at " +
                 origin(t.slots[e.slot].value, t.slots[e.slot]));
    if (yields.size() != elems.size())
      fail(loc, name, "expected the combine function to return " + std::to_string(elems.size()) + " values, found " +
                          std::to_string(yields.size()));
    for (size_t i = 0; i < yields.size(); ++i)
      if (!(yields[i]->type == elems[i]))
        fail(loc, name, "expected the combine function to return " + elems[i].str() + ", found " + yields[i]->type.str());
  } catch (...) {
    if (!t.frames.empty() && t.frames.back().id == id) {
      unwind_frame(t, t.frames.back());
      t.frames.pop_back();
    }
    throw;
  }
  mark_escaped(t, t.frames.back(), "combine function");
  t.builder.loc = loc;
  t.builder.create(ir::OpKind::Yield, yields, {});
  t.frames.pop_back();
  set_insertion_end(t, op->parent);
  std::vector<Value*> out;
  for (auto& r : op->results) out.push_back(r.get());
  return out;
}

}  // namespace tl::detail
