// tl::multiple_of and tl::max_contiguous (ops.def's hint): the values pass
// through unchanged on the interpreter, which checks the promise and names
// the line of a broken one; what they promise reaches the axis analysis
// (wider vector accesses in the PTX than without them), as tl::assume of
// `x % c == 0` does (the interpreter checks that too); nested hints
// (Triton's max_contiguous(multiple_of(offs, B), B)) become one; misuse is a
// trace-time error naming the line.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "codegen_checks.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

constexpr int kCols = 128;

// y[r, :] = x[r * stride + :] + 1 for row r = program_id; `stride` promised
// a multiple of 4 when HINT.
constexpr int kCopyHintLine = __LINE__ + 3;
template <bool HINT>
void copy_rows(ptr<float> x, ptr<float> y, scalar<int32_t> stride) {
  auto s = HINT ? multiple_of(stride, 4) : stride;
  auto r = program_id(0);
  auto cols = arange(0, kCols);                                   // [128] i32
  store(y + r * kCols + cols, load(x + r * s + cols) + 1.0f);
}

// out[i*16 + j] = x[starts[i] + j]: rows gathered at offsets the host
// computed (multiples of 16, which the compiler cannot see), with Triton's
// idiom promising runs of 16 starting at multiples of 16.
template <bool HINT>
void gather_rows(ptr<float> x, ptr<int32_t> starts, ptr<float> out) {
  auto i = arange(0, 8);                                          // [8] i32
  auto first = load(starts + i);                                  // [8] i32
  auto offs = reshape(col(first) + row(arange(0, 16)), {128});    // [128] i32
  if constexpr (HINT) offs = max_contiguous(multiple_of(offs, 16), 16);
  store(out + arange(0, 128), load(x + offs));
}

// copy_rows with Triton's tl.assume(stride % 4 == 0) (REM) or
// tl.assume((stride & 3) == 0) instead of multiple_of, and a range fact
// LLVM may use.
constexpr int kAssumeLine = __LINE__ + 3;
template <bool REM>
void copy_rows_assumed(ptr<float> x, ptr<float> y, scalar<int32_t> stride) {
  if constexpr (REM) assume(stride % 4 == 0);
  else assume((stride & 3) == 0);
  assume(stride >= kCols);
  auto r = program_id(0);
  auto cols = arange(0, kCols);                                   // [128] i32
  store(y + r * kCols + cols, load(x + r * stride + cols) + 1.0f);
}

// A promise that does not hold: offsets 1 + 4k are not multiples of 4.
constexpr int kBrokenLine = __LINE__ + 3;
void broken(ptr<float> x, ptr<float> y) {
  auto offs = arange(0, 32) * 4 + 1;                              // [32] i32
  store(y + arange(0, 32), load(x + multiple_of(offs, 4)));
}

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = float(k);
  return v;
}

}  // namespace

TEST_CASE("hints pass values through and the interpreter checks them", "[hints]") {
  Device dev = Device::get("interp");
  // A stride that is a multiple of 4: the promise holds.
  auto k = compile(copy_rows<true>, {.name = "copy_rows"});
  auto x = dev.upload(iota(size_t(3) * 132));
  auto y = dev.alloc<float>(size_t(3) * kCols);
  dev(k, Grid{3}, x, y, 132);
  auto out = y.download<float>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < kCols; ++c) REQUIRE(out[size_t(r * kCols + c)] == float(r * 132 + c + 1));
  // A stride of 130 breaks it: an error naming the hint's line.
  CHECK_THROWS_WITH(dev(k, Grid{3}, x, y, 130),
                    Catch::Contains("test_hints.cpp:" + std::to_string(kCopyHintLine)) && Catch::Contains("tl::multiple_of does not hold") &&
                        Catch::Contains("not a multiple of 4"));
  auto kb = compile(broken, {.name = "broken"});
  auto xb = dev.upload(iota(200)), yb = dev.alloc<float>(32);
  CHECK_THROWS_WITH(dev(kb, Grid{1}, xb, yb), Catch::Contains("test_hints.cpp:" + std::to_string(kBrokenLine)) && Catch::Contains("(1)"));

  // Gathered rows: the idiom holds for any row indices.
  auto kg = compile(gather_rows<true>, {.name = "gather_rows"});
  auto idx = dev.upload(std::vector<int32_t>{48, 0, 112, 112, 16, 80, 32, 96});
  auto xg = dev.upload(iota(16 * 8 + 16)), og = dev.alloc<float>(128);
  dev(kg, Grid{1}, xg, idx, og);
  auto got = og.download<float>();
  std::vector<int> rows = {3, 0, 7, 7, 1, 5, 2, 6};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) REQUIRE(got[size_t(i * 16 + j)] == float(rows[size_t(i)] * 16 + j));
  // A start that is not a multiple of 16 breaks the promise.
  auto odd = dev.upload(std::vector<int32_t>{48, 0, 112, 112, 17, 80, 32, 96});
  CHECK_THROWS_WITH(dev(kg, Grid{1}, xg, odd, og), Catch::Contains("not a multiple of 16"));
}

