// Unit tests of canonicalize (lib/transforms/canonicalize.cpp): constant
// folding by the rules of ops.def (integer wrap-around, rounding once, NaN
// and signed zeros, casts, shape ops of constants) and the algebraic
// simplifications that are exact (identities, select, no-op shape ops and
// casts, trans/reshape chains, constant ifs and empty loops). The helpers
// are passes_test_fn.h's, shared with test_passes.cpp.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "ir/ir.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes_test_fn.h"
#include "transforms/passes.h"

using namespace tl;
using ir::OpKind;
using ir::Type;
using ir::Value;
using namespace passes_test;

// ===========================================================================
// Canonicalize: constant folding

TEST_CASE("folding wraps integers at the dtype's width and signedness", "[passes][canonicalize]") {
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Add, t_i8, 100, 100, f)) == -56); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Add, t_u8, 200, 100, f)) == 44); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Sub, t_u32, 0, 1, f)) == 4294967295); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Mul, t_i32, 65536, 65536, f)) == 0); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Mul, t_i64, INT64_MAX, 2, f)) == -2); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Add, t_i1, 1, 1, f)) == 0); }
  // A t_u32 constant written as -1 is 0xffffffff.
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Add, t_u32, -1, 0, f)) == 4294967295); }
}

TEST_CASE("folding integer division truncates and skips undefined cases", "[passes][canonicalize]") {
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Div, t_i32, -7, 2, f)) == -3); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Rem, t_i32, -7, 2, f)) == -1); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Rem, t_i32, 7, -2, f)) == 1); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Div, t_u32, -2, 2, f)) == 2147483647); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Div, t_u8, 200, 3, f)) == 66); }
  {
    TestFn f;
    Value* v = fold_int_binary(OpKind::Div, t_i32, 5, 0, f);
    CHECK(v->def->kind == OpKind::Div);  // the interpreter reports it at run time
  }
  {
    TestFn f;
    CHECK(fold_int_binary(OpKind::Rem, t_u32, 5, 0, f)->def->kind == OpKind::Rem);
  }
  {
    TestFn f;
    CHECK(fold_int_binary(OpKind::Div, t_i32, INT32_MIN, -1, f)->def->kind == OpKind::Div);
  }
}

TEST_CASE("folding shifts follows ops.def for large counts", "[passes][canonicalize]") {
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Shl, t_i32, 1, 31, f)) == INT32_MIN); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Shl, t_i32, 1, 32, f)) == 0); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Shl, t_u8, 0xff, 4, f)) == 0xf0); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Shr, t_i32, -8, 1, f)) == -4); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Shr, t_i32, -8, 40, f)) == -1); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Shr, t_i32, 8, 32, f)) == 0); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Shr, t_u32, -8, 1, f)) == 0x7ffffffc); }
  { TestFn f; CHECK(fold_int_binary(OpKind::Shl, t_i32, 1, -1, f)->def->kind == OpKind::Shl); }
}

TEST_CASE("folding bitwise and min/max on integers", "[passes][canonicalize]") {
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::And, t_i32, 12, 10, f)) == 8); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Or, t_i32, 12, 10, f)) == 14); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Xor, t_i32, 12, 10, f)) == 6); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Minimum, t_i32, -1, 1, f)) == -1); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Minimum, t_u32, -1, 1, f)) == 1); }
  { TestFn f; CHECK(const_int(fold_int_binary(OpKind::Maximum, t_u8, 255, 1, f)) == 255); }
  {
    TestFn f;
    ir::Op* s1 = f.keep(f.op(OpKind::Not, {f.cint(t_u8, 0x0f)}, t_u8));
    ir::Op* s2 = f.keep(f.op(OpKind::Neg, {f.cint(t_i8, -128)}, t_i8));
    ir::Op* s3 = f.keep(f.op(OpKind::Abs, {f.cint(t_i32, -5)}, t_i32));
    ir::Op* s4 = f.keep(f.op(OpKind::Not, {f.cint(t_i1, 1)}, t_i1));
    transforms::canonicalize(f.fn);
    f.verify();
    CHECK(const_int(stored(s1)) == 0xf0);
    CHECK(const_int(stored(s2)) == -128);
    CHECK(const_int(stored(s3)) == 5);
    CHECK(const_int(stored(s4)) == 0);
  }
}

