// Front-end tracing: the IR that kernels written against include/tiledsl
// record, before any pass runs. Most checks look at the ops directly; a few
// read the printed text. The heart of it is loop-carried detection: which
// variables a tl::range loop carries, and which an if_ returns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "runtime/kernel.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using ir::Op;
using ir::OpKind;

namespace {

// Traces without passes, verifies, and returns the function.
template <class... P>
std::unique_ptr<ir::Function> trace(void (*fn)(P...)) {
  std::unique_ptr<ir::Function> f(detail::trace_kernel(fn, "k", {}));
  ir::verify(*f);
  return f;
}

std::vector<Op*> find_ops(ir::Region& r, OpKind k) {
  std::vector<Op*> out;
  ir::walk(r, [&](Op* op) {
    if (op->kind == k) out.push_back(op);
  });
  return out;
}
Op* only_op(ir::Region& r, OpKind k) {
  auto ops = find_ops(r, k);
  REQUIRE(ops.size() == 1);
  return ops[0];
}
std::string types_of_args(const ir::Region& r) {
  std::string s;
  for (const auto& a : r.args) s += (s.empty() ? "" : ",") + a->type.str();
  return s;
}

// ---- kernels ---------------------------------------------------------------

void vector_add(ptr<float> x, ptr<float> y, ptr<float> out, scalar<int32_t> n) {
  auto pid = program_id(0);
  auto offs = pid * 128 + arange(0, 128);  // [128] i32
  auto mask = offs < n;                    // [128] i1
  auto a = load(x + offs, mask);
  auto b = load(y + offs, mask, 0.0f);
  store(out + offs, a + b, mask);
}

// acc is assigned in the loop, `unchanged` is only read.
void carried_acc(ptr<float> out, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  auto unchanged = full<float>({16}, 2.0f);
  for (auto i : range(0, n)) {
    acc = acc + unchanged * cast<float>(i);
  }
  store(out + arange(0, 16), acc);
}

// b = a before the loop; only a changes. b must keep the entry value.
void aliasing_copy(ptr<float> out, scalar<int32_t> n) {
  auto a = zeros<float>({16});
  auto b = a;
  for (auto i : range(0, n)) {
    a = a + 1.0f;
  }
  store(out + arange(0, 16), a);
  store(out + 16 + arange(0, 16), b);
}

void pointer_increment(ptr<float> x, ptr<float> out, scalar<int32_t> k) {
  auto p = x + arange(0, 32);  // [32] ptr<f32>
  auto acc = zeros<float>({32});
  for (auto i : range(0, k, 32)) {
    acc += load(p);
    p += 32;
  }
  store(out + arange(0, 32), acc);
}

void nested_loops(ptr<float> out, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  auto outer_only = zeros<int32_t>({16});
  for (auto i : range(0, n)) {
    for (auto j : range(0, 4)) {
      acc = acc + cast<float>(j);
    }
    outer_only = outer_only + i;
  }
  store(out + arange(0, 16), acc + cast<float>(outer_only));
}

void if_one_branch(ptr<float> out, scalar<int32_t> n) {
  auto x = zeros<float>({16});
  auto y = full<float>({16}, 1.0f);
  if_(n > 0, [&] { x = x + 1.0f; });
  store(out + arange(0, 16), x + y);
}

void if_else_two_vars(ptr<float> out, scalar<int32_t> n) {
  auto x = zeros<float>({16});
  auto y = full<float>({16}, 1.0f);
  if_(n > 0, [&] { x = x + 1.0f; }, [&] { y = y * 2.0f; });
  store(out + arange(0, 16), x + y);
}

void if_in_loop(ptr<float> out, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  for (auto i : range(0, n)) {
    if_(i % 2 == 0, [&] { acc = acc + 1.0f; });
  }
  store(out + arange(0, 16), acc);
}

void body_local(ptr<float> out, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  for (auto i : range(0, n)) {
    auto t = acc * 2.0f;  // created in the body: never carried
    t = t + 1.0f;
    acc = t;
  }
  store(out + arange(0, 16), acc);
}

void no_carried(ptr<float> out, scalar<int32_t> n) {
  auto v = full<float>({16}, 3.0f);
  for (auto i : range(2, n, 3)) {
    store(out + i * 16 + arange(0, 16), v);
  }
}

void loop_with_continue(ptr<float> out, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  for (auto i : range(0, n)) {
    acc = acc + 1.0f;
    if constexpr (true) continue;
    acc = acc * 100.0f;  // never traced: continue skips it in every iteration
  }
  store(out + arange(0, 16), acc);
}

void promotions(ptr<bf16> xb, ptr<f16> xh, ptr<int32_t> xi, ptr<float> out) {
  auto b = load(xb + arange(0, 16));  // [16] bf16
  auto h = load(xh + arange(0, 16));  // [16] f16
  auto i = load(xi + arange(0, 16));  // [16] i32
  auto b2 = b * 2.0f;
  static_assert(std::is_same_v<decltype(b2), tile<bf16>>);
  auto i1 = i + 1;
  static_assert(std::is_same_v<decltype(i1), tile<int32_t>>);
  auto bh = b + h;
  static_assert(std::is_same_v<decltype(bh), tile<float>>);
  auto fi = i * 0.5;
  static_assert(std::is_same_v<decltype(fi), tile<float>>);
  auto sb = sum(b, 0);
  static_assert(std::is_same_v<decltype(sb), tile<float>>);
  store(out + arange(0, 16), bh + fi + cast<float>(b2) + cast<float>(i1) + sb);
}

// Narrow floats given as host values (tl::bf16(2.0f)) are typed, as
// scalars of their type: bf16 with bf16 stays bf16, beside f16 or f32 it
// is f32, an integer tile takes its type; on either side, in compound
// assignment and in minimum/maximum.
void narrow_scalars(ptr<bf16> xb, ptr<float> xf, ptr<int32_t> xi, ptr<bf16> out, ptr<float> outf) {
  auto offs = arange(0, 16);
  auto b = load(xb + offs);   // [16] bf16
  auto f = load(xf + offs);   // [16] f32
  auto i = load(xi + offs);   // [16] i32
  auto b2 = b * bf16(2.0f) + bf16(0.5f);
  static_assert(std::is_same_v<decltype(b2), tile<bf16>>);
  auto bh = bf16(1.0f) - b2 * f16(3.0f);
  static_assert(std::is_same_v<decltype(bh), tile<float>>);
  auto fb = f / bf16(4.0f);
  static_assert(std::is_same_v<decltype(fb), tile<float>>);
  auto ib = i + f8e4m3(2.0f);
  static_assert(std::is_same_v<decltype(ib), tile<f8e4m3>>);
  auto lt = b < bf16(1.0f);
  static_assert(std::is_same_v<decltype(lt), tile<bool>>);
  b2 += f16(1.0f);            // computed in f32, back to bf16
  store(out + offs, maximum(b2, bf16(0.25f)));
  store(outf + offs, bh + fb + cast<float>(ib) + where(lt, 1.0f, 0.0f));
}

// The promotions where tiledsl and Triton differ, and the f8 mix where they
// agree (docs/language.md, "Arithmetic and promotion").
void promotions_vs_triton(ptr<bf16> xb, ptr<f16> xh, ptr<f8e4m3> x4, ptr<f8e5m2> x5, ptr<int32_t> xi,
                          ptr<float> out) {
  auto offs = arange(0, 16);
  auto b = load(xb + offs);  // [16] bf16
  auto h = load(xh + offs);  // [16] f16
  auto e4 = load(x4 + offs);  // [16] f8e4m3
  auto e5 = load(x5 + offs);  // [16] f8e5m2
  auto i = load(xi + offs);  // [16] i32
  auto f8mix = e4 + e5;       // Triton: f16 too
  static_assert(std::is_same_v<decltype(f8mix), tile<f16>>);
  auto bh = b + h;            // Triton: f16
  static_assert(std::is_same_v<decltype(bh), tile<float>>);
  auto b8 = b * e4;           // Triton: f32
  static_assert(std::is_same_v<decltype(b8), tile<bf16>>);
  auto h8 = h - e5;           // f16 in both
  static_assert(std::is_same_v<decltype(h8), tile<f16>>);
  auto bi = b + i;            // Triton: f32
  static_assert(std::is_same_v<decltype(bi), tile<bf16>>);
  auto e4i = e4 * i;          // Triton: an error
  static_assert(std::is_same_v<decltype(e4i), tile<f8e4m3>>);
  auto hq = h / h;            // Triton: f32
  static_assert(std::is_same_v<decltype(hq), tile<f16>>);
  auto bq = b % 2.0f;         // Triton: f32
  static_assert(std::is_same_v<decltype(bq), tile<bf16>>);
  store(out + offs, cast<float>(f8mix) + bh + cast<float>(b8) + cast<float>(h8) + cast<float>(bi) +
                        cast<float>(e4i) + cast<float>(hq) + cast<float>(bq));
}

// `>>` of a signed by an unsigned tile: an arithmetic shift at the promoted
// width, then the promoted type.
void mixed_shift(ptr<int32_t> x, ptr<uint32_t> k, ptr<uint32_t> out) {
  auto offs = arange(0, 16);
  auto r = load(x + offs) >> load(k + offs);
  static_assert(std::is_same_v<decltype(r), tile<uint32_t>>);
  store(out + offs, r);
}

void reductions(ptr<float> x, ptr<int32_t> out) {
  auto rows = col(arange(0, 8));                      // [8, 1]
  auto v = load(x + rows * 16 + row(arange(0, 16)));  // [8, 16] f32
  auto am = argmax(v, 1);                             // [8] i32
  auto mx = reduce(v, 1, [](tile<float> a, tile<float> b) { return maximum(a, b); });
  auto cs = cumsum(v, 0);
  store(out + arange(0, 8), am + cast<int32_t>(mx) + cast<int32_t>(sum(cs, 1)));
}

}  // namespace

