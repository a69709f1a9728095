// Tensor descriptors (include/tiledsl/descriptor.h) on the interpreter: a
// block read at coordinates inside, across and outside a strided tensor
// reads the tensor's elements and 0 elsewhere; a block written there writes
// only the elements inside; ranks 1 to 5; the kernels compile for every
// back end, and a block contiguous along its last dimension loads in
// 16-byte vectors where the arguments promise alignment; coordinates and shapes as traced
// scalars or C++ integers; a wrong rank is an error naming the line.
#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <cstdint>
#include <vector>

#include "codegen_checks.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

// out (an [8, 16] block) = the block of x ([M, N], row stride ldx) at
// (m0, n0), and that block written into y ([M, N], row stride ldy) at
// (m0, n0) + 1.
void copy_block(ptr<float> x, ptr<float> y, ptr<float> out, scalar<int32_t> M, scalar<int32_t> N,
                scalar<int32_t> ldx, scalar<int32_t> ldy, scalar<int32_t> m0, scalar<int32_t> n0) {
  auto dx = make_tensor_descriptor(x, {M, N}, {ldx, 1}, {8, 16});
  auto dy = make_tensor_descriptor(y, {M, N}, {ldy, 1}, {8, 16});
  auto t = dx.load({m0, n0});                                    // [8, 16] f32
  store(out + col(arange(0, 8)) * 16 + row(arange(0, 16)), t);
  dy.store({m0, n0}, t + 1.0f);
}

// A [2, 4, 8] block of a [3, 5, 9] tensor (C++ integers for its shape and
// strides) at (c0, c1, c2), flattened into out.
void block_3d(ptr<int32_t> x, ptr<int32_t> out, scalar<int32_t> c0, scalar<int32_t> c1, scalar<int32_t> c2) {
  auto d = make_tensor_descriptor(x, {3, 5, 9}, {45, 9, 1}, {2, 4, 8});
  auto t = d.load({c0, c1, c2});                                 // [2, 4, 8] i32
  store(out + arange(0, 64), reshape(t, {64}));
}

// A rank-1 descriptor, read at a C++ integer coordinate.
void block_1d(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  auto d = make_tensor_descriptor(x, {n}, {1}, {32});
  store(out + arange(0, 32), d.load({-5}));
}

void odd_block(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  auto d = make_tensor_descriptor(x, {n, n}, {n, 1}, {4, 34});
  store(out + arange(0, 4), d.load({0, 0}));
}

void wrong_rank(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  auto d = make_tensor_descriptor(x, {n, n}, {n, 1}, {4, 4});
  store(out + arange(0, 4), d.load({0}));
}

// Triton's habit for 4-D tensors ([B, H, N, D]): a block with leading 1s,
// here [1, 2, 4, 8] of a [2, 3, 5, 9] tensor at (c0, c1, c2, c3), flattened
// into out, and written back plus 1000 into y (same shape, contiguous).
void block_4d(ptr<int32_t> x, ptr<int32_t> y, ptr<int32_t> out, scalar<int32_t> c0, scalar<int32_t> c1,
              scalar<int32_t> c2, scalar<int32_t> c3) {
  auto dx = make_tensor_descriptor(x, {2, 3, 5, 9}, {135, 45, 9, 1}, {1, 2, 4, 8});
  auto dy = make_tensor_descriptor(y, {2, 3, 5, 9}, {135, 45, 9, 1}, {1, 2, 4, 8});
  auto t = dx.load({c0, c1, c2, c3});                            // [1, 2, 4, 8] i32
  store(out + arange(0, 64), reshape(t, {64}));
  dy.store({c0, c1, c2, c3}, t + 1000);
}

// Rank 5: a [2, 1, 2, 2, 4] block of a [3, 2, 3, 3, 5] tensor (traced
// sizes for the outer two) at (c0, 0, c2, c3, c4).
void block_5d(ptr<float> x, ptr<float> out, scalar<int32_t> n0, scalar<int32_t> n1, scalar<int32_t> c0,
              scalar<int32_t> c2, scalar<int32_t> c3, scalar<int32_t> c4) {
  auto d = make_tensor_descriptor(x, {n0, n1, 3, 3, 5}, {n1 * 45, 45, 15, 5, 1}, {2, 1, 2, 2, 4});
  auto t = d.load({c0, 0, c2, c3, c4});                          // [2, 1, 2, 2, 4] f32
  store(out + arange(0, 32), reshape(t, {32}));
}

