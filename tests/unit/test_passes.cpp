// Unit tests of the target-independent passes (lib/transforms): dce, cse,
// canonicalize and the simplify() pipeline. Each test builds a small function
// with ir::Builder, runs one pass, checks the ops that remain, and verifies
// that the result is still valid IR. Values under test are kept alive by a
// `store` into a pointer argument, which no pass may remove.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "ir/ir.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "transforms/passes.h"

using namespace tl;
using ir::OpKind;
using ir::Type;
using ir::Value;

namespace {

const Type t_i1 = ir::scalar_type(DType::i1);
const Type t_i8 = ir::scalar_type(DType::i8);
const Type t_u8 = ir::scalar_type(DType::u8);
const Type t_i32 = ir::scalar_type(DType::i32);
const Type t_u32 = ir::scalar_type(DType::u32);
const Type t_i64 = ir::scalar_type(DType::i64);
const Type t_f16 = ir::scalar_type(DType::f16);
const Type t_bf16 = ir::scalar_type(DType::bf16);
const Type t_f32 = ir::scalar_type(DType::f32);
const Type t_f64 = ir::scalar_type(DType::f64);

// A function under construction, with a builder at the end of its body.
struct TestFn {
  ir::Function fn;
  ir::Builder b{&fn.body};

  TestFn() { fn.name = "f"; }
  Value* arg(Type t) { return fn.body.add_arg(std::move(t)); }
  Value* op(OpKind k, std::vector<Value*> in, Type t, ir::Attrs attrs = {}) {
    return b.create1(k, std::move(in), std::move(t), std::move(attrs));
  }
  Value* cint(Type t, int64_t v) { return b.constant_int(std::move(t), v); }
  Value* cfloat(Type t, double v) { return b.constant_float(std::move(t), v); }
  // Keeps `v` alive through a store to a fresh pointer argument; returns the store.
  ir::Op* keep(Value* v) {
    Value* p = arg(Type{v->type.dtype, true, v->type.shape});
    return b.create(OpKind::Store, {p, v}, {});
  }

  int count(OpKind k) {
    int n = 0;
    ir::walk(fn.body, [&](ir::Op* o) { n += o->kind == k; });
    return n;
  }
  int total_ops() {
    int n = 0;
    ir::walk(fn.body, [&](ir::Op*) { ++n; });
    return n;
  }
  void verify() { REQUIRE_NOTHROW(ir::verify(fn)); }
};

// What the store `st` now writes.
Value* stored(ir::Op* st) { return st->operands.at(1); }

bool is_constant(const Value* v) { return v->def && v->def->kind == OpKind::Constant; }
int64_t const_int(const Value* v) {
  REQUIRE(is_constant(v));
  return v->def->attr_int("value");
}
double const_float(const Value* v) {
  REQUIRE(is_constant(v));
  return v->def->attr_float("value");
}

// The value of `v` when it is a constant (the pass folded it), else none.
// For checks made after the function that held `v` is gone.
std::optional<ir::Attr> folded_value(const Value* v) {
  if (!is_constant(v)) return std::nullopt;
  return v->def->attrs.at("value");
}

// Folds op(kind, a, b) of constants of type t and returns the stored value.
Value* fold_int_binary(OpKind k, Type t, int64_t a, int64_t b, TestFn& f) {
  Value* r = f.op(k, {f.cint(t, a), f.cint(t, b)}, t);
  ir::Op* st = f.keep(r);
  transforms::canonicalize(f.fn);
  f.verify();
  return stored(st);
}
Value* fold_float_binary(OpKind k, Type t, double a, double b, TestFn& f) {
  Value* r = f.op(k, {f.cfloat(t, a), f.cfloat(t, b)}, t);
  ir::Op* st = f.keep(r);
  transforms::canonicalize(f.fn);
  f.verify();
  return stored(st);
}
// for %lo, %hi, %st, inits... : region ^(%iv, carried...) built by `body`,
// which returns the yielded values.
ir::Op* make_for(TestFn& f, std::vector<Value*> inits,
                 const std::function<std::vector<Value*>(ir::Builder&, ir::Region&)>& body) {
  Value* lo = f.cint(t_i32, 0);
  Value* hi = f.cint(t_i32, 8);
  Value* step = f.cint(t_i32, 1);
  std::vector<Value*> operands{lo, hi, step};
  std::vector<Type> types;
  for (Value* v : inits) {
    operands.push_back(v);
    types.push_back(v->type);
  }
  ir::Op* loop = f.b.create(OpKind::For, operands, types);
  ir::Region* r = loop->add_region();
  r->add_arg(t_i32);
  for (auto& t : types) r->add_arg(t);
  ir::Builder inner(r);
  std::vector<Value*> yielded = body(inner, *r);
  inner.create(OpKind::Yield, yielded, {});
  return loop;
}

}  // namespace

