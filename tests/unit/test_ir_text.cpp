// Tests of the Tile IR text form (printer, parser) and of the verifier:
// exact printed syntax, print -> parse -> print round trips over every op and
// attribute kind, exact float round trips, and the exact diagnostics of the
// parser and of each verifier rule.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <set>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

using namespace tl;
using namespace tl::ir;

namespace {

std::string round_trip(const std::string& text) {
  auto m = parse(text, "rt.tir");
  verify(*m);
  return print(*m);
}

// Every op kind, every attribute kind, nested for/if and reduce/scan regions.
const char* kAllOps = R"(func @all_ops(%0: ptr<f32>, %1: ptr<i32>, %2: i32, %3: ptr<bf16>) loc("kern.cpp":10) {
  %4 = program_id {axis = 0} : i32 loc("kern.cpp":11)
  %5 = num_programs {axis = 1} : i32
  %6 = arange {end = 16, start = 0} : tile<16xi32>
  %7 = constant {value = 1.5} : tile<16xf32>
  %8 = constant {value = 0.1} : f32
  %9 = constant {value = -7} : i32
  %10 = splat %2 : tile<16xi32>
  %11 = cmp %6, %10 {pred = "lt"} : tile<16xi1>
  %12 = splat %0 : tile<16xptr<f32>>
  %13 = addptr %12, %6 : tile<16xptr<f32>>
  %14 = load %13, %11, %7 {cache = ".cg", evict = "", volatile = 0} : tile<16xf32>
  %15 = add %14, %7 : tile<16xf32>
  %16 = sub %15, %14 : tile<16xf32>
  %17 = mul %16, %14 : tile<16xf32>
  %18 = div %17, %14 : tile<16xf32>
  %19 = rem %18, %14 : tile<16xf32>
  %20 = minimum %19, %14 : tile<16xf32>
  %21 = maximum %20, %14 : tile<16xf32>
  %22 = fma %21, %14, %7 : tile<16xf32>
  %23 = select %11, %22, %14 : tile<16xf32>
  %24 = neg %23 : tile<16xf32>
  %25 = abs %24 : tile<16xf32>
  %26 = exp %25 : tile<16xf32>
  %27 = exp2 %26 : tile<16xf32>
  %28 = log %27 : tile<16xf32>
  %29 = log2 %28 : tile<16xf32>
  %30 = sqrt %29 : tile<16xf32>
  %31 = rsqrt %30 : tile<16xf32>
  %32 = sin %31 : tile<16xf32>
  %33 = cos %32 : tile<16xf32>
  %34 = tanh %33 : tile<16xf32>
  %35 = erf %34 : tile<16xf32>
  %36 = floor %35 : tile<16xf32>
  %37 = ceil %36 : tile<16xf32>
  %38 = bitcast %37 : tile<16xi32>
  %39 = and %38, %6 : tile<16xi32>
  %40 = or %39, %6 : tile<16xi32>
  %41 = xor %40, %6 : tile<16xi32>
  %42 = shl %41, %6 : tile<16xi32>
  %43 = shr %42, %6 : tile<16xi32>
  %44 = not %43 : tile<16xi32>
  %45 = cast %37 : tile<16xbf16>
  %46 = expand_dims %37 {axis = 0} : tile<1x16xf32>
  %47 = expand_dims %37 {axis = 1} : tile<16x1xf32>
  %48 = broadcast %46 : tile<16x16xf32>
  %49 = broadcast %47 : tile<16x16xf32>
  %50 = trans %49 {order = [1, 0]} : tile<16x16xf32>
  %51 = reshape %50 : tile<256xf32>
  %52 = join %36, %37 : tile<16x2xf32>
  %53, %54 = split %52 : tile<16xf32>, tile<16xf32>
  %55 = dot %48, %49, %50 {input_precision = "ieee"} : tile<16x16xf32>
  %56 = reduce %55 {axis = 1} : tile<16xf32> {
  ^(%57: f32, %58: f32):
    %59 = maximum %57, %58 : f32
    yield %59
  } loc("kern.cpp":30)
  %60 = scan %53 {axis = 0, reverse = 1} : tile<16xf32> {
  ^(%61: f32, %62: f32):
    %63 = add %61, %62 : f32
    yield %63
  }
  %64 = constant {value = 0} : i32
  %65 = constant {value = 1} : i32
  %66 = constant {value = 0.0} : f32
  %67, %68 = for %64, %2, %65, %66, %60 {num_stages = 3} : f32, tile<16xf32> {
  ^(%69: i32, %70: f32, %71: tile<16xf32>):
    %72 = cmp %69, %64 {pred = "gt"} : i1
    %73 = if %72 : f32 {
      yield %70
    }, {
      %74 = add %70, %8 : f32
      yield %74
    }
    for %64, %69, %65 {
    ^(%75: i32):
      print %75, %73 {prefix = "it \"q\" \\ \n"}
      yield
    }
    yield %73, %71
  } loc("kern.cpp":40)
  store %13, %68, %11 {cache = "", evict = "evict_first"}
  %76 = splat %1 : tile<16xptr<i32>>
  %77 = addptr %76, %6 : tile<16xptr<i32>>
  %78 = atomic_rmw %77, %6, %11 {kind = "max", scope = "cta", sem = "release"} : tile<16xi32>
  %79 = atomic_cas %77, %6, %44 {scope = "sys", sem = "relaxed"} : tile<16xi32>
  %80 = splat %3 : tile<16xptr<bf16>>
  store %80, %45
  %81 = cmp %67, %67 {pred = "eq"} : i1
  assert %81 {file = "kern.cpp", line = 42, msg = "finite"}
  assume %81
  %82 = descriptor_load %0, %2, %2, %2 {block = [16]} : tile<16xf32>
  descriptor_store %0, %2, %2, %2, %82 {block = [16]}
  %83 = hint %77 {contiguity = [1], divisibility = [16]} : tile<16xptr<i32>>
  %84 = mulhi %43, %6 : tile<16xi32>
  %85 = while %84 : tile<16xi32> {
  ^(%86: tile<16xi32>):
    %87 = cmp %2, %2 {pred = "lt"} : i1
    yield %87
  }, {
  ^(%88: tile<16xi32>):
    %89 = add %88, %88 : tile<16xi32>
    yield %89
  }
  %90 = inline_asm %84, %84 {pack = 1, ptx = "add.s32 $0, $1, $2;", ptx_constraints = "=r,r,r", pure = 1} : tile<16xi32>
  print
}
)";

}  // namespace

