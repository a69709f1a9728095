// Helpers of the pass tests (test_passes.cpp, test_canonicalize.cpp): a
// function under construction (TestFn), constants, folding one op, loops.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <vector>

#include "ir/ir.h"
#include "ir/verifier.h"
#include "transforms/passes.h"

namespace passes_test {

using namespace tl;
using ir::OpKind;
using ir::Type;
using ir::Value;

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
inline Value* stored(ir::Op* st) { return st->operands.at(1); }

inline bool is_constant(const Value* v) { return v->def && v->def->kind == OpKind::Constant; }
inline int64_t const_int(const Value* v) {
  REQUIRE(is_constant(v));
  return v->def->attr_int("value");
}
inline double const_float(const Value* v) {
  REQUIRE(is_constant(v));
  return v->def->attr_float("value");
}

// The value of `v` when it is a constant (the pass folded it), else none.
// For checks made after the function that held `v` is gone.
inline std::optional<ir::Attr> folded_value(const Value* v) {
  if (!is_constant(v)) return std::nullopt;
  return v->def->attrs.at("value");
}

// Folds op(kind, a, b) of constants of type t and returns the stored value.
inline Value* fold_int_binary(OpKind k, Type t, int64_t a, int64_t b, TestFn& f) {
  Value* r = f.op(k, {f.cint(t, a), f.cint(t, b)}, t);
  ir::Op* st = f.keep(r);
  transforms::canonicalize(f.fn);
  f.verify();
  return stored(st);
}
inline Value* fold_float_binary(OpKind k, Type t, double a, double b, TestFn& f) {
  Value* r = f.op(k, {f.cfloat(t, a), f.cfloat(t, b)}, t);
  ir::Op* st = f.keep(r);
  transforms::canonicalize(f.fn);
  f.verify();
  return stored(st);
}
// for %lo, %hi, %st, inits... : region ^(%iv, carried...) built by `body`,
// which returns the yielded values.
inline ir::Op* make_for(TestFn& f, std::vector<Value*> inits,
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

}  // namespace passes_test