// ===========================================================================
// Registry and pipeline

TEST_CASE("pass registry finds the three passes by name", "[passes]") {
  CHECK(transforms::find_pass("canonicalize") == &transforms::canonicalize);
  CHECK(transforms::find_pass("cse") == &transforms::cse);
  CHECK(transforms::find_pass("dce") == &transforms::dce);
  CHECK(transforms::find_pass("nope") == nullptr);
  CHECK(transforms::pass_names() == std::vector<std::string>{"canonicalize", "cse", "dce"});
}

TEST_CASE("simplify folds, merges and removes until nothing changes", "[passes]") {
  TestFn f;
  Value* x = f.arg(t_i32);
  // (x + (2 - 2)) * (3 - 2), twice, summed: becomes x + x.
  auto term = [&] {
    Value* zero = f.op(OpKind::Sub, {f.cint(t_i32, 2), f.cint(t_i32, 2)}, t_i32);
    Value* one = f.op(OpKind::Sub, {f.cint(t_i32, 3), f.cint(t_i32, 2)}, t_i32);
    return f.op(OpKind::Mul, {f.op(OpKind::Add, {x, zero}, t_i32), one}, t_i32);
  };
  Value* sum = f.op(OpKind::Add, {term(), term()}, t_i32);
  ir::Op* st = f.keep(sum);
  transforms::simplify(f.fn);
  f.verify();
  REQUIRE(f.total_ops() == 2);  // add, store
  Value* s = stored(st);
  REQUIRE(s->def->kind == OpKind::Add);
  CHECK(s->def->operands == std::vector<Value*>{x, x});
  // A second run finds nothing more to do.
  CHECK_FALSE(transforms::canonicalize(f.fn));
  CHECK_FALSE(transforms::cse(f.fn));
  CHECK_FALSE(transforms::dce(f.fn));
}

// ===========================================================================
// DCE

TEST_CASE("dce removes unused pure chains and keeps what a store reads", "[passes][dce]") {
  TestFn f;
  Value* x = f.arg(t_i32);
  Value* dead1 = f.op(OpKind::Mul, {x, f.cint(t_i32, 3)}, t_i32);
  f.op(OpKind::Add, {dead1, x}, t_i32);  // unused: whole chain dies
  Value* live = f.op(OpKind::Add, {x, f.cint(t_i32, 1)}, t_i32);
  f.keep(live);
  CHECK(transforms::dce(f.fn));
  f.verify();
  CHECK(f.count(OpKind::Mul) == 0);
  CHECK(f.count(OpKind::Add) == 1);
  CHECK(f.count(OpKind::Constant) == 1);
  CHECK(f.count(OpKind::Store) == 1);
  CHECK_FALSE(transforms::dce(f.fn));
}

TEST_CASE("dce never removes loads, atomics, asserts or prints", "[passes][dce]") {
  TestFn f;
  Value* p = f.arg(ir::ptr_type(DType::f32));
  Value* x = f.arg(t_f32);
  f.op(OpKind::Load, {p}, t_f32);  // result unused
  f.op(OpKind::AtomicRmw, {p, x}, t_f32, {{"kind", std::string("add")}});
  Value* cond = f.op(OpKind::Cmp, {x, x}, t_i1, {{"pred", std::string("eq")}});
  f.b.create(OpKind::Assert, {cond}, {}, {{"msg", std::string("x is not NaN")}});
  f.b.create(OpKind::Print, {x}, {}, {{"prefix", std::string("x")}});
  CHECK_FALSE(transforms::dce(f.fn));
  CHECK(f.total_ops() == 5);
}