TEST_CASE("ir text: printer writes the documented syntax", "[ir][text]") {
  Function fn;
  fn.name = "loop";
  fn.loc = {"k.cpp", 3};
  Value* n = fn.body.add_arg(scalar_type(DType::i32));  // trip count
  Builder b(&fn.body);
  b.loc = {"k.cpp", 4};
  Value* zero = b.constant_int(scalar_type(DType::i32), 0);
  Value* one = b.constant_int(scalar_type(DType::i32), 1);
  Value* init = b.constant_float(tile_type(DType::f32, {4, 8}), -2.0);  // [4, 8] f32
  Op* loop = b.create(OpKind::For, {zero, n, one, init}, {init->type}, {{"num_stages", int64_t(2)}});
  Region* body = loop->add_region();
  Value* iv = body->add_arg(n->type);
  Value* acc = body->add_arg(init->type);
  Builder in(body);
  Value* pos = in.create1(OpKind::Cmp, {iv, zero}, scalar_type(DType::i1), {{"pred", std::string("gt")}});
  Op* branch = in.create(OpKind::If, {pos}, {acc->type});
  Builder then_b(branch->add_region());
  Value* twice = then_b.create1(OpKind::Add, {acc, acc}, acc->type);
  then_b.create(OpKind::Yield, {twice}, {});
  Builder else_b(branch->add_region());
  else_b.create(OpKind::Yield, {acc}, {});
  in.create(OpKind::Yield, {branch->result(0)}, {});
  Value* row = b.create1(OpKind::Reduce, {loop->result(0)}, tile_type(DType::f32, {4}), {{"axis", int64_t(1)}});
  Region* comb = row->def->add_region();
  Value* l = comb->add_arg(scalar_type(DType::f32));
  Value* r = comb->add_arg(scalar_type(DType::f32));
  Builder cb(comb);
  cb.create(OpKind::Yield, {cb.create1(OpKind::Add, {l, r}, l->type)}, {});
  REQUIRE_NOTHROW(verify(fn));

  const std::string expected = R"(func @loop(%0: i32) loc("k.cpp":3) {
  %1 = constant {value = 0} : i32 loc("k.cpp":4)
  %2 = constant {value = 1} : i32 loc("k.cpp":4)
  %3 = constant {value = -2.0} : tile<4x8xf32> loc("k.cpp":4)
  %4 = for %1, %0, %2, %3 {num_stages = 2} : tile<4x8xf32> {
  ^(%5: i32, %6: tile<4x8xf32>):
    %7 = cmp %5, %1 {pred = "gt"} : i1
    %8 = if %7 : tile<4x8xf32> {
      %9 = add %6, %6 : tile<4x8xf32>
      yield %9
    }, {
      yield %6
    }
    yield %8
  } loc("k.cpp":4)
  %10 = reduce %4 {axis = 1} : tile<4xf32> {
  ^(%11: f32, %12: f32):
    %13 = add %11, %12 : f32
    yield %13
  } loc("k.cpp":4)
}
)";
  CHECK(print(fn) == expected);
  CHECK(print(fn, {.locations = false}).find("loc(") == std::string::npos);
  CHECK(round_trip(expected) == expected);
}