// Operator availability, checked at C++ compile time.
template <class A> constexpr bool can_logical_and = requires(A a) { a && a; };
template <class A, class B> constexpr bool can_bitand = requires(A a, B b) { a & b; };
template <class A, class B> constexpr bool can_mul = requires(A a, B b) { a * b; };
template <class A, class B> constexpr bool can_add = requires(A a, B b) { a + b; };
template <class A, class B> constexpr bool can_sub = requires(A a, B b) { a - b; };
template <class A, class B> constexpr bool can_div = requires(A a, B b) { a / b; };
template <class A, class B> constexpr bool can_rem = requires(A a, B b) { a % b; };
template <class A, class B> constexpr bool can_div_assign = requires(A a, B b) { a /= b; };

// ---- tests -----------------------------------------------------------------

TEST_CASE("trace: vector_add records the expected ops", "[frontend][trace]") {
  auto f = trace(vector_add);
  REQUIRE(f->body.args.size() == 4);
  CHECK(types_of_args(f->body) == "ptr<f32>,ptr<f32>,ptr<f32>,i32");
  Op* store = only_op(f->body, OpKind::Store);
  CHECK(store->operands.size() == 3);  // ptrs, value, mask
  CHECK(store->operands[1]->type.str() == "tile<128xf32>");
  auto loads = find_ops(f->body, OpKind::Load);
  REQUIRE(loads.size() == 2);
  CHECK(loads[0]->operands.size() == 2);  // no other
  CHECK(loads[1]->operands.size() == 3);  // other = 0.0
  CHECK(find_ops(f->body, OpKind::AddPtr).size() == 3);
  // The scalar n is splat to compare with the offsets.
  Op* cmp = only_op(f->body, OpKind::Cmp);
  CHECK(cmp->attr_str("pred") == "lt");
  CHECK(cmp->operands[1]->def->kind == OpKind::Splat);
  CHECK(cmp->operands[1]->def->operands[0] == f->body.args[3].get());
  // Source lines point into this file.
  CHECK(store->loc.file.find("test_trace.cpp") != std::string::npos);
  std::string text = ir::print(*f);
  CHECK(text.find("program_id {axis = 0} : i32") != std::string::npos);
  CHECK(text.find("arange {end = 128, start = 0} : tile<128xi32>") != std::string::npos);
}