TEST_CASE("dce works inside loop bodies and removes side-effect-free loops", "[passes][dce]") {
  TestFn f;
  Value* x = f.arg(t_f32);
  // Loop 1 stores: kept, but its unused pure op goes.
  make_for(f, {}, [&](ir::Builder& b, ir::Region& r) {
    b.create1(OpKind::Mul, {x, x}, t_f32);  // unused
    Value* p = f.arg(ir::ptr_type(DType::f32));
    b.create(OpKind::Store, {p, x}, {});
    return std::vector<Value*>{};
  });
  // Loop 2 computes a value nobody reads: removed with its body.
  make_for(f, {x}, [&](ir::Builder& b, ir::Region& r) {
    return std::vector<Value*>{b.create1(OpKind::Add, {r.args[1].get(), x}, t_f32)};
  });
  CHECK(transforms::dce(f.fn));
  f.verify();
  CHECK(f.count(OpKind::For) == 1);
  CHECK(f.count(OpKind::Mul) == 0);
  CHECK(f.count(OpKind::Add) == 0);
  CHECK(f.count(OpKind::Store) == 1);
}

TEST_CASE("dce drops a carried value that only feeds itself", "[passes][dce]") {
  TestFn f;
  Value* x = f.arg(t_f32);
  Value* p = f.arg(ir::ptr_type(DType::f32));
  // carried 0: live (result stored); carried 1: dead (result unused, arg only
  // feeds its own update); carried 2: result unused but its arg feeds carried
  // 0, so it stays.
  ir::Op* loop = make_for(f, {x, x, x}, [&](ir::Builder& b, ir::Region& r) {
    Value* a0 = r.args[1].get();
    Value* a1 = r.args[2].get();
    Value* a2 = r.args[3].get();
    Value* n0 = b.create1(OpKind::Add, {a0, a2}, t_f32);
    Value* n1 = b.create1(OpKind::Mul, {a1, x}, t_f32);
    Value* p_inner = p;
    b.create(OpKind::Store, {p_inner, a0}, {});  // a side effect keeps the loop itself
    return std::vector<Value*>{n0, n1, a2};
  });
  ir::Op* st = f.b.create(OpKind::Store, {p, loop->result(0)}, {});
  CHECK(transforms::dce(f.fn));
  f.verify();
  REQUIRE(loop->results.size() == 2);
  REQUIRE(loop->regions[0]->args.size() == 3);
  CHECK(loop->result(1)->index == 1);
  CHECK(loop->regions[0]->args[2]->index == 2);
  CHECK(stored(st) == loop->result(0));
  CHECK(f.count(OpKind::Mul) == 0);  // the dead update went with it
  CHECK(f.count(OpKind::Add) == 1);
}

TEST_CASE("dce keeps a carried value whose argument is read", "[passes][dce]") {
  TestFn f;
  Value* x = f.arg(t_f32);
  Value* p = f.arg(ir::ptr_type(DType::f32));
  ir::Op* loop = make_for(f, {x}, [&](ir::Builder& b, ir::Region& r) {
    Value* acc = r.args[1].get();
    b.create(OpKind::Store, {p, acc}, {});  // reads the carried value
    return std::vector<Value*>{b.create1(OpKind::Add, {acc, x}, t_f32)};
  });
  CHECK_FALSE(transforms::dce(f.fn));
  CHECK(loop->results.size() == 1);
}

TEST_CASE("dce drops unused if results and their yielded values", "[passes][dce]") {
  TestFn f;
  Value* c = f.arg(t_i1);
  Value* x = f.arg(t_f32);
  Value* p = f.arg(ir::ptr_type(DType::f32));
  ir::Op* branch = f.b.create(OpKind::If, {c}, {t_f32, t_f32});
  for (int i = 0; i < 2; ++i) {
    ir::Builder b(branch->add_region());
    Value* used = b.create1(OpKind::Add, {x, x}, t_f32);
    Value* unused = b.create1(OpKind::Mul, {x, x}, t_f32);
    b.create(OpKind::Store, {p, x}, {});
    b.create(OpKind::Yield, {used, unused}, {});
  }
  ir::Op* st = f.b.create(OpKind::Store, {p, branch->result(0)}, {});
  CHECK(transforms::dce(f.fn));
  f.verify();
  REQUIRE(branch->results.size() == 1);
  CHECK(stored(st) == branch->result(0));
  CHECK(f.count(OpKind::Mul) == 0);
  CHECK(f.count(OpKind::Add) == 2);
}