TEST_CASE("folding floats rounds once to the result dtype", "[passes][canonicalize]") {
  { TestFn f; CHECK(const_float(fold_float_binary(OpKind::Add, t_f32, 1.0, 1e-8, f)) == 1.0); }
  {
    TestFn f;
    double third = const_float(fold_float_binary(OpKind::Div, t_f32, 1.0, 3.0, f));
    CHECK(third == double(1.0f / 3.0f));
  }
  {
    TestFn f;
    double third = const_float(fold_float_binary(OpKind::Div, t_f64, 1.0, 3.0, f));
    CHECK(third == 1.0 / 3.0);
  }
  // t_bf16 has 8 significant bits: 1 + 2^-8 is a tie, rounds to even (1.0);
  // 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
  { TestFn f; CHECK(const_float(fold_float_binary(OpKind::Add, t_bf16, 1.0, 0x1p-8, f)) == 1.0); }
  { TestFn f; CHECK(const_float(fold_float_binary(OpKind::Add, t_bf16, 1.0, 0x1.8p-7, f)) == 1.0 + 0x1p-6); }
  { TestFn f; CHECK(const_float(fold_float_binary(OpKind::Mul, t_f16, 300.0, 300.0, f)) == INFINITY); }
  { TestFn f; CHECK(const_float(fold_float_binary(OpKind::Rem, t_f32, -7.5, 2.0, f)) == -1.5); }
}

TEST_CASE("folding float min/max follows the NaN rule and skips signed zeros", "[passes][canonicalize]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  { TestFn f; CHECK(const_float(fold_float_binary(OpKind::Minimum, t_f32, nan, 2.0, f)) == 2.0); }
  { TestFn f; CHECK(const_float(fold_float_binary(OpKind::Maximum, t_f32, 3.0, nan, f)) == 3.0); }
  { TestFn f; CHECK(std::isnan(const_float(fold_float_binary(OpKind::Maximum, t_f32, nan, nan, f)))); }
  { TestFn f; CHECK(const_float(fold_float_binary(OpKind::Maximum, t_f32, -1.0, 2.0, f)) == 2.0); }
  {
    TestFn f;
    CHECK(fold_float_binary(OpKind::Minimum, t_f32, 0.0, -0.0, f)->def->kind == OpKind::Minimum);
  }
}

TEST_CASE("folding cmp: ordered float predicates, integer signedness", "[passes][canonicalize]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto cmp = [](Type t, const char* pred, auto a, auto b) {
    TestFn f;
    Value *x, *y;
    if constexpr (std::is_floating_point_v<decltype(a)>) {
      x = f.cfloat(t, a);
      y = f.cfloat(t, b);
    } else {
      x = f.cint(t, a);
      y = f.cint(t, b);
    }
    ir::Op* st = f.keep(f.op(OpKind::Cmp, {x, y}, t_i1, {{"pred", std::string(pred)}}));
    transforms::canonicalize(f.fn);
    f.verify();
    return const_int(stored(st));
  };
  CHECK(cmp(t_f32, "eq", nan, nan) == 0);
  CHECK(cmp(t_f32, "ne", nan, 1.0) == 1);
  CHECK(cmp(t_f32, "lt", nan, 1.0) == 0);
  CHECK(cmp(t_f32, "ge", nan, 1.0) == 0);
  CHECK(cmp(t_f32, "le", -0.0, 0.0) == 1);
  CHECK(cmp(t_i32, "lt", int64_t(-1), int64_t(1)) == 1);
  CHECK(cmp(t_u32, "lt", int64_t(-1), int64_t(1)) == 0);
  CHECK(cmp(t_u8, "gt", int64_t(200), int64_t(100)) == 1);
  CHECK(cmp(t_i8, "gt", int64_t(200), int64_t(100)) == 0);  // 200 is -56 in t_i8
}