TEST_CASE("trace: an assigned variable is carried, a read-only one is not", "[frontend][trace][loop]") {
  auto f = trace(carried_acc);
  Op* loop = only_op(f->body, OpKind::For);
  // lo, hi, step, one init.
  REQUIRE(loop->operands.size() == 4);
  REQUIRE(loop->results.size() == 1);
  CHECK(loop->results[0]->type.str() == "tile<16xf32>");
  ir::Region& body = *loop->regions[0];
  CHECK(types_of_args(body) == "i32,tile<16xf32>");
  // The init is the zeros constant; the read-only `unchanged` is used
  // directly from outside the loop (its argument was dropped).
  CHECK(loop->operands[3]->def->kind == OpKind::Constant);
  Op* mul = only_op(body, OpKind::Mul);
  CHECK(!ir::defined_in(mul->operands[0], body));
  CHECK(mul->operands[0]->def->attr_float("value") == 2.0);
  // The yield returns the add of the carried argument.
  Op* yield = body.terminator();
  REQUIRE(yield);
  REQUIRE(yield->operands.size() == 1);
  CHECK(yield->operands[0]->def->kind == OpKind::Add);
  CHECK(yield->operands[0]->def->operands[0] == body.args[1].get());
  // After the loop the variable is the loop's result.
  Op* store = only_op(f->body, OpKind::Store);
  CHECK(store->operands[1] == loop->result(0));
}

