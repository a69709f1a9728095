// The interpreter's reductions, scans and dots, and its control flow, with
// kernels built by hand (ir::Builder): reduce order (a balanced tree),
// argmax ties, scans forward and reverse, dot precisions, for and if, the
// grid and program ids, assert, print, and unsupported ops rejected with
// their line. Arithmetic is in test_interp_arith.cpp, shapes and memory in
// test_interp_memory.cpp.
#include <bit>
#include <catch2/catch.hpp>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "interp/interp.h"
#include "interp_test_util.h"
#include "kernel_builder.h"
#include "tiledsl/runtime.h"

using namespace kb;
using tl::dtype_v;
using namespace interp_test;

// ---------------------------------------------------------------------------
// Reduce, scan, dot

namespace {

// The documented combine order: pairs (0,1), (2,3), ..., then pairs of those.
float tree_sum(std::vector<float> v) {
  while (v.size() > 1) {
    std::vector<float> next;
    for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(v[i] + v[i + 1]);
    if (v.size() % 2) next.push_back(v.back());
    v = next;
  }
  return v[0];
}

}  // namespace

TEST_CASE("interp: reduce combines in a balanced tree along the axis", "[interp]") {
  constexpr int M = 8, N = 32;
  KernelBuilder kb("rsum", {P(DType::f32), P(DType::f32), P(DType::f32)});
  Value* r = kb.op(OpKind::ExpandDims, {kb.arange(M)}, T(DType::i32, {M, 1}), {{"axis", int64_t(1)}});
  Value* c = kb.op(OpKind::ExpandDims, {kb.arange(N)}, T(DType::i32, {1, N}), {{"axis", int64_t(0)}});
  Value* offs = kb.op(OpKind::Add, {kb.op(OpKind::Mul, {kb.op(OpKind::Broadcast, {r}, T(DType::i32, {M, N})), kb.ci(T(DType::i32, {M, N}), N)}, T(DType::i32, {M, N})),
                                    kb.op(OpKind::Broadcast, {c}, T(DType::i32, {M, N}))},
                      T(DType::i32, {M, N}));
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs));  // [M, N] f32
  auto add = [&](auto l, auto rr) { return std::vector<Value*>{kb.op(OpKind::Add, {l[0], rr[0]}, S(DType::f32))}; };
  Value* rows = kb.combine_op(OpKind::Reduce, {x}, 1, {}, add)[0];  // [M]
  Value* cols = kb.combine_op(OpKind::Reduce, {x}, 0, {}, add)[0];  // [N]
  kb.store(kb.ptrs(kb.arg(1), kb.arange(M)), rows);
  kb.store(kb.ptrs(kb.arg(2), kb.arange(N)), cols);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> host(M * N);
  for (auto& v : host) v = u(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);  // wide exponents: order matters
  auto dev = interp();
  auto in = dev.upload(host);
  auto ro = dev.alloc<float>(M), co = dev.alloc<float>(N);
  dev(kb.kernel(), {1}, in, ro, co);
  auto rv = ro.download<float>(), cv = co.download<float>();
  for (int i = 0; i < M; ++i) {
    std::vector<float> row(host.begin() + i * N, host.begin() + (i + 1) * N);
    CHECK(same_bits(rv[size_t(i)], tree_sum(row)));
  }
  for (int j = 0; j < N; ++j) {
    std::vector<float> col;
    for (int i = 0; i < M; ++i) col.push_back(host[size_t(i * N + j)]);
    CHECK(same_bits(cv[size_t(j)], tree_sum(col)));
  }
  // The order is observable: sequential summation gives 1 here, the tree 0.
  KernelBuilder k2("order", {P(DType::f32)});
  Value* v4 = k2.load(k2.ptrs(k2.arg(0), k2.arange(4)));
  Value* s = k2.combine_op(OpKind::Reduce, {v4}, 0, {}, [&](auto l, auto rr) {
    return std::vector<Value*>{k2.op(OpKind::Add, {l[0], rr[0]}, S(DType::f32))};
  })[0];
  k2.store(k2.arg(0), s);
  auto b4 = dev.upload(std::vector<float>{1e8f, 1.0f, -1e8f, 1.0f});
  dev(k2.kernel(), {1}, b4);
  CHECK(b4.download<float>()[0] == 0.0f);
}

