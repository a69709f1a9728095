// The dot builder behind tl::dot (detail/build.h): the 2-D product with its
// trace-time checks, the batched form ([B, M, K] x [B, K, N], one 2-D
// product a batch element, sliced by split and rejoined by join) and f8's
// max_num_imprecise_acc (the product split along K, the parts added in
// f32). Apart from build.cpp's elementwise and shape builders.
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "tiledsl/detail/build.h"

namespace tl::detail {

using ir::OpKind;
using ir::Type;

namespace {

// The n columns of x [R, n] as n tiles [R] (n a power of two): the last
// dimension halved by split (even and odd positions) until one is left.
std::vector<Value*> unstack_columns(Value* x, const ir::Loc& loc) {
  const Shape s = type_of(x).shape;
  std::vector<Value*> out(static_cast<size_t>(s[1]));
  std::function<void(Value*, std::vector<int64_t>)> go = [&](Value* v, std::vector<int64_t> cols) {
    if (cols.size() == 1) {
      out[size_t(cols[0])] = reshape(v, {s[0]}, loc);
      return;
    }
    auto [even, odd] = split(reshape(v, {s[0], int64_t(cols.size() / 2), 2}, loc), loc);  // [R, n/2] each
    std::vector<int64_t> e, o;
    for (size_t i = 0; i < cols.size(); ++i) (i % 2 ? o : e).push_back(cols[i]);
    go(even, e);
    go(odd, o);
  };
  std::vector<int64_t> all(static_cast<size_t>(s[1]));
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  go(x, all);
  return out;
}

// The inverse: n tiles [R] as the columns of [R, n].
Value* stack_columns(const std::vector<Value*>& xs, const ir::Loc& loc) {
  const int64_t rows = type_of(xs[0]).shape[0];
  if (xs.size() == 1) return reshape(xs[0], {rows, 1}, loc);
  std::vector<Value*> e, o;
  for (size_t i = 0; i < xs.size(); ++i) (i % 2 ? o : e).push_back(xs[i]);
  Value* j = join(stack_columns(e, loc), stack_columns(o, loc), loc);  // [R, n/2, 2]
  return reshape(j, {rows, int64_t(xs.size())}, loc);
}

// x [P, R...] as P tiles of shape `piece` ([R...]).
std::vector<Value*> unstack_first(Value* x, const Shape& piece, const ir::Loc& loc) {
  const Shape s = type_of(x).shape;
  int64_t rest = 1;
  for (auto d : piece) rest *= d;
  Value* cols = permute(reshape(x, {s[0], rest}, loc), {1, 0}, loc, "dot");  // [rest, P]
  std::vector<Value*> out = unstack_columns(cols, loc);
  for (auto& v : out) v = reshape(v, piece, loc);
  return out;
}

// P tiles of one shape [R...] as [P, R...].
Value* stack_first(const std::vector<Value*>& xs, const ir::Loc& loc) {
  Shape piece = type_of(xs[0]).shape;
  int64_t rest = 1;
  for (auto d : piece) rest *= d;
  std::vector<Value*> flat;
  for (Value* v : xs) flat.push_back(reshape(v, {rest}, loc));
  Value* rows = permute(stack_columns(flat, loc), {1, 0}, loc, "dot");  // [P, rest]
  piece.insert(piece.begin(), int64_t(xs.size()));
  return reshape(rows, piece, loc);
}

bool is_fp8(DType d) { return d == DType::f8e4m3 || d == DType::f8e5m2; }

// The 2-D product [M, K] x [K, N] (+ acc) with its checks.
Value* dot2(Value* a, Value* b, Value* acc, const std::string& input_precision, const ir::Loc& loc) {
  Type ta = type_of(a), tb = type_of(b);
  if (ta.rank() != 2 || tb.rank() != 2)
    fail(loc, "dot", "expected 2-D operands [M, K] and [K, N], found " + ta.str() + " and " + tb.str());
  if (ta.shape[1] != tb.shape[0])
    fail(loc, "dot", "expected [M, K] x [K, N] with one K, found " + shape_str(ta.shape) + " x " + shape_str(tb.shape));
  if (ta.dtype != tb.dtype || ta.is_ptr || tb.is_ptr)
    fail(loc, "dot", "expected inputs of one dtype, found " + ta.scalar().str() + " and " + tb.scalar().str());
  bool float_in = is_float(ta.dtype);
  if (!float_in && ta.dtype != DType::i8 && ta.dtype != DType::u8)
    fail(loc, "dot", "expected float or 8-bit integer inputs, found " + ta.scalar().str());
  if (input_precision != "tf32" && input_precision != "ieee")
    fail(loc, "dot", "expected input_precision \"tf32\", \"tf32x3\" or \"ieee\", found \"" + input_precision + "\"");
  Shape out{ta.shape[0], tb.shape[1]};
  // Triton's defaults: f64 inputs accumulate in f64, other floats in f32.
  DType acc_dtype = ta.dtype == DType::f64 ? DType::f64 : float_in ? DType::f32 : DType::i32;
  if (acc) {
    Type tc = type_of(acc);
    if (tc.shape != out)
      fail(loc, "dot", "expected an accumulator of shape " + shape_str(out) + ", found " + tc.str());
    if (float_in ? (!is_float(tc.dtype) || tc.is_ptr) : !(tc == Type{DType::i32, false, out}))
      fail(loc, "dot", std::string("expected ") + (float_in ? "a float" : "an i32") + " accumulator for " +
                           ta.scalar().str() + " inputs, found " + tc.str());
  } else {
    acc = constant(Operand::number(0), acc_dtype, out, loc, "dot");
  }
  check_shape(out, loc, "dot");
  return emit1(OpKind::Dot, {a, b, acc}, type_of(acc), {{"input_precision", input_precision}}, loc);
}

}  // namespace

Value* dot(Value* a, Value* b, Value* acc, const std::string& input_precision, const ir::Loc& loc,
           int64_t max_num_imprecise_acc) {
  if (!tracing()) fail(loc, "dot", "expected to run inside tl::compile, found no active trace");
  Type ta = type_of(a), tb = type_of(b);
  // Tiles may have rank 4 and 5 ([B, H, M, K]), but a product is 2-D or
  // batched 3-D (Triton's): say both forms rather than the 2-D one only.
  if (ta.rank() > 3 || tb.rank() > 3)
    fail(loc, "dot",
         "expected 2-D operands [M, K] and [K, N], or 3-D [B, M, K] and [B, K, N] for a batched dot (reshape a "
         "[B, H, M, K] tile to [B * H, M, K]), found " + ta.str() + " and " + tb.str());
  if (ta.rank() == 3 || tb.rank() == 3) {
    // A batched product: [B, M, K] x [B, K, N] (+ [B, M, N]), one 2-D
    // product a batch element.
    if (ta.rank() != 3 || tb.rank() != 3 || ta.shape[0] != tb.shape[0])
      fail(loc, "dot",
           "expected [B, M, K] x [B, K, N] with one B for a batched dot, found " + ta.str() + " and " + tb.str());
    const int64_t B = ta.shape[0];
    if ((B & (B - 1)) != 0)
      fail(loc, "dot", "expected a power-of-two batch B for a batched dot, found " + ta.str() + " and " + tb.str());
    if (acc && (type_of(acc).rank() != 3 || type_of(acc).shape[0] != B))
      fail(loc, "dot", "expected a [B, M, N] accumulator with B = " + std::to_string(B) + ", found " + type_of(acc).str());
    auto as = unstack_first(a, {ta.shape[1], ta.shape[2]}, loc);
    auto bs = unstack_first(b, {tb.shape[1], tb.shape[2]}, loc);
    std::vector<Value*> cs;
    if (acc) cs = unstack_first(acc, {type_of(acc).shape[1], type_of(acc).shape[2]}, loc);
    std::vector<Value*> out;
    for (int64_t i = 0; i < B; ++i)
      out.push_back(dot(as[size_t(i)], bs[size_t(i)], acc ? cs[size_t(i)] : nullptr, input_precision, loc,
                        max_num_imprecise_acc));
    return stack_first(out, loc);
  }
  if (max_num_imprecise_acc < 0)
    fail(loc, "dot", "expected max_num_imprecise_acc >= 0, found " + std::to_string(max_num_imprecise_acc));
  if (max_num_imprecise_acc == 0 || !is_fp8(ta.dtype) || ta.rank() != 2 || tb.rank() != 2 ||
      ta.shape[1] != tb.shape[0])
    return dot2(a, b, acc, input_precision, loc);
  // fp8 with max_num_imprecise_acc = n: at most n products of K are summed
  // in the matrix unit's accumulator (which on Hopper keeps fewer bits
  // than f32) before they are added to the result in f32. n >= K: the
  // whole product from zero, then added; n < K: K / n products of n each.
  const int64_t K = ta.shape[1], n = max_num_imprecise_acc;
  if (acc) {
    Type tc = type_of(acc);
    if (tc.shape != Shape{ta.shape[0], tb.shape[1]} || !is_float(tc.dtype) || tc.is_ptr)
      return dot2(a, b, acc, input_precision, loc);  // which fails, naming what it expected
  }
  std::vector<Value*> parts;
  if (n >= K) {
    parts.push_back(dot2(a, b, nullptr, input_precision, loc));
  } else {
    if (K % n != 0 || (n & (n - 1)) != 0)
      fail(loc, "dot",
           "expected max_num_imprecise_acc to be a power of two dividing K = " + std::to_string(K) + ", found " +
               std::to_string(n));
    const int64_t P = K / n, M = ta.shape[0], N = tb.shape[1];
    // a [M, K] -> P x [M, n]; b [K, N] -> P x [n, N].
    auto as = unstack_first(permute(reshape(a, {M, P, n}, loc), {1, 0, 2}, loc, "dot"), {M, n}, loc);
    auto bs = unstack_first(reshape(b, {P, n, N}, loc), {n, N}, loc);
    for (int64_t i = 0; i < P; ++i) parts.push_back(dot2(as[size_t(i)], bs[size_t(i)], nullptr, input_precision, loc));
  }
  Value* sum = acc;
  for (Value* p : parts) {
    if (!sum) {
      sum = p;
      continue;
    }
    Value* s = binary(BinCat::Arith, OpKind::Add, "dot", Operand(sum), Operand(p), loc);
    sum = type_of(s).dtype == type_of(acc ? acc : p).dtype ? s : cast(s, type_of(acc ? acc : p).dtype, loc, "dot");
  }
  return sum;
}

}  // namespace tl::detail
