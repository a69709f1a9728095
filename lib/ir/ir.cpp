// Tile IR core: op metadata from ops.def, region editing, walking.
#include "ir/ir.h"

#include <algorithm>
#include <cstring>

namespace tl::ir {

namespace {
struct OpInfo {
  OpKind kind;
  std::string_view name;
  const char* traits;
};
constexpr OpInfo kOps[] = {
#define OP(Enum, Name, Traits) {OpKind::Enum, Name, Traits},
#include "tiledsl/detail/ops.def"
};
const OpInfo& info(OpKind k) { return kOps[size_t(k)]; }
bool has_trait(OpKind k, char t) { return std::strchr(info(k).traits, t) != nullptr; }
}  // namespace

std::string_view op_name(OpKind k) { return info(k).name; }
std::optional<OpKind> op_from_name(std::string_view name) {
  for (const auto& i : kOps)
    if (i.name == name) return i.kind;
  return std::nullopt;
}
bool is_identifier(std::string_view s) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !letter(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

bool op_is_pure(OpKind k) { return has_trait(k, 'P'); }
bool op_is_elementwise(OpKind k) { return has_trait(k, 'E'); }
bool op_is_terminator(OpKind k) { return has_trait(k, 'T'); }

Value* Region::add_arg(Type t) {
  auto v = std::make_unique<Value>();
  v->type = std::move(t);
  v->owner = this;
  v->index = int(args.size());
  args.push_back(std::move(v));
  return args.back().get();
}

Op* Region::insert(iterator pos, std::unique_ptr<Op> op) {
  op->parent = this;
  return ops.insert(pos, std::move(op))->get();
}

Region::iterator Region::find(Op* op) {
  return std::find_if(ops.begin(), ops.end(), [&](const auto& p) { return p.get() == op; });
}

void Region::erase(Op* op) {
  auto it = find(op);
  if (it != ops.end()) ops.erase(it);
}

Op* Region::terminator() const {
  if (ops.empty() || !op_is_terminator(ops.back()->kind)) return nullptr;
  return ops.back().get();
}

Value* Op::add_result(Type t) {
  auto v = std::make_unique<Value>();
  v->type = std::move(t);
  v->def = this;
  v->index = int(results.size());
  results.push_back(std::move(v));
  return results.back().get();
}

Region* Op::add_region() {
  regions.push_back(std::make_unique<Region>());
  regions.back()->parent = this;
  return regions.back().get();
}

namespace {
[[noreturn]] void attr_error(const Op& op, const std::string& k, const char* want) {
  throw Error(op.loc.str() + ": op '" + std::string(op.name()) + "' expects attribute '" + k +
              "' of kind " + want);
}
template <class T>
const T& get_attr(const Op& op, const std::string& k, const char* want) {
  auto it = op.attrs.find(k);
  if (it == op.attrs.end() || !std::holds_alternative<T>(it->second)) attr_error(op, k, want);
  return std::get<T>(it->second);
}
}  // namespace

int64_t Op::attr_int(const std::string& k) const { return get_attr<int64_t>(*this, k, "integer"); }
double Op::attr_float(const std::string& k) const {
  auto it = attrs.find(k);
  if (it != attrs.end() && std::holds_alternative<int64_t>(it->second)) return double(std::get<int64_t>(it->second));
  return get_attr<double>(*this, k, "float");
}
const std::string& Op::attr_str(const std::string& k) const { return get_attr<std::string>(*this, k, "string"); }
const std::vector<int64_t>& Op::attr_ints(const std::string& k) const {
  return get_attr<std::vector<int64_t>>(*this, k, "integer array");
}
int64_t Op::attr_int_or(const std::string& k, int64_t dflt) const { return has_attr(k) ? attr_int(k) : dflt; }
std::string Op::attr_str_or(const std::string& k, const std::string& dflt) const {
  return has_attr(k) ? attr_str(k) : dflt;
}

Function* Module::lookup(std::string_view name) const {
  for (const auto& f : functions)
    if (f->name == name) return f.get();
  return nullptr;
}

void Builder::set_insertion_before(Op* op) {
  region_ = op->parent;
  pos_ = region_->find(op);
}

Op* Builder::create(OpKind k, std::vector<Value*> operands, std::vector<Type> result_types, Attrs attrs) {
  auto op = std::make_unique<Op>(k);
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->loc = loc;
  for (auto& t : result_types) op->add_result(std::move(t));
  return region_->insert(pos_, std::move(op));
}

void walk(Region& r, const std::function<void(Op*)>& fn) {
  for (auto& op : r.ops) {
    fn(op.get());
    for (auto& sub : op->regions) walk(*sub, fn);
  }
}

void walk(Op& op, const std::function<void(Op*)>& fn) {
  fn(&op);
  for (auto& sub : op.regions) walk(*sub, fn);
}

void replace_uses(Region& r, Value* from, Value* to) {
  walk(r, [&](Op* op) {
    for (auto& v : op->operands)
      if (v == from) v = to;
  });
}

Value* Replacements::resolve(Value* v) {
  Value* root = v;
  for (auto it = map_.find(root); it != map_.end(); it = map_.find(root)) root = it->second;
  // Path compression: every value on the chain now points at its end.
  while (v != root) {
    auto it = map_.find(v);
    v = it->second;
    it->second = root;
  }
  return root;
}

void Replacements::apply(Op& op) {
  if (map_.empty()) return;
  for (auto& v : op.operands)
    if (v) v = resolve(v);
}

void Replacements::apply_all(Region& r) {
  if (map_.empty()) return;
  walk(r, [&](Op* op) { apply(*op); });
}

Region::iterator Replacements::erase(Region& r, Region::iterator it) {
  removed_.push_back(std::move(*it));
  return r.ops.erase(it);
}

int count_uses(Region& r, Value* v) {
  int n = 0;
  walk(r, [&](Op* op) { n += int(std::count(op->operands.begin(), op->operands.end(), v)); });
  return n;
}

bool defined_in(const Value* v, const Region& r) {
  const Region* owner = v->def ? v->def->parent : v->owner;
  while (owner) {
    if (owner == &r) return true;
    owner = owner->parent ? owner->parent->parent : nullptr;
  }
  return false;
}

}  // namespace tl::ir

namespace tl::ir {

int32_t Function::intern_layout(const LinearLayout& l) {
  for (size_t i = 0; i < layouts.size(); ++i)
    if (layouts[i] == l) return int32_t(i + 1);
  layouts.push_back(l);
  return int32_t(layouts.size());
}

const LinearLayout& Function::layout_of(const Type& t) const {
  if (t.layout < 1 || size_t(t.layout) > layouts.size())
    throw Error("internal: no layout #l" + std::to_string(t.layout) + " for a " + t.str() + " value in function @" +
                name);
  return layouts[size_t(t.layout - 1)];
}

namespace {
// Copies regions op by op, mapping each old value to its copy; operands
// are defined before their uses (SSA), so every lookup finds its copy.
// With `outside`, a value the map does not hold is read as it is (a value
// defined outside what is copied).
struct Cloner {
  std::unordered_map<const Value*, Value*>& map;
  bool outside = false;