TEST_CASE("ir text: every op and attribute kind round-trips", "[ir][text]") {
  auto m = parse(kAllOps, "all.tir");
  REQUIRE(m->functions.size() == 1);
  REQUIRE_NOTHROW(verify(*m));
  CHECK(print(*m) == kAllOps);
  CHECK(round_trip(print(*m)) == kAllOps);

  // The sample really covers the whole op set (a new op must be added here).
  std::set<OpKind> seen;
  walk(m->functions[0]->body, [&](Op* op) { seen.insert(op->kind); });
  CHECK(seen.size() == size_t(OpKind::Yield) + 1);

  // Locations are attached to parsed ops and functions.
  const Function& fn = *m->functions[0];
  CHECK(fn.loc == Loc{"kern.cpp", 10});
  CHECK(fn.body.ops.front()->loc == Loc{"kern.cpp", 11});
  CHECK_FALSE((*std::next(fn.body.ops.begin()))->loc.known());
}

TEST_CASE("ir text: float attributes round-trip bit-exactly", "[ir][text]") {
  const double values[] = {0.1, 1.0 / 3.0, -0.0, 1e-310, 5e-324, 1.7976931348623157e308, 123456789.0,
                           -2.5e-8, 16777217.0, std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
  for (double v : values) {
    Function fn;
    fn.name = "c";
    Builder b(&fn.body);
    b.constant_float(scalar_type(DType::f64), v);
    std::string text = print(fn);
    INFO(text);
    auto m = parse(text);
    double back = m->functions[0]->body.ops.front()->attr_float("value");
    CHECK(std::bit_cast<uint64_t>(back) == std::bit_cast<uint64_t>(v));
    // Always readable as a float, never as an integer.
    CHECK(std::holds_alternative<double>(m->functions[0]->body.ops.front()->attrs.at("value")));
  }
  Function fn;
  fn.name = "n";
  Builder b(&fn.body);
  b.constant_float(scalar_type(DType::f32), std::nan(""));
  auto m = parse(print(fn));
  CHECK(std::isnan(m->functions[0]->body.ops.front()->attr_float("value")));
  CHECK(print(fn).find("{value = nan}") != std::string::npos);
}

TEST_CASE("ir text: strings, arrays and several functions", "[ir][text]") {
  const std::string text = R"(func @a(%0: i32) {
  print %0 {prefix = "tab\there \"quoted\" back\\slash\nnext"}
}

func @b(%0: tile<2x4xf32>) {
  %1 = trans %0 {order = [1, 0]} : tile<4x2xf32>
}
)";
  auto m = parse(text);
  REQUIRE(m->functions.size() == 2);
  CHECK(m->functions[0]->body.ops.front()->attr_str("prefix") == "tab\there \"quoted\" back\\slash\nnext");
  CHECK(m->functions[1]->body.ops.front()->attr_ints("order") == std::vector<int64_t>{1, 0});
  CHECK(print(*m) == text);
  CHECK(m->lookup("b") == m->functions[1].get());
}