// ===========================================================================
// CSE

TEST_CASE("cse merges identical pure ops and keeps different ones", "[passes][cse]") {
  TestFn f;
  Value* x = f.arg(t_i32);
  Value* a = f.op(OpKind::Add, {x, f.cint(t_i32, 1)}, t_i32);
  Value* b = f.op(OpKind::Add, {x, f.cint(t_i32, 1)}, t_i32);  // same after its constant merges
  Value* c = f.op(OpKind::Add, {x, f.cint(t_i32, 2)}, t_i32);  // other constant
  Value* d = f.op(OpKind::Add, {f.cint(t_i32, 1), x}, t_i32);  // other operand order
  Value* e = f.cint(t_i64, 1);                               // other type
  ir::Op* sa = f.keep(a);
  ir::Op* sb = f.keep(b);
  ir::Op* sc = f.keep(c);
  ir::Op* sd = f.keep(d);
  f.keep(e);
  CHECK(transforms::cse(f.fn));
  f.verify();
  CHECK(stored(sb) == stored(sa));
  CHECK(stored(sc) != stored(sa));
  CHECK(stored(sd) != stored(sa));
  CHECK(f.count(OpKind::Constant) == 3);  // 1:i32, 2:i32, 1:i64
  CHECK(f.count(OpKind::Add) == 3);
  CHECK_FALSE(transforms::cse(f.fn));
}

TEST_CASE("cse tells 0.0 from -0.0 and attributes apart", "[passes][cse]") {
  TestFn f;
  ir::Op* s1 = f.keep(f.cfloat(t_f32, 0.0));
  ir::Op* s2 = f.keep(f.cfloat(t_f32, -0.0));
  ir::Op* s3 = f.keep(f.op(OpKind::ProgramId, {}, t_i32, {{"axis", int64_t(0)}}));
  ir::Op* s4 = f.keep(f.op(OpKind::ProgramId, {}, t_i32, {{"axis", int64_t(1)}}));
  ir::Op* s5 = f.keep(f.op(OpKind::ProgramId, {}, t_i32, {{"axis", int64_t(0)}}));
  transforms::cse(f.fn);
  CHECK(stored(s1) != stored(s2));
  CHECK(stored(s3) != stored(s4));
  CHECK(stored(s5) == stored(s3));
}

TEST_CASE("cse does not merge loads", "[passes][cse]") {
  TestFn f;
  Value* p = f.arg(ir::ptr_type(DType::f32));
  ir::Op* s1 = f.keep(f.op(OpKind::Load, {p}, t_f32));
  ir::Op* s2 = f.keep(f.op(OpKind::Load, {p}, t_f32));
  CHECK_FALSE(transforms::cse(f.fn));
  CHECK(stored(s1) != stored(s2));
}

TEST_CASE("cse replaces nested ops by outer ones, never the reverse", "[passes][cse]") {
  TestFn f;
  Value* x = f.arg(t_i32);
  Value* p = f.arg(ir::ptr_type(DType::i32));
  Value* outer = f.op(OpKind::Mul, {x, x}, t_i32);
  f.keep(outer);
  ir::Op* inner_store = nullptr;
  ir::Op* inner_only_store = nullptr;
  make_for(f, {}, [&](ir::Builder& b, ir::Region&) {
    Value* dup = b.create1(OpKind::Mul, {x, x}, t_i32);       // same as `outer`
    Value* inner_only = b.create1(OpKind::Add, {x, x}, t_i32);  // first seen inside
    inner_store = b.create(OpKind::Store, {p, dup}, {});
    inner_only_store = b.create(OpKind::Store, {p, inner_only}, {});
    return std::vector<Value*>{};
  });
  // After the loop, the same add as inside must not reuse the inner one.
  Value* after = f.op(OpKind::Add, {x, x}, t_i32);
  ir::Op* after_store = f.keep(after);
  CHECK(transforms::cse(f.fn));
  f.verify();
  CHECK(stored(inner_store) == outer);
  CHECK(stored(after_store) == after);
  CHECK(stored(inner_only_store) != after);
  CHECK(f.count(OpKind::Mul) == 1);
  CHECK(f.count(OpKind::Add) == 2);
}