TEST_CASE("trace: a copy made before the loop keeps the entry value", "[frontend][trace][loop]") {
  auto f = trace(aliasing_copy);
  Op* loop = only_op(f->body, OpKind::For);
  REQUIRE(loop->results.size() == 1);
  auto stores = find_ops(f->body, OpKind::Store);
  REQUIRE(stores.size() == 2);
  CHECK(stores[0]->operands[1] == loop->result(0));  // a
  CHECK(stores[1]->operands[1] == loop->operands[3]); // b: the zeros before the loop
}

TEST_CASE("trace: pointer increments are loop-carried pointer tiles", "[frontend][trace][loop]") {
  auto f = trace(pointer_increment);
  Op* loop = only_op(f->body, OpKind::For);
  ir::Region& body = *loop->regions[0];
  // Carried values come in declaration order: p, then acc.
  CHECK(types_of_args(body) == "i32,tile<32xptr<f32>>,tile<32xf32>");
  CHECK(loop->operands[2]->def->attr_int("value") == 32);  // step
  Op* yield = body.terminator();
  REQUIRE(yield->operands.size() == 2);
  CHECK(yield->operands[0]->def->kind == OpKind::AddPtr);
  CHECK(yield->operands[0]->def->operands[0] == body.args[1].get());
  CHECK(yield->operands[1]->def->kind == OpKind::Add);
}

TEST_CASE("trace: nested loops carry through both levels", "[frontend][trace][loop]") {
  auto f = trace(nested_loops);
  auto loops = find_ops(f->body, OpKind::For);
  REQUIRE(loops.size() == 2);
  Op *outer = loops[0], *inner = loops[1];
  CHECK(types_of_args(*outer->regions[0]) == "i32,tile<16xf32>,tile<16xi32>");
  CHECK(types_of_args(*inner->regions[0]) == "i32,tile<16xf32>");
  // The inner loop starts from the outer loop's carried acc.
  CHECK(inner->operands[3] == outer->regions[0]->args[1].get());
  // The outer loop yields the inner loop's result for acc.
  Op* outer_yield = outer->regions[0]->terminator();
  CHECK(outer_yield->operands[0] == inner->result(0));
  CHECK(inner->operands[1]->def->attr_int("value") == 4);  // inner trip count bound
}

