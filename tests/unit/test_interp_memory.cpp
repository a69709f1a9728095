// The interpreter's shape ops (row-major moves, 3-D broadcast and
// permutation) and memory: masked loads and stores, narrow dtypes' encodings,
// out-of-bounds accesses named by index, address and buffer, pointers moved
// between buffers, and atomics in program order. Kernels built by hand
// (ir::Builder), checked against plain C++ references.
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
// Shapes, select, constants

TEST_CASE("interp: shape ops move elements row-major", "[interp]") {
  // out[i, j] for a [4, 8] tile built from arange, broadcast, trans, join.
  KernelBuilder kb("shapes", {P(DType::i32), P(DType::i32), P(DType::i32), P(DType::i32)});
  Value* r = kb.arange(4);                                                          // [4]
  Value* c = kb.arange(8);                                                          // [8]
  Value* col = kb.op(OpKind::ExpandDims, {r}, T(DType::i32, {4, 1}), {{"axis", int64_t(1)}});
  Value* row = kb.op(OpKind::ExpandDims, {c}, T(DType::i32, {1, 8}), {{"axis", int64_t(0)}});
  Value* colb = kb.op(OpKind::Broadcast, {col}, T(DType::i32, {4, 8}));
  Value* rowb = kb.op(OpKind::Broadcast, {row}, T(DType::i32, {4, 8}));
  Value* ten = kb.ci(T(DType::i32, {4, 8}), 10);
  Value* v = kb.op(OpKind::Add, {kb.op(OpKind::Mul, {colb, ten}, T(DType::i32, {4, 8})), rowb}, T(DType::i32, {4, 8}));  // 10*i + j
  Value* offs32 = kb.arange(32);
  Value* flat = kb.op(OpKind::Reshape, {v}, T(DType::i32, {32}));
  kb.store(kb.ptrs(kb.arg(0), offs32), flat);
  Value* t = kb.op(OpKind::Trans, {v}, T(DType::i32, {8, 4}), {{"order", std::vector<int64_t>{1, 0}}});
  kb.store(kb.ptrs(kb.arg(1), offs32), kb.op(OpKind::Reshape, {t}, T(DType::i32, {32})));
  Value* j = kb.op(OpKind::Join, {r, kb.op(OpKind::Neg, {r}, r->type)}, T(DType::i32, {4, 2}));
  kb.store(kb.ptrs(kb.arg(2), kb.arange(8)), kb.op(OpKind::Reshape, {j}, T(DType::i32, {8})));
  tl::ir::Op* sp = kb.b.create(OpKind::Split, {j}, {T(DType::i32, {4}), T(DType::i32, {4})});
  Value* both = kb.op(OpKind::Sub, {sp->result(0), sp->result(1)}, T(DType::i32, {4}));  // 2 * r
  Value* s = kb.splat(kb.ci(S(DType::i32), 7), {4});
  Value* sel = kb.op(OpKind::Select, {kb.cmp("lt", r, kb.ci(T(DType::i32, {4}), 2)), both, s}, T(DType::i32, {4}));
  kb.store(kb.ptrs(kb.arg(3), kb.arange(4)), sel);

  auto dev = interp();
  auto b0 = dev.alloc<int32_t>(32), b1 = dev.alloc<int32_t>(32), b2 = dev.alloc<int32_t>(8), b3 = dev.alloc<int32_t>(4);
  dev(kb.kernel(), {1}, b0, b1, b2, b3);
  auto o0 = b0.download<int32_t>(), o1 = b1.download<int32_t>();
  for (int i = 0; i < 4; ++i)
    for (int jj = 0; jj < 8; ++jj) {
      CHECK(o0[size_t(i * 8 + jj)] == 10 * i + jj);
      CHECK(o1[size_t(jj * 4 + i)] == 10 * i + jj);
    }
  CHECK(b2.download<int32_t>() == std::vector<int32_t>{0, 0, 1, -1, 2, -2, 3, -3});
  CHECK(b3.download<int32_t>() == std::vector<int32_t>{0, 2, 7, 7});
}

