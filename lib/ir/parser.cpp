// Tile IR parser: reads the text form printer.cpp writes (see printer.h).
//
// A hand-written recursive-descent reader working directly on characters:
// types such as tile<64x32xf32> do not split into ordinary tokens, and the
// grammar is small. An op's header (results, name, operands, attributes,
// result types, the opening brace of its first region, loc) lies on one
// line, so optional parts of a header are looked for on the current line
// only; that is what separates "print" followed by the next op "%5 = ..."
// from "print %5". "//" comments run to the end of the line (FileCheck
// tests keep their RUN and CHECK lines there).
//
// Value names are scoped like SSA dominance: a name defined in a region is
// visible to later ops of that region and to regions nested in them, and an
// op's result names become visible after its regions. A use of a name not in
// scope is an error at that name.
#include "ir/parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace tl::ir {

namespace {

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  Parser(std::string_view text, std::string filename) : src_(text), file_(std::move(filename)) {}

  std::unique_ptr<Module> module() {
    auto m = std::make_unique<Module>();
    skip_ws();
    while (!eof()) {
      m->functions.push_back(function());
      skip_ws();
    }
    return m;
  }

 private:
  // ---- characters and errors ---------------------------------------------
  bool eof() const { return pos_ >= src_.size(); }
  char cur() const { return eof() ? '\0' : src_[pos_]; }
  char at(size_t p) const { return p < src_.size() ? src_[p] : '\0'; }