TEST_CASE("interp: two-operand reduce (argmax) keeps the lowest index on ties", "[interp]") {
  constexpr int N = 16;
  KernelBuilder kb("argmax", {P(DType::f32), P(DType::i32)});
  Value* idx = kb.arange(N);
  Value* x = kb.load(kb.ptrs(kb.arg(0), idx));
  auto res = kb.combine_op(OpKind::Reduce, {x, idx}, 0, {}, [&](auto l, auto r) {
    Value* gt = kb.cmp("gt", l[0], r[0]);
    Value* eq = kb.cmp("eq", l[0], r[0]);
    Value* lo = kb.cmp("lt", l[1], r[1]);
    Value* keep = kb.op(OpKind::Or, {gt, kb.op(OpKind::And, {eq, lo}, S(DType::i1))}, S(DType::i1));
    return std::vector<Value*>{kb.op(OpKind::Select, {keep, l[0], r[0]}, S(DType::f32)),
                               kb.op(OpKind::Select, {keep, l[1], r[1]}, S(DType::i32))};
  });
  kb.store(kb.arg(1), res[1]);
  auto dev = interp();
  std::vector<float> host(N, 0.0f);
  host[5] = 3;
  host[9] = 3;
  host[12] = 2;
  auto in = dev.upload(host);
  auto out = dev.alloc<int32_t>(1);
  dev(kb.kernel(), {1}, in, out);
  CHECK(out.download<int32_t>()[0] == 5);
}

TEST_CASE("interp: a reduce region with a non-elementwise op runs lane by lane", "[interp]") {
  // combine(a, b) = if (a > b) {a} else {b}: an if inside the region.
  KernelBuilder kb("rif", {P(DType::i32)});
  Value* x = kb.load(kb.ptrs(kb.arg(0), kb.arange(8)));
  Value* m = kb.combine_op(OpKind::Reduce, {x}, 0, {}, [&](auto l, auto r) {
    return kb.if_(kb.cmp("gt", l[0], r[0]), {S(DType::i32)}, [&] { return std::vector<Value*>{l[0]}; },
                  [&] { return std::vector<Value*>{r[0]}; });
  })[0];
  kb.store(kb.arg(0), m);
  auto dev = interp();
  auto buf = dev.upload(std::vector<int32_t>{3, -1, 7, 2, 9, 0, 4, 8});
  dev(kb.kernel(), {1}, buf);
  CHECK(buf.download<int32_t>()[0] == 9);
}

TEST_CASE("interp: scan is sequential along the axis, forward and reverse", "[interp]") {
  constexpr int M = 4, N = 8;
  for (int reverse = 0; reverse < 2; ++reverse) {
    KernelBuilder kb("cumsum", {P(DType::f32), P(DType::f32)});
    Value* offs = kb.arange(M * N);
    Value* x = kb.op(OpKind::Reshape, {kb.load(kb.ptrs(kb.arg(0), offs))}, T(DType::f32, {M, N}));
    Value* s = kb.combine_op(OpKind::Scan, {x}, 1, {{"reverse", int64_t(reverse)}}, [&](auto l, auto r) {
      return std::vector<Value*>{kb.op(OpKind::Add, {l[0], r[0]}, S(DType::f32))};
    })[0];
    kb.store(kb.ptrs(kb.arg(1), offs), kb.op(OpKind::Reshape, {s}, T(DType::f32, {M * N})));
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(-10, 10);
    std::vector<float> host(M * N);
    for (auto& v : host) v = u(rng);
    auto dev = interp();
    auto in = dev.upload(host);
    auto out = dev.alloc<float>(M * N);
    dev(kb.kernel(), {1}, in, out);
    auto o = out.download<float>();
    for (int i = 0; i < M; ++i) {
      float acc = 0;
      for (int t = 0; t < N; ++t) {
        int j = reverse ? N - 1 - t : t;
        acc = t == 0 ? host[size_t(i * N + j)] : acc + host[size_t(i * N + j)];
        CHECK(same_bits(o[size_t(i * N + j)], acc));
      }
    }
  }
}

namespace {

// Runs dot(a [M,K], b [K,N], acc [M,N] f32-or-i32) and returns the result.
template <class TI, class TO>
std::vector<TO> run_dot(int M, int N, int K, const std::vector<TI>& a, const std::vector<TI>& b, const std::vector<TO>& acc,
                        const char* precision) {
  constexpr DType di = dtype_v<TI>, dout = dtype_v<TO>;
  KernelBuilder kb("dot", {P(di), P(di), P(dout)});
  Value* av = kb.op(OpKind::Reshape, {kb.load(kb.ptrs(kb.arg(0), kb.arange(M * K)))}, T(di, {M, K}));
  Value* bv = kb.op(OpKind::Reshape, {kb.load(kb.ptrs(kb.arg(1), kb.arange(K * N)))}, T(di, {K, N}));
  Value* cp = kb.ptrs(kb.arg(2), kb.arange(M * N));
  Value* cv = kb.op(OpKind::Reshape, {kb.load(cp)}, T(dout, {M, N}));
  Value* d = kb.op(OpKind::Dot, {av, bv, cv}, T(dout, {M, N}), {{"input_precision", std::string(precision)}});
  kb.store(cp, kb.op(OpKind::Reshape, {d}, T(dout, {M * N})));
  auto dev = interp();
  auto ba = dev.upload(a), bb = dev.upload(b), bc = dev.upload(acc);
  dev(kb.kernel(), {1}, ba, bb, bc);
  return bc.template download<TO>();
}

float tf32(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  u += 0xfffu + ((u >> 13) & 1u);
  return std::bit_cast<float>(u & ~0x1fffu);
}

}  // namespace