TEST_CASE("assume: the interpreter checks the promise, the axis analysis reads divisibility from it", "[hints]") {
  Device dev = Device::get("interp");
  auto x = dev.upload(iota(size_t(3) * 132));
  auto y = dev.alloc<float>(size_t(3) * kCols);
  for (bool rem : {true, false}) {
    Kernel k = rem ? compile(copy_rows_assumed<true>, {.name = "copy_rows"})
                   : compile(copy_rows_assumed<false>, {.name = "copy_rows"});
    dev(k, Grid{3}, x, y, 132);
    auto out = y.download<float>();
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < kCols; ++c) REQUIRE(out[size_t(r * kCols + c)] == float(r * 132 + c + 1));
    CHECK_THROWS_WITH(dev(k, Grid{3}, x, y, 130),
                      Catch::Contains("test_hints.cpp:" + std::to_string(kAssumeLine + (rem ? 0 : 1))) &&
                          Catch::Contains("assume: expected the assumed condition to hold, found it false"));
  }
  // Either form makes the rows' accesses 16 bytes wide where the launch
  // does not prove the stride a multiple of 4 (as multiple_of does).
  const std::string v4 = R"(ld\.global[.a-z0-9]*\.v4\.[bf]32)";
  auto rows_of = [&](auto kernel) {
    Kernel k = compile(kernel, {.name = "copy_rows"});
    codegen::Specialization s = codegen_checks::aligned(k);
    s.args[2] = codegen::int_arg_facts(130);  // what the launch proves: 2
    return codegen::compile(*k.impl(), s, "sm_90a").assembly;
  };
  CHECK(codegen_checks::count(rows_of(copy_rows<false>), v4) == 0);
  CHECK(codegen_checks::count(rows_of(copy_rows_assumed<true>), v4) > 0);
  CHECK(codegen_checks::count(rows_of(copy_rows_assumed<false>), v4) > 0);
  for (Kernel k : {compile(copy_rows_assumed<true>, {.name = "copy_rows"})}) {
    CHECK(codegen_checks::count(k.ir(), "assume %") == 2);
    codegen_checks::check_stores_on_sm90a_and_gfx942(k);
  }
}

TEST_CASE("nested hints become one, and what they promise reaches the vector accesses", "[hints][codegen]") {
  auto kg = compile(gather_rows<true>, {.name = "gather_rows"});
  std::string ir = kg.ir();
  CHECK(codegen_checks::count(ir, R"(= hint )") == 1);
  CHECK(codegen_checks::count(ir, R"(hint %\d+ \{contiguity = \[16\], divisibility = \[16\]\})") == 1);

  // A stride the launch does not prove a multiple of 4: scalar accesses
  // without the hint, 16-byte ones with it.
  const std::string v4 = R"(ld\.global[.a-z0-9]*\.v4\.[bf]32)";
  auto rows_of = [&](auto kernel) {
    Kernel k = compile(kernel, {.name = "copy_rows"});
    codegen::Specialization s = codegen_checks::aligned(k);
    s.args[2] = codegen::int_arg_facts(130);
    return codegen::compile(*k.impl(), s, "sm_90a").assembly;
  };
  CHECK(codegen_checks::count(rows_of(copy_rows<false>), v4) == 0);
  CHECK(codegen_checks::count(rows_of(copy_rows<true>), v4) > 0);
  // Gathered rows: the starts' own load is 16-byte either way; the rows'
  // loads only with the promise.
  auto gather_of = [&](auto kernel) {
    Kernel k = compile(kernel, {.name = "gather_rows"});
    return codegen::compile(*k.impl(), codegen_checks::aligned(k), "sm_80").assembly;
  };
  CHECK(codegen_checks::count(gather_of(gather_rows<true>), v4) > codegen_checks::count(gather_of(gather_rows<false>), v4));
}

TEST_CASE("hints refuse what they cannot promise, naming the line", "[hints]") {
  auto trace_error = [](auto kernel) {
    try {
      compile(kernel, {.name = "bad"});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("traced");
  };
  CHECK_THAT(trace_error(+[](ptr<float> x) { store(x, multiple_of(load(x), 4)); }),
             Catch::Contains("test_hints.cpp") && Catch::Contains("expected an integer or pointer"));
  CHECK_THAT(trace_error(+[](ptr<float> x) { store(x + multiple_of(arange(0, 8), 3), 1.0f); }),
             Catch::Contains("powers of two, found 3"));
  CHECK_THAT(trace_error(+[](ptr<float> x) { store(x + max_contiguous(arange(0, 8), 16), 1.0f); }),
             Catch::Contains("no longer than the dimension (8), found 16"));
  CHECK_THAT(trace_error(+[](ptr<float> x, scalar<int32_t> n) { store(x + max_contiguous(n, 4), 1.0f); }),
             Catch::Contains("expected a tile (a scalar has no runs)"));
  CHECK_THAT(trace_error(+[](ptr<float> x) { store(x + multiple_of(reshape(arange(0, 8), {2, 4}), {4, 4, 4}), 1.0f); }),
             Catch::Contains("expected 2 divisors (one per dimension"));
}
