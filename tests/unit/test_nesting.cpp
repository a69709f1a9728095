// The region nesting limit (ir::kMaxRegionDepth) and what it protects: the
// tracer rejects loops, ifs and combine functions nested past it with the
// user's line, the limit and the depth found; the verifier rejects IR built
// through the API past it; at the limit itself every stage that recurses once
// per level (verifier, passes, printer, parser, axis analysis, interpreter,
// GPU code generation) works. The parser's side is in
// tests/filecheck/verify-invalid-nesting-depth.tir.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "codegen/compile.h"
#include "ir/ir.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "runtime/kernel.h"
#include "tiledsl/tiledsl.h"
#include "transforms/axis_analysis.h"
#include "transforms/passes.h"

using namespace tl;
using ir::OpKind;
using ir::Type;
using ir::Value;

namespace {

constexpr int kLimit = ir::kMaxRegionDepth;

// How deep the kernels below nest, and the line of the construct that
// opens each level (set while tracing).
int g_depth = 0;
int g_line = 0;

std::string at_line(int line) { return std::string(__FILE__) + ":" + std::to_string(line) + ": "; }

std::string limit_message(const std::string& op, int depth) {
  return op + ": expected loops, ifs and combine functions nested at most " + std::to_string(kLimit) +
         " deep, found one at depth " + std::to_string(depth);
}

// `levels` tl::range loops of one trip, each adding its induction variable
// plus one to a carried sum: the innermost stores the sum (= levels).
void nest_loops(int levels, scalar<int32_t>& sum) {
  if (levels == 0) return;
  g_line = __LINE__ + 1;
  for (auto i : range(0, 1)) {
    sum = sum + i + 1;
    nest_loops(levels - 1, sum);
  }
}
void loops_kernel(ptr<int32_t> out) {
  scalar<int32_t> sum = program_id(0) * 0;
  nest_loops(g_depth, sum);
  store(out, sum);
}

// `levels` tl::if_ on a true condition, each adding one in its then branch.
void nest_ifs(int levels, scalar<int32_t>& sum, const scalar<int32_t>& n) {
  if (levels == 0) return;
  g_line = __LINE__ + 1;
  if_(n > 0, [&] {
    sum = sum + 1;
    nest_ifs(levels - 1, sum, n);
  });
}
void ifs_kernel(ptr<int32_t> out, scalar<int32_t> n) {
  scalar<int32_t> sum = n * 0;
  nest_ifs(g_depth, sum, n);
  store(out, sum);
}

// A reduction whose combine function sits `g_depth - 1` loops deep.
void reduce_kernel(ptr<int32_t> out) {
  scalar<int32_t> sum = program_id(0) * 0;
  std::function<void(int)> nest = [&](int levels) {
    if (levels == 0) {
      g_line = __LINE__ + 1;
      sum = sum + reduce(arange(0, 16), 0, [](auto a, auto b) { return a + b; });
      return;
    }
    for (auto i : range(0, 1)) nest(levels - 1);
  };
  nest(g_depth - 1);
  store(out, sum);
}

template <class F>
std::string compile_error(F fn) {
  try {
    compile(fn);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected tl::compile to throw tl::Error");
  return "";
}

int32_t run_on_interp(const Kernel& k, int32_t n = -1) {
  Device dev = Device::get("interp");
  Buffer out = dev.alloc<int32_t>(1);
  if (n < 0) dev(k, Grid{1}, out);
  else dev(k, Grid{1}, out, n);
  dev.synchronize();
  return out.download<int32_t>()[0];
}

int max_depth(const ir::Region& r) {
  int d = 0;
  for (const auto& op : r.ops)
    for (const auto& sub : op->regions) d = std::max(d, 1 + max_depth(*sub));
  return d;
}

// `levels` nested `for` loops built through the API. Each carries a pointer
// tile advanced by 16 elements (what the GPU path vectorizes; the innermost
// loop loads through it and stores back) and two integers that swap, one
// of them incremented, (a, b) -> (b, a + 1), starting from constants
// outside all loops: their facts take three rounds to settle in every loop.
struct ApiNest {
  ir::Function fn;
  ir::Op* load = nullptr;
  Value* innermost_ptr = nullptr;

  explicit ApiNest(int levels) {
    fn.name = "nest";
    Value* x = fn.body.add_arg(ir::ptr_type(DType::f32));
    Value* n = fn.body.add_arg(ir::scalar_type(DType::i32));
    ir::Builder b(&fn.body);
    Type idx = ir::tile_type(DType::i32, {16});
    Type ptile = Type{DType::f32, true, {16}};
    Value* zero = b.constant_int(ir::scalar_type(DType::i32), 0);
    Value* one = b.constant_int(ir::scalar_type(DType::i32), 1);
    Value* range16 = b.create1(OpKind::Arange, {}, idx, {{"start", int64_t(0)}, {"end", int64_t(16)}});
    Value* p = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {x}, ptile), range16}, ptile);
    std::vector<ir::Op*> loops;
    const Type i32 = ir::scalar_type(DType::i32);
    for (int d = 0; d < levels; ++d) {
      ir::Op* loop = b.create(OpKind::For, {zero, n, one, p, zero, zero}, {ptile, i32, i32});
      ir::Region* body = loop->add_region();
      body->add_arg(i32);
      p = body->add_arg(ptile);
      body->add_arg(i32);
      body->add_arg(i32);
      loops.push_back(loop);
      b.set_insertion_end(body);
    }
    innermost_ptr = p;
    if (levels > 0) {
      load = b.create(OpKind::Load, {p}, {ir::tile_type(DType::f32, {16})});
      b.create(OpKind::Store, {p, load->result()}, {});
    }
    // Each body yields its own values' next ones (the loop results, which
    // the analysis knows nothing about, are left unused).
    for (ir::Op* loop : loops) {
      ir::Region* body = loop->regions[0].get();
      b.set_insertion_end(body);
      Value* next = b.create1(OpKind::AddPtr, {body->args[1].get(), b.constant_int(idx, 16)}, ptile);
      Value* a = body->args[2].get();
      Value* b_next = b.create1(OpKind::Add, {a, one}, i32);
      b.create(OpKind::Yield, {next, body->args[3].get(), b_next}, {});
    }
  }
};

}  // namespace