TEST_CASE("interp: dot of bf16, f32 (tf32 and ieee) and i8 inputs", "[interp]") {
  constexpr int M = 16, N = 32, K = 64;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> af(M * K), bf_(K * N), acc(M * N);
  for (auto& v : af) v = u(rng);
  for (auto& v : bf_) v = u(rng);
  for (auto& v : acc) v = u(rng);
  auto ref = [&](auto round_in) {
    std::vector<float> r(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = acc[size_t(i * N + j)];
        for (int k = 0; k < K; ++k) s += double(round_in(af[size_t(i * K + k)])) * double(round_in(bf_[size_t(k * N + j)]));
        r[size_t(i * N + j)] = float(s);
      }
    return r;
  };
  SECTION("ieee f32") { check_bits(run_dot<float, float>(M, N, K, af, bf_, acc, "ieee"), ref([](float x) { return x; })); }
  SECTION("tf32 rounds the inputs to 10 mantissa bits") {
    auto got = run_dot<float, float>(M, N, K, af, bf_, acc, "tf32");
    check_bits(got, ref(tf32));
    CHECK(got != run_dot<float, float>(M, N, K, af, bf_, acc, "ieee"));
  }
  SECTION("bf16") {
    std::vector<tl::bf16> ab(af.begin(), af.end()), bb(bf_.begin(), bf_.end());
    check_bits(run_dot<tl::bf16, float>(M, N, K, ab, bb, acc, "ieee"), ref([](float x) { return bf(x); }));
  }
  SECTION("i8 accumulates exactly in i32") {
    std::vector<int8_t> ai(M * K), bi(K * N);
    std::vector<int32_t> ci(M * N);
    for (auto& v : ai) v = int8_t(int(rng() % 256) - 128);
    for (auto& v : bi) v = int8_t(int(rng() % 256) - 128);
    for (auto& v : ci) v = int32_t(rng() % 1000) - 500;
    ai[0] = bi[0] = -128;
    auto got = run_dot<int8_t, int32_t>(M, N, K, ai, bi, ci, "ieee");
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        int32_t s = ci[size_t(i * N + j)];
        for (int k = 0; k < K; ++k) s += int32_t(ai[size_t(i * K + k)]) * int32_t(bi[size_t(k * N + j)]);
        CHECK(got[size_t(i * N + j)] == s);
      }
  }
}

// ---------------------------------------------------------------------------
// Control flow, program ids, assert, print

TEST_CASE("interp: for loops run ceil((hi - lo) / step) times: 0, 1, 2 and many", "[interp]") {
  // out = sum of iv over the loop, and the number of trips.
  KernelBuilder kb("loop", {P(DType::i32), S(DType::i32), S(DType::i32), S(DType::i32)});
  Value* zero = kb.ci(S(DType::i32), 0);
  auto res = kb.for_loop(kb.arg(1), kb.arg(2), kb.arg(3), {zero, zero}, [&](Value* iv, std::vector<Value*> c) {
    return std::vector<Value*>{kb.op(OpKind::Add, {c[0], iv}, S(DType::i32)),
                               kb.op(OpKind::Add, {c[1], kb.ci(S(DType::i32), 1)}, S(DType::i32))};
  });
  kb.store(kb.arg(0), res[0]);
  kb.store(kb.ptrs(kb.arg(0), kb.ci(S(DType::i32), 1)), res[1]);
  auto dev = interp();
  auto out = dev.alloc<int32_t>(2);
  auto run = [&](int lo, int hi, int step) {
    dev(kb.kernel(), {1}, out, lo, hi, step);
    return out.download<int32_t>();
  };
  CHECK(run(0, 0, 1) == std::vector<int32_t>{0, 0});
  CHECK(run(5, 2, 1) == std::vector<int32_t>{0, 0});
  CHECK(run(3, 4, 1) == std::vector<int32_t>{3, 1});
  CHECK(run(0, 64, 32) == std::vector<int32_t>{32, 2});
  CHECK(run(0, 65, 32) == std::vector<int32_t>{96, 3});
  CHECK(run(-10, 1000, 7) == std::vector<int32_t>{[] { int s = 0; for (int i = -10; i < 1000; i += 7) s += i; return s; }(), 145});
}

