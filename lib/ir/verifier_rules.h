// The verifier's vocabulary, shared by the Tile IR's rules (verifier.cpp)
// and the GPU IR's (verifier_gpu.cpp): how a rule fails ("<loc>: '<op>'
// expects <expected>, found <found>"), operand, result and region counts,
// attributes, and the relations between types. Internal to lib/ir.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace tl::ir::verify_rules {

inline std::string types_str(const std::vector<Type>& ts) {
  if (ts.empty()) return "()";
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return s + ")";
}

inline std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

inline bool is_pow2(int64_t d) { return d > 0 && (d & (d - 1)) == 0; }

// Equal but for layouts: how the Tile IR's rules compare types, in GPU IR
// too (its layout rules are checked apart, GpuRules::layouts).
inline bool same_types(const std::vector<Type>& a, const std::vector<Type>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_ignoring_layout(b[i])) return false;
  return true;
}

// A numeric (non-pointer) element type.
inline bool is_numeric(const Type& t) { return !t.is_ptr; }
inline bool is_int_elem(const Type& t) { return !t.is_ptr && is_int(t.dtype); }
inline bool is_float_elem(const Type& t) { return !t.is_ptr && is_float(t.dtype); }
inline bool is_i1(const Type& t) { return !t.is_ptr && t.dtype == DType::i1; }
// The element a pointer points to, as a value type of the pointer's shape.
inline Type pointee(const Type& ptr) { return Type{ptr.dtype, false, ptr.shape}; }
inline std::string elem_str(const Type& t) { return t.scalar().str(); }

class Rules {
 public:
  // ---- error reporting ---------------------------------------------------
  [[noreturn]] void fail(const Op& op, const std::string& expected, const std::string& found) const {
    throw Error(op.loc.str() + ": '" + std::string(op.name()) + "' expects " + expected + ", found " + found);
  }
  void require(bool ok, const Op& op, const std::string& expected, const std::string& found) const {
    if (!ok) fail(op, expected, found);
  }

  // ---- counts and attributes ----------------------------------------------
  void operands(const Op& op, size_t lo, size_t hi) const {
    size_t n = op.operands.size();
    if (n >= lo && n <= hi) return;
    std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    fail(op, want + " operands", std::to_string(n));
  }
  void operands_at_least(const Op& op, size_t lo) const {
    require(op.operands.size() >= lo, op, "at least " + std::to_string(lo) + " operands",
            std::to_string(op.operands.size()));
  }
  void results(const Op& op, size_t n) const {
    require(op.results.size() == n, op, std::to_string(n) + " results", std::to_string(op.results.size()));
  }
  void regions(const Op& op, size_t n) const {
    require(op.regions.size() == n, op, std::to_string(n) + " regions", std::to_string(op.regions.size()));
  }
  const Type& opnd(const Op& op, int i) const { return op.operands[i]->type; }
  const Type& res(const Op& op, int i = 0) const { return op.results[i]->type; }

  int64_t int_attr(const Op& op, const std::string& key) const {
    auto it = op.attrs.find(key);
    require(it != op.attrs.end(), op, "integer attribute '" + key + "'", "none");
    require(std::holds_alternative<int64_t>(it->second), op, "integer attribute '" + key + "'",
            "another kind");
    return std::get<int64_t>(it->second);
  }
  const std::string& str_attr(const Op& op, const std::string& key) const {
    auto it = op.attrs.find(key);
    require(it != op.attrs.end(), op, "string attribute '" + key + "'", "none");
    require(std::holds_alternative<std::string>(it->second), op, "string attribute '" + key + "'",
            "another kind");
    return std::get<std::string>(it->second);
  }
  const std::vector<int64_t>& ints_attr(const Op& op, const std::string& key) const {
    auto it = op.attrs.find(key);
    require(it != op.attrs.end(), op, "integer array attribute '" + key + "'", "none");
    require(std::holds_alternative<std::vector<int64_t>>(it->second), op,
            "integer array attribute '" + key + "'", "another kind");
    return std::get<std::vector<int64_t>>(it->second);
  }
  void optional_int(const Op& op, const std::string& key) const {
    if (op.has_attr(key)) int_attr(op, key);
  }
  void optional_str(const Op& op, const std::string& key) const {
    if (op.has_attr(key)) str_attr(op, key);
  }
  // A string attribute that is absent, empty or one of `allowed`.
  void optional_str_in(const Op& op, const std::string& key, std::initializer_list<const char*> allowed) const {
    if (op.has_attr(key) && !str_attr(op, key).empty()) str_in(op, key, allowed);
  }
  // An atomic's memory order and scope (absent: acq_rel, gpu).
  void atomic_sync(const Op& op) const {
    if (op.has_attr("sem")) str_in(op, "sem", {"relaxed", "acquire", "release", "acq_rel"});
    if (op.has_attr("scope")) str_in(op, "scope", {"cta", "gpu", "sys"});
  }
  void str_in(const Op& op, const std::string& key, std::initializer_list<const char*> allowed) const {
    const std::string& v = str_attr(op, key);
    std::string want;
    for (const char* a : allowed) {
      if (v == a) return;
      want += (want.empty() ? "" : "|") + std::string("\"") + a + "\"";
    }
    fail(op, "'" + key + "' to be one of " + want, "\"" + v + "\"");
  }

  // ---- type relations -----------------------------------------------------
  void same_type(const Op& op, const Type& want, const Type& found, const std::string& role) const {
    require(want.same_ignoring_layout(found), op, role + " of type " + want.with_layout(0).str(), found.str());
  }
  // Elementwise: every operand and result shares the first operand's shape.
  void same_shapes(const Op& op) const {
    const auto& shape = opnd(op, 0).shape;
    for (auto* v : op.operands)
      require(v->type.shape == shape, op, "operands of one shape " + shape_str(shape), v->type.str());
    for (const auto& r : op.results)
      require(r->type.shape == shape, op, "result of shape " + shape_str(shape), r->type.str());
  }

  std::vector<Type> result_types(const Op& op) const {
    std::vector<Type> ts;
    for (const auto& r : op.results) ts.push_back(r->type);
    return ts;
  }
  std::vector<Type> operand_types(const Op& op) const {
    std::vector<Type> ts;
    for (const Value* v : op.operands) ts.push_back(v->type);
    return ts;
  }
  static Type tile_like(const Type& t, DType d) { return Type{d, false, t.shape}; }
};

// The GPU IR's own rules (verifier_gpu.cpp), for a function with
// attributes {num_warps, warp_size, num_ctas}.
class GpuRules : public Rules {
 public:
  explicit GpuRules(const Function& fn) : fn_(fn) {}
  // The launch attributes and the layout table.
  void function() const;
  // A type's layout (in Tile IR: that it has none, and is no GPU IR kind).
  void type(const Loc& loc, const std::string& what, const Type& t, const std::string& role) const;
  // Operands in the layouts their ops need, where the target has no say.
  void layouts(const Op& op) const;
  // The rules of the GPU IR's own ops.
  void op(const Op& op) const;
  // A loop schedule's attributes (schedule-loops: `stages` on loops,
  // `pipeline` on loads) and the shared-memory placement (allocate-shared:
  // `buffers`, `scratch`).
  void schedule(const Op& op) const;
  // Over the whole function, once its ops are checked: each token is used
  // once, and every read of a buffer that asynchronous copies fill has a
  // wait between those copies and it.
  void tokens_and_waits() const;

 private:
  void same_layout(const Op& op, const Value* v, int32_t want, const std::string& what) const;
  const Function& fn_;
};

}  // namespace tl::ir::verify_rules