TEST_CASE("cse leaves reduce combine regions closed", "[passes][cse]") {
  TestFn f;
  Value* t = f.arg(ir::tile_type(DType::f32, {16}));
  Value* outer = f.op(OpKind::Add, {f.arg(t_f32), f.arg(t_f32)}, t_f32);
  f.keep(outer);
  ir::Op* red = f.b.create(OpKind::Reduce, {t}, {t_f32}, {{"axis", int64_t(0)}});
  ir::Region* r = red->add_region();
  Value* l = r->add_arg(t_f32);
  Value* rr = r->add_arg(t_f32);
  ir::Builder b(r);
  Value* one_a = b.constant_float(t_f32, 1.0);
  Value* one_b = b.constant_float(t_f32, 1.0);  // merged with one_a
  Value* s = b.create1(OpKind::Add, {l, rr}, t_f32);
  Value* s2 = b.create1(OpKind::Mul, {s, one_a}, t_f32);
  Value* s3 = b.create1(OpKind::Mul, {s2, one_b}, t_f32);
  b.create(OpKind::Yield, {s3}, {});
  f.keep(red->result());
  // An outer constant equal to the inner ones must not leak into the region.
  f.keep(f.cfloat(t_f32, 1.0));
  ir::Region& top = f.fn.body;
  top.ops.splice(top.ops.begin(), top.ops, std::prev(top.ops.end(), 2));  // constant first
  CHECK(transforms::cse(f.fn));
  f.verify();
  int inner_constants = 0;
  for (auto& o : r->ops) inner_constants += o->kind == OpKind::Constant;
  CHECK(inner_constants == 1);
  ir::walk(*r, [&](ir::Op* o) {
    for (Value* v : o->operands) CHECK(ir::defined_in(v, *r));
  });
}

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

// ===========================================================================
// Replacements made while walking (the passes rewrite each later use when
// they reach it, instead of walking the region per replaced value)

TEST_CASE("canonicalize: ops moved out of a constant if read values replaced before it", "[passes][canonicalize]") {
  // y = x + 0 folds to x before the if is reached; the taken branch reads y
  // and moves in front of the if: it must read x, not the removed y.
  TestFn f;
  Value* x = f.arg(t_i32);
  Value* p = f.arg(ir::ptr_type(DType::i32));
  Value* y = f.op(OpKind::Add, {x, f.cint(t_i32, 0)}, t_i32);
  ir::Op* branch = f.b.create(OpKind::If, {f.cint(t_i1, 1)}, {t_i32});
  ir::Op* inner_store = nullptr;
  Value* doubled = nullptr;
  {
    ir::Builder b(branch->add_region());
    doubled = b.create1(OpKind::Mul, {y, y}, t_i32);
    inner_store = b.create(OpKind::Store, {p, y}, {});
    b.create(OpKind::Yield, {doubled}, {});
  }
  ir::Builder(branch->add_region()).create(OpKind::Yield, {y}, {});
  ir::Op* st = f.keep(branch->result());
  CHECK(transforms::canonicalize(f.fn));
  f.verify();
  CHECK(f.count(OpKind::If) == 0);
  CHECK(f.count(OpKind::Add) == 0);
  CHECK(stored(inner_store) == x);
  CHECK(stored(st) == doubled);
  CHECK(doubled->def->operands == std::vector<Value*>{x, x});
}