TEST_CASE("interp: 3-D broadcast and permutation", "[interp]") {
  KernelBuilder kb("perm", {P(DType::f32)});
  Value* a = kb.op(OpKind::Cast, {kb.arange(8)}, T(DType::f32, {8}));
  Value* a3 = kb.op(OpKind::Reshape, {a}, T(DType::f32, {2, 1, 4}));
  Value* b3 = kb.op(OpKind::Broadcast, {a3}, T(DType::f32, {2, 2, 4}));  // [p, q, r] = 4p + r
  Value* t = kb.op(OpKind::Trans, {b3}, T(DType::f32, {4, 2, 2}), {{"order", std::vector<int64_t>{2, 0, 1}}});
  kb.store(kb.ptrs(kb.arg(0), kb.arange(16)), kb.op(OpKind::Reshape, {t}, T(DType::f32, {16})));
  auto dev = interp();
  auto out = dev.alloc<float>(16);
  dev(kb.kernel(), {1}, out);
  auto o = out.download<float>();
  for (int r = 0; r < 4; ++r)
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q) CHECK(o[size_t(r * 4 + p * 2 + q)] == float(4 * p + r));
}

// ---------------------------------------------------------------------------
// Memory

TEST_CASE("interp: masked loads yield other (or 0), masked stores skip", "[interp]") {
  // Odd size: 10 elements, tile of 16.
  KernelBuilder kb("masked", {P(DType::f32), P(DType::f32), P(DType::f32), S(DType::i32)});
  Value* offs = kb.arange(16);
  Value* mask = kb.cmp("lt", offs, kb.splat(kb.arg(3), {16}));
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs), mask, kb.cf(T(DType::f32, {16}), -1.0));
  Value* z = kb.load(kb.ptrs(kb.arg(0), offs), mask);
  kb.store(kb.ptrs(kb.arg(1), offs), x);
  kb.store(kb.ptrs(kb.arg(2), offs), z, mask);
  auto dev = interp();
  std::vector<float> host(10);
  for (int i = 0; i < 10; ++i) host[size_t(i)] = float(i) + 0.5f;
  auto in = dev.upload(host);
  auto out1 = dev.alloc<float>(16);
  auto out2 = dev.upload(std::vector<float>(16, 9.0f));
  dev(kb.kernel(), {1}, in, out1, out2, 10);
  auto o1 = out1.download<float>(), o2 = out2.download<float>();
  for (int i = 0; i < 16; ++i) {
    CHECK(o1[size_t(i)] == (i < 10 ? float(i) + 0.5f : -1.0f));
    CHECK(o2[size_t(i)] == (i < 10 ? float(i) + 0.5f : 9.0f));
  }
}

TEST_CASE("interp: narrow dtypes load and store their encodings", "[interp]") {
  KernelBuilder kb("copy", {P(DType::bf16), P(DType::f16), P(DType::i1), P(DType::u8)});
  Value* offs = kb.arange(4);
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs));
  kb.store(kb.ptrs(kb.arg(1), offs), kb.op(OpKind::Cast, {x}, T(DType::f16, {4})));
  Value* bits = kb.load(kb.ptrs(kb.arg(2), offs));
  kb.store(kb.ptrs(kb.arg(3), offs), kb.op(OpKind::Cast, {bits}, T(DType::u8, {4})));
  auto dev = interp();
  auto a = dev.upload(std::vector<tl::bf16>{tl::bf16(1.5f), tl::bf16(-2.0f), tl::bf16(1e-3f), tl::bf16(300.0f)});
  auto h = dev.alloc<tl::f16>(4);
  auto m = to_device(dev, std::vector<bool>{true, false, true, true});
  auto u = dev.alloc<uint8_t>(4);
  dev(kb.kernel(), {1}, a, h, m, u);
  auto ho = h.download<tl::f16>();
  CHECK(float(ho[0]) == 1.5f);
  CHECK(float(ho[1]) == -2.0f);
  CHECK(float(ho[2]) == float(tl::f16(float(tl::bf16(1e-3f)))));
  CHECK(float(ho[3]) == 300.0f);
  CHECK(u.download<uint8_t>() == std::vector<uint8_t>{1, 0, 1, 1});
}

TEST_CASE("interp: an out-of-bounds load names the index, the address and its pointer's buffer", "[interp]") {
  KernelBuilder kb("oob", {P(DType::f32), P(DType::f32)});
  kb.at(12);
  Value* offs = kb.arange(16);
  Value* p = kb.ptrs(kb.arg(0), offs);
  kb.at(13);
  Value* x = kb.load(p);
  kb.at(14);
  kb.store(kb.ptrs(kb.arg(1), offs), x);
  auto dev = interp();
  auto in = dev.alloc<float>(10);
  auto out = dev.alloc<float>(16);
  try {
    dev(kb.kernel(), {1}, in, out);
    FAIL("expected an out-of-bounds error");
  } catch (const tl::Error& e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(msg.rfind("test.cpp:13: load out of bounds at index [10] of a tile<16xptr<f32>>: address 0x", 0) == 0);
    CHECK(msg.find(" is 0 bytes past the end of the buffer the pointer was derived from (40 bytes at 0x") !=
          std::string::npos);
    CHECK(msg.find(") in program (0, 0, 0)") == msg.size() - std::string(") in program (0, 0, 0)").size());
  }
}

