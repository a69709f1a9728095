// Unit tests of the target-independent passes (lib/transforms): the pass
// registry, dce, cse, the simplify() pipeline, and uses rewritten while a
// pass walks (canonicalize's folding and simplifications are in
// test_canonicalize.cpp). Each test builds a small function
// with ir::Builder, runs one pass, checks the ops that remain, and verifies
// that the result is still valid IR. Values under test are kept alive by a
// `store` into a pointer argument, which no pass may remove.

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
