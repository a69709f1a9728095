// Traced kernels run end to end on the interpreter: the front end's IR
// (after tl::compile's passes) must compute what the C++ says. Loops are
// checked at trip counts 0, 1, 2 and many.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

template <int BLOCK>
void vector_add(ptr<float> x, ptr<float> y, ptr<float> out, scalar<int32_t> n) {
  auto pid = program_id(0);
  auto offs = pid * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                        // [BLOCK] i1
  auto a = load(x + offs, mask);
  auto b = load(y + offs, mask, 0.0f);
  store(out + offs, a + b, mask);
}

// out[j] = sum over i < n of x[i * 16 + j]  (acc carried, pointer carried,
// an unchanged copy made before the loop and stored after it).
void column_sums(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  auto initial = acc;
  auto p = x + arange(0, 16);  // [16] ptr<f32>
  for (auto i : range(0, n)) {
    acc = acc + load(p);
    p += 16;
  }
  store(out + arange(0, 16), acc);
  store(out + 16 + arange(0, 16), initial);
}

// Nested loops and an if_ in the body: out = sum over i < n, j < 3 of
// (i even ? 1 : 10) * (j + 1).
void nested_if(ptr<int32_t> out, scalar<int32_t> n) {
  auto total = zeros<int32_t>({8});
  for (auto i : range(0, n)) {
    auto weight = full<int32_t>({8}, 10);
    if_(i % 2 == 0, [&] { weight = full<int32_t>({8}, 1); });
    for (auto j : range(0, 3)) {
      total += weight * (j + 1);
    }
  }
  store(out + arange(0, 8), total);
}

// Row-wise argmax (ties: lowest index), max via a generic reduce, and cumsum.
void row_stats(ptr<float> x, ptr<int32_t> idx, ptr<float> mx, ptr<float> cs) {
  auto rows = col(arange(0, 4));                      // [4, 1]
  auto offs = rows * 8 + row(arange(0, 8));           // [4, 8]
  auto v = load(x + offs);                            // [4, 8] f32
  store(idx + arange(0, 4), argmax(v, 1));
  store(mx + arange(0, 4), reduce(v, 1, [](tile<float> a, tile<float> b) { return maximum(a, b); }));
  store(cs + offs, cumsum(v, 1));
}

// [16, 16] bf16 x [16, 16] bf16 -> f32.
void small_dot(ptr<bf16> a, ptr<bf16> b, ptr<float> c) {
  auto offs = col(arange(0, 16)) * 16 + row(arange(0, 16));  // [16, 16]
  store(c + offs, dot(load(a + offs), load(b + offs)));
}

// `>>` of a signed tile by an unsigned one (docs/language.md: an
// arithmetic shift of the sign-extended value, typed as the promotion).
void mixed_shift(ptr<int32_t> x, ptr<int8_t> y, ptr<uint32_t> k, ptr<uint32_t> out) {
  auto offs = arange(0, 4);  // [4] i32
  auto a = load(x + offs);   // [4] i32
  auto b = load(y + offs);   // [4] i8
  auto n = load(k + offs);   // [4] u32
  store(out + offs, a >> n);
  store(out + 4 + offs, b >> n);
}

// full and full_like of tiledsl's narrow floats as values, beside numbers.
void narrow_fills(ptr<f16> out, ptr<bf16> out2) {
  auto h = full<f16>({8}, f16(1.5f));                // [8] f16
  auto b = full_like(cast<bf16>(h), bf16(-2.0f));    // [8] bf16
  store(out + arange(0, 8), h + full<f16>({8}, bf16(0.25f)));
  store(out2 + arange(0, 8), b);
}

// A load's `other` as one of tiledsl's narrow floats (it took numbers and
// tiles only: a C++ compile error).
void narrow_other(ptr<f16> x, ptr<f16> out) {
  auto offs = arange(0, 8);                          // [8] i32
  store(out + offs, load(x + offs, offs < 5, f16(-3.0f)));
}

}  // namespace

TEST_CASE("run: a load's other of an f16 value", "[frontend][run]") {
  Device dev = Device::get("interp");
  Kernel k = compile(narrow_other, {.name = "narrow_other"});
  Buffer x = dev.upload(std::vector<f16>(8, f16(0.5f))), o = dev.upload(std::vector<f16>(8, f16(0.0f)));
  dev(k, Grid{1}, x, o);
  dev.synchronize();
  std::vector<f16> got = o.download<f16>();
  for (int i = 0; i < 8; ++i) CHECK(float(got[size_t(i)]) == (i < 5 ? 0.5f : -3.0f));
}

TEST_CASE("run: full of f16 and bf16 values", "[frontend][run]") {
  Device dev = Device::get("interp");
  Kernel k = compile(narrow_fills, {.name = "narrow_fills"});
  Buffer o = dev.upload(std::vector<f16>(8, f16(0.0f))), o2 = dev.upload(std::vector<bf16>(8, bf16(0.0f)));
  dev(k, Grid{1}, o, o2);
  dev.synchronize();
  for (f16 x : o.download<f16>()) CHECK(float(x) == 1.75f);
  for (bf16 x : o2.download<bf16>()) CHECK(float(x) == -2.0f);
}