// Rank 6: more than a tile's dims.
void rank6(ptr<float> x, ptr<float> out, scalar<int32_t> n) {
  auto d = make_tensor_descriptor(x, {n, n, n, n, n, n}, {1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 4, 4});
  store(out + arange(0, 16), reshape(d.load({0, 0, 0, 0, 0, 0}), {16}));
}

// A C++ size past i32, given on one line and read on the next: the error
// names the line that gave it.
constexpr int wide_size_line = __LINE__ + 2;
void wide_size(ptr<float> x, ptr<float> out) {
  auto d = make_tensor_descriptor(x, {int64_t(1) << 33}, {1}, {16});
  store(out + arange(0, 16), d.load({0}));
}

}  // namespace

TEST_CASE("descriptors: a block inside, across and outside a strided tensor", "[frontend][run][descriptor]") {
  Device dev = Device::get("interp");
  Kernel k = compile(copy_block);
  const int M = 10, N = 20, ldx = 23, ldy = 21;
  std::vector<float> hx(size_t(M * ldx));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < ldx; ++j) hx[size_t(i * ldx + j)] = j < N ? float(100 * i + j) : -7.0f;  // -7: padding
  for (auto [m0, n0] : std::vector<std::pair<int, int>>{{0, 0}, {1, 2}, {6, 10}, {-3, -5}, {9, 19}, {12, 0}, {0, 25}}) {
    Buffer bx = dev.upload(hx), by = dev.upload(std::vector<float>(size_t(M * ldy), -1.0f));
    Buffer bo = dev.upload(std::vector<float>(8 * 16, -2.0f));
    dev(k, Grid{1}, bx, by, bo, M, N, ldx, ldy, m0, n0);
    dev.synchronize();
    auto out = bo.download<float>(), y = by.download<float>();
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 16; ++j) {
        int r = m0 + i, c = n0 + j;
        bool in = r >= 0 && r < M && c >= 0 && c < N;
        INFO("block at (" << m0 << ", " << n0 << "), element (" << i << ", " << j << ")");
        REQUIRE(out[size_t(i * 16 + j)] == (in ? float(100 * r + c) : 0.0f));
      }
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < ldy; ++c) {
        bool written = r >= m0 && r < m0 + 8 && c >= n0 && c < n0 + 16 && c < N;
        INFO("y at (" << r << ", " << c << ")");
        REQUIRE(y[size_t(r * ldy + c)] == (written ? float(100 * r + c) + 1.0f : -1.0f));
      }
  }
}

TEST_CASE("descriptors: ranks 3 and 1, integer shapes and coordinates", "[frontend][run][descriptor]") {
  Device dev = Device::get("interp");
  Kernel k3 = compile(block_3d);
  std::vector<int32_t> hx(3 * 5 * 9);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = int32_t(i) + 1;
  for (auto c : std::vector<std::vector<int>>{{0, 0, 0}, {2, 3, 4}, {-1, -2, -3}}) {
    Buffer bx = dev.upload(hx), bo = dev.upload(std::vector<int32_t>(64, -1));
    dev(k3, Grid{1}, bx, bo, c[0], c[1], c[2]);
    dev.synchronize();
    auto out = bo.download<int32_t>();
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 4; ++b)
        for (int e = 0; e < 8; ++e) {
          int i = c[0] + a, j = c[1] + b, l = c[2] + e;
          bool in = i >= 0 && i < 3 && j >= 0 && j < 5 && l >= 0 && l < 9;
          REQUIRE(out[size_t(a * 32 + b * 8 + e)] == (in ? i * 45 + j * 9 + l + 1 : 0));
        }
  }
  Kernel k1 = compile(block_1d);
  std::vector<float> h1(20);
  for (int i = 0; i < 20; ++i) h1[size_t(i)] = float(i) + 0.5f;
  Buffer b1 = dev.upload(h1), o1 = dev.upload(std::vector<float>(32, -1.0f));
  dev(k1, Grid{1}, b1, o1, 20);
  dev.synchronize();
  auto out1 = o1.download<float>();
  for (int e = 0; e < 32; ++e) {
    int i = e - 5;
    REQUIRE(out1[size_t(e)] == (i >= 0 && i < 20 ? float(i) + 0.5f : 0.0f));
  }
}