TEST_CASE("interp: an out-of-bounds store writes nothing, 2-D index in the message", "[interp]") {
  KernelBuilder kb("oob2", {P(DType::i32)});
  Value* r = kb.op(OpKind::ExpandDims, {kb.arange(4)}, T(DType::i32, {4, 1}), {{"axis", int64_t(1)}});
  Value* c = kb.op(OpKind::ExpandDims, {kb.arange(4)}, T(DType::i32, {1, 4}), {{"axis", int64_t(0)}});
  Value* rb = kb.op(OpKind::Broadcast, {r}, T(DType::i32, {4, 4}));
  Value* cb = kb.op(OpKind::Broadcast, {c}, T(DType::i32, {4, 4}));
  Value* offs = kb.op(OpKind::Add, {kb.op(OpKind::Mul, {rb, kb.ci(T(DType::i32, {4, 4}), 3)}, rb->type), cb}, rb->type);  // 3i + j
  kb.at(40);
  kb.store(kb.ptrs(kb.arg(0), offs), cb);
  auto dev = interp();
  auto buf = dev.upload(std::vector<int32_t>(12, 5));  // 3i + j reaches 12 at [3, 0]... and [2, 3]? 9: no; [3, 3] = 12
  REQUIRE_THROWS_WITH(dev(kb.kernel(), {1}, buf),
                      Catch::Matchers::StartsWith("test.cpp:40: store out of bounds at index [3, 3] of a tile<4x4xptr<i32>>: address 0x") &&
                          Catch::Matchers::Contains(" is 0 bytes past the end of the buffer the pointer was derived from (48 bytes at 0x"));
  CHECK(buf.download<int32_t>() == std::vector<int32_t>(12, 5));
}

TEST_CASE("interp: a masked-off lane may point anywhere; before-start and straddling accesses fail", "[interp]") {
  KernelBuilder kb("before", {P(DType::f32), S(DType::i32)});
  Value* offs = kb.op(OpKind::Add, {kb.arange(4), kb.splat(kb.arg(1), {4})}, T(DType::i32, {4}));
  Value* mask = kb.cmp("ge", offs, kb.ci(T(DType::i32, {4}), 0));
  Value* p = kb.ptrs(kb.arg(0), offs);
  kb.store(p, kb.load(p, mask), mask);
  auto dev = interp();
  auto buf = dev.upload(std::vector<float>{1, 2, 3, 4});
  dev(kb.kernel(), {1}, buf, -2);  // lanes -2, -1 masked off
  CHECK(buf.download<float>() == std::vector<float>{1, 2, 3, 4});  // no error for the masked-off lanes

  KernelBuilder kb2("before2", {P(DType::f32), S(DType::i32)});
  Value* p2 = kb2.ptrs(kb2.arg(0), kb2.arg(1));
  kb2.at(5);
  kb2.store(p2, kb2.cf(S(DType::f32), 1.0));
  REQUIRE_THROWS_WITH(dev(kb2.kernel(), {1}, buf, -1),
                      Catch::Matchers::StartsWith("test.cpp:5: store out of bounds of a ptr<f32>: address 0x") &&
                          Catch::Matchers::Contains(" is 4 bytes before the start of the buffer the pointer was derived from (16 bytes at 0x") &&
                          Catch::Matchers::EndsWith(") in program (0, 0, 0)"));

  // A 4-byte access starting 2 bytes before the end of a buffer.
  KernelBuilder kb3("straddle", {P(DType::u8)});
  Value* base = kb3.ptrs(kb3.arg(0), kb3.ci(S(DType::i32), 6));
  Value* as_int = kb3.op(OpKind::Cast, {base}, S(DType::i64));
  Value* as_f32 = kb3.op(OpKind::Cast, {as_int}, P(DType::f32));
  kb3.at(9);
  kb3.store(as_f32, kb3.cf(S(DType::f32), 1.0));
  auto bytes = dev.alloc<uint8_t>(8);
  REQUIRE_THROWS_WITH(dev(kb3.kernel(), {1}, bytes),
                      Catch::Matchers::StartsWith("test.cpp:9: store to a misaligned address of a ptr<f32>: address 0x") &&
                          Catch::Matchers::Contains("is not a multiple of 4 (the size of f32)"));
  KernelBuilder kb4("straddle2", {P(DType::f32)});
  Value* base4 = kb4.op(OpKind::Cast, {kb4.op(OpKind::Cast, {kb4.arg(0)}, S(DType::i64))}, P(DType::i64));
  Value* p4 = kb4.ptrs(base4, kb4.ci(S(DType::i32), 1));  // bytes 8..16 of a 12-byte buffer
  kb4.at(11);
  kb4.store(p4, kb4.ci(S(DType::i64), 1));
  auto three = dev.alloc<float>(3);
  REQUIRE_THROWS_WITH(dev(kb4.kernel(), {1}, three),
                      Catch::Matchers::StartsWith("test.cpp:11: store out of bounds of a ptr<i64>: the 8-byte access at address 0x") &&
                          Catch::Matchers::Contains("runs 4 bytes past the end of the buffer the pointer was derived from (12 bytes at 0x"));
}