TEST_CASE("tracing: loops nested to the limit compile and run; one more is an error", "[nesting][frontend]") {
  g_depth = kLimit;
  Kernel k = compile(loops_kernel);
  CHECK(max_depth(k.impl()->fn->body) == kLimit);
  CHECK(run_on_interp(k) == kLimit);

  g_depth = kLimit + 1;
  std::string e = compile_error(loops_kernel);
  CHECK(e == at_line(g_line) + limit_message("range", kLimit + 1));
  // Far past the limit, the first loop past it is the one named.
  g_depth = 50'000;
  CHECK(compile_error(loops_kernel) == e);
}

TEST_CASE("tracing: ifs nested to the limit compile and run; one more is an error", "[nesting][frontend]") {
  g_depth = kLimit;
  Kernel k = compile(ifs_kernel);
  CHECK(max_depth(k.impl()->fn->body) == kLimit);
  CHECK(run_on_interp(k, 1) == kLimit);
  CHECK(run_on_interp(k, 0) == 0);

  g_depth = kLimit + 1;
  CHECK(compile_error(ifs_kernel) == at_line(g_line) + limit_message("if_", kLimit + 1));
}

TEST_CASE("tracing: a combine function counts as a level", "[nesting][frontend]") {
  g_depth = kLimit;
  Kernel k = compile(reduce_kernel);
  CHECK(run_on_interp(k) == 120);  // 0 + 1 + ... + 15

  g_depth = kLimit + 1;
  CHECK(compile_error(reduce_kernel) == at_line(g_line) + limit_message("reduce", kLimit + 1));
}

TEST_CASE("tracing: GPU code generation handles loops nested to the limit", "[nesting][codegen]") {
  g_depth = kLimit;
  Kernel k = compile(loops_kernel);
  codegen::Specialization spec;
  spec.args.push_back(codegen::pointer_arg_facts(256));
  // One target of each back end (every target would take seconds).
  for (const char* target : {"sm_90a", "gfx942"}) {
    INFO(target);
    REQUIRE(codegen::is_known_target(target));
    CHECK_FALSE(codegen::compile(*k.impl(), spec, target).assembly.empty());
  }
}

TEST_CASE("verifier: API-built IR nested past the limit is an error", "[nesting][ir]") {
  ApiNest at_limit(kLimit);
  CHECK_NOTHROW(ir::verify(at_limit.fn));
  ApiNest over(kLimit + 1);
  // The outermost loop opening a region at depth kLimit + 1 is named.
  REQUIRE_THROWS_AS(ir::verify(over.fn), Error);
  try {
    ir::verify(over.fn);
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "<unknown>: 'for' expects regions nested at most " + std::to_string(kLimit) +
                                       " deep, found a region at depth " + std::to_string(kLimit + 1));
  }
}

TEST_CASE("every pass, the printer and the parser work at the limit", "[nesting][passes]") {
  ApiNest nest(kLimit);
  const std::string before = ir::print(nest.fn);
  transforms::simplify(nest.fn);
  ir::verify(nest.fn);
  CHECK(max_depth(nest.fn.body) == kLimit);  // the store keeps every loop
  // print -> parse -> print is exact at the limit (indentation is capped).
  auto parsed = ir::parse(before);
  ir::verify(*parsed);
  CHECK(ir::print(*parsed->functions[0]) == before);
}

TEST_CASE("axis analysis of loops nested to the limit keeps the facts of one loop", "[nesting][axis]") {
  // Each loop carries a pointer advanced by 16 floats: contiguous by 16 and
  // 64-byte aligned at every depth, as in a single loop. (Analysed afresh
  // at each round of the loop around it, each loop here ran its body three
  // times per run of its parent: 3^128 runs.)
  ApiNest one(1), deep(kLimit);
  std::vector<transforms::ArgFacts> facts{{256, {}}, {1, {}}};
  transforms::AxisAnalysis a1(one.fn, facts), ad(deep.fn, facts);
  const auto& f1 = a1.get(one.innermost_ptr);
  const auto& fd = ad.get(deep.innermost_ptr);
  CHECK(f1.contiguity[0] == 16);
  CHECK(f1.divisibility[0] == 64);
  CHECK(fd.contiguity == f1.contiguity);
  CHECK(fd.divisibility == f1.divisibility);
  CHECK(ad.vector_width(*deep.load) == a1.vector_width(*one.load));
  CHECK(ad.vector_width(*deep.load) == 4);
}