TEST_CASE("interp: loop-carried values may be swapped, constant or tiles", "[interp]") {
  // Fibonacci with yield (b, a + b), a loop-invariant carried tile and a
  // tile accumulator.
  KernelBuilder kb("fib", {P(DType::i64), P(DType::f32), S(DType::i32)});
  Value* a0 = kb.ci(S(DType::i64), 0);
  Value* b0 = kb.ci(S(DType::i64), 1);
  Value* inv = kb.cf(T(DType::f32, {8}), 2.0);
  Value* acc = kb.cf(T(DType::f32, {8}), 0.0);
  Value* lanes = kb.op(OpKind::Cast, {kb.arange(8)}, T(DType::f32, {8}));
  auto res = kb.for_loop(kb.ci(S(DType::i32), 0), kb.arg(2), kb.ci(S(DType::i32), 1), {a0, b0, inv, acc},
                         [&](Value*, std::vector<Value*> c) {
                           Value* sum = kb.op(OpKind::Add, {c[0], c[1]}, S(DType::i64));
                           Value* acc2 = kb.op(OpKind::Add, {c[3], kb.op(OpKind::Mul, {lanes, c[2]}, lanes->type)}, lanes->type);
                           return std::vector<Value*>{c[1], sum, inv, acc2};
                         });
  kb.store(kb.arg(0), res[0]);
  kb.store(kb.ptrs(kb.arg(1), kb.arange(8)), kb.op(OpKind::Add, {res[3], res[2]}, lanes->type));
  auto dev = interp();
  auto fib = dev.alloc<int64_t>(1);
  auto tile = dev.alloc<float>(8);
  dev(kb.kernel(), {1}, fib, tile, 90);
  CHECK(fib.download<int64_t>()[0] == 2880067194370816120ll);
  auto t = tile.download<float>();
  for (int i = 0; i < 8; ++i) CHECK(t[size_t(i)] == 180.0f * float(i) + 2.0f);
}

TEST_CASE("interp: nested loops and if with results", "[interp]") {
  KernelBuilder kb("nested", {P(DType::i32)});
  Value* pid = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* zero = kb.ci(S(DType::i32), 0);
  Value* one = kb.ci(S(DType::i32), 1);
  Value* four = kb.ci(S(DType::i32), 4);
  auto outer = kb.for_loop(zero, four, one, {zero}, [&](Value* i, std::vector<Value*> c) {
    auto inner = kb.for_loop(zero, i, one, {c[0]}, [&](Value* j, std::vector<Value*> d) {
      return std::vector<Value*>{kb.op(OpKind::Add, {d[0], j}, S(DType::i32))};
    });
    return inner;
  });
  Value* even = kb.cmp("eq", kb.op(OpKind::Rem, {pid, kb.ci(S(DType::i32), 2)}, S(DType::i32)), zero);
  auto r = kb.if_(even, {S(DType::i32)}, [&] { return std::vector<Value*>{outer[0]}; },
                  [&] { return std::vector<Value*>{kb.op(OpKind::Neg, {outer[0]}, S(DType::i32))}; });
  kb.store(kb.ptrs(kb.arg(0), pid), r[0]);
  auto dev = interp();
  auto out = dev.alloc<int32_t>(3);
  dev(kb.kernel(), {3}, out);
  // sum over i < 4 of sum over j < i of j = 0 + 0 + 1 + 3 = 4
  CHECK(out.download<int32_t>() == std::vector<int32_t>{4, -4, 4});
}

// A step that is not positive is an error whether or not the loop would
// run: a traced negative step (Python's range(hi, lo, -s) ported as it is)
// from 10 down to 0 ran no iterations without a word.
TEST_CASE("interp: a zero or negative traced step is an error, whether or not the loop would run", "[interp]") {
  KernelBuilder kb("step0", {S(DType::i32), S(DType::i32), S(DType::i32)});
  kb.at(21);
  kb.for_loop(kb.arg(0), kb.arg(1), kb.arg(2), {}, [&](Value*, std::vector<Value*>) { return std::vector<Value*>{}; });
  auto dev = interp();
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {1}, 0, 4, 0), "test.cpp:21: for loop step must be positive, found 0 in program (0, 0, 0)");
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {1}, 10, 0, -3), "test.cpp:21: for loop step must be positive, found -3 in program (0, 0, 0)");
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {1}, 0, 10, -3), "test.cpp:21: for loop step must be positive, found -3 in program (0, 0, 0)");
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {1}, 4, 4, 0), "test.cpp:21: for loop step must be positive, found 0 in program (0, 0, 0)");
  REQUIRE_NOTHROW(dev(kb.kernel(), {1}, 10, 0, 3));  // no iterations, as Python's range(10, 0, 3)
}