TEST_CASE("trace: if_ changing a variable in one branch yields the old value from the other",
          "[frontend][trace][if]") {
  auto f = trace(if_one_branch);
  Op* iff = only_op(f->body, OpKind::If);
  REQUIRE(iff->results.size() == 1);
  Op* then_yield = iff->regions[0]->terminator();
  Op* else_yield = iff->regions[1]->terminator();
  REQUIRE(then_yield->operands.size() == 1);
  REQUIRE(else_yield->operands.size() == 1);
  CHECK(then_yield->operands[0]->def->kind == OpKind::Add);
  CHECK(else_yield->operands[0]->def->kind == OpKind::Constant);  // x's old value
  CHECK(iff->regions[1]->ops.size() == 1);                         // just the yield
  Op* add = find_ops(f->body, OpKind::Add).back();
  CHECK(add->operands[0] == iff->result(0));
}

TEST_CASE("trace: if_ with two branches changing different variables", "[frontend][trace][if]") {
  auto f = trace(if_else_two_vars);
  Op* iff = only_op(f->body, OpKind::If);
  REQUIRE(iff->results.size() == 2);
  Op* then_yield = iff->regions[0]->terminator();
  Op* else_yield = iff->regions[1]->terminator();
  CHECK(then_yield->operands[0]->def->kind == OpKind::Add);       // x changed
  CHECK(then_yield->operands[1]->def->kind == OpKind::Constant);  // y unchanged
  CHECK(else_yield->operands[0]->def->kind == OpKind::Constant);  // x unchanged
  CHECK(else_yield->operands[1]->def->kind == OpKind::Mul);       // y changed
}

TEST_CASE("trace: if_ inside a loop makes the loop carry the variable", "[frontend][trace][if][loop]") {
  auto f = trace(if_in_loop);
  Op* loop = only_op(f->body, OpKind::For);
  Op* iff = only_op(f->body, OpKind::If);
  CHECK(iff->parent == loop->regions[0].get());
  REQUIRE(loop->results.size() == 1);
  CHECK(loop->regions[0]->terminator()->operands[0] == iff->result(0));
  CHECK(iff->regions[1]->terminator()->operands[0] == loop->regions[0]->args[1].get());
}

TEST_CASE("trace: variables created in the body are not carried", "[frontend][trace][loop]") {
  auto f = trace(body_local);
  Op* loop = only_op(f->body, OpKind::For);
  CHECK(types_of_args(*loop->regions[0]) == "i32,tile<16xf32>");
}

TEST_CASE("trace: a loop without assignments has no iter_args", "[frontend][trace][loop]") {
  auto f = trace(no_carried);
  Op* loop = only_op(f->body, OpKind::For);
  CHECK(loop->results.empty());
  CHECK(loop->operands.size() == 3);
  CHECK(loop->operands[0]->def->attr_int("value") == 2);
  CHECK(loop->operands[1] == f->body.args[1].get());  // traced upper bound
  CHECK(loop->operands[2]->def->attr_int("value") == 3);
  CHECK(types_of_args(*loop->regions[0]) == "i32");
}

TEST_CASE("trace: continue skips the rest of the traced body", "[frontend][trace][loop]") {
  auto f = trace(loop_with_continue);
  Op* loop = only_op(f->body, OpKind::For);
  CHECK(find_ops(*loop->regions[0], OpKind::Mul).empty());
  CHECK(loop->results.size() == 1);
}