TEST_CASE("descriptors: ranks 4 and 5, loads and stores inside, across and outside", "[frontend][run][descriptor]") {
  Device dev = Device::get("interp");
  Kernel k4 = compile(block_4d);
  std::vector<int32_t> hx(2 * 3 * 5 * 9);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = int32_t(i) + 1;
  for (auto c : std::vector<std::vector<int>>{{0, 0, 0, 0}, {1, 1, 2, 3}, {-1, 2, -2, 5}, {1, -1, 4, -4}, {2, 0, 0, 0}}) {
    INFO("block at (" << c[0] << ", " << c[1] << ", " << c[2] << ", " << c[3] << ")");
    Buffer bx = dev.upload(hx), by = dev.upload(std::vector<int32_t>(hx.size(), -1));
    Buffer bo = dev.upload(std::vector<int32_t>(64, -1));
    dev(k4, Grid{1}, bx, by, bo, c[0], c[1], c[2], c[3]);
    dev.synchronize();
    auto out = bo.download<int32_t>(), y = by.download<int32_t>();
    std::vector<int32_t> want_y(hx.size(), -1);
    for (int b = 0; b < 2; ++b)
      for (int e = 0; e < 4; ++e)
        for (int f = 0; f < 8; ++f) {
          int i = c[0], j = c[1] + b, l = c[2] + e, m = c[3] + f;
          bool in = i >= 0 && i < 2 && j >= 0 && j < 3 && l >= 0 && l < 5 && m >= 0 && m < 9;
          int at = i * 135 + j * 45 + l * 9 + m;
          REQUIRE(out[size_t(b * 32 + e * 8 + f)] == (in ? at + 1 : 0));
          if (in) want_y[size_t(at)] = at + 1 + 1000;
        }
    REQUIRE(y == want_y);
  }
  Kernel k5 = compile(block_5d);
  std::vector<float> h5(3 * 2 * 3 * 3 * 5);
  for (size_t i = 0; i < h5.size(); ++i) h5[i] = float(i) + 0.25f;
  for (auto c : std::vector<std::vector<int>>{{0, 0, 0, 0}, {2, 1, 2, 3}, {-1, -1, 1, -2}}) {
    INFO("block at (" << c[0] << ", 0, " << c[1] << ", " << c[2] << ", " << c[3] << ")");
    Buffer bx = dev.upload(h5), bo = dev.upload(std::vector<float>(32, -1.0f));
    dev(k5, Grid{1}, bx, bo, 3, 2, c[0], c[1], c[2], c[3]);
    dev.synchronize();
    auto out = bo.download<float>();
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        for (int e = 0; e < 2; ++e)
          for (int f = 0; f < 4; ++f) {
            int i = c[0] + a, l = c[1] + b, m = c[2] + e, n = c[3] + f;
            bool in = i >= 0 && i < 3 && l >= 0 && l < 3 && m >= 0 && m < 3 && n >= 0 && n < 5;
            REQUIRE(out[size_t(a * 16 + b * 8 + e * 4 + f)] == (in ? float(i * 90 + l * 15 + m * 5 + n) + 0.25f : 0.0f));
          }
  }
  // Tiles of rank 4 and 5 through every back end (the blocks as the
  // masked loads and stores they mean: no dot reads them).
  for (const char* target : {"sm_90a", "sm_80", "gfx942"}) {
    INFO(target);
    CHECK(!codegen::compile(*k4.impl(), codegen_checks::aligned(k4), target).assembly.empty());
    CHECK(!codegen::compile(*k5.impl(), codegen_checks::aligned(k5), target).assembly.empty());
  }
}

