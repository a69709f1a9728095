// Tile IR: SSA values, ops with nested single-block regions, functions.
//
// Ownership: a Function owns its body Region; a Region owns its block
// arguments and its ops; an Op owns its results and its regions. Values are
// referred to by raw pointer; there are no use lists. A pass that replaces
// values while walking ops in program order records the replacements in a
// Replacements table and applies it to each op it visits next, so it stays
// linear in the number of ops (replace_uses walks a whole region per value).
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/export.h"
#include "ir/linear_layout.h"
#include "tiledsl/detail/ir_types.h"

TILEDSL_SHARED_BEGIN

namespace tl::ir {

class Op;
class Region;

// How deeply regions may nest: a function body is depth 0, the body of a
// `for` in it depth 1, and so on. The parser, the tracer (tl::range, tl::if_,
// combine functions) and the verifier reject deeper IR with an error naming
// the line, the limit and the depth found. Passes, the printer and the back
// ends recurse once per level, so this bound is what keeps them within the
// stack; real kernels nest a handful of levels.
inline constexpr int kMaxRegionDepth = 128;

// Whether `s` is an identifier (letters, digits and '_', not starting with
// a digit): a function's name, which becomes a binary's entry symbol.
bool is_identifier(std::string_view s);

// Op kind metadata, from ops.def.
std::string_view op_name(OpKind k);
std::optional<OpKind> op_from_name(std::string_view name);
bool op_is_pure(OpKind k);         // trait P
bool op_is_elementwise(OpKind k);  // trait E
bool op_is_terminator(OpKind k);   // trait T

class Value {
 public:
  Type type;
  Op* def = nullptr;          // defining op, or null for a region argument
  Region* owner = nullptr;    // region holding the argument (when def is null)
  int index = 0;              // result index, or argument index

  bool is_arg() const { return def == nullptr; }
};

class Region {
 public:
  std::vector<std::unique_ptr<Value>> args;
  std::list<std::unique_ptr<Op>> ops;
  Op* parent = nullptr;  // null for a function body

  Value* add_arg(Type t);
  using iterator = std::list<std::unique_ptr<Op>>::iterator;
  // Takes ownership of `op`, inserts it before `pos`, returns it.
  Op* insert(iterator pos, std::unique_ptr<Op> op);
  Op* append(std::unique_ptr<Op> op) { return insert(ops.end(), std::move(op)); }
  // Removes and destroys `op` (its results must have no remaining uses).
  void erase(Op* op);
  iterator find(Op* op);
  Op* terminator() const;  // the last op if it is a terminator
};

class Op {
 public:
  OpKind kind;
  std::vector<Value*> operands;
  std::vector<std::unique_ptr<Value>> results;
  Attrs attrs;
  std::vector<std::unique_ptr<Region>> regions;
  Loc loc;
  Region* parent = nullptr;

  explicit Op(OpKind k) : kind(k) {}
  std::string_view name() const { return op_name(kind); }
  Value* result(int i = 0) const { return results.at(i).get(); }
  Value* add_result(Type t);
  Region* add_region();

  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  // Typed accessors; throw tl::Error naming the op when missing or mistyped.
  int64_t attr_int(const std::string& k) const;
  double attr_float(const std::string& k) const;
  const std::string& attr_str(const std::string& k) const;
  const std::vector<int64_t>& attr_ints(const std::string& k) const;
  int64_t attr_int_or(const std::string& k, int64_t dflt) const;
  std::string attr_str_or(const std::string& k, const std::string& dflt) const;
};

class Function {
 public:
  std::string name;
  Region body;  // body.args are the kernel parameters
  Loc loc;
  // The GPU IR's: the kernel's launch shape (num_warps, warp_size,
  // num_ctas), and the layout table its types number into (Type::layout k
  // is layouts[k - 1], printed #lk). Both empty in the Tile IR.
  Attrs attrs;
  std::vector<LinearLayout> layouts;

  Function() = default;
  Function(const Function&) = delete;