TEST_CASE("interp: a store past the end of one buffer fails even where another buffer follows it", "[interp]") {
  // Issue 11: 1,024 stores past the end of `a` used to land silently in the
  // buffer allocated after it. Every store is checked against the buffer its
  // pointer came from (memory.h), wherever the other buffers lie.
  KernelBuilder kb("poke", {P(DType::f32), S(DType::i32)});
  Value* p = kb.ptrs(kb.arg(0), kb.arg(1));
  kb.at(21);
  kb.store(p, kb.cf(S(DType::f32), 7.0));
  auto dev = interp();
  auto a = dev.alloc<float>(1024);
  auto b = dev.upload(std::vector<float>(1024, 1.0f));
  dev(kb.kernel(), {1}, a, 1023);  // the last element of a
  int failed = 0;
  for (int k = 1024; k < 1024 + 4096; ++k) {
    try {
      dev(kb.kernel(), {1}, a, k);
    } catch (const tl::Error& e) {
      std::string msg = e.what();
      INFO(msg);
      ++failed;
      CHECK_THAT(msg, Catch::Matchers::StartsWith("test.cpp:21: store out of bounds of a ptr<f32>: address 0x") &&
                          Catch::Matchers::Contains(" is " + std::to_string(4 * (k - 1024)) +
                                                    " bytes past the end of the buffer the pointer was derived from "
                                                    "(4096 bytes at 0x"));
    }
  }
  CHECK(failed == 4096);
  CHECK(b.download<float>() == std::vector<float>(1024, 1.0f));

  // The tile form: one store of 1,024 lanes past the end writes no lane.
  KernelBuilder kt("overrun", {P(DType::f32)});
  Value* offs = kt.op(OpKind::Add, {kt.arange(1024), kt.ci(T(DType::i32, {1024}), 1024)}, T(DType::i32, {1024}));
  kt.at(34);
  kt.store(kt.ptrs(kt.arg(0), offs), kt.cf(T(DType::f32, {1024}), 7.0));
  REQUIRE_THROWS_WITH(dev(kt.kernel(), {1}, a),
                      Catch::Matchers::StartsWith("test.cpp:34: store out of bounds at index [0] of a tile<1024xptr<f32>>") &&
                          Catch::Matchers::Contains(" is 0 bytes past the end of the buffer the pointer was derived from"));
  CHECK(b.download<float>() == std::vector<float>(1024, 1.0f));
}