  Value* get(const Value* v) {
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    if (outside) return const_cast<Value*>(v);
    throw Error("internal: clone of a function using a value defined outside it");
  }
  std::unique_ptr<Op> op(const Op& from) {
    auto c = std::make_unique<Op>(from.kind);
    for (const Value* v : from.operands) c->operands.push_back(get(v));
    c->attrs = from.attrs;
    c->loc = from.loc;
    for (const auto& sub : from.regions) region(*sub, *c->add_region());
    for (const auto& r : from.results) map[r.get()] = c->add_result(r->type);
    return c;
  }
  void region(const Region& from, Region& to) {
    for (const auto& a : from.args) map[a.get()] = to.add_arg(a->type);
    for (const auto& o : from.ops) to.append(op(*o));
  }
};
}  // namespace

bool is_within(const Op* op, const Op* outer) {
  for (; op; op = op->parent ? op->parent->parent : nullptr)
    if (op == outer) return true;
  return false;
}

bool is_loop(const Op& op) { return op.kind == OpKind::For || op.kind == OpKind::While; }

size_t carried_init_index(const Op& loop) { return loop.kind == OpKind::For ? 3 : 0; }

std::vector<Value*> carried_args(const Op& loop, size_t k) {
  size_t first = loop.kind == OpKind::For ? 1 : 0;
  std::vector<Value*> out;
  for (const auto& r : loop.regions)
    if (first + k < r->args.size()) out.push_back(r->args[first + k].get());
  return out;
}

Value* carried_yield(const Op& loop, size_t k) {
  const Op* y = loop.regions.empty() ? nullptr : loop.regions.back()->terminator();
  return y && y->kind == OpKind::Yield && k < y->operands.size() ? y->operands[k] : nullptr;
}

const Op* side_partition(const Op* op) {
  for (const Op* up = op->parent ? op->parent->parent : nullptr; up; op = up, up = up->parent ? up->parent->parent : nullptr)
    if (up->kind == OpKind::WarpSpecialize && op->parent != up->regions[0].get()) return up;
  return nullptr;
}

std::unique_ptr<Function> clone(const Function& fn) {
  auto out = std::make_unique<Function>();
  out->name = fn.name;
  out->loc = fn.loc;
  out->attrs = fn.attrs;
  out->layouts = fn.layouts;
  std::unordered_map<const Value*, Value*> map;
  Cloner{map}.region(fn.body, out->body);
  return out;
}

std::unique_ptr<Op> clone_op(const Op& op, std::unordered_map<const Value*, Value*>& map) {
  return Cloner{map, true}.op(op);
}

}  // namespace tl::ir
