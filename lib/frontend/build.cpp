// The typed op builders behind the public op headers (detail/build.h):
// promotion, broadcasting, literal constants and the trace-time checks.
// Every error names the user's line and the op: "file:line: <op>: expected
// ..., found ...".
#include "tiledsl/detail/build.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ir.h"

namespace tl::detail {

using ir::OpKind;
using ir::Type;

namespace {

std::string elem_str(const Type& t) { return t.scalar().str(); }

OperandDesc describe(const Operand& o) {
  if (o.is_literal()) return OperandDesc{false, DType::i32, false, o.lit};
  Type t = type_of(o.value);
  return OperandDesc{true, t.dtype, t.is_ptr, LitKind::None};
}

std::string describe_str(const Operand& o) {
  if (!o.is_literal()) return type_of(o.value).str();
  switch (o.lit) {
    case LitKind::Bool: return "a C++ bool";
    case LitKind::Int: return "a C++ integer";
    case LitKind::Float: return "a C++ floating-point number";
    default: return "nothing";
  }
}

// True when the literal's value is representable in `d`.
bool fits(const Operand& lit, DType d) {
  if (is_float(d) || lit.lit == LitKind::Bool) return true;
  if (lit.lit == LitKind::Float) return false;
  if (lit.big_unsigned) return d == DType::u64;
  int64_t v = lit.i;
  switch (d) {
    case DType::i1: return v == 0 || v == 1;
    case DType::i8: return v >= -128 && v <= 127;
    case DType::i16: return v >= -32768 && v <= 32767;
    case DType::i32: return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    case DType::i64: return true;
    case DType::u8: return v >= 0 && v <= 255;
    case DType::u16: return v >= 0 && v <= 65535;
    case DType::u32: return v >= 0 && v <= int64_t(std::numeric_limits<uint32_t>::max());
    case DType::u64: return v >= 0;
    default: return true;
  }
}

std::string literal_str(const Operand& lit) {
  if (lit.lit == LitKind::Float) return std::to_string(lit.f);
  if (lit.big_unsigned) return std::to_string(uint64_t(lit.i));
  return std::to_string(lit.i);
}

// A traced operand converted to `dtype` and broadcast to `shape`, or a literal
// materialized as such a constant.
Value* materialize(const Operand& o, DType dtype, const Shape& shape, const ir::Loc& loc, std::string_view op) {
  if (o.is_literal()) return constant(o, dtype, shape, loc, op);
  return broadcast_to(cast(o.value, dtype, loc, op), shape, loc, op);
}

Shape shape_of(const Operand& o) { return o.is_literal() ? Shape{} : type_of(o.value).shape; }

void require_float_or_int(Value* v, const ir::Loc& loc, std::string_view op) {
  if (type_of(v).is_ptr) fail(loc, op, "expected a numeric tile, found " + type_of(v).str());
}

}  // namespace

// ---- shapes -----------------------------------------------------------------

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

void check_shape(const Shape& s, const ir::Loc& loc, std::string_view op, bool allow_scalar) {
  bool ok = s.size() <= size_t(max_tile_rank) && (allow_scalar || !s.empty());
  for (auto d : s) ok = ok && is_tile_dim(d);
  if (!ok)
    fail(loc, op,
         std::string("expected a tile shape of rank ") + (allow_scalar ? "0" : "1") +
             ".." + std::to_string(max_tile_rank) + " with dims c x 2^k (c = 1, 3, ..., 15), found " + shape_str(s));
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const ir::Loc& loc, std::string_view op) {
  if (a == b) return a;
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(loc, op, "expected shapes that broadcast together, found " + shape_str(a) + " and " + shape_str(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Value* broadcast_to(Value* v, const Shape& shape, const ir::Loc& loc, std::string_view op) {
  Type t = type_of(v);
  if (t.shape == shape) return v;
  if (t.is_scalar()) return emit1(OpKind::Splat, {v}, t.with_shape(shape), {}, loc);
  auto cannot = [&] {
    fail(loc, op, "expected a value that broadcasts to " + shape_str(shape) + ", found " + t.str());
  };
  if (t.rank() > int(shape.size())) cannot();
  size_t lead = shape.size() - t.shape.size();
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] != 1 && t.shape[i] != shape[lead + i]) cannot();
  Shape cur = t.shape;
  while (cur.size() < shape.size()) {
    cur.insert(cur.begin(), 1);
    v = emit1(OpKind::ExpandDims, {v}, t.with_shape(cur), {{"axis", int64_t(0)}}, loc);
  }
  if (cur != shape) v = emit1(OpKind::Broadcast, {v}, t.with_shape(shape), {}, loc);
  return v;
}

int normalize_axis(int axis, int rank, const ir::Loc& loc, std::string_view op) {
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail(loc, op, "expected an axis in " + std::to_string(-rank) + ".." + std::to_string(rank - 1) + " for a rank-" +
                      std::to_string(rank) + " tile, found " + std::to_string(axis));
  return a;
}

// ---- constants and casts ------------------------------------------------------

Value* constant(const Operand& number, DType dtype, const Shape& shape, const ir::Loc& loc, std::string_view op) {
  // A C++ floating-point number that is a whole number is one of an integer
  // type too (full<int>(.., 2.0), `other = 0.0f` of an int32_t load, as
  // Triton converts it); any other is not representable there.
  Operand lit = number;
  if (lit.lit == LitKind::Float && !is_float(dtype) && lit.f == std::trunc(lit.f) && lit.f >= -0x1p63 && lit.f < 0x1p63) {
    lit.lit = LitKind::Int;
    lit.i = int64_t(lit.f);
  }
  if (!fits(lit, dtype))
    fail(loc, op, "expected a value representable in " + std::string(dtype_name(dtype)) + ", found " + literal_str(number));
  ir::Attr value;
  if (is_float(dtype))
    value = lit.lit == LitKind::Float ? lit.f : lit.big_unsigned ? double(uint64_t(lit.i)) : double(lit.i);
  else if (dtype == DType::i1)
    value = int64_t(lit.lit == LitKind::Float ? lit.f != 0 : lit.i != 0);
  else
    value = lit.i;
  return emit1(OpKind::Constant, {}, Type{dtype, false, shape}, {{"value", value}}, loc);
}

Value* cast(Value* v, DType to, const ir::Loc& loc, std::string_view op) {
  Type t = type_of(v);
  if (t.is_ptr) fail(loc, op, "expected a numeric value to convert to " + std::string(dtype_name(to)) + ", found " + t.str());
  if (t.dtype == to) return v;
  return emit1(OpKind::Cast, {v}, t.with_dtype(to), {}, loc);
}

Value* hint(Value* v, std::vector<int64_t> div, std::vector<int64_t> cont, const ir::Loc& loc, std::string_view op) {
  Type t = type_of(v);
  if (!t.is_ptr && (is_float(t.dtype) || t.dtype == DType::i1))
    fail(loc, op, "expected an integer or pointer tile or scalar, found " + t.str());
  size_t n = size_t(std::max(1, t.rank()));
  auto check = [&](std::vector<int64_t>& v, const char* what, bool dims) {
    if (v.size() == 1 && n > 1) v.assign(n, v[0]);
    if (!v.empty() && v.size() != n)
      fail(loc, op, "expected " + std::to_string(n) + " " + what + " (one per dimension of " + t.str() + "), found " +
                        std::to_string(v.size()));
    for (size_t d = 0; d < v.size(); ++d) {
      if (v[d] < 1 || (v[d] & (v[d] - 1)))
        fail(loc, op, std::string("expected ") + what + " that are powers of two, found " + std::to_string(v[d]));
      if (dims && v[d] > t.shape[d])
        fail(loc, op, std::string("expected ") + what + " no longer than the dimension (" + std::to_string(t.shape[d]) +
                          "), found " + std::to_string(v[d]));
    }
  };
  if (!cont.empty() && t.is_scalar()) fail(loc, op, "expected a tile (a scalar has no runs), found " + t.str());
  check(div, "divisors", false);
  check(cont, "run lengths", true);
  ir::Attrs attrs;
  if (!div.empty()) attrs["divisibility"] = div;
  if (!cont.empty()) attrs["contiguity"] = cont;
  return emit1(OpKind::Hint, {v}, t, attrs, loc);
}

Value* bitcast(Value* v, DType to, bool to_ptr, const ir::Loc& loc) {
  Type t = type_of(v);
  Type out{to, to_ptr, t.shape};
  if (t == out) return v;
  if (t.is_ptr != to_ptr)
    fail(loc, "bitcast", "expected pointer to pointer or number to number, found " + t.str() + " -> " + out.str());
  if (!to_ptr && bit_width(t.dtype) != bit_width(to))
    fail(loc, "bitcast", "expected a type of " + std::to_string(bit_width(t.dtype)) + " bits like " + elem_str(t) +
                             ", found " + std::string(dtype_name(to)) + " (" + std::to_string(bit_width(to)) + " bits)");
  return emit1(OpKind::Bitcast, {v}, out, {}, loc);
}

// ---- elementwise ------------------------------------------------------------------

namespace {
// `/` and `%` of a signed and an unsigned integer are refused (BinCat::DivRem).
void require_one_signedness(const Operand& a, const Operand& b, const ir::Loc& loc, std::string_view op) {
  if (mixed_signedness(describe(a), describe(b)))
    fail(loc, op, "expected integers of one signedness (cast one of them), found " + describe_str(a) + " and " +
                      describe_str(b));
}
}  // namespace

Value* binary(BinCat cat, OpKind kind, std::string_view op, const Operand& a, const Operand& b, const ir::Loc& loc,
              std::string_view pred) {
  if (!tracing()) fail(loc, op, "expected to run inside tl::compile, found no active trace");
  OperandDesc da = describe(a), db = describe(b);
  if (cat == BinCat::DivRem || kind == OpKind::MulHi) require_one_signedness(a, b, loc, op);
  ResultDesc r = binary_result(cat, da, db);
  if (!r.ok)
    fail(loc, op, "expected operands this op accepts, found " + describe_str(a) + " and " + describe_str(b));
  if (kind == OpKind::MulHi && r.dtype == DType::i1)
    fail(loc, op, "expected integers wider than i1, found " + describe_str(a) + " and " + describe_str(b));
  // An integer divided by a literal 0: known while tracing, and undefined
  // on a GPU (the interpreter would stop only once it runs).
  if (cat == BinCat::DivRem && !r.is_ptr && is_int(r.dtype) && b.lit == LitKind::Int && b.i == 0 && !b.big_unsigned)
    fail(loc, op, "expected a nonzero divisor, found the literal 0 (integer division by zero)");
  Shape shape = broadcast_shapes(shape_of(a), shape_of(b), loc, op);

  if (r.is_ptr) {
    // addptr: offsets are elements of the pointee; ptr - k is ptr + (-k).
    const Operand& p = da.is_ptr ? a : b;
    const Operand& off = da.is_ptr ? b : a;
    Value* pv = broadcast_to(p.value, shape, loc, op);
    Value* ov;
    if (off.is_literal()) {
      Operand o = off;
      if (kind == OpKind::Sub) o.i = -o.i;
      DType odt = fits(o, DType::i32) ? DType::i32 : DType::i64;
      ov = constant(o, odt, shape, loc, op);
    } else {
      ov = broadcast_to(off.value, shape, loc, op);
      if (kind == OpKind::Sub) ov = emit1(OpKind::Neg, {ov}, type_of(ov), {}, loc);
    }
    return emit1(OpKind::AddPtr, {pv, ov}, type_of(pv), {}, loc);
  }

  // The operands' common dtype (for comparisons: the dtype compared in).
  DType common = cat == BinCat::Compare ? binary_result(BinCat::Arith, da, db).dtype : r.dtype;
  // `>>` shifts in the left operand's signedness, as C++ and Triton do: a
  // signed one, sign-extended to the promoted width, shifts arithmetically
  // and the result takes the promoted type (i32 >> u32 is an arithmetic
  // shift giving u32). An unsigned left operand is zero-extended, so
  // non-negative: both shifts agree on it.
  DType in = common;
  if (kind == OpKind::Shr && mixed_signedness(da, db) && !is_unsigned(da.dtype) && is_unsigned(common))
    in = common == DType::u8 ? DType::i8 : common == DType::u16 ? DType::i16 : common == DType::u32 ? DType::i32 : DType::i64;
  Value* av = materialize(a, in, shape, loc, op);
  Value* bv = materialize(b, in, shape, loc, op);
  if (kind == OpKind::Cmp)
    return emit1(OpKind::Cmp, {av, bv}, Type{DType::i1, false, shape}, {{"pred", std::string(pred)}}, loc);
  Value* v = emit1(kind, {av, bv}, Type{in, false, shape}, {}, loc);
  return in == common ? v : cast(v, common, loc, op);
}

Value* unary(OpKind kind, std::string_view op, Value* a, const ir::Loc& loc) {
  if (!tracing()) fail(loc, op, "expected to run inside tl::compile, found no active trace");
  Type t = type_of(a);
  require_float_or_int(a, loc, op);
  bool float_only = kind != OpKind::Neg && kind != OpKind::Abs && kind != OpKind::Not;
  if (float_only && !is_float(t.dtype)) fail(loc, op, "expected a floating-point tile, found " + t.str());
  if (kind == OpKind::Not && !is_int(t.dtype)) fail(loc, op, "expected an integer or bool tile, found " + t.str());
  return emit1(kind, {a}, t, {}, loc);
}

Value* logical_not(Value* a, const ir::Loc& loc) {
  Type t = type_of(a);
  if (t.dtype == DType::i1 && !t.is_ptr) return emit1(OpKind::Not, {a}, t, {}, loc);
  return binary(BinCat::Compare, OpKind::Cmp, "not", Operand(a), Operand::number(0), loc, "eq");
}

Value* select(const Operand& cond, const Operand& a, const Operand& b, const ir::Loc& loc) {
  if (!tracing()) fail(loc, "where", "expected to run inside tl::compile, found no active trace");
  Type ct = type_of(cond.value);
  if (ct.dtype != DType::i1 || ct.is_ptr) fail(loc, "where", "expected a bool condition, found " + ct.str());
  Shape shape = broadcast_shapes(broadcast_shapes(ct.shape, shape_of(a), loc, "where"), shape_of(b), loc, "where");
  OperandDesc da = describe(a), db = describe(b);
  Value *av, *bv;
  if (da.is_ptr || db.is_ptr) {
    if (a.is_literal() || b.is_literal() || !(type_of(a.value).scalar() == type_of(b.value).scalar()))
      fail(loc, "where", "expected two pointer tiles of one type, found " + describe_str(a) + " and " + describe_str(b));
    av = broadcast_to(a.value, shape, loc, "where");
    bv = broadcast_to(b.value, shape, loc, "where");
  } else {
    ResultDesc r = binary_result(BinCat::Arith, da, db);
    if (!r.ok) fail(loc, "where", "expected at least one traced value, found " + describe_str(a) + " and " + describe_str(b));
    av = materialize(a, r.dtype, shape, loc, "where");
    bv = materialize(b, r.dtype, shape, loc, "where");
  }
  Value* cv = broadcast_to(cond.value, shape, loc, "where");
  return emit1(OpKind::Select, {cv, av, bv}, type_of(av), {}, loc);
}

Value* fma(const Operand& a, const Operand& b, const Operand& c, const ir::Loc& loc) {
  if (!tracing()) fail(loc, "fma", "expected to run inside tl::compile, found no active trace");
  ResultDesc ab = binary_result(BinCat::Arith, describe(a), describe(b));
  OperandDesc abd{true, ab.dtype, false, LitKind::None};
  ResultDesc r = binary_result(BinCat::Arith, abd, describe(c));
  if (!ab.ok || !r.ok || !is_float(r.dtype))
    fail(loc, "fma", "expected floating-point operands, found " + describe_str(a) + ", " + describe_str(b) + " and " +
                         describe_str(c));
  Shape shape = broadcast_shapes(broadcast_shapes(shape_of(a), shape_of(b), loc, "fma"), shape_of(c), loc, "fma");
  Value* av = materialize(a, r.dtype, shape, loc, "fma");
  Value* bv = materialize(b, r.dtype, shape, loc, "fma");
  Value* cv = materialize(c, r.dtype, shape, loc, "fma");
  return emit1(OpKind::Fma, {av, bv, cv}, type_of(av), {}, loc);
}

Value* cdiv(const Operand& a, const Operand& b, const ir::Loc& loc) {
  // (a + b - 1) / b, a division of a by b.
  require_one_signedness(a, b, loc, "cdiv");
  Value* sum = binary(BinCat::Arith, OpKind::Add, "cdiv", a, b, loc);
  Value* less = binary(BinCat::Arith, OpKind::Sub, "cdiv", Operand(sum), Operand::number(1), loc);
  return binary(BinCat::DivRem, OpKind::Div, "cdiv", Operand(less), b, loc);
}

// ---- creation ----------------------------------------------------------------------

Value* program_id(OpKind kind, int axis, const ir::Loc& loc) {
  std::string_view op = ir::op_name(kind);
  if (axis < 0 || axis > 2) fail(loc, op, "expected an axis in 0..2, found " + std::to_string(axis));
  return emit1(kind, {}, ir::scalar_type(DType::i32), {{"axis", int64_t(axis)}}, loc);
}

Value* arange(int64_t start, int64_t end, const ir::Loc& loc) {
  int64_t n = end - start;
  if (!is_tile_dim(n))
    fail(loc, "arange", "expected a length end - start of c x 2^k (c = 1, 3, ..., 15), found " + std::to_string(n) + " (" +
                            std::to_string(start) + ".." + std::to_string(end) + ")");
  if (start < std::numeric_limits<int32_t>::min() || end - 1 > std::numeric_limits<int32_t>::max())
    fail(loc, "arange", "expected bounds within i32, found " + std::to_string(start) + ".." + std::to_string(end));
  return emit1(OpKind::Arange, {}, ir::tile_type(DType::i32, {n}), {{"start", start}, {"end", end}}, loc);
}

Value* full(DType dtype, const Shape& shape, const Operand& value, const ir::Loc& loc, std::string_view op) {
  check_shape(shape, loc, op, true);
  return constant(value, dtype, shape, loc, op);
}

// ---- shape ops ----------------------------------------------------------------

Value* expand_dims(Value* v, int axis, const ir::Loc& loc) {
  Type t = type_of(v);
  // The axis indexes the result, one dim more than the tile given: the
  // error names the given tile's rank, not normalize_axis's (the result's).
  int rank = t.rank() + 1;
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail(loc, "expand_dims", "expected an axis in " + std::to_string(-rank) + ".." + std::to_string(rank - 1) +
                                 " (of the result) for a rank-" + std::to_string(t.rank()) + " tile, found " +
                                 std::to_string(axis));
  Shape s = t.shape;
  s.insert(s.begin() + a, 1);
  check_shape(s, loc, "expand_dims");
  return emit1(OpKind::ExpandDims, {v}, t.with_shape(s), {{"axis", int64_t(a)}}, loc);
}

Value* reshape(Value* v, const Shape& shape, const ir::Loc& loc) {
  Type t = type_of(v);
  check_shape(shape, loc, "reshape", true);
  Type out = t.with_shape(shape);
  if (out.numel() != t.numel())
    fail(loc, "reshape", "expected a shape of " + std::to_string(t.numel()) + " elements like " + shape_str(t.shape) +
                             ", found " + shape_str(shape) + " (" + std::to_string(out.numel()) + " elements)");
  if (out == t) return v;
  if (t.is_scalar()) return emit1(OpKind::Splat, {v}, out, {}, loc);
  return emit1(OpKind::Reshape, {v}, out, {}, loc);
}

Value* permute(Value* v, const std::vector<int64_t>& order, const ir::Loc& loc, std::string_view op) {
  Type t = type_of(v);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  bool ok = int(order.size()) == t.rank();
  for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == int64_t(i);
  if (!ok)
    fail(loc, op, "expected a permutation of the " + std::to_string(t.rank()) + " dims of " + t.str() + ", found " +
                      shape_str(order));
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == int64_t(i);
  if (identity) return v;
  Shape s;
  for (auto d : order) s.push_back(t.shape[d]);
  return emit1(OpKind::Trans, {v}, t.with_shape(s), {{"order", order}}, loc);
}

Value* join(Value* a, Value* b, const ir::Loc& loc) {
  Type ta = type_of(a), tb = type_of(b);
  if (!(ta == tb)) fail(loc, "join", "expected two values of one type, found " + ta.str() + " and " + tb.str());
  Shape s = ta.shape;
  s.push_back(2);
  check_shape(s, loc, "join");
  return emit1(OpKind::Join, {a, b}, ta.with_shape(s), {}, loc);
}

std::pair<Value*, Value*> split(Value* v, const ir::Loc& loc) {
  Type t = type_of(v);
  if (t.is_scalar() || t.shape.back() != 2)
    fail(loc, "split", "expected a tile whose last dim is 2, found " + t.str());
  Shape s = t.shape;
  s.pop_back();
  auto r = emit(OpKind::Split, {v}, {t.with_shape(s), t.with_shape(s)}, {}, loc);
  return {r[0], r[1]};
}

// ---- reductions and scans ------------------------------------------------------------

int check_reduce_input(Value* x, int axis, const ir::Loc& loc, std::string_view op) {
  Type t = type_of(x);
  if (t.is_scalar()) fail(loc, op, "expected a tile to reduce, found the scalar " + t.str());
  require_float_or_int(x, loc, op);
  return normalize_axis(axis, t.rank(), loc, op);
}

Value* reduce_builtin(OpKind kind, std::string_view op, Value* x, int axis, bool widen, const ir::Loc& loc) {
  int ax = check_reduce_input(x, axis, loc, op);
  Type t = type_of(x);
  if (widen) {
    DType acc = is_float(t.dtype) ? (bit_width(t.dtype) < 32 ? DType::f32 : t.dtype)
                                  : (bit_width(t.dtype) < 32 ? DType::i32 : t.dtype);
    x = cast(x, acc, loc, op);
    t = type_of(x);
  }
  Shape s = t.shape;
  s.erase(s.begin() + ax);
  Type elem = t.scalar();
  auto combine = [&](const std::vector<Value*>& args) -> std::vector<Value*> {
    return {emit1(kind, {args[0], args[1]}, elem, {}, loc)};
  };
  return emit_combine(OpKind::Reduce, {x}, {t.with_shape(s)}, {{"axis", int64_t(ax)}}, loc, combine)[0];
}

Value* scan_builtin(OpKind kind, std::string_view op, Value* x, int axis, bool reverse, const ir::Loc& loc) {
  int ax = check_reduce_input(x, axis, loc, op);
  Type t = type_of(x);
  DType acc = is_float(t.dtype) ? (bit_width(t.dtype) < 32 ? DType::f32 : t.dtype)
                                : (bit_width(t.dtype) < 32 ? DType::i32 : t.dtype);
  x = cast(x, acc, loc, op);
  t = type_of(x);
  Type elem = t.scalar();
  auto combine = [&](const std::vector<Value*>& args) -> std::vector<Value*> {
    return {emit1(kind, {args[0], args[1]}, elem, {}, loc)};
  };
  return emit_combine(OpKind::Scan, {x}, {t}, {{"axis", int64_t(ax)}, {"reverse", int64_t(reverse)}}, loc, combine)[0];
}

Value* arg_reduce(bool is_max, Value* x, int axis, const ir::Loc& loc) {
  std::string_view op = is_max ? "argmax" : "argmin";
  int ax = check_reduce_input(x, axis, loc, op);
  Type t = type_of(x);
  // Indices along the axis: arange shaped [1, .., n, .., 1], broadcast to x.
  Value* idx = arange(0, t.shape[ax], loc);
  for (int d = 0; d < t.rank(); ++d)
    if (d != ax) idx = emit1(OpKind::ExpandDims, {idx}, type_of(idx).with_shape([&] {
                               Shape s = type_of(idx).shape;
                               s.insert(s.begin() + d, 1);
                               return s;
                             }()),
                             {{"axis", int64_t(d)}}, loc);
  idx = broadcast_to(idx, t.shape, loc, op);
  Shape s = t.shape;
  s.erase(s.begin() + ax);
  Type vt = t.scalar(), it = ir::scalar_type(DType::i32);
  // (lv, li) wins over (rv, ri) when strictly better, or equal with a lower
  // index: the lowest index wins ties whatever the combine order.
  auto combine = [&](const std::vector<Value*>& a) -> std::vector<Value*> {
    Value *lv = a[0], *li = a[1], *rv = a[2], *ri = a[3];
    Type b1 = ir::scalar_type(DType::i1);
    Value* better = emit1(OpKind::Cmp, {lv, rv}, b1, {{"pred", std::string(is_max ? "gt" : "lt")}}, loc);
    Value* equal = emit1(OpKind::Cmp, {lv, rv}, b1, {{"pred", std::string("eq")}}, loc);
    Value* lower = emit1(OpKind::Cmp, {li, ri}, b1, {{"pred", std::string("lt")}}, loc);
    Value* tie = emit1(OpKind::And, {equal, lower}, b1, {}, loc);
    Value* left = emit1(OpKind::Or, {better, tie}, b1, {}, loc);
    return {emit1(OpKind::Select, {left, lv, rv}, vt, {}, loc), emit1(OpKind::Select, {left, li, ri}, it, {}, loc)};
  };
  auto r = emit_combine(OpKind::Reduce, {x, idx}, {t.with_shape(s), ir::Type{DType::i32, false, s}},
                        {{"axis", int64_t(ax)}}, loc, combine);
  return r[1];
}

// ---- memory ---------------------------------------------------------------------------

namespace {
Type require_pointer(Value* p, const ir::Loc& loc, std::string_view op) {
  Type t = type_of(p);
  if (!t.is_ptr) fail(loc, op, "expected a pointer or a tile of pointers, found " + t.str());
  return t;
}
// The mask broadcast to the pointers' shape; it may not grow that shape.
Value* prepare_mask(Value* mask, const Type& pt, const ir::Loc& loc, std::string_view op) {
  Type mt = type_of(mask);
  if (mt.dtype != DType::i1 || mt.is_ptr) fail(loc, op, "expected a bool mask, found " + mt.str());
  Shape both = broadcast_shapes(pt.shape, mt.shape, loc, op);
  if (both != pt.shape)
    fail(loc, op, "expected a mask of the pointers' shape " + shape_str(pt.shape) + " (or broadcastable to it), found " +
                      shape_str(mt.shape));
  return broadcast_to(mask, pt.shape, loc, op);
}
// A value stored / combined through pointers of type `pt`: converted to the
// pointee and broadcast to the pointers' shape.
Value* prepare_value(const Operand& v, const Type& pt, const ir::Loc& loc, std::string_view op, const char* what) {
  if (!v.is_literal()) {
    Type vt = type_of(v.value);
    if (vt.is_ptr) fail(loc, op, std::string("expected a numeric ") + what + ", found " + vt.str());
    if (broadcast_shapes(pt.shape, vt.shape, loc, op) != pt.shape)
      fail(loc, op, std::string("expected a ") + what + " of the pointers' shape " + shape_str(pt.shape) +
                        " (or broadcastable to it), found " + shape_str(vt.shape));
  }
  return materialize(v, pt.dtype, pt.shape, loc, op);
}
ir::Attrs hints(const std::string& cache, const std::string& evict) {
  ir::Attrs a;
  if (!cache.empty()) a["cache"] = cache;
  if (!evict.empty()) a["evict"] = evict;
  return a;
}
// An atomic's memory order and scope: one of Triton's names each.
ir::Attrs atomic_sync(const std::string& sem, const std::string& scope, const ir::Loc& loc, std::string_view op) {
  if (sem != "relaxed" && sem != "acquire" && sem != "release" && sem != "acq_rel")
    fail(loc, op, "expected a memory order (.sem) \"relaxed\", \"acquire\", \"release\" or \"acq_rel\", found \"" +
                      sem + "\"");
  if (scope != "cta" && scope != "gpu" && scope != "sys")
    fail(loc, op, "expected a memory scope (.scope) \"cta\", \"gpu\" or \"sys\", found \"" + scope + "\"");
  return {{"sem", sem}, {"scope", scope}};
}
}  // namespace

Value* load(Value* ptr, Value* mask, const Operand* other, const std::string& cache, const std::string& evict,
            bool is_volatile, const ir::Loc& loc) {
  Type pt = require_pointer(ptr, loc, "load");
  std::vector<Value*> operands{ptr};
  if (mask) operands.push_back(prepare_mask(mask, pt, loc, "load"));
  if (other) operands.push_back(prepare_value(*other, pt, loc, "load", "'other' value"));
  ir::Attrs attrs = hints(cache, evict);
  if (is_volatile) attrs["volatile"] = int64_t(1);
  return emit1(OpKind::Load, operands, Type{pt.dtype, false, pt.shape}, attrs, loc);
}

void store(Value* ptr, const Operand& value, Value* mask, const std::string& cache, const std::string& evict,
           const ir::Loc& loc) {
  Type pt = require_pointer(ptr, loc, "store");
  std::vector<Value*> operands{ptr, prepare_value(value, pt, loc, "store", "stored value")};
  if (mask) operands.push_back(prepare_mask(mask, pt, loc, "store"));
  emit(OpKind::Store, operands, {}, hints(cache, evict), loc);
}

namespace {
std::vector<Value*> descriptor_operands(Value* base, const std::vector<Value*>& shape,
                                        const std::vector<Value*>& strides, const std::vector<Value*>& coords) {
  std::vector<Value*> operands{base};
  for (const auto* part : {&shape, &strides, &coords}) operands.insert(operands.end(), part->begin(), part->end());
  return operands;
}
ir::Attrs block_attr(const std::vector<int64_t>& block) { return {{"block", block}}; }
}  // namespace

Value* descriptor_load(Value* base, const std::vector<Value*>& shape, const std::vector<Value*>& strides,
                       const std::vector<Value*>& coords, const std::vector<int64_t>& block, const ir::Loc& loc) {
  Type pt = require_pointer(base, loc, "tensor_descriptor::load");
  return emit1(OpKind::DescriptorLoad, descriptor_operands(base, shape, strides, coords),
               Type{pt.dtype, false, block}, block_attr(block), loc);
}

void descriptor_store(Value* base, const std::vector<Value*>& shape, const std::vector<Value*>& strides,
                      const std::vector<Value*>& coords, const std::vector<int64_t>& block, const Operand& value,
                      const ir::Loc& loc) {
  Type pt = require_pointer(base, loc, "tensor_descriptor::store");
  std::vector<Value*> operands = descriptor_operands(base, shape, strides, coords);
  operands.push_back(prepare_value(value, pt.with_shape(block), loc, "tensor_descriptor::store", "stored value"));
  emit(OpKind::DescriptorStore, operands, {}, block_attr(block), loc);
}

Value* atomic_rmw(const std::string& kind, Value* ptr, const Operand& value, Value* mask, const std::string& sem,
                  const std::string& scope, const ir::Loc& loc) {
  std::string op = "atomic_" + kind;
  Type pt = require_pointer(ptr, loc, op);
  bool bitwise = kind == "and" || kind == "or" || kind == "xor";
  if (bitwise && !is_int(pt.dtype)) fail(loc, op, "expected pointers to integers, found " + pt.str());
  ir::Attrs attrs = atomic_sync(sem, scope, loc, op);
  attrs["kind"] = kind;
  std::vector<Value*> operands{ptr, prepare_value(value, pt, loc, op, "value")};
  if (mask) operands.push_back(prepare_mask(mask, pt, loc, op));
  return emit1(OpKind::AtomicRmw, operands, Type{pt.dtype, false, pt.shape}, attrs, loc);
}

Value* atomic_cas(Value* ptr, const Operand& cmp, const Operand& value, const std::string& sem,
                  const std::string& scope, const ir::Loc& loc) {
  Type pt = require_pointer(ptr, loc, "atomic_cas");
  ir::Attrs attrs = atomic_sync(sem, scope, loc, "atomic_cas");
  Value* c = prepare_value(cmp, pt, loc, "atomic_cas", "compared value");
  Value* v = prepare_value(value, pt, loc, "atomic_cas", "value");
  return emit1(OpKind::AtomicCas, {ptr, c, v}, Type{pt.dtype, false, pt.shape}, attrs, loc);
}

void device_assert(Value* cond, const std::string& msg, const ir::Loc& loc) {
  Type t = type_of(cond);
  if (t.dtype != DType::i1 || t.is_ptr) fail(loc, "device_assert", "expected a bool condition, found " + t.str());
  emit(OpKind::Assert, {cond}, {}, {{"msg", msg}, {"file", loc.file}, {"line", int64_t(loc.line)}}, loc);
}

std::vector<Value*> inline_asm(const std::vector<std::pair<std::string, std::string>>& text, bool pure, int pack,
                               const std::vector<Value*>& args, const std::vector<DType>& results,
                               const ir::Loc& loc) {
  const char* op = "inline_asm_elementwise";
  if (args.empty()) fail(loc, op, "expected at least one tile argument, found none");
  ir::Attrs attrs{{"pure", int64_t(pure)}, {"pack", int64_t(pack)}};
  for (const auto& [key, value] : text)
    if (!value.empty()) attrs[key] = value;
  for (const char* lang : {"ptx", "amdgcn"})
    if (attrs.count(lang) != attrs.count(std::string(lang) + "_constraints"))
      fail(loc, op, std::string("expected .") + lang + " to give both its text and its constraints, found one of them");
  if (!attrs.count("ptx") && !attrs.count("amdgcn"))
    fail(loc, op, "expected assembly text (.ptx or .amdgcn), found none");
  if (pack < 1 || pack > 8 || (pack & (pack - 1)) != 0) fail(loc, op, "expected a pack of 1, 2, 4 or 8, found " + std::to_string(pack));
  Shape shape;
  for (Value* a : args) {
    if (type_of(a).is_ptr) fail(loc, op, "expected numeric arguments, found " + type_of(a).str());
    shape = broadcast_shapes(shape, type_of(a).shape, loc, op);
  }
  std::vector<Value*> ops;
  for (Value* a : args) ops.push_back(broadcast_to(a, shape, loc, op));
  std::vector<Type> types;
  for (DType d : results) types.push_back(Type{d, false, shape});
  return emit(OpKind::InlineAsm, ops, types, attrs, loc);
}

void assume(Value* cond, const ir::Loc& loc) {
  Type t = type_of(cond);
  if (t.dtype != DType::i1 || t.is_ptr) fail(loc, "assume", "expected a bool condition, found " + t.str());
  emit(OpKind::Assume, {cond}, {}, {}, loc);
}

void debug_barrier(const ir::Loc& loc) {
  if (!tracing()) fail(loc, "debug_barrier", "expected to run inside tl::compile, found no active trace");
  emit(OpKind::Barrier, {}, {}, {}, loc);
}

void device_print(const std::string& prefix, const std::vector<Value*>& values, const ir::Loc& loc) {
  emit(OpKind::Print, values, {}, {{"prefix", prefix}}, loc);
}

// ---- loops --------------------------------------------------------------------------

Value* loop_bound(const Operand& b, DType iv, const ir::Loc& loc, const char* which) {
  std::string iv_name(dtype_name(iv));
  if (b.is_literal()) {
    if (b.lit != LitKind::Int || !fits(b, iv))
      fail(loc, "range",
           "expected the " + std::string(which) + " to fit " + iv_name + ", found " + literal_str(b) +
               (iv == DType::i32 ? " (a loop over 64-bit values: tl::range<int64_t>, or a scalar<int64_t> bound)" : ""));
    return constant(b, iv, {}, loc, "range");
  }
  Type t = type_of(b.value);
  if (t == ir::scalar_type(iv)) return b.value;
  if (iv == DType::i64 && t == ir::scalar_type(DType::i32)) return cast(b.value, iv, loc, "range");
  fail(loc, "range", "expected an " + iv_name + " scalar " + which + ", found " + t.str() +
                         (iv == DType::i32 && t == ir::scalar_type(DType::i64) ? " (a 64-bit loop: tl::range<int64_t>)" : ""));
}

}  // namespace tl::detail