TEST_CASE("ir text: comments and free layout are accepted", "[ir][text]") {
  const std::string text =
      "// leading comment\n"
      "func @f(%n: i32,\n        %m: i32) {   // trailing\n"
      "  %s = add %n, %m : i32  // sum\n"
      "}\n";
  CHECK(round_trip(text) == "func @f(%0: i32, %1: i32) {\n  %2 = add %0, %1 : i32\n}\n");
}

TEST_CASE("ir text: parser errors name line, column and token", "[ir][text][errors]") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"func @f(%a: i32) {\n  %b = frobnicate %a : i32\n}\n", "t.tir:2:8: expected op name, found 'frobnicate'"},
      {"func @f(%a: i32) {\n  %b = add %a, %zz : i32\n}\n", "t.tir:2:16: expected defined value, found '%zz'"},
      {"func @f(%a: i32) {\n  %b = add %a, %a : i33\n}\n", "t.tir:2:21: expected element type, found 'i33'"},
      {"func @f(%a: i32) {\n  %b = add %a, %a\n}\n", "t.tir:2:18: expected ':' and 1 result types, found 'end of line'"},
      {"func @f(%a: i32) {\n  %b, %c = split %a : i32\n}\n", "t.tir:2:26: expected ',', found 'end of line'"},
      {"func @f(%a: i32) {\n  %b = add %a, %a : i32, i32\n}\n", "t.tir:2:24: expected 1 result types, found ','"},
      {"func @f(%a: i32) {\n  %a = add %a, %a : i32\n}\n", "t.tir:2:3: expected a value name not defined before, found '%a'"},
      {"func @f(%a: tile<16xf32>) {\n  %b = trans %a {order = [1, x]} : tile<16xf32>\n}\n",
       "t.tir:2:30: expected integer, found 'x'"},
      {"func @f(%a: i32) {\n  print %a {prefix = \"oops}\n}\n", "t.tir:2:28: expected closing '\"', found 'end of line'"},
      {"func @f(%a: i32) {\n  print %a {p = 1, p = 2}\n}\n", "t.tir:2:20: expected a new attribute name, found 'p'"},
      {"func @f(%a: tile<16x>) {\n}\n", "t.tir:1:21: expected element type, found '>'"},
      {"func @f(%a: i32) {\n  store %a, %a : i32\n}\n",
       "t.tir:2:16: expected no result types on an op without results, found ':'"},
      {"func @f() {\n  print\n", "t.tir:3:1: expected '}', found 'end of input'"},
      {"fun @f() {}\n", "t.tir:1:1: expected 'func', found 'fun'"},
      {"func @f() {\n  print loc(\"a.cpp\":x)\n}\n", "t.tir:2:21: expected integer, found 'x'"},
      {"func @f() {\n  print } \n}\n", "t.tir:2:9: expected end of line after op, found '}'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(parse(c.text, "t.tir"), c.message);
  }
}

TEST_CASE("ir text: region values are scoped to their region", "[ir][text][errors]") {
  const char* text = R"(func @f(%n: i32) {
  %z = constant {value = 0} : i32
  for %z, %n, %n {
  ^(%iv: i32):
    yield
  }
  %x = add %iv, %iv : i32
}
)";
  CHECK_THROWS_WITH(parse(text, "s.tir"), "s.tir:7:12: expected defined value, found '%iv'");
  // An op's results are not visible inside its own regions.
  const char* self_use = R"(func @f(%n: i32) {
  %z = constant {value = 0} : i32
  %r = for %z, %n, %n, %z : i32 {
  ^(%iv: i32, %c: i32):
    yield %r
  }
}
)";
  CHECK_THROWS_WITH(parse(self_use, "s.tir"), "s.tir:5:11: expected defined value, found '%r'");
}