TEST_CASE("interp: a pointer moved onto another buffer's address does not reach it", "[interp]") {
  // The one way to point at another buffer is an offset of its exact
  // distance (over 512 GiB between windows): addptr moves such a pointer
  // into window 0, which no buffer owns, and keeps it there.
  tl::interp::Memory mem;
  uint64_t a = mem.allocate(64), b = mem.allocate(64);
  std::vector<float> ones(16, 1.0f);
  std::memcpy(mem.host(b, 64), ones.data(), 64);
  KernelBuilder kb("jump", {P(DType::f32), S(DType::i64), S(DType::i64)});
  Value* p = kb.ptrs(kb.ptrs(kb.arg(0), kb.arg(1)), kb.arg(2));
  kb.at(7);
  kb.store(p, kb.cf(S(DType::f32), 7.0));
  auto prog = tl::interp::compile(kb.fn());
  using tl::interp::ArgValue;
  int64_t to_b = int64_t(b - a) / 4;
  REQUIRE(to_b > 0);
  REQUIRE_THROWS_WITH(
      tl::interp::run(*prog, {1}, {ArgValue::integer(int64_t(a)), ArgValue::integer(to_b), ArgValue::integer(0)}, mem),
      Catch::Matchers::StartsWith("test.cpp:7: store out of bounds of a ptr<f32>: address 0x") &&
          Catch::Matchers::Contains(" lies in no buffer: pointer arithmetic moved it more than 549755813888 bytes "
                                    "(512 GiB) away from the buffer it was derived from in program (0, 0, 0)"));
  // Out and back again stays out: the pointer no longer knows its buffer.
  REQUIRE_THROWS_WITH(
      tl::interp::run(*prog, {1}, {ArgValue::integer(int64_t(a)), ArgValue::integer(to_b), ArgValue::integer(-to_b)}, mem),
      Catch::Matchers::Contains(" lies in no buffer: pointer arithmetic moved it"));
  std::vector<float> hb(16);
  std::memcpy(hb.data(), mem.host(b, 64), 64);
  CHECK(hb == ones);
  // Within the window, far offsets that come back are fine.
  tl::interp::run(*prog, {1}, {ArgValue::integer(int64_t(a)), ArgValue::integer(int64_t(1) << 36), ArgValue::integer(-(int64_t(1) << 36) + 3)}, mem);
  float a3;
  std::memcpy(&a3, mem.host(a + 12, 4), 4);
  CHECK(a3 == 7.0f);

  // A freed buffer's address is not reused while fresh windows remain.
  mem.release(a);
  REQUIRE_THROWS_WITH(
      tl::interp::run(*prog, {1}, {ArgValue::integer(int64_t(a)), ArgValue::integer(0), ArgValue::integer(0)}, mem),
      Catch::Matchers::Contains(" points into a buffer that has been freed in program (0, 0, 0)"));
  uint64_t c = mem.allocate(64);
  CHECK(c != a);
  CHECK(tl::interp::Memory::window(c) != tl::interp::Memory::window(a));
  REQUIRE_THROWS_WITH(mem.release(b + 4), Catch::Matchers::StartsWith("interp: free of 0x") &&
                                              Catch::Matchers::EndsWith(", which is not a live allocation"));
  REQUIRE_THROWS_WITH(mem.host(b + 60, 8), Catch::Matchers::StartsWith("interp: copy of 8 bytes at 0x") &&
                                               Catch::Matchers::EndsWith(", which is not inside a live buffer"));
  REQUIRE_THROWS_WITH(mem.allocate(size_t(1) << 40), "interp: cannot allocate 1099511627776 bytes: a buffer holds at most 549755813888 bytes");
  mem.release(b);
  mem.release(c);
  CHECK(mem.live_allocations() == 0);
}

// Windows freed before every window had been handed out are reused too:
// a long-running program that made 2^23 buffers, one at a time, could once
// hold only one more.
TEST_CASE("interp: freed windows are reused once all have been handed out", "[interp]") {
  tl::interp::Memory mem;
  unsigned char host[16];
  constexpr uint64_t kWindows = uint64_t(1) << (63 - tl::interp::Memory::kWindowBits);
  for (uint64_t i = 0; i < kWindows; ++i) mem.release(mem.adopt(host, sizeof host));
  CHECK(mem.live_allocations() == 0);
  std::vector<uint64_t> live;
  for (int i = 0; i < 4; ++i) live.push_back(mem.allocate(64));
  CHECK(mem.live_allocations() == 4);
  for (uint64_t a : live) mem.release(a);
}