// Rows 2^30 bytes apart: row 2 starts 2^31 elements past the base, past
// i32. out = x's [4, 4] block at (0, 0) (row 3 outside), then the block of
// the rank-3 view [3, 1, 4] at (2, 0, 0) (its leading dimension a scalar
// offset); x's block at (0, 0) written back plus 1.
namespace {
void far_rows(ptr<int8_t> x, ptr<int8_t> out, scalar<int32_t> row_stride) {
  auto d = make_tensor_descriptor(x, {3, 4}, {row_stride, 1}, {4, 4});
  auto t = d.load({0, 0});
  store(out + col(arange(0, 4)) * 4 + row(arange(0, 4)), t);
  auto d3 = make_tensor_descriptor(x, {3, 1, 4}, {row_stride, 4, 1}, {1, 1, 4});
  store(out + 16 + arange(0, 4), reshape(d3.load({2, 0, 0}), {4}));
  d.store({0, 0}, t + 1);
}
}  // namespace
TEST_CASE("descriptors: offsets past 2^31 elements address the tensor (multiplied in i64)",
          "[frontend][run][descriptor]") {
  const size_t rows = 3, stride = size_t(1) << 30, bytes = rows * stride;
  // Address space only: the kernel touches 4 bytes of each row.
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  auto* x = static_cast<int8_t*>(mem);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < 4; ++c) x[r * stride + c] = int8_t(10 * r + c + 1);
  Device dev = Device::get("interp");
  Kernel k = compile(far_rows);
  Buffer bx = Buffer::wrap<int8_t>(dev, x, bytes), bo = dev.upload(std::vector<int8_t>(20, -1));
  dev(k, Grid{1}, bx, bo, int32_t(stride));
  dev.synchronize();
  auto out = bo.download<int8_t>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      INFO("element (" << i << ", " << j << ")");
      CHECK(out[size_t(i * 4 + j)] == (i < 3 ? 10 * i + j + 1 : 0));
    }
  for (int j = 0; j < 4; ++j) CHECK(out[size_t(16 + j)] == 20 + j + 1);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < 4; ++c) CHECK(x[r * stride + c] == int8_t(10 * r + c + 2));
  munmap(mem, bytes);
}

TEST_CASE("descriptors: coordinates of another rank are an error naming the line", "[frontend][descriptor]") {
  try {
    compile(wrong_rank);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_descriptors.cpp:"));
    CHECK_THAT(e.what(), Catch::Contains("tensor_descriptor::load: expected 2 coordinates (the descriptor's rank), found 1"));
  }
  // Rank 6: refused where it is made.
  try {
    compile(rank6);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_descriptors.cpp:"));
    CHECK_THAT(e.what(), Catch::Contains("expected a shape, strides and block of one rank from 1 to 5, found 6, 6 and 6"));
  }
  // A size past i32: refused where it is given, not at the load.
  try {
    compile(wide_size);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_descriptors.cpp:" + std::to_string(wide_size_line) + ":"));
    CHECK_THAT(e.what(), Catch::Contains("make_tensor_descriptor: expected a size representable in i32, found 8589934592"));
  }
}

TEST_CASE("descriptors: blocks trace to descriptor ops; a block size not c x 2^k is an error",
          "[frontend][descriptor]") {
  std::string ir = compile(copy_block).ir();
  CHECK(codegen_checks::count(ir, R"(= descriptor_load %0, %3, %4, %5, %\d+, %7, %8 \{block = \[8, 16\]\} : tile<8x16xf32>)") == 1);
  CHECK(codegen_checks::count(ir, R"(descriptor_store %1, %3, %4, %6, %\d+, %7, %8, %\d+ \{block = \[8, 16\]\})") == 1);
  CHECK(codegen_checks::count(ir, R"(= load )") == 0);
  CHECK(codegen_checks::count(ir, R"(\n  store %)") == 1);  // copy_block's own store of `out`
  try {
    compile(odd_block);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_descriptors.cpp:"));
    CHECK_THAT(e.what(), Catch::Contains("make_tensor_descriptor: expected block sizes c x 2^k (c = 1, 3, ..., 15), found 34"));
  }
}

TEST_CASE("descriptors: compile for every target, vectorized along a contiguous last dimension", "[descriptor][codegen]") {
  Kernel k = compile(copy_block);
  for (const char* target : {"sm_90a", "sm_80", "gfx942"}) {
    INFO(target);
    std::string text = codegen::compile(*k.impl(), codegen_checks::aligned(k), target).assembly;
    CHECK(!text.empty());
    if (std::string(target).rfind("sm_", 0) == 0) CHECK(codegen_checks::count(text, R"(ld\.global[.a-z_0-9]*\.v4)") > 0);
  }
}