TEST_CASE("run: vector_add with a partial last block", "[frontend][run]") {
  Device dev = Device::get("interp");
  Kernel k = compile(vector_add<64>, {.name = "vector_add"});
  const int n = 150;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) hx[i] = float(i), hy[i] = 0.5f * float(i);
  Buffer bx = dev.upload(hx), by = dev.upload(hy), bo = dev.upload(std::vector<float>(n + 10, -1.0f));
  dev(k, Grid{uint32_t(cdiv(n, 64))}, bx, by, bo, n);
  dev.synchronize();
  auto out = bo.download<float>();
  for (int i = 0; i < n; ++i) REQUIRE(out[i] == 1.5f * float(i));
  for (int i = n; i < n + 10; ++i) REQUIRE(out[i] == -1.0f);  // masked off
}

TEST_CASE("run: loop-carried accumulator and pointer at trip counts 0, 1, 2, many", "[frontend][run][loop]") {
  Device dev = Device::get("interp");
  Kernel k = compile(column_sums);
  for (int n : {0, 1, 2, 37}) {
    CAPTURE(n);
    std::vector<float> hx(size_t(std::max(n, 1)) * 16);
    for (size_t i = 0; i < hx.size(); ++i) hx[i] = float(i % 7) + 0.25f;
    Buffer bx = dev.upload(hx), bo = dev.alloc<float>(32);
    dev(k, Grid{1}, bx, bo, n);
    dev.synchronize();
    auto out = bo.download<float>();
    for (int j = 0; j < 16; ++j) {
      float want = 0;
      for (int i = 0; i < n; ++i) want += hx[size_t(i) * 16 + j];
      REQUIRE(out[j] == want);
      REQUIRE(out[16 + j] == 0.0f);
    }
  }
}

TEST_CASE("run: nested loops with an if_ in the body", "[frontend][run][loop][if]") {
  Device dev = Device::get("interp");
  Kernel k = compile(nested_if);
  for (int n : {0, 1, 2, 9}) {
    CAPTURE(n);
    Buffer bo = dev.alloc<int32_t>(8);
    dev(k, Grid{1}, bo, n);
    dev.synchronize();
    int want = 0;
    for (int i = 0; i < n; ++i) want += (i % 2 == 0 ? 1 : 10) * (1 + 2 + 3);
    for (int v : bo.download<int32_t>()) REQUIRE(v == want);
  }
}

TEST_CASE("run: argmax, generic reduce and cumsum", "[frontend][run][reduce]") {
  Device dev = Device::get("interp");
  Kernel k = compile(row_stats);
  std::vector<float> hx = {
      1, 5, 3, 5, 0, 0, 0, 0,          // tie between 1 and 3: index 1
      -1, -2, -3, -4, -5, -6, -7, -8,  // max first
      0, 0, 0, 0, 0, 0, 0, 9,          // max last
      2, 2, 2, 2, 2, 2, 2, 2,          // all equal: index 0
  };
  Buffer bx = dev.upload(hx), bi = dev.alloc<int32_t>(4), bm = dev.alloc<float>(4), bc = dev.alloc<float>(32);
  dev(k, Grid{1}, bx, bi, bm, bc);
  dev.synchronize();
  CHECK(bi.download<int32_t>() == std::vector<int32_t>{1, 0, 7, 0});
  CHECK(bm.download<float>() == std::vector<float>{5, -1, 9, 2});
  auto cs = bc.download<float>();
  for (int r = 0; r < 4; ++r) {
    float run = 0;
    for (int c = 0; c < 8; ++c) {
      run += hx[r * 8 + c];
      REQUIRE(cs[r * 8 + c] == run);
    }
  }
}

TEST_CASE("run: bf16 dot accumulates in f32", "[frontend][run][dot]") {
  Device dev = Device::get("interp");
  Kernel k = compile(small_dot);
  std::vector<bf16> ha(256), hb(256);
  for (int i = 0; i < 256; ++i) ha[i] = bf16(float(i % 5) - 2.0f), hb[i] = bf16(float(i % 3) * 0.5f);
  Buffer ba = dev.upload(ha), bb = dev.upload(hb), bc = dev.alloc<float>(256);
  dev(k, Grid{1}, ba, bb, bc);
  dev.synchronize();
  auto c = bc.download<float>();
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      double want = 0;
      for (int kk = 0; kk < 16; ++kk) want += double(float(ha[m * 16 + kk])) * double(float(hb[kk * 16 + n]));
      REQUIRE(c[m * 16 + n] == float(want));
    }
}

TEST_CASE("run: >> of a signed by an unsigned tile shifts arithmetically", "[frontend][run][types]") {
  Device dev = Device::get("interp");
  Kernel k = compile(mixed_shift, {.name = "mixed_shift"});
  auto x = dev.upload(std::vector<int32_t>{-8, -1, 7, INT32_MIN});
  auto y = dev.upload(std::vector<int8_t>{-8, -128, 7, -1});
  auto n = dev.upload(std::vector<uint32_t>{1, 31, 1, 40});  // 40: past the width, the sign fills
  auto out = dev.alloc<uint32_t>(8);
  dev(k, Grid{1}, x, y, n, out);
  dev.synchronize();
  CHECK(out.download<uint32_t>() ==
        std::vector<uint32_t>{0xfffffffcu, 0xffffffffu, 3u, 0xffffffffu, 0xfffffffcu, 0xffffffffu, 3u, 0xffffffffu});
}