TEST_CASE("interp: the grid runs x fastest; program_id and num_programs", "[interp]") {
  KernelBuilder kb("order", {P(DType::i32), P(DType::i32)});
  Value* x = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* y = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(1)}});
  Value* z = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(2)}});
  Value* nx = kb.op(OpKind::NumPrograms, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* ny = kb.op(OpKind::NumPrograms, {}, S(DType::i32), {{"axis", int64_t(1)}});
  Value* lin = kb.op(OpKind::Add, {x, kb.op(OpKind::Mul, {nx, kb.op(OpKind::Add, {y, kb.op(OpKind::Mul, {ny, z}, S(DType::i32))}, S(DType::i32))}, S(DType::i32))}, S(DType::i32));
  Value* ticket = kb.op(OpKind::AtomicRmw, {kb.arg(0), kb.ci(S(DType::i32), 1)}, S(DType::i32), {{"kind", std::string("add")}});
  kb.store(kb.ptrs(kb.arg(1), lin), ticket);
  auto dev = interp();
  auto counter = dev.upload(std::vector<int32_t>{0});
  auto out = dev.alloc<int32_t>(24);
  dev(kb.kernel(), {4, 3, 2}, counter, out);
  auto o = out.download<int32_t>();
  for (int i = 0; i < 24; ++i) CHECK(o[size_t(i)] == i);
  dev(kb.kernel(), {0, 3, 2}, counter, out);  // an empty grid runs nothing
  CHECK(counter.download<int32_t>()[0] == 24);
}

TEST_CASE("interp: a failed assert names its line, message, index and program", "[interp]") {
  KernelBuilder kb("check", {P(DType::i32)});
  Value* x = kb.load(kb.ptrs(kb.arg(0), kb.arange(8)));
  Value* ok = kb.cmp("ge", x, kb.ci(T(DType::i32, {8}), 0));
  kb.at(33);
  kb.op0(OpKind::Assert, {ok}, {{"msg", std::string("x must be >= 0")}, {"file", std::string("user.cpp")}, {"line", int64_t(99)}});
  auto dev = interp();
  auto good = dev.upload(std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  dev(kb.kernel(), {2}, good);
  auto bad = dev.upload(std::vector<int32_t>{0, 1, 2, -3, 4, 5, 6, 7});
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {2}, bad),
                      "user.cpp:99: device assertion failed: x must be >= 0 at index [3] in program (0, 0, 0)");
}

TEST_CASE("interp: print writes one line per program", "[interp]") {
  KernelBuilder kb("show", {P(DType::f32)});
  Value* pid = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* x = kb.op(OpKind::Reshape, {kb.load(kb.ptrs(kb.arg(0), kb.arange(4)))}, T(DType::f32, {2, 2}));
  kb.op0(OpKind::Print, {pid, x}, {{"prefix", std::string("x =")}});
  tl::interp::Memory mem;
  uint64_t addr = mem.allocate(16);
  float host[4] = {0.5f, -1.0f, 0.1f, 3.0f};
  std::memcpy(mem.host(addr, 16), host, 16);
  std::ostringstream os;
  auto prog = tl::interp::compile(kb.fn());
  tl::interp::run(*prog, {2}, {tl::interp::ArgValue::integer(int64_t(addr))}, mem, {&os});
  CHECK(os.str() == "x = pid (0, 0, 0): 0, [[0.5, -1], [0.1, 3]]\nx = pid (1, 0, 0): 1, [[0.5, -1], [0.1, 3]]\n");
  mem.release(addr);
}

TEST_CASE("interp: an unsupported op/dtype combination is rejected with its line", "[interp]") {
  KernelBuilder kb("bad", {P(DType::f32)});
  Value* x = kb.load(kb.arg(0));
  kb.at(61);
  kb.op(OpKind::Shl, {x, x}, S(DType::f32));
  REQUIRE_THROWS_WITH(tl::interp::compile(kb.fn()), "test.cpp:61: interp: 'shl' is an integer op, found operands of f32");
}
