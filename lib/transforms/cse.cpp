// Common subexpression elimination: when two pure ops compute the same thing
// (same kind, operands, attributes and result types), the later one is
// replaced by the earlier. Tracing a C++ kernel repeats index arithmetic and
// constants freely; this folds them back together.
//
// Scoping follows dominance: an op may be replaced by one in an enclosing
// region that comes before it, never by one inside a sibling or nested
// region. Ops with regions (reduce, scan) are not merged themselves, and
// their combine regions start with an empty scope so that they stay closed
// (they read only their own arguments, which keeps their lowering simple).
#include <bit>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <vector>

#include "transforms/passes.h"

namespace tl::transforms {

namespace {

// What makes two ops interchangeable. Points into the op it was made from.
struct OpKey {
  const ir::Op* op;
};

// Doubles compare by bit pattern: 0.0 and -0.0 are different constants, and
// two NaN constants with one pattern are the same one.
bool attr_equal(const ir::Attr& a, const ir::Attr& b) {
  if (a.index() != b.index()) return false;
  if (const double* da = std::get_if<double>(&a))
    return std::bit_cast<uint64_t>(*da) == std::bit_cast<uint64_t>(std::get<double>(b));
  return a == b;
}

bool attrs_equal(const ir::Attrs& a, const ir::Attrs& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || !attr_equal(ia->second, ib->second)) return false;
  return true;
}

struct OpKeyEqual {
  bool operator()(const OpKey& x, const OpKey& y) const {
    const ir::Op& a = *x.op;
    const ir::Op& b = *y.op;
    if (a.kind != b.kind || a.operands != b.operands || a.results.size() != b.results.size())
      return false;
    for (size_t i = 0; i < a.results.size(); ++i)
      if (a.results[i]->type != b.results[i]->type) return false;
    return attrs_equal(a.attrs, b.attrs);
  }
};

void mix(size_t& seed, size_t h) { seed ^= h + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2); }

size_t hash_attr(const ir::Attr& a) {
  size_t h = a.index();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) mix(h, std::hash<uint64_t>{}(std::bit_cast<uint64_t>(v)));
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) for (auto x : v) mix(h, std::hash<int64_t>{}(x));
        else mix(h, std::hash<T>{}(v));
      },
      a);
  return h;
}

struct OpKeyHash {
  size_t operator()(const OpKey& k) const {
    const ir::Op& op = *k.op;
    size_t h = size_t(op.kind);
    for (const ir::Value* v : op.operands) mix(h, std::hash<const void*>{}(v));
    for (const auto& r : op.results) {
      mix(h, size_t(r->type.dtype) * 2 + r->type.is_ptr);
      for (auto d : r->type.shape) mix(h, std::hash<int64_t>{}(d));
    }
    for (const auto& [name, value] : op.attrs) {
      mix(h, std::hash<std::string>{}(name));
      mix(h, hash_attr(value));
    }
    return h;
  }
};

// The ops visible at the current point, with an undo log per open region so
// leaving a region forgets what was recorded inside it.
class ScopedTable {
 public:
  const ir::Op* lookup(const ir::Op* op) const {
    auto it = table_.find(OpKey{op});
    return it == table_.end() ? nullptr : it->second;
  }
  void record(const ir::Op* op) {
    if (table_.emplace(OpKey{op}, op).second) scopes_.back().push_back(OpKey{op});
  }
  void open() { scopes_.emplace_back(); }
  void close() {
    for (const auto& k : scopes_.back()) table_.erase(k);
    scopes_.pop_back();
  }

 private:
  std::unordered_map<OpKey, const ir::Op*, OpKeyHash, OpKeyEqual> table_;
  std::vector<std::vector<OpKey>> scopes_;
};

bool closed_region_op(ir::OpKind k) { return k == ir::OpKind::Reduce || k == ir::OpKind::Scan; }

// Walks `region` in program order. A replaced op's results are recorded in
// `repl`, which rewrites every later op's operands as it is reached (uses
// follow their definition, in this region or nested in it), so the pass is
// linear in the number of ops.
bool cse_region(ir::Region& region, ScopedTable& table, ir::Replacements& repl) {
  bool changed = false;
  table.open();
  for (auto it = region.ops.begin(); it != region.ops.end();) {
    ir::Op* op = it->get();
    repl.apply(*op);
    if (op->regions.empty() && op_is_pure(op->kind)) {
      if (const ir::Op* earlier = table.lookup(op)) {
        for (size_t i = 0; i < op->results.size(); ++i) repl.add(op->result(int(i)), earlier->result(int(i)));
        it = repl.erase(region, it);
        changed = true;
        continue;
      }
      table.record(op);
    }
    for (auto& sub : op->regions) {
      if (closed_region_op(op->kind)) {
        ScopedTable fresh;
        changed |= cse_region(*sub, fresh, repl);
      } else {
        changed |= cse_region(*sub, table, repl);
      }
    }
    ++it;
  }
  table.close();
  return changed;
}

}  // namespace

bool cse(ir::Function& fn) {
  ScopedTable table;
  ir::Replacements repl;
  return cse_region(fn.body, table, repl);
}

}  // namespace tl::transforms