TEST_CASE("folding cast follows ops.def", "[passes][canonicalize]") {
  auto cast_f = [](Type from, Type to, double v) {
    TestFn f;
    ir::Op* st = f.keep(f.op(OpKind::Cast, {f.cfloat(from, v)}, to));
    transforms::canonicalize(f.fn);
    f.verify();
    return folded_value(stored(st));
  };
  auto cast_i = [](Type from, Type to, int64_t v) {
    TestFn f;
    ir::Op* st = f.keep(f.op(OpKind::Cast, {f.cint(from, v)}, to));
    transforms::canonicalize(f.fn);
    f.verify();
    return folded_value(stored(st));
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // float -> int: truncate toward zero, saturate, NaN -> 0.
  CHECK(cast_f(t_f32, t_i32, -1.7) == ir::Attr(int64_t(-1)));
  CHECK(cast_f(t_f32, t_i32, 3e9) == ir::Attr(int64_t(INT32_MAX)));
  CHECK(cast_f(t_f32, t_i32, -3e9) == ir::Attr(int64_t(INT32_MIN)));
  CHECK(cast_f(t_f32, t_i32, nan) == ir::Attr(int64_t(0)));
  CHECK(cast_f(t_f32, t_u8, -5.0) == ir::Attr(int64_t(0)));
  CHECK(cast_f(t_f32, t_u8, 300.0) == ir::Attr(int64_t(255)));
  CHECK(cast_f(t_f64, t_i64, 1e30) == ir::Attr(int64_t(INT64_MAX)));
  CHECK(cast_f(t_f32, t_i1, 0.5) == ir::Attr(int64_t(1)));
  CHECK_FALSE(cast_f(t_f32, t_i1, nan).has_value());
  // float -> float: nearest even.
  CHECK(cast_f(t_f32, t_bf16, 1.0 + 0x1p-8) == ir::Attr(double(1.0)));
  CHECK(cast_f(t_f32, t_f16, 70000.0) == ir::Attr(double(INFINITY)));
  CHECK(cast_f(t_f64, t_f32, 0.1) == ir::Attr(double(double(0.1f))));
  // int -> int: truncate, or extend by the source's signedness; -> t_i1 is != 0.
  CHECK(cast_i(t_i32, t_u32, -1) == ir::Attr(int64_t(4294967295)));
  CHECK(cast_i(t_i8, t_i32, -1) == ir::Attr(int64_t(-1)));
  CHECK(cast_i(t_u8, t_i32, 255) == ir::Attr(int64_t(255)));
  CHECK(cast_i(t_i32, t_i8, 300) == ir::Attr(int64_t(44)));
  CHECK(cast_i(t_i32, t_i1, 2) == ir::Attr(int64_t(1)));
  CHECK(cast_i(t_i1, t_i32, 1) == ir::Attr(int64_t(1)));
  // int -> float.
  CHECK(cast_i(t_u32, t_f32, -1) == ir::Attr(double(4294967296.0)));
  CHECK(cast_i(t_i32, t_bf16, 257) == ir::Attr(double(256.0)));
  CHECK(cast_i(t_i64, t_f32, (int64_t(1) << 60) + 1) == ir::Attr(double(0x1p60)));
  CHECK_FALSE(cast_i(t_i64, t_bf16, (int64_t(1) << 40) + 1).has_value());  // would round twice
}

TEST_CASE("folding shape ops of constants gives constant tiles", "[passes][canonicalize]") {
  TestFn f;
  Type t16 = ir::tile_type(DType::f32, {16});
  Type t1x16 = ir::tile_type(DType::f32, {1, 16});
  Type t8x16 = ir::tile_type(DType::f32, {8, 16});
  Value* c = f.cfloat(t_f32, 2.5);
  Value* s = f.op(OpKind::Splat, {c}, t16);                                  // [16] t_f32
  Value* e = f.op(OpKind::ExpandDims, {s}, t1x16, {{"axis", int64_t(0)}});   // [1, 16]
  Value* b = f.op(OpKind::Broadcast, {e}, t8x16);                            // [8, 16]
  Value* x = f.arg(t8x16);
  Value* sum = f.op(OpKind::Add, {x, b}, t8x16);
  ir::Op* st = f.keep(sum);
  CHECK(transforms::canonicalize(f.fn));
  transforms::dce(f.fn);
  f.verify();
  Value* rhs = stored(st)->def->operands[1];
  CHECK(rhs->type == t8x16);
  CHECK(const_float(rhs) == 2.5);
  CHECK(f.count(OpKind::Splat) + f.count(OpKind::Broadcast) + f.count(OpKind::ExpandDims) == 0);
}

TEST_CASE("elementwise folding of splatted tile constants", "[passes][canonicalize]") {
  TestFn f;
  Type t = ir::tile_type(DType::i32, {64});
  Value* a = f.cint(t, 7);
  Value* b = f.cint(t, 5);
  ir::Op* st = f.keep(f.op(OpKind::Sub, {a, b}, t));
  transforms::canonicalize(f.fn);
  f.verify();
  CHECK(stored(st)->type == t);
  CHECK(const_int(stored(st)) == 2);
}

// ===========================================================================
// Canonicalize: algebraic simplification

TEST_CASE("integer identities", "[passes][canonicalize]") {
  TestFn f;
  Value* x = f.arg(t_i32);
  Value* y = f.arg(t_i32);
  Value* zero = f.cint(t_i32, 0);
  Value* one = f.cint(t_i32, 1);
  ir::Op* s_add0 = f.keep(f.op(OpKind::Add, {x, zero}, t_i32));
  ir::Op* s_0add = f.keep(f.op(OpKind::Add, {zero, x}, t_i32));
  ir::Op* s_sub0 = f.keep(f.op(OpKind::Sub, {x, zero}, t_i32));
  ir::Op* s_mul1 = f.keep(f.op(OpKind::Mul, {x, one}, t_i32));
  ir::Op* s_1mul = f.keep(f.op(OpKind::Mul, {one, x}, t_i32));
  ir::Op* s_mul0 = f.keep(f.op(OpKind::Mul, {x, zero}, t_i32));
  ir::Op* s_div1 = f.keep(f.op(OpKind::Div, {x, one}, t_i32));
  ir::Op* s_andx = f.keep(f.op(OpKind::And, {x, x}, t_i32));
  ir::Op* s_orx = f.keep(f.op(OpKind::Or, {x, x}, t_i32));
  ir::Op* s_and_ones = f.keep(f.op(OpKind::And, {x, f.cint(t_i32, -1)}, t_i32));
  ir::Op* s_xorx = f.keep(f.op(OpKind::Xor, {x, x}, t_i32));
  ir::Op* s_subx = f.keep(f.op(OpKind::Sub, {x, x}, t_i32));
  ir::Op* s_shl0 = f.keep(f.op(OpKind::Shl, {x, zero}, t_i32));
  ir::Op* s_minx = f.keep(f.op(OpKind::Minimum, {x, x}, t_i32));
  ir::Op* s_cmp = f.keep(f.op(OpKind::Cmp, {x, x}, t_i1, {{"pred", std::string("le")}}));
  ir::Op* s_negneg = f.keep(f.op(OpKind::Neg, {f.op(OpKind::Neg, {x}, t_i32)}, t_i32));
  ir::Op* s_keep = f.keep(f.op(OpKind::Add, {x, y}, t_i32));
  CHECK(transforms::canonicalize(f.fn));
  f.verify();
  for (ir::Op* s : {s_add0, s_0add, s_sub0, s_mul1, s_1mul, s_div1, s_andx, s_orx, s_and_ones, s_shl0, s_minx,
                    s_negneg})
    CHECK(stored(s) == x);
  CHECK(const_int(stored(s_mul0)) == 0);
  CHECK(const_int(stored(s_xorx)) == 0);
  CHECK(const_int(stored(s_subx)) == 0);
  CHECK(const_int(stored(s_cmp)) == 1);
  CHECK(stored(s_keep)->def->kind == OpKind::Add);
}

TEST_CASE("float identities only where exact for NaN, -0 and inf", "[passes][canonicalize]") {
  TestFn f;
  Value* x = f.arg(t_f32);
  ir::Op* s_mul1 = f.keep(f.op(OpKind::Mul, {x, f.cfloat(t_f32, 1.0)}, t_f32));
  ir::Op* s_div1 = f.keep(f.op(OpKind::Div, {x, f.cfloat(t_f32, 1.0)}, t_f32));
  ir::Op* s_sub0 = f.keep(f.op(OpKind::Sub, {x, f.cfloat(t_f32, 0.0)}, t_f32));
  ir::Op* s_addm0 = f.keep(f.op(OpKind::Add, {f.cfloat(t_f32, -0.0), x}, t_f32));
  // Not identities: -0 + 0 = +0, NaN * 0 = NaN, x - x is NaN for inf,
  // NaN != NaN.
  ir::Op* s_add0 = f.keep(f.op(OpKind::Add, {x, f.cfloat(t_f32, 0.0)}, t_f32));
  ir::Op* s_mul0 = f.keep(f.op(OpKind::Mul, {x, f.cfloat(t_f32, 0.0)}, t_f32));
  ir::Op* s_subx = f.keep(f.op(OpKind::Sub, {x, x}, t_f32));
  ir::Op* s_cmp = f.keep(f.op(OpKind::Cmp, {x, x}, t_i1, {{"pred", std::string("eq")}}));
  transforms::canonicalize(f.fn);
  f.verify();
  for (ir::Op* s : {s_mul1, s_div1, s_sub0, s_addm0}) CHECK(stored(s) == x);
  CHECK(stored(s_add0)->def->kind == OpKind::Add);
  CHECK(stored(s_mul0)->def->kind == OpKind::Mul);
  CHECK(stored(s_subx)->def->kind == OpKind::Sub);
  CHECK(stored(s_cmp)->def->kind == OpKind::Cmp);
}

TEST_CASE("select with a constant or redundant choice", "[passes][canonicalize]") {
  TestFn f;
  Type t = ir::tile_type(DType::f32, {32});
  Type ti1 = ir::tile_type(DType::i1, {32});
  Value* a = f.arg(t);
  Value* b = f.arg(t);
  Value* c = f.arg(ti1);
  ir::Op* s_true = f.keep(f.op(OpKind::Select, {f.cint(ti1, 1), a, b}, t));
  ir::Op* s_false = f.keep(f.op(OpKind::Select, {f.cint(ti1, 0), a, b}, t));
  ir::Op* s_same = f.keep(f.op(OpKind::Select, {c, a, a}, t));
  ir::Op* s_keep = f.keep(f.op(OpKind::Select, {c, a, b}, t));
  transforms::canonicalize(f.fn);
  f.verify();
  CHECK(stored(s_true) == a);
  CHECK(stored(s_false) == b);
  CHECK(stored(s_same) == a);
  CHECK(stored(s_keep)->def->kind == OpKind::Select);
}

TEST_CASE("no-op shape ops and casts disappear", "[passes][canonicalize]") {
  TestFn f;
  Type t = ir::tile_type(DType::f16, {4, 8});
  Value* x = f.arg(t);
  ir::Op* s_cast = f.keep(f.op(OpKind::Cast, {x}, t));
  ir::Op* s_bcast = f.keep(f.op(OpKind::Broadcast, {x}, t));
  ir::Op* s_reshape = f.keep(f.op(OpKind::Reshape, {x}, t));
  ir::Op* s_trans_id = f.keep(f.op(OpKind::Trans, {x}, t, {{"order", std::vector<int64_t>{0, 1}}}));
  ir::Op* s_real_cast = f.keep(f.op(OpKind::Cast, {x}, t.with_dtype(DType::f32)));
  transforms::canonicalize(f.fn);
  f.verify();
  for (ir::Op* s : {s_cast, s_bcast, s_reshape, s_trans_id}) CHECK(stored(s) == x);
  CHECK(stored(s_real_cast)->def->kind == OpKind::Cast);
}

TEST_CASE("trans of trans composes", "[passes][canonicalize]") {
  TestFn f;
  Value* x = f.arg(ir::tile_type(DType::f32, {2, 4, 8}));
  auto trans = [&](Value* v, std::vector<int64_t> order) {
    std::vector<int64_t> shape;
    for (auto d : order) shape.push_back(v->type.shape[size_t(d)]);
    return f.op(OpKind::Trans, {v}, v->type.with_shape(shape), {{"order", order}});
  };
  Value* t1 = trans(x, {1, 2, 0});   // [4, 8, 2]
  Value* back = trans(t1, {2, 0, 1});  // [2, 4, 8]: undoes t1
  Value* other = trans(t1, {1, 0, 2});  // [8, 4, 2] = x dims {2, 1, 0}
  ir::Op* s_back = f.keep(back);
  ir::Op* s_other = f.keep(other);
  transforms::canonicalize(f.fn);
  transforms::dce(f.fn);
  f.verify();
  CHECK(stored(s_back) == x);
  ir::Op* composed = stored(s_other)->def;
  REQUIRE(composed->kind == OpKind::Trans);
  CHECK(composed->operands[0] == x);
  CHECK(composed->attr_ints("order") == std::vector<int64_t>{2, 1, 0});
  CHECK(f.count(OpKind::Trans) == 1);
}

TEST_CASE("reshape chains collapse to one reshape", "[passes][canonicalize]") {
  TestFn f;
  Value* x = f.arg(ir::tile_type(DType::i32, {64}));
  Value* e = f.op(OpKind::ExpandDims, {x}, ir::tile_type(DType::i32, {1, 64}), {{"axis", int64_t(0)}});
  Value* r = f.op(OpKind::Reshape, {e}, ir::tile_type(DType::i32, {8, 8}));
  Value* r2 = f.op(OpKind::Reshape, {r}, ir::tile_type(DType::i32, {64}));
  ir::Op* s1 = f.keep(r);
  ir::Op* s2 = f.keep(r2);
  transforms::canonicalize(f.fn);
  transforms::dce(f.fn);
  f.verify();
  REQUIRE(stored(s1)->def->kind == OpKind::Reshape);
  CHECK(stored(s1)->def->operands[0] == x);
  CHECK(stored(s2) == x);
  CHECK(f.count(OpKind::ExpandDims) == 0);
}

TEST_CASE("canonicalize rewrites inside loop bodies", "[passes][canonicalize]") {
  TestFn f;
  Value* x = f.arg(t_i32);
  ir::Op* inner_store = nullptr;
  make_for(f, {}, [&](ir::Builder& b, ir::Region& r) {
    Value* iv = r.args[0].get();
    Value* zero = b.constant_int(t_i32, 0);
    Value* sum = b.create1(OpKind::Add, {iv, zero}, t_i32);
    Value* p = f.arg(ir::ptr_type(DType::i32));
    inner_store = b.create(OpKind::Store, {p, b.create1(OpKind::Mul, {sum, x}, t_i32)}, {});
    return std::vector<Value*>{};
  });
  CHECK(transforms::canonicalize(f.fn));
  f.verify();
  ir::Op* mul = stored(inner_store)->def;
  CHECK(mul->operands[0] == inner_store->parent->args[0].get());
}

TEST_CASE("canonicalized IR prints the folded constant", "[passes][canonicalize]") {
  TestFn f;
  Value* c = f.op(OpKind::Add, {f.cint(t_i32, 40), f.cint(t_i32, 2)}, t_i32);
  f.keep(c);
  transforms::simplify(f.fn);
  std::string text = ir::print(f.fn, {.locations = false});
  CHECK(text.find("constant {value = 42} : i32") != std::string::npos);
  CHECK(text.find("add") == std::string::npos);
}

TEST_CASE("if with a constant condition becomes the branch it takes", "[passes][canonicalize]") {
  for (int taken : {1, 0}) {
    TestFn f;
    Value* x = f.arg(t_f32);
    Value* p = f.arg(ir::ptr_type(DType::f32));
    ir::Op* branch = f.b.create(OpKind::If, {f.cint(t_i1, taken)}, {t_f32});
    Value* yielded[2];
    for (int i = 0; i < 2; ++i) {
      ir::Builder b(branch->add_region());
      yielded[i] = b.create1(i == 0 ? OpKind::Add : OpKind::Mul, {x, x}, t_f32);
      b.create(OpKind::Store, {p, yielded[i]}, {});
      b.create(OpKind::Yield, {yielded[i]}, {});
    }
    ir::Op* st = f.keep(branch->result());
    CHECK(transforms::canonicalize(f.fn));
    f.verify();
    CHECK(f.count(OpKind::If) == 0);
    Value* chosen = yielded[taken ? 0 : 1];
    CHECK(stored(st) == chosen);
    CHECK(chosen->def->parent == &f.fn.body);
    CHECK(f.count(OpKind::Store) == 2);  // the taken branch's store and `st`
    CHECK(f.count(taken ? OpKind::Mul : OpKind::Add) == 0);
  }
}

TEST_CASE("for with constant bounds and no iteration yields its initial values", "[passes][canonicalize]") {
  TestFn f;
  Value* x = f.arg(t_f32);
  Value* n = f.arg(t_i32);
  Value* p = f.arg(ir::ptr_type(DType::f32));
  auto loop = [&](Value* lo, Value* hi) {
    ir::Op* op = f.b.create(OpKind::For, {lo, hi, f.cint(t_i32, 1), x}, {t_f32});
    ir::Region* r = op->add_region();
    r->add_arg(t_i32);
    Value* acc = r->add_arg(t_f32);
    ir::Builder b(r);
    b.create(OpKind::Store, {p, acc}, {});
    b.create(OpKind::Yield, {b.create1(OpKind::Add, {acc, x}, t_f32)}, {});
    return f.keep(op->result());
  };
  ir::Op* s_empty = loop(f.cint(t_i32, 4), f.cint(t_i32, 4));
  ir::Op* s_backwards = loop(f.cint(t_i32, 5), f.cint(t_i32, -3));
  ir::Op* s_runs = loop(f.cint(t_i32, -3), f.cint(t_i32, 5));
  ir::Op* s_unknown = loop(f.cint(t_i32, 0), n);
  CHECK(transforms::canonicalize(f.fn));
  f.verify();
  CHECK(stored(s_empty) == x);
  CHECK(stored(s_backwards) == x);
  CHECK(stored(s_runs)->def->kind == OpKind::For);
  CHECK(stored(s_unknown)->def->kind == OpKind::For);
  CHECK(f.count(OpKind::For) == 2);
}