  bool is_gpu() const { return attrs.count("num_warps") != 0; }
  // The number of `l` in the table, added when it is not there yet.
  int32_t intern_layout(const LinearLayout& l);
  // The layout a GPU IR type numbers; throws tl::Error for none.
  const LinearLayout& layout_of(const Type& t) const;
};

// A copy of `fn` with fresh values (the GPU stage rewrites its own copy of
// a kernel's Tile IR, which other targets compile too).
std::unique_ptr<Function> clone(const Function& fn);
// A copy of `op` and its regions, its operands read through `map` (a value
// it does not hold as it is); `map` gains each copied value's copy.
std::unique_ptr<Op> clone_op(const Op& op, std::unordered_map<const Value*, Value*>& map);

class Module {
 public:
  std::vector<std::unique_ptr<Function>> functions;
  Function* lookup(std::string_view name) const;
};

// Inserts ops at a point in a region.
class Builder {
 public:
  Builder() = default;
  explicit Builder(Region* r) : region_(r), pos_(r->ops.end()) {}
  Builder(Region* r, Region::iterator pos) : region_(r), pos_(pos) {}

  Region* region() const { return region_; }
  Region::iterator pos() const { return pos_; }
  void set_insertion_end(Region* r) { region_ = r; pos_ = r->ops.end(); }
  void set_insertion_before(Op* op);

  Loc loc;  // attached to every op created

  Op* create(OpKind k, std::vector<Value*> operands, std::vector<Type> result_types,
             Attrs attrs = {});
  // Single-result convenience.
  Value* create1(OpKind k, std::vector<Value*> operands, Type result, Attrs attrs = {}) {
    return create(k, std::move(operands), {std::move(result)}, std::move(attrs))->result(0);
  }
  Value* constant_int(Type t, int64_t v) { return create1(OpKind::Constant, {}, t, {{"value", v}}); }
  Value* constant_float(Type t, double v) { return create1(OpKind::Constant, {}, t, {{"value", v}}); }

 private:
  Region* region_ = nullptr;
  Region::iterator pos_;
};

// Walks every op in pre-order (an op before the ops of its regions).
void walk(Region& r, const std::function<void(Op*)>& fn);
// The same from `op`: it, then the ops nested in its regions.
void walk(Op& op, const std::function<void(Op*)>& fn);
// Replaces every use of `from` by `to` in ops nested in `r`. Walks all of
// `r`: a pass replacing many values uses Replacements instead.
void replace_uses(Region& r, Value* from, Value* to);

// Values to read as other values, for a pass that removes or replaces ops
// while it walks the IR in program order: it records `add(result, by)` and
// calls `apply(op)` on every op it reaches afterwards. In SSA every use comes
// after its definition (later in the region, or nested there), so each use
// is rewritten once, when its op is reached. Removed ops are kept alive by
// the table (`erase`): a freed value's address could otherwise be reused by a
// new op's result and be mistaken for a replaced one.
class Replacements {
 public:
  // From now on `from` reads as `to` (which may itself be replaced later).
  void add(const Value* from, Value* to) {
    if (from != to) map_[from] = to;
  }
  // Rewrites the operands of `op` (not those of ops nested in it).
  void apply(Op& op);
  // Rewrites the operands of every op nested in `r`, in one walk.
  void apply_all(Region& r);
  // Unlinks the op at `it` from `r`, keeps it until the table dies, and
  // returns the iterator after it.
  Region::iterator erase(Region& r, Region::iterator it);
  bool empty() const { return map_.empty(); }

 private:
  Value* resolve(Value* v);
  std::unordered_map<const Value*, Value*> map_;
  std::vector<std::unique_ptr<Op>> removed_;
};
// Whether `op` is `outer` or nested in one of its regions.
bool is_within(const Op* op, const Op* outer);
// The warp_specialize one of whose partitions other than the first (the
// default one) holds `op`, or null.
const Op* side_partition(const Op* op);
// Counts uses of `v` in ops nested in `r`.
int count_uses(Region& r, Value* v);
// True if `v` is defined inside `r` (as an op result or argument, at any depth).
bool defined_in(const Value* v, const Region& r);

// Loops (for, while) carry values round their iterations: carried value k
// is result k, enters as operand carried_init_index + k, is an argument of
// each region (a for's body after its induction variable; a while's
// condition and body), and comes back as operand k of the body's yield
// (the last region's).
bool is_loop(const Op& op);
size_t carried_init_index(const Op& loop);
// The region arguments that hold carried value k.
std::vector<Value*> carried_args(const Op& loop, size_t k);
// What the body yields for carried value k (null while the body has no yield).
Value* carried_yield(const Op& loop, size_t k);

}  // namespace tl::ir

TILEDSL_SHARED_END