TEST_CASE("interp: atomics read-modify-write in program order and return old values", "[interp]") {
  // Every program adds its id + 1 to counter[0]; max into counter[1]; returns old values.
  KernelBuilder kb("atomics", {P(DType::i32), P(DType::i32), P(DType::f32)});
  Value* pid = kb.op(OpKind::ProgramId, {}, S(DType::i32), {{"axis", int64_t(0)}});
  Value* one = kb.ci(S(DType::i32), 1);
  Value* v = kb.op(OpKind::Add, {pid, one}, S(DType::i32));
  Value* old = kb.op(OpKind::AtomicRmw, {kb.arg(0), v}, S(DType::i32), {{"kind", std::string("add")}});
  Value* neg = kb.op(OpKind::Neg, {v}, S(DType::i32));
  kb.op(OpKind::AtomicRmw, {kb.ptrs(kb.arg(0), one), neg}, S(DType::i32), {{"kind", std::string("min")}});
  kb.store(kb.ptrs(kb.arg(1), pid), old);
  // Tile atomic with duplicate addresses and a mask: lanes 0..3 -> f[0], f[1], f[0], f[1]; lane 3 masked.
  Value* lanes = kb.arange(4);
  Value* two = kb.ci(T(DType::i32, {4}), 2);
  Value* idx = kb.op(OpKind::Rem, {lanes, two}, T(DType::i32, {4}));
  Value* mask = kb.cmp("lt", lanes, kb.ci(T(DType::i32, {4}), 3));
  Value* val = kb.cf(T(DType::f32, {4}), 0.5);
  Value* olds = kb.op(OpKind::AtomicRmw, {kb.ptrs(kb.arg(2), idx), val, mask}, T(DType::f32, {4}), {{"kind", std::string("add")}});
  Value* first = kb.combine_op(OpKind::Reduce, {olds}, 0, {}, [&](auto l, auto r) {
    return std::vector<Value*>{kb.op(OpKind::Add, {l[0], r[0]}, S(DType::f32))};
  })[0];
  kb.store(kb.ptrs(kb.arg(2), kb.ci(S(DType::i32), 2 )), first);
  auto dev = interp();
  auto counter = dev.upload(std::vector<int32_t>{0, 0});
  auto olds_out = dev.alloc<int32_t>(5);
  auto f = dev.upload(std::vector<float>{0, 0, 0});
  dev(kb.kernel(), {5}, counter, olds_out, f);
  CHECK(counter.download<int32_t>() == std::vector<int32_t>{15, -5});
  CHECK(olds_out.download<int32_t>() == std::vector<int32_t>{0, 1, 3, 6, 10});
  // Per program: f[0] += 1 (two lanes), f[1] += 0.5; last program's olds: f0_old, f1_old, f0_old+0.5, 0.
  auto fo = f.download<float>();
  CHECK(fo[0] == 5.0f);
  CHECK(fo[1] == 2.5f);
  CHECK(fo[2] == 4.0f + 2.0f + 4.5f);

  KernelBuilder kc("cas", {P(DType::i32)});
  Value* offs = kc.arange(4);
  Value* p = kc.ptrs(kc.arg(0), offs);
  Value* o = kc.op(OpKind::AtomicCas, {p, kc.ci(T(DType::i32, {4}), 1), kc.ci(T(DType::i32, {4}), 9)}, T(DType::i32, {4}));
  kc.store(kc.ptrs(kc.arg(0), kc.op(OpKind::Add, {offs, kc.ci(T(DType::i32, {4}), 4)}, offs->type)), o);
  auto cb = dev.upload(std::vector<int32_t>{1, 2, 1, 0, 0, 0, 0, 0});
  dev(kc.kernel(), {1}, cb);
  CHECK(cb.download<int32_t>() == std::vector<int32_t>{9, 2, 9, 0, 1, 2, 1, 0});

  KernelBuilder kx("bits", {P(DType::u32)});
  Value* q = kx.arg(0);
  kx.op(OpKind::AtomicRmw, {q, kx.ci(S(DType::u32), 0xf0)}, S(DType::u32), {{"kind", std::string("or")}});
  kx.op(OpKind::AtomicRmw, {q, kx.ci(S(DType::u32), 0x3c)}, S(DType::u32), {{"kind", std::string("xor")}});
  kx.op(OpKind::AtomicRmw, {q, kx.ci(S(DType::u32), 0xfffffff0u)}, S(DType::u32), {{"kind", std::string("and")}});
  Value* prev = kx.op(OpKind::AtomicRmw, {q, kx.ci(S(DType::u32), 0xffffffffu)}, S(DType::u32), {{"kind", std::string("max")}});
  kx.store(kx.ptrs(q, kx.ci(S(DType::i32), 1)), prev);
  auto xb = dev.upload(std::vector<uint32_t>{0x0f, 0});
  dev(kx.kernel(), {1}, xb);
  CHECK(xb.download<uint32_t>() == std::vector<uint32_t>{0xffffffffu, (0xffu ^ 0x3cu) & 0xfffffff0u});
}