TEST_CASE("trace: weak literals and tile promotion", "[frontend][trace][types]") {
  auto f = trace(promotions);
  // bf16 * 2.0f multiplies in bf16 with a bf16 constant.
  bool bf16_mul = false;
  for (Op* m : find_ops(f->body, OpKind::Mul))
    if (m->results[0]->type.str() == "tile<16xbf16>") bf16_mul = true;
  CHECK(bf16_mul);
  // sum of bf16 casts to f32 before reducing.
  Op* red = only_op(f->body, OpKind::Reduce);
  CHECK(red->operands[0]->type.str() == "tile<16xf32>");
  CHECK(red->operands[0]->def->kind == OpKind::Cast);
  CHECK(red->results[0]->type.str() == "f32");
}

TEST_CASE("trace: narrow floats as host values are typed scalars", "[frontend][trace][types]") {
  auto f = trace(narrow_scalars);  // the static_asserts hold
  // bf16(2.0f) is a bf16 constant the multiply takes as it is.
  bool bf16_mul = false;
  for (Op* m : find_ops(f->body, OpKind::Mul)) {
    Op* c = m->operands[1]->def;  // the constant, or its splat to the tile's shape
    if (c && c->kind == OpKind::Splat) c = c->operands[0]->def;
    if (m->results[0]->type.str() == "tile<16xbf16>" && c && c->kind == OpKind::Constant &&
        c->results[0]->type.dtype == DType::bf16 && c->attr_float("value") == 2.0)
      bf16_mul = true;
  }
  CHECK(bf16_mul);
  // The same on the interpreter: out = max(2x + 0.5 + 1, 0.25) in bf16.
  Device dev = Device::get("interp");
  std::vector<bf16> hb(16);
  for (int k = 0; k < 16; ++k) hb[size_t(k)] = bf16(float(k) * 0.25f - 2.0f);
  Buffer xb = dev.upload(hb), xf = dev.upload(std::vector<float>(16, 8.0f)), xi = dev.upload(std::vector<int32_t>(16, 3));
  Buffer out = dev.alloc<bf16>(16), outf = dev.alloc<float>(16);
  dev(compile(narrow_scalars), Grid{1}, xb, xf, xi, out, outf);
  dev.synchronize();
  auto ho = out.download<bf16>();
  auto hf = outf.download<float>();
  for (int k = 0; k < 16; ++k) {
    float x = float(hb[size_t(k)]), b2 = float(bf16(float(bf16(x * 2.0f)) + 0.5f));
    CHECK(float(ho[size_t(k)]) == std::max(float(bf16(b2 + 1.0f)), 0.25f));
    CHECK(hf[size_t(k)] == (1.0f - b2 * 3.0f) + 2.0f + 5.0f + (x < 1.0f ? 1.0f : 0.0f));
  }
}

TEST_CASE("trace: promotions where tiledsl and Triton differ", "[frontend][trace][types]") {
  auto f = trace(promotions_vs_triton);  // the static_asserts hold; the mix computes in f16
  bool f16_add = false;
  for (Op* a : find_ops(f->body, OpKind::Add))
    if (a->results[0]->type.str() == "tile<16xf16>" && a->operands[0]->def->kind == OpKind::Cast) f16_add = true;
  CHECK(f16_add);
}

TEST_CASE("trace: / and % refuse mixed signedness, >> shifts by the left operand's sign",
          "[frontend][trace][types]") {
  static_assert(!can_div<tile<int32_t>, tile<uint32_t>> && !can_div<tile<uint32_t>, tile<int64_t>>);
  static_assert(!can_rem<tile<int8_t>, tile<uint8_t>> && !can_div_assign<tile<int32_t>, tile<uint32_t>>);
  static_assert(can_div<tile<uint32_t>, int> && can_div<int, tile<uint32_t>> && can_rem<tile<uint64_t>, tile<uint32_t>>);
  static_assert(can_div<tile<int32_t>, tile<int64_t>> && can_div<tile<bool>, tile<uint32_t>>);
  static_assert(can_div<tile<float>, tile<uint32_t>>);  // a float operand: true division
  auto f = trace(mixed_shift);
  Op* shr = only_op(f->body, OpKind::Shr);
  CHECK(shr->results[0]->type.str() == "tile<16xi32>");
  CHECK(shr->operands[1]->type.str() == "tile<16xi32>");
}