  // Spaces, newlines and comments.
  void skip_ws() {
    while (!eof()) {
      char c = cur();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && at(pos_ + 1) == '/') {
        while (!eof() && cur() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  // Spaces on the current line only.
  void skip_inline() {
    while (cur() == ' ' || cur() == '\t' || cur() == '\r') ++pos_;
  }

  // The token at `p`, for error messages.
  std::string token_at(size_t p) const {
    if (p >= src_.size()) return "end of input";
    char c = src_[p];
    size_t e = p + 1;
    if (is_ident_char(c) || c == '%' || c == '@' || c == '-') {
      while (e < src_.size() && is_ident_char(src_[e])) ++e;
    } else if (c == '"') {
      while (e < src_.size() && src_[e] != '"' && src_[e] != '\n') e += src_[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, src_.size());
    } else if (c == '\n') {
      return "end of line";
    }
    return std::string(src_.substr(p, e - p));
  }

  // "<file>:<line>:<col>" of position `p`.
  std::string where(size_t p) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < p && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return file_ + ":" + std::to_string(line) + ":" + std::to_string(col);
  }
  [[noreturn]] void fail_at(size_t p, const std::string& what) const {
    throw Error(where(p) + ": expected " + what + ", found '" + token_at(p) + "'");
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  void expect(char c) {
    skip_ws();
    if (cur() != c) fail(std::string("'") + c + "'");
    ++pos_;
  }
  void expect_inline(char c) {
    skip_inline();
    if (cur() != c) fail(std::string("'") + c + "'");
    ++pos_;
  }
  bool accept_inline(char c) {
    skip_inline();
    if (cur() != c) return false;
    ++pos_;
    return true;
  }
  // True if the current line continues with `word` as a whole identifier.
  bool peek_word_inline(std::string_view word) {
    skip_inline();
    return src_.substr(pos_, word.size()) == word && !is_ident_char(at(pos_ + word.size()));
  }

  std::string ident(const std::string& what) {
    size_t start = pos_;
    while (is_ident_char(cur())) ++pos_;
    if (pos_ == start) fail(what);
    return std::string(src_.substr(start, pos_ - start));
  }

  // ---- value names ---------------------------------------------------------
  // "%name" at the current position (without looking it up).
  std::string value_name() {
    if (cur() != '%') fail("value name");
    size_t start = pos_++;
    while (is_ident_char(cur())) ++pos_;
    if (pos_ == start + 1) fail_at(start, "value name");
    return std::string(src_.substr(start, pos_ - start));
  }

  Value* use() {
    size_t start = pos_;
    std::string name = value_name();
    auto it = scope_.find(name);
    if (it == scope_.end()) fail_at(start, "defined value");
    return it->second;
  }

  void define(const std::string& name, size_t at_pos, Value* v) {
    if (!scope_.emplace(name, v).second) fail_at(at_pos, "a value name not defined before");
    scope_names_.push_back(name);
  }
  size_t scope_mark() const { return scope_names_.size(); }
  void pop_scope(size_t mark) {
    while (scope_names_.size() > mark) {
      scope_.erase(scope_names_.back());
      scope_names_.pop_back();
    }
  }

  // ---- types ---------------------------------------------------------------
  DType dtype() {
    size_t start = pos_;
    std::string name = ident("element type");
    DType d;
    if (!dtype_from_name(name, d)) fail_at(start, "element type");
    return d;
  }

  // dtype | ptr<dtype>
  Type element() {
    if (src_.substr(pos_, 4) == "ptr<") {
      pos_ += 4;
      DType d = dtype();
      if (cur() != '>') fail("'>'");
      ++pos_;
      return ptr_type(d);
    }
    return scalar_type(dtype());
  }

  // element | tile<DxDx...xelement[, #layout]> | smem<DxDx...xelement, #layout> | token
  Type type() {
    skip_ws();
    if (src_.substr(pos_, 5) == "token" && !is_ident_char(at(pos_ + 5))) {
      pos_ += 5;
      Type t;
      t.kind = TypeKind::token;
      return t;
    }
    bool shared = src_.substr(pos_, 5) == "smem<";
    if (!shared && src_.substr(pos_, 5) != "tile<") return element();
    pos_ += 5;
    std::vector<int64_t> shape;
    while (is_digit(cur())) {
      size_t start = pos_;
      while (is_digit(cur())) ++pos_;
      int64_t d = 0;
      auto r = std::from_chars(src_.data() + start, src_.data() + pos_, d);
      if (r.ec != std::errc()) fail_at(start, "tile dimension");
      shape.push_back(d);
      if (cur() != 'x') fail("'x'");
      ++pos_;
    }
    if (shape.empty()) fail("tile dimension");
    Type t = element();
    if (shared) t.kind = TypeKind::shared;
    if (cur() == ',' || shared) {
      expect(',');
      skip_ws();
      t.layout = layout_ref();
    }
    if (cur() != '>') fail("'>'");
    ++pos_;
    t.shape = std::move(shape);
    return t;
  }

  // ---- layouts -------------------------------------------------------------
  // "#name" of a layout of the function's table (defined above the function).
  int32_t layout_ref() {
    size_t start = pos_;
    if (cur() != '#') fail("'#' and a layout name");
    ++pos_;
    std::string name = ident("layout name");
    auto it = layout_names_.find(name);
    if (it == layout_names_.end()) fail_at(start, "a layout defined above the function");
    return it->second;
  }

  // "#name = {" in-dim: [(c,...), ...] ... "->" out-dim:size ... "}", one a line.
  void layout_definition() {
    size_t start = pos_;
    ++pos_;  // '#'
    std::string name = ident("layout name");
    expect('=');
    expect('{');
    std::vector<LinearLayout::InDim> ins;
    std::vector<LinearLayout::OutDim> outs;
    while (true) {
      skip_ws();
      if (cur() == '-' && at(pos_ + 1) == '>') break;
      LinearLayout::InDim d{ident("an input dimension name or '->'"), {}};
      expect(':');
      expect('[');
      skip_ws();
      while (cur() == '(') {
        ++pos_;
        LinearLayout::Coords c;
        skip_ws();
        if (cur() != ')') {
          c.push_back(int32_t(integer()));
          while (skip_ws(), cur() == ',') ++pos_, c.push_back(int32_t(integer()));
        }
        expect(')');
        d.bases.push_back(std::move(c));
        skip_ws();
        if (cur() == ',') ++pos_, skip_ws();
      }
      // The repeats above the bits: "[bases; n x (stride)]" or "[n x
      // (stride)]", more of them after commas (outer digits, lowest first).
      if (cur() == ';') ++pos_, skip_ws();
      for (bool first = true; is_digit(cur()); first = false) {
        int32_t count = int32_t(integer());
        skip_ws();
        if (cur() != 'x') fail("'x' after a repeat's count");
        ++pos_;
        expect('(');
        skip_ws();
        LinearLayout::Coords stride{int32_t(integer())};
        while (skip_ws(), cur() == ',') ++pos_, stride.push_back(int32_t(integer()));
        expect(')');
        skip_ws();
        if (first) d.repeat = count, d.repeat_stride = std::move(stride);
        else d.outer.push_back({count, std::move(stride)});
        if (cur() == ',') ++pos_, skip_ws();
      }
      expect(']');
      ins.push_back(std::move(d));
    }
    pos_ += 2;
    while (true) {
      skip_ws();
      if (cur() == '}') break;
      LinearLayout::OutDim o{ident("an output dimension name or '}'"), 0};
      expect(':');
      skip_ws();
      o.size = int32_t(integer());
      outs.push_back(std::move(o));
    }
    ++pos_;
    try {
      layouts_.emplace_back(std::move(ins), std::move(outs));
    } catch (const Error& e) {
      throw Error(where(start) + ": expected a valid layout, found " + e.what());
    }
    if (!layout_names_.emplace(name, int32_t(layouts_.size())).second)
      fail_at(start, "a layout name not defined before");
  }

  // ---- attributes ----------------------------------------------------------
  std::string string_literal() {
    skip_ws();
    if (cur() != '"') fail("string");
    ++pos_;
    std::string s;
    while (true) {
      if (eof() || cur() == '\n') fail("closing '\"'");
      char c = src_[pos_++];
      if (c == '"') break;
      if (c != '\\') {
        s += c;
        continue;
      }
      char e = cur();
      ++pos_;
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case 'n': s += '\n'; break;
        case 't': s += '\t'; break;
        default: fail_at(pos_ - 2, "escape \\\" \\\\ \\n or \\t");
      }
    }
    return s;
  }

  int64_t integer() {
    skip_ws();
    size_t start = pos_;
    if (cur() == '-') ++pos_;
    while (is_digit(cur())) ++pos_;
    int64_t v = 0;
    auto r = std::from_chars(src_.data() + start, src_.data() + pos_, v);
    if (r.ec != std::errc() || r.ptr != src_.data() + pos_) fail_at(start, "integer");
    return v;
  }

  // An integer, or a float (has '.', 'e', or is inf/nan).
  Attr number() {
    size_t start = pos_;
    bool negative = cur() == '-';
    size_t p = pos_ + (negative ? 1 : 0);
    auto word_at = [&](std::string_view w) { return src_.substr(p, w.size()) == w && !is_ident_char(at(p + w.size())); };
    if (word_at("inf")) {
      pos_ = p + 3;
      return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    }
    if (word_at("nan")) {
      pos_ = p + 3;
      return std::numeric_limits<double>::quiet_NaN();
    }
    size_t e = p;
    bool is_float = false;
    while (e < src_.size()) {
      char c = src_[e];
      if (is_digit(c)) {
        ++e;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++e;
      } else if ((c == '+' || c == '-') && (src_[e - 1] == 'e' || src_[e - 1] == 'E')) {
        ++e;
      } else {
        break;
      }
    }
    if (e == p) fail_at(start, "attribute value");
    const char* first = src_.data() + start;
    const char* last = src_.data() + e;
    if (is_float) {
      double d = 0;
      auto r = std::from_chars(first, last, d);
      if (r.ec != std::errc() || r.ptr != last) fail_at(start, "float");
      pos_ = e;
      return d;
    }
    int64_t i = 0;
    auto r = std::from_chars(first, last, i);
    if (r.ec != std::errc() || r.ptr != last) fail_at(start, "64-bit integer");
    pos_ = e;
    return i;
  }

  Attr attr_value() {
    skip_ws();
    if (cur() == '"') return string_literal();
    if (cur() == '[') {
      ++pos_;
      std::vector<int64_t> v;
      skip_ws();
      if (cur() != ']') {
        v.push_back(integer());
        while (true) {
          skip_ws();
          if (cur() != ',') break;
          ++pos_;
          v.push_back(integer());
        }
      }
      expect(']');
      return v;
    }
    return number();
  }

  // "{" key = value, ... "}" (the '{' already consumed).
  Attrs attributes() {
    Attrs attrs;
    do {
      skip_ws();
      size_t key_pos = pos_;
      std::string key = ident("attribute name");
      expect('=');
      Attr v = attr_value();
      if (!attrs.emplace(key, std::move(v)).second) fail_at(key_pos, "a new attribute name");
      skip_ws();
    } while (cur() == ',' && (++pos_, true));
    expect('}');
    return attrs;
  }

  // After a '{' on an op's line: attributes if "ident =" follows.
  bool brace_opens_attributes() const {
    size_t p = pos_ + 1;
    auto skip = [&] {
      while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n' || src_[p] == '\r')) ++p;
    };
    skip();
    size_t start = p;
    while (p < src_.size() && is_ident_char(src_[p])) ++p;
    if (p == start) return false;
    skip();
    return p < src_.size() && src_[p] == '=';
  }

  std::optional<Loc> loc_suffix() {
    if (!peek_word_inline("loc")) return std::nullopt;
    pos_ += 3;
    expect_inline('(');
    Loc loc;
    loc.file = string_literal();
    expect_inline(':');
    skip_inline();
    loc.line = int(integer());
    expect_inline(')');
    return loc;
  }

  // ---- functions, regions, ops ---------------------------------------------
  std::unique_ptr<Function> function() {
    layouts_.clear();
    layout_names_.clear();
    skip_ws();
    while (cur() == '#') {
      layout_definition();
      skip_ws();
    }
    if (!peek_word_inline("func")) fail("'func'");
    pos_ += 4;
    skip_ws();
    if (cur() != '@') fail("'@' and a function name");
    ++pos_;
    size_t start = pos_;
    // Names may carry template punctuation (kernel<128>); they end at '('.
    while (!eof() && cur() != '(' && cur() != ' ' && cur() != '\n') ++pos_;
    if (pos_ == start) fail("function name");
    auto fn = std::make_unique<Function>();
    fn->name = std::string(src_.substr(start, pos_ - start));
    scope_.clear();
    scope_names_.clear();
    expect('(');
    skip_ws();
    if (cur() != ')') {
      while (true) {
        region_arg(fn->body);
        skip_ws();
        if (cur() != ',') break;
        ++pos_;
      }
    }
    expect(')');
    fn->layouts = std::move(layouts_);
    if (peek_word_inline("attributes")) {
      pos_ += 10;
      expect_inline('{');
      fn->attrs = attributes();
    }
    if (auto l = loc_suffix()) fn->loc = *l;
    expect('{');
    ops(fn->body);
    expect('}');
    return fn;
  }

  void region_arg(Region& r) {
    skip_ws();
    size_t at_pos = pos_;
    std::string name = value_name();
    expect(':');
    define(name, at_pos, r.add_arg(type()));
  }

  // Ops until the closing '}' (not consumed).
  void ops(Region& r) {
    while (true) {
      skip_ws();
      if (cur() == '}' || eof()) return;
      op(r);
    }
  }

  // "{" [^(args):] ops "}" (the '{' already consumed). Regions nest at most
  // kMaxRegionDepth deep, which also bounds this recursion (op -> region ->
  // op) on inputs such as thousands of nested loops.
  void region(Region& r) {
    if (depth_ + 1 > kMaxRegionDepth)
      throw Error(where(pos_ - 1) + ": expected regions nested at most " + std::to_string(kMaxRegionDepth) +
                  " deep, found a region at depth " + std::to_string(depth_ + 1));
    ++depth_;
    size_t mark = scope_mark();
    skip_ws();
    if (cur() == '^') {
      ++pos_;
      expect('(');
      skip_ws();
      if (cur() != ')') {
        while (true) {
          region_arg(r);
          skip_ws();
          if (cur() != ',') break;
          ++pos_;
        }
      }
      expect(')');
      expect(':');
    }
    ops(r);
    expect('}');
    pop_scope(mark);
    --depth_;
  }

  void op(Region& r) {
    // Result names.
    std::vector<std::pair<std::string, size_t>> result_names;
    if (cur() == '%') {
      while (true) {
        skip_ws();
        size_t at_pos = pos_;
        result_names.emplace_back(value_name(), at_pos);
        skip_ws();
        if (cur() != ',') break;
        ++pos_;
      }
      expect('=');
      skip_ws();
    }

    size_t name_pos = pos_;
    while (is_ident_char(cur())) ++pos_;
    auto kind = op_from_name(src_.substr(name_pos, pos_ - name_pos));
    if (!kind) fail_at(name_pos, "op name");
    auto op = std::make_unique<Op>(*kind);

    // Operands, on the op's line.
    skip_inline();
    if (cur() == '%') {
      while (true) {
        skip_inline();
        op->operands.push_back(use());
        if (!accept_inline(',')) break;
      }
    }

    skip_inline();
    if (cur() == '{' && brace_opens_attributes()) {
      ++pos_;
      op->attrs = attributes();
    }

    std::vector<Type> types;
    if (!result_names.empty()) {
      if (!accept_inline(':')) fail("':' and " + std::to_string(result_names.size()) + " result types");
      for (size_t i = 0; i < result_names.size(); ++i) {
        if (i) expect_inline(',');
        skip_inline();
        types.push_back(type());
      }
      skip_inline();
      if (cur() == ',') fail(std::to_string(result_names.size()) + " result types");
    } else {
      skip_inline();
      if (cur() == ':') fail("no result types on an op without results");
    }

    // Regions: "{ ... }", separated by ", ".
    if (accept_inline('{')) {
      do {
        region(*op->add_region());
      } while (accept_inline(',') && (expect_inline('{'), true));
    }

    if (auto l = loc_suffix()) op->loc = *l;
    skip_inline();
    if (!eof() && cur() != '\n' && !(cur() == '/' && at(pos_ + 1) == '/')) fail("end of line after op");

    for (size_t i = 0; i < types.size(); ++i) define(result_names[i].first, result_names[i].second, op->add_result(types[i]));
    r.append(std::move(op));
  }

  std::string_view src_;
  std::string file_;
  size_t pos_ = 0;
  int depth_ = 0;  // regions open around the current position
  std::vector<LinearLayout> layouts_;                     // the table of the function being read
  std::unordered_map<std::string, int32_t> layout_names_;  // its names, to Type::layout
  std::unordered_map<std::string, Value*> scope_;
  std::vector<std::string> scope_names_;  // definition order, for popping scopes
};

}  // namespace

std::unique_ptr<Module> parse(std::string_view text, const std::string& filename) {
  return Parser(text, filename).module();
}

}  // namespace tl::ir