TEST_CASE("ir verifier: accepts well-formed IR", "[ir][verify]") {
  CHECK_NOTHROW(verify(*parse(kAllOps)));
  // i8 x i8 -> i32 dot, scalar expand_dims, reshape of a scalar into [1].
  CHECK_NOTHROW(verify(*parse(R"(func @f(%a: tile<16x32xi8>, %b: tile<32x16xi8>, %c: tile<16x16xi32>, %s: f32) {
  %d = dot %a, %b, %c : tile<16x16xi32>
  %e = expand_dims %s {axis = 0} : tile<1xf32>
  %f = reshape %e : tile<1x1xf32>
}
)")));
  // A pointer to its address and back (a pointer tile through shared memory).
  CHECK_NOTHROW(verify(*parse(R"(func @f(%p: ptr<f32>) {
  %a = bitcast %p : i64
  %b = bitcast %a : ptr<f32>
}
)")));
}

TEST_CASE("ir verifier: each rule reports its message", "[ir][verify][errors]") {
  struct Case {
    const char* rule;
    const char* body;  // ops of a function with args %p: ptr<f32>, %n: i32, %x: tile<16xf32>, %m: tile<16x16xf32>
    const char* message;
  };
  const Case cases[] = {
      {"dims c x 2^k", "%a = arange {end = 34, start = 0} : tile<34xi32> loc(\"t.cpp\":1)",
       "t.cpp:1: 'arange' expects result of rank 0..5 with dims c x 2^k (c = 1, 3, ..., 15), found dimension 34 in tile<34xi32>"},
      {"rank at most 5", "%a = constant {value = 0.0} : tile<2x2x2x2x2x2xf32> loc(\"t.cpp\":2)",
       "t.cpp:2: 'constant' expects result of rank 0..5 with dims c x 2^k (c = 1, 3, ..., 15), found rank 6 in tile<2x2x2x2x2x2xf32>"},
      {"operand count", "%a = add %x : tile<16xf32> loc(\"t.cpp\":3)", "t.cpp:3: 'add' expects 2 operands, found 1"},
      {"binary dtypes", "%a = add %n, %x : tile<16xf32> loc(\"t.cpp\":4)",
       "t.cpp:4: 'add' expects a second operand of type i32, found tile<16xf32>"},
      {"bitwise needs integers", "%a = and %x, %x : tile<16xf32> loc(\"t.cpp\":5)",
       "t.cpp:5: 'and' expects integer operands, found tile<16xf32>"},
      {"math needs floats", "%a = exp %n : i32 loc(\"t.cpp\":6)", "t.cpp:6: 'exp' expects a float operand, found i32"},
      {"result type", "%a = mul %x, %x : tile<16xf16> loc(\"t.cpp\":7)",
       "t.cpp:7: 'mul' expects a result of type tile<16xf32>, found tile<16xf16>"},
      {"cmp predicate", "%a = cmp %x, %x {pred = \"lte\"} : tile<16xi1> loc(\"t.cpp\":8)",
       "t.cpp:8: 'cmp' expects 'pred' to be one of \"eq\"|\"ne\"|\"lt\"|\"le\"|\"gt\"|\"ge\", found \"lte\""},
      {"cmp result is i1", "%a = cmp %x, %x {pred = \"lt\"} : tile<16xi32> loc(\"t.cpp\":9)",
       "t.cpp:9: 'cmp' expects a result of type tile<16xi1>, found tile<16xi32>"},
      {"splat takes a scalar", "%a = splat %x : tile<16xf32> loc(\"t.cpp\":10)",
       "t.cpp:10: 'splat' expects a scalar operand, found tile<16xf32>"},
      {"broadcast dims", "%a = broadcast %m : tile<16x32xf32> loc(\"t.cpp\":11)",
       "t.cpp:11: 'broadcast' expects dim 1 to be 1 or 32, found tile<16x16xf32> -> tile<16x32xf32>"},
      {"expand_dims axis", "%a = expand_dims %x {axis = 2} : tile<16x1xf32> loc(\"t.cpp\":12)",
       "t.cpp:12: 'expand_dims' expects 'axis' in 0..1, found 2"},
      {"reshape element count", "%a = reshape %m : tile<128xf32> loc(\"t.cpp\":13)",
       "t.cpp:13: 'reshape' expects a result of 256 elements, found tile<128xf32>"},
      {"trans order", "%a = trans %m {order = [0, 0]} : tile<16x16xf32> loc(\"t.cpp\":14)",
       "t.cpp:14: 'trans' expects 'order' to be a permutation of the operand's 2 dims, found [0, 0]"},
      {"trans needs order", "%a = trans %m : tile<16x16xf32> loc(\"t.cpp\":15)",
       "t.cpp:15: 'trans' expects integer array attribute 'order', found none"},
      {"split minor dim", "%a, %b = split %m : tile<16xf32>, tile<16xf32> loc(\"t.cpp\":16)",
       "t.cpp:16: 'split' expects an operand whose minor dim is 2, found tile<16x16xf32>"},
      {"join operands", "%a = join %x, %m : tile<16x2xf32> loc(\"t.cpp\":17)",
       "t.cpp:17: 'join' expects a second operand of type tile<16xf32>, found tile<16x16xf32>"},
      {"dot shapes", "%a = dot %m, %m, %x : tile<16xf32> loc(\"t.cpp\":18)",
       "t.cpp:18: 'dot' expects rank-2 operands, found tile<16x16xf32>, tile<16x16xf32>, tile<16xf32>"},
      {"dot int accumulator",
       "%i = cast %m : tile<16x16xi8>\n  %a = dot %i, %i, %i : tile<16x16xi8> loc(\"t.cpp\":19)",
       "t.cpp:19: 'dot' expects float inputs, or i8 inputs with an i32 accumulator, found i8 x i8 + tile<16x16xi8>"},
      {"dot precision", "%a = dot %m, %m, %m {input_precision = \"fp8\"} : tile<16x16xf32> loc(\"t.cpp\":20)",
       "t.cpp:20: 'dot' expects 'input_precision' to be one of \"ieee\"|\"tf32\", found \"fp8\""},
      {"load needs a pointer", "%a = load %x : tile<16xf32> loc(\"t.cpp\":21)",
       "t.cpp:21: 'load' expects a pointer operand, found tile<16xf32>"},
      {"load mask shape", "%ps = splat %p : tile<16xptr<f32>>\n  %a = load %ps, %x : tile<16xf32> loc(\"t.cpp\":22)",
       "t.cpp:22: 'load' expects a mask of type tile<16xi1>, found tile<16xf32>"},
      {"store value type", "%ps = splat %p : tile<16xptr<f32>>\n  store %ps, %m loc(\"t.cpp\":23)",
       "t.cpp:23: 'store' expects a stored value of type tile<16xf32>, found tile<16x16xf32>"},
      {"atomic kind", "%ps = splat %p : tile<16xptr<f32>>\n  %a = atomic_rmw %ps, %x {kind = \"mul\"} : tile<16xf32> loc(\"t.cpp\":24)",
       "t.cpp:24: 'atomic_rmw' expects 'kind' to be one of \"add\"|\"max\"|\"min\"|\"xchg\"|\"and\"|\"or\"|\"xor\", found \"mul\""},
      {"atomic order", "%ps = splat %p : tile<16xptr<f32>>\n  %a = atomic_rmw %ps, %x {kind = \"add\", sem = \"seq_cst\"} : tile<16xf32> loc(\"t.cpp\":24)",
       "t.cpp:24: 'atomic_rmw' expects 'sem' to be one of \"relaxed\"|\"acquire\"|\"release\"|\"acq_rel\", found \"seq_cst\""},
      {"atomic scope", "%ps = splat %p : tile<16xptr<f32>>\n  %a = atomic_cas %ps, %x, %x {scope = \"cluster\"} : tile<16xf32> loc(\"t.cpp\":24)",
       "t.cpp:24: 'atomic_cas' expects 'scope' to be one of \"cta\"|\"gpu\"|\"sys\", found \"cluster\""},
      {"program_id axis", "%a = program_id {axis = 3} : i32 loc(\"t.cpp\":25)",
       "t.cpp:25: 'program_id' expects 'axis' in 0..2, found 3"},
      {"arange length", "%a = arange {end = 32, start = 0} : tile<16xi32> loc(\"t.cpp\":26)",
       "t.cpp:26: 'arange' expects a result of type tile<32xi32>, found tile<16xi32>"},
      {"constant value kind", "%a = constant {value = 1.5} : i32 loc(\"t.cpp\":27)",
       "t.cpp:27: 'constant' expects an integer 'value' for i32, found a float"},
      {"assert message", "%c = cmp %n, %n {pred = \"eq\"} : i1\n  assert %c loc(\"t.cpp\":28)",
       "t.cpp:28: 'assert' expects string attribute 'msg', found none"},
      {"reduce combiner args",
       "%a = reduce %x {axis = 0} : f32 {\n  ^(%l: f32):\n    yield %l\n  } loc(\"t.cpp\":29)",
       "t.cpp:29: 'reduce' expects combiner arguments (f32, f32), found (f32)"},
      {"reduce result shape",
       "%a = reduce %m {axis = 0} : tile<16x16xf32> {\n  ^(%l: f32, %r: f32):\n    yield %l\n  } loc(\"t.cpp\":30)",
       "t.cpp:30: 'reduce' expects result #0 of type tile<16xf32>, found tile<16x16xf32>"},
      {"reduce axis",
       "%a = reduce %x {axis = 1} : f32 {\n  ^(%l: f32, %r: f32):\n    yield %l\n  } loc(\"t.cpp\":31)",
       "t.cpp:31: 'reduce' expects 'axis' in 0..0, found 1"},
      {"scan yields n values",
       "%a = scan %x {axis = 0} : tile<16xf32> {\n  ^(%l: f32, %r: f32):\n    yield %l, %r\n  } loc(\"t.cpp\":32)",
       "t.cpp:32: 'scan' expects combiner region to yield (f32), found (f32, f32)"},
      {"for bound types",
       "%z = constant {value = 0} : i64\n  for %z, %n, %n {\n  ^(%i: i64):\n    yield\n  } loc(\"t.cpp\":33)",
       "t.cpp:33: 'for' expects an upper bound of type i64, found i32"},
      {"for integer bounds",
       "%z = constant {value = 0.0} : f32\n  for %z, %z, %z {\n  ^(%i: f32):\n    yield\n  } loc(\"t.cpp\":34)",
       "t.cpp:34: 'for' expects an integer scalar lower bound, found f32"},
      {"for results match inits",
       "%r = for %n, %n, %n, %x : tile<16xi32> {\n  ^(%i: i32, %c: tile<16xf32>):\n    yield %c\n  } loc(\"t.cpp\":35)",
       "t.cpp:35: 'for' expects results typed as the initial values (tile<16xf32>), found (tile<16xi32>)"},
      {"for region args",
       "%r = for %n, %n, %n, %x : tile<16xf32> {\n  ^(%i: i32):\n    yield %x\n  } loc(\"t.cpp\":36)",
       "t.cpp:36: 'for' expects body arguments (induction variable, carried...) (i32, tile<16xf32>), found (i32)"},
      {"for yield types",
       "%r = for %n, %n, %n, %x : tile<16xf32> {\n  ^(%i: i32, %c: tile<16xf32>):\n    yield %i\n  } loc(\"t.cpp\":37)",
       "t.cpp:37: 'for' expects body region to yield (tile<16xf32>), found (i32)"},
      {"for ends in yield",
       "for %n, %n, %n {\n  ^(%i: i32):\n    %q = add %i, %i : i32\n  } loc(\"t.cpp\":38)",
       "t.cpp:38: 'for' expects body region to end in yield, found 'add'"},
      {"if condition", "%r = if %n : i32 {\n    yield %n\n  }, {\n    yield %n\n  } loc(\"t.cpp\":39)",
       "t.cpp:39: 'if' expects a scalar i1 condition, found i32"},
      {"if has two regions",
       "%c = cmp %n, %n {pred = \"eq\"} : i1\n  %r = if %c : i32 {\n    yield %n\n  } loc(\"t.cpp\":40)",
       "t.cpp:40: 'if' expects 2 regions, found 1"},
      {"if else yields result types",
       "%c = cmp %n, %n {pred = \"eq\"} : i1\n  %r = if %c : i32 {\n    yield %n\n  }, {\n    yield %x\n  } loc(\"t.cpp\":41)",
       "t.cpp:41: 'if' expects else region to yield (i32), found (tile<16xf32>)"},
      {"yield only in regions", "yield loc(\"t.cpp\":42)",
       "t.cpp:42: 'yield' expects to be inside a for, while, if, reduce, scan or warp_specialize region, found it at function level"},
      {"yield is last",
       "for %n, %n, %n {\n  ^(%i: i32):\n    yield loc(\"t.cpp\":43)\n    %q = add %i, %i : i32\n  }",
       "t.cpp:43: 'yield' expects to be the last op of its region, found ops after it"},
      {"addptr offset", "%a = addptr %p, %x : ptr<f32> loc(\"t.cpp\":44)",
       "t.cpp:44: 'addptr' expects an integer offset, found tile<16xf32>"},
      {"bitcast width", "%a = bitcast %x : tile<16xf16> loc(\"t.cpp\":45)",
       "t.cpp:45: 'bitcast' expects a result of the operand's bit width 32, found tile<16xf16>"},
      {"bitcast of a pointer", "%a = bitcast %p : i32 loc(\"t.cpp\":45)",
       "t.cpp:45: 'bitcast' expects pointer to pointer, value to value, or pointer to and from i64, found ptr<f32> -> i32"},
      {"select condition", "%a = select %x, %x, %x : tile<16xf32> loc(\"t.cpp\":46)",
       "t.cpp:46: 'select' expects an i1 condition, found tile<16xf32>"},
      {"unknown loc", "%a = neg %p : ptr<f32>", "<unknown>: 'neg' expects a numeric operand, found ptr<f32>"},
  };
  for (const auto& c : cases) {
    std::string text = std::string("func @f(%p: ptr<f32>, %n: i32, %x: tile<16xf32>, %m: tile<16x16xf32>) {\n  ") +
                       c.body + "\n}\n";
    INFO(c.rule << "\n" << text);
    std::unique_ptr<Module> m;
    REQUIRE_NOTHROW(m = parse(text, "v.tir"));
    CHECK_THROWS_WITH(verify(*m), c.message);
  }
}

TEST_CASE("ir verifier: dominance of values built in memory", "[ir][verify][errors]") {
  Function fn;
  fn.name = "dom";
  Value* n = fn.body.add_arg(scalar_type(DType::i32));
  Builder b(&fn.body);
  b.loc = {"d.cpp", 7};
  Value* a = b.create1(OpKind::Add, {n, n}, n->type);
  Value* c = b.create1(OpKind::Mul, {a, a}, n->type);
  REQUIRE_NOTHROW(verify(fn));

  // Use before definition: move the add after the mul.
  b.set_insertion_before(a->def);
  Op* use_first = b.create(OpKind::Sub, {c, n}, {n->type});
  CHECK_THROWS_WITH(verify(fn),
                    "d.cpp:7: 'sub' expects operand #0 to be defined before its use (in this region or an "
                    "enclosing one), found a value of type i32 that does not dominate it");
  fn.body.erase(use_first);
  REQUIRE_NOTHROW(verify(fn));

  // A value defined inside a loop body used after the loop.
  Value* zero = b.constant_int(n->type, 0);
  b.set_insertion_end(&fn.body);
  Op* loop = b.create(OpKind::For, {zero, n, n}, {});
  Region* body = loop->add_region();
  Value* iv = body->add_arg(n->type);
  Builder in(body);
  Value* inner = in.create1(OpKind::Add, {iv, iv}, n->type);
  in.create(OpKind::Yield, {}, {});
  REQUIRE_NOTHROW(verify(fn));
  b.loc = {"d.cpp", 9};
  b.create1(OpKind::Neg, {inner}, n->type);
  CHECK_THROWS_WITH(verify(fn),
                    "d.cpp:9: 'neg' expects operand #0 to be defined before its use (in this region or an "
                    "enclosing one), found a value of type i32 that does not dominate it");
}

TEST_CASE("ir verifier: a value from another function does not dominate", "[ir][verify][errors]") {
  Function f1, f2;
  f1.name = "one";
  f2.name = "two";
  Value* foreign = f1.body.add_arg(scalar_type(DType::f32));
  Builder b(&f2.body);
  b.loc = {"x.cpp", 2};
  b.create1(OpKind::Abs, {foreign}, foreign->type);
  CHECK_THROWS_WITH(verify(f2),
                    "x.cpp:2: 'abs' expects operand #0 to be defined before its use (in this region or an "
                    "enclosing one), found a value of type f32 that does not dominate it");
  // The printer still prints it, marked, so the broken IR can be inspected.
  CHECK(print(f2).find("abs %<undefined>") != std::string::npos);
}