TEST_CASE("trace: argmax, generic reduce and cumsum build combine regions", "[frontend][trace][reduce]") {
  auto f = trace(reductions);
  auto reds = find_ops(f->body, OpKind::Reduce);
  REQUIRE(reds.size() == 3);  // argmax, reduce, sum
  Op* am = reds[0];
  CHECK(am->operands.size() == 2);  // values and indices
  CHECK(types_of_args(*am->regions[0]) == "f32,i32,f32,i32");
  CHECK(am->results[1]->type.str() == "tile<8xi32>");
  CHECK(am->attr_int("axis") == 1);
  Op* mx = reds[1];
  CHECK(types_of_args(*mx->regions[0]) == "f32,f32");
  CHECK(mx->regions[0]->ops.front()->kind == OpKind::Maximum);
  Op* scan = only_op(f->body, OpKind::Scan);
  CHECK(scan->attr_int("axis") == 0);
  CHECK(scan->results[0]->type.str() == "tile<8x16xf32>");
}

TEST_CASE("trace: compile simplifies and fills the kernel", "[frontend][compile]") {
  Kernel k = compile(vector_add, {.name = "vadd"});
  REQUIRE(k.impl());
  CHECK(k.impl()->name == "vadd");
  REQUIRE(k.impl()->params.size() == 4);
  CHECK(k.impl()->params[0].str() == "ptr<f32>");
  CHECK(k.impl()->params[3].str() == "i32");
  REQUIRE(k.impl()->fn);
  CHECK(k.impl()->module->functions.size() == 1);
  CHECK(!tl::detail::tracing());
}

TEST_CASE("trace: traced values cannot be used as C++ bools", "[frontend][types]") {
  static_assert(!std::is_constructible_v<bool, tile<bool>>);
  static_assert(!std::is_convertible_v<tile<bool>, bool>);
  static_assert(!can_logical_and<tile<bool>>);
  static_assert(!can_bitand<tile<float>, tile<float>>);     // bitwise on floats
  static_assert(can_bitand<tile<int32_t>, int>);
  static_assert(!can_mul<ptr<float>, int>);                 // pointer arithmetic is + and - only
  static_assert(can_add<ptr<float>, tile<int32_t>> && can_add<tile<int32_t>, ptr<float>>);
  static_assert(can_sub<ptr<float>, int> && !can_sub<int, ptr<float>>);
  static_assert(!can_add<ptr<float>, tile<float>>);         // float offsets
  static_assert(!can_add<ptr<float>, ptr<float>>);
  SUCCEED();
}