TEST_CASE("canonicalize: nested constant ifs resolve to the innermost yielded value", "[passes][canonicalize]") {
  // r = if 1 { s = if 0 { a } else { b * 1 } ; yield s }: r is b, and the
  // store after both reads b once the chain if -> if -> mul is resolved.
  TestFn f;
  Value* a = f.arg(t_i32);
  Value* b_arg = f.arg(t_i32);
  ir::Op* outer = f.b.create(OpKind::If, {f.cint(t_i1, 1)}, {t_i32});
  {
    ir::Builder b(outer->add_region());
    ir::Op* inner = b.create(OpKind::If, {b.constant_int(t_i1, 0)}, {t_i32});
    ir::Builder(inner->add_region()).create(OpKind::Yield, {a}, {});
    ir::Builder e(inner->add_region());
    e.create(OpKind::Yield, {e.create1(OpKind::Mul, {b_arg, e.constant_int(t_i32, 1)}, t_i32)}, {});
    b.create(OpKind::Yield, {inner->result()}, {});
  }
  ir::Builder(outer->add_region()).create(OpKind::Yield, {a}, {});
  ir::Op* st = f.keep(outer->result());
  CHECK(transforms::canonicalize(f.fn));
  f.verify();
  CHECK(f.count(OpKind::If) == 0);
  CHECK(stored(st) == b_arg);
}

TEST_CASE("cse: a merged value's uses in later loop bodies read the kept op", "[passes][cse]") {
  TestFn f;
  Value* x = f.arg(t_i32);
  Value* p = f.arg(ir::ptr_type(DType::i32));
  Value* first = f.op(OpKind::Mul, {x, x}, t_i32);
  Value* second = f.op(OpKind::Mul, {x, x}, t_i32);  // merges into `first`
  f.keep(first);
  ir::Op* nested_store = nullptr;
  ir::Op* loop = make_for(f, {second}, [&](ir::Builder& b, ir::Region& r) {
    ir::Op* inner = b.create(OpKind::If, {b.constant_int(t_i1, 1)}, {});
    ir::Builder t(inner->add_region());
    nested_store = t.create(OpKind::Store, {p, t.create1(OpKind::Add, {second, r.args[1].get()}, t_i32)}, {});
    t.create(OpKind::Yield, {}, {});
    ir::Builder(inner->add_region()).create(OpKind::Yield, {}, {});
    return std::vector<Value*>{second};
  });
  ir::Op* after = f.keep(second);
  CHECK(transforms::cse(f.fn));
  f.verify();
  CHECK(f.count(OpKind::Mul) == 1);
  CHECK(loop->operands.back() == first);
  CHECK(stored(nested_store)->def->operands[0] == first);
  CHECK(loop->regions[0]->terminator()->operands[0] == first);
  CHECK(stored(after) == first);
}

TEST_CASE("dce drops many dead carried values of one loop and renumbers the rest", "[passes][dce]") {
  // Carried values 0..63; the even ones are stored after the loop, the odd
  // ones only feed themselves.
  TestFn f;
  Value* x = f.arg(t_f32);
  Value* p = f.arg(ir::ptr_type(DType::f32));
  constexpr int kCarried = 64;
  std::vector<Value*> inits(kCarried, x);
  ir::Op* loop = make_for(f, inits, [&](ir::Builder& b, ir::Region& r) {
    std::vector<Value*> next;
    for (int k = 0; k < kCarried; ++k) next.push_back(b.create1(OpKind::Add, {r.args[1 + k].get(), x}, t_f32));
    b.create(OpKind::Store, {p, r.args[1].get()}, {});  // keeps the loop
    return next;
  });
  std::vector<ir::Op*> stores;
  for (int k = 0; k < kCarried; k += 2) stores.push_back(f.keep(loop->result(k)));
  CHECK(transforms::dce(f.fn));
  f.verify();
  REQUIRE(loop->results.size() == kCarried / 2);
  ir::Region& body = *loop->regions[0];
  REQUIRE(body.args.size() == 1 + kCarried / 2);
  for (int i = 0; i < kCarried / 2; ++i) {
    CHECK(loop->result(i)->index == i);
    CHECK(body.args[1 + i]->index == 1 + i);
    CHECK(stored(stores[i]) == loop->result(i));
    // Carried value i is the old 2i: its update still reads its own argument.
    CHECK(body.terminator()->operands[i]->def->operands[0] == body.args[1 + i].get());
  }
  CHECK(f.count(OpKind::Add) == kCarried / 2);
}
