// Tile IR printer: writes the generic text form described in printer.h.
//
// Values are named %0, %1, ... per function in the order they appear in the
// text (function arguments, then for each op its results, then the arguments
// of each of its regions, then the region's ops). Names are assigned in a
// pre-pass, so even a use that precedes its definition (invalid IR being
// debugged) prints the definition's number. Floats print in the shortest form
// that reads back to the same double, so print -> parse -> print is exact.
// Indentation grows with nesting only up to a cap (see indent()). The
// printer recurses once per region level; the verifier, parser and tracer
// bound that by kMaxRegionDepth (ir.h).
#include "ir/printer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

namespace tl::ir {

namespace {

constexpr int kMaxIndentLevels = 32;

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

// Shortest decimal that round-trips, always recognisable as a float.
std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_attr(const Attr& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&a)) return format_float(*d);
  if (auto* s = std::get_if<std::string>(&a)) return quote(*s);
  const auto& arr = std::get<std::vector<int64_t>>(a);
  std::string out = "[";
  for (size_t i = 0; i < arr.size(); ++i) out += (i ? ", " : "") + std::to_string(arr[i]);
  return out + "]";
}

std::string format_attrs(const Attrs& attrs) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attrs) {  // std::map: sorted by key
    out += (first ? "" : ", ") + key + " = " + format_attr(value);
    first = false;
  }
  return out + "}";
}

class FunctionPrinter {
 public:
  FunctionPrinter(const Function& fn, const PrintOptions& opts) : fn_(fn), opts_(opts) {}

  std::string run() {
    for (const auto& a : fn_.body.args) number(a.get());
    number_region_contents(fn_.body);

    for (size_t i = 0; i < fn_.layouts.size(); ++i)
      out_ += "#l" + std::to_string(i + 1) + " = {" + fn_.layouts[i].str() + "}\n";
    out_ += "func @" + fn_.name + "(";
    for (size_t i = 0; i < fn_.body.args.size(); ++i) {
      const Value* a = fn_.body.args[i].get();
      out_ += (i ? ", " : "") + name(a) + ": " + a->type.str();
    }
    out_ += ")";
    if (!fn_.attrs.empty()) out_.append(" attributes ").append(format_attrs(fn_.attrs));
    if (opts_.locations && fn_.loc.known()) out_.append(" ").append(format_loc(fn_.loc));
    out_ += " {\n";
    print_ops(fn_.body, 1);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  void number(const Value* v) { ids_.emplace(v, next_id_++); }

  void number_region_contents(const Region& r) {
    for (const auto& op : r.ops) {
      for (const auto& res : op->results) number(res.get());
      for (const auto& sub : op->regions) {
        for (const auto& a : sub->args) number(a.get());
        number_region_contents(*sub);
      }
    }
  }

  std::string name(const Value* v) const {
    if (!v) return "%<null>";
    auto it = ids_.find(v);
    // A value from outside the function: only reachable in broken IR.
    if (it == ids_.end()) return "%<undefined>";
    std::string s = "%";  // appended, not "%" + ...: GCC 12 warns wrongly (-Wrestrict) on that
    return s += std::to_string(it->second);
  }

  static std::string format_loc(const Loc& loc) { return "loc(" + quote(loc.file) + ":" + std::to_string(loc.line) + ")"; }

  // Two spaces a level, up to kMaxIndentLevels: past that, lines stop moving
  // right, so the output stays linear in the IR's size however deep it
  // nests (the parser does not read indentation).
  void indent(int depth) { out_.append(size_t(std::min(depth, kMaxIndentLevels)) * 2, ' '); }

  void print_ops(const Region& r, int depth) {
    for (const auto& op : r.ops) print_op(*op, depth);
  }

  void print_op(const Op& op, int depth) {
    indent(depth);
    for (size_t i = 0; i < op.results.size(); ++i) out_ += (i ? ", " : "") + name(op.results[i].get());
    if (!op.results.empty()) out_ += " = ";
    out_ += op.name();
    for (size_t i = 0; i < op.operands.size(); ++i) out_ += (i ? ", " : " ") + name(op.operands[i]);
    if (!op.attrs.empty()) out_ += " " + format_attrs(op.attrs);
    if (!op.results.empty()) {
      out_ += " : ";
      for (size_t i = 0; i < op.results.size(); ++i) out_ += (i ? ", " : "") + op.results[i]->type.str();
    }
    for (size_t i = 0; i < op.regions.size(); ++i) {
      out_ += i ? ", {\n" : " {\n";
      print_region(*op.regions[i], depth + 1);
      indent(depth);
      out_ += "}";
    }
    if (opts_.locations && op.loc.known()) out_ += " " + format_loc(op.loc);
    out_ += "\n";
  }

  void print_region(const Region& r, int depth) {
    if (!r.args.empty()) {
      indent(depth - 1);
      out_ += "^(";
      for (size_t i = 0; i < r.args.size(); ++i)
        out_ += (i ? ", " : "") + name(r.args[i].get()) + ": " + r.args[i]->type.str();
      out_ += "):\n";
    }
    print_ops(r, depth);
  }

  const Function& fn_;
  const PrintOptions& opts_;
  std::unordered_map<const Value*, int> ids_;
  int next_id_ = 0;
  std::string out_;
};

}  // namespace

std::string print(const Function& fn, const PrintOptions& opts) { return FunctionPrinter(fn, opts).run(); }

std::string print(const Module& m, const PrintOptions& opts) {
  std::string out;
  for (size_t i = 0; i < m.functions.size(); ++i) {
    if (i) out += "\n";
    out += print(*m.functions[i], opts);
  }
  return out;
}

}  // namespace tl::ir