namespace {

// A std::optional declared before a loop or if_ and assigned inside it: a
// variable of that body alone (tile has no default constructor, so C++
// authors reach for one to declare a variable ahead).
void scratch_in_two_loops(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  std::optional<tile<float>> t;
  auto acc = zeros<float>({16});                                                    // [16] f32
  for (auto i : range(0, n)) { t = load(x + i * 16 + arange(0, 16)); acc = acc + *t; }
  for (auto i : range(0, n)) { t = load(x + i * 16 + arange(0, 16)) * 2.0f; acc = acc + *t; }
  tl::if_(n > 0, [&] { t = load(x + arange(0, 16)); acc = acc + *t; });
  tl::if_(n > 1, [&] { t = load(x + 16 + arange(0, 16)); acc = acc + *t; });
  store(out + arange(0, 16), acc);
}
void read_after_loop(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  std::optional<tile<float>> last;
  for (auto i : range(0, n)) last = load(x + i * 16 + arange(0, 16));
  store(out + arange(0, 16), *last);
}
void read_after_if(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  std::optional<tile<float>> r;
  tl::if_(n > 0, [&] { r = load(x + arange(0, 16)); });
  store(out + arange(0, 16), *r);
}
// Reads t, then replaces the C++ object: the next iteration must see 2, but
// the body traced once reads the entry value's argument.
void emplace_after_read(ptr<float> out, scalar<int32_t> n) {
  std::optional<tile<float>> t = zeros<float>({16});
  auto acc = zeros<float>({16});
  for (auto i : range(0, n)) {
    acc = acc + *t;
    t.emplace(full<float>({16}, 2.0f));
  }
  store(out + arange(0, 16), acc);
}
void emplace_after_read_while(ptr<float> out, scalar<int32_t> n) {
  std::optional<tile<float>> t = zeros<float>({16});
  auto acc = zeros<float>({16});
  auto i = full<int32_t>({}, 0);
  tl::while_([&] { return i < n; }, [&] {
    acc = acc + *t;
    t.emplace(full<float>({16}, 2.0f));
    i = i + 1;
  });
  store(out + arange(0, 16), acc);
}
// Replaced before it is read: every iteration reads what it made.
void emplace_before_read(ptr<float> out, scalar<int32_t> n) {
  std::optional<tile<float>> t = zeros<float>({16});
  auto acc = zeros<float>({16});
  for (auto i : range(0, n)) {
    t.emplace(full<float>({16}, 2.0f));
    acc = acc + *t;
  }
  store(out + arange(0, 16), acc);
}

}  // namespace

TEST_CASE("trace: a variable declared before loops and ifs and assigned in each is local to each",
          "[frontend][trace][loop][if]") {
  // Was a verifier error ("'for' expects operand #4 to be defined before its use"): the second loop carried
  // the first loop's body value.
  Kernel k = compile(scratch_in_two_loops);
  Device dev = Device::get("interp");
  std::vector<float> hx(64);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = float(i % 7) - 3.0f;
  for (int n : {0, 1, 3}) {
    Buffer x = dev.upload(hx), out = dev.alloc<float>(16);
    dev(k, Grid{1}, x, out, n);
    dev.synchronize();
    auto got = out.download<float>();
    for (int j = 0; j < 16; ++j) {
      float want = 0;
      for (int i = 0; i < n; ++i) want += 3 * hx[size_t(i * 16 + j)];
      for (int i = 0; i < std::min(n, 2); ++i) want += hx[size_t(i * 16 + j)];
      CHECK(got[size_t(j)] == want);
    }
  }
}

TEST_CASE("trace: a variable made in a loop body or branch and read after it names the loop or if",
          "[frontend][trace][errors]") {
  REQUIRE_THROWS_WITH(compile(read_after_loop),
                      Catch::Contains("test_trace.cpp:") && Catch::Contains(": tile: expected a variable read after a "
                                                                           "tl::range body to hold a value from outside it"));
  REQUIRE_THROWS_WITH(compile(read_after_if),
                      Catch::Contains("test_trace.cpp:") && Catch::Contains(": tile: expected a variable read after a "
                                                                           "tl::if_ branch to hold a value from outside it"));
}

TEST_CASE("trace: a loop body that reads a variable from before the loop and destroys it is an error",
          "[frontend][trace][errors][loop][while]") {
  // Was a silent wrong result: every iteration read the zeros from before the loop.
  REQUIRE_THROWS_WITH(compile(emplace_after_read),
                      Catch::Contains("test_trace.cpp:") &&
                          Catch::Contains(": range: expected a variable that exists before the loop and is read in it "
                                          "to outlive its body, found one (value at loop entry from ") &&
                          Catch::Contains("destroyed in the body"));
  REQUIRE_THROWS_WITH(compile(emplace_after_read_while),
                      Catch::Contains(": while_: expected a variable that exists before the loop and is read in it"));
  Kernel k = compile(emplace_before_read);
  Device dev = Device::get("interp");
  Buffer out = dev.alloc<float>(16);
  dev(k, Grid{1}, out, 3);
  dev.synchronize();
  CHECK(out.download<float>() == std::vector<float>(16, 6.0f));
}
