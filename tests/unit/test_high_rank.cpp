// Tiles of rank 4 and 5 (tl::max_tile_rank), as Triton's 4-D and 5-D
// blocks: a [2, 2, 4, 8] tile loaded through pointer arithmetic, then
// elementwise ops, a reduction along an inner axis, a permute, a sort and a
// cumulative sum along other axes, expand_dims to rank 5 and a reduction
// there; each output against a host reference on the interpreter. The same
// kernel compiles for every back end and gives the interpreter's results
// on a GPU ([gpu]). Rank 6 is an error naming the line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/standard.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

constexpr int A = 2, B = 2, C = 4, D = 8, N = A * B * C * D;  // x: [A, B, C, D], row-major

// The offsets of a row-major [A, B, C, D] tile: i*BCD + j*CD + k*D + l.
tile<int32_t> offsets4() {
  auto i = reshape(arange(0, A), {A, 1, 1, 1});                 // [A, 1, 1, 1]
  auto j = reshape(arange(0, B), {1, B, 1, 1});                 // [1, B, 1, 1]
  auto k = expand_dims(expand_dims(col(arange(0, C)), 0), 0);   // [1, 1, C, 1]
  auto l = reshape(arange(0, D), {1, 1, 1, D});                 // [1, 1, 1, D]
  return i * (B * C * D) + j * (C * D) + k * D + l;             // [A, B, C, D]
}

// Outputs (f32, flattened row-major):
//   sum_c:  [A, B, D]     sum over C of y = 2 x + 1
//   perm:   [D, B, A, C]  y permuted {3, 1, 0, 2}
//   sorted: [A, B, C, D]  x sorted along C, descending
//   scan:   [A, B, C, D]  cumulative sum of x along D
//   max5:   [A, B, C, D]  max over axis 2 of the rank-5 [A, B, 2, C, D]
//                         of x and -x (|x|)
void high_rank(ptr<float> x_ptr, ptr<float> sum_c, ptr<float> perm, ptr<float> sorted, ptr<float> scan,
               ptr<float> max5) {
  auto off = offsets4();                                        // [A, B, C, D] i32
  auto x = load(x_ptr + off);                                   // [A, B, C, D] f32
  auto y = x * 2.0f + 1.0f;                                     // [A, B, C, D]
  auto s = sum(y, 2);                                           // [A, B, D]
  store(sum_c + reshape(arange(0, A * B * D), {A, B, D}), s);
  auto p = permute(y, {3, 1, 0, 2});                            // [D, B, A, C]
  store(perm + reshape(arange(0, N), {D, B, A, C}), p);
  store(sorted + off, sort(x, 2, true));
  store(scan + off, cumsum(x, 3));
  auto sign = reshape(cast<float>(1 - 2 * arange(0, 2)), {1, 1, 2, 1, 1});  // [1, 1, 2, 1, 1]: 1, -1
  auto z = expand_dims(x, 2) * sign;                            // [A, B, 2, C, D]: x and -x
  store(max5 + off, max(z, 2));                                 // [A, B, C, D]: |x|
}

// Rank 6: past a tile's dims.
void rank6(ptr<float> out) {
  store(out + arange(0, 64), reshape(reshape(arange(0, 64), {2, 2, 2, 2, 2, 2}), {64}));
}

// flip, sort and topk halve the axis again and again, so its size must be a
// power of two; another dim may be 3 x 2^k. A [3, 2, 2, 4] tile flipped
// and sorted along its last axis (out: 48 of each); WHICH 1..3: flip, sort
// or topk along axis 0 (of size 3), an error naming the line.
template <int WHICH>
void flip_odd(ptr<float> x_ptr, ptr<float> flipped, ptr<float> sorted) {
  auto i = reshape(arange(0, 3), {3, 1, 1, 1});                 // [3, 1, 1, 1]
  auto j = reshape(arange(0, 16), {1, 2, 2, 4});                // [1, 2, 2, 4]
  auto off = i * 16 + j;                                        // [3, 2, 2, 4]
  auto x = load(x_ptr + off);                                   // [3, 2, 2, 4] f32
  store(flipped + off, flip(x, 3));
  store(sorted + off, sort(x, -1));
  if constexpr (WHICH == 1) store(flipped + off, flip(x, 0));
  if constexpr (WHICH == 2) store(sorted + off, sort(x, 0, true));
  if constexpr (WHICH == 3) store(sorted + off, topk(x, 1, 0) + x);
}

// A product of rank-4 tiles ([B, H, M, K] x [B, H, K, N]): an error naming
// the line and the forms dot takes (2-D, or batched 3-D after a reshape).
void dot4(ptr<float> x, ptr<float> out) {
  auto off = reshape(arange(0, 64), {2, 2, 4, 4});              // [2, 2, 4, 4]
  auto t = load(x + off);                                       // [2, 2, 4, 4] f32
  store(out + off, dot(t, t));
}

std::vector<float> input() {
  std::vector<float> x(N);
  for (int e = 0; e < N; ++e) x[size_t(e)] = float((e * 37) % 61) - 30.0f;  // distinct small integers, both signs
  return x;
}

// The kernel's five outputs on `dev`.
std::vector<std::vector<float>> run(Device& dev, const Kernel& k) {
  Buffer x = dev.upload(input());
  std::vector<Buffer> outs;
  for (int n : {A * B * D, N, N, N, N}) outs.push_back(dev.upload(std::vector<float>(size_t(n), -999.0f)));
  dev(k, Grid{1}, x, outs[0], outs[1], outs[2], outs[3], outs[4]);
  dev.synchronize();
  std::vector<std::vector<float>> got;
  for (auto& o : outs) got.push_back(o.download<float>());
  return got;
}

}  // namespace

TEST_CASE("tiles of rank 4 and 5: elementwise, reduce, permute, sort, scan against the host", "[frontend][run]") {
  Device dev = Device::get("interp");
  auto got = run(dev, compile(high_rank));
  auto x = input();
  auto at = [](int i, int j, int k, int l) { return ((i * B + j) * C + k) * D + l; };
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < B; ++j)
      for (int l = 0; l < D; ++l) {
        float s = 0;
        std::vector<float> column;
        for (int k = 0; k < C; ++k) {
          s += 2 * x[size_t(at(i, j, k, l))] + 1;
          column.push_back(x[size_t(at(i, j, k, l))]);
        }
        INFO("(" << i << ", " << j << ", :, " << l << ")");
        REQUIRE(got[0][size_t((i * B + j) * D + l)] == s);
        std::sort(column.begin(), column.end(), [](float a, float b) { return a > b; });
        for (int k = 0; k < C; ++k) REQUIRE(got[2][size_t(at(i, j, k, l))] == column[size_t(k)]);
      }
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < B; ++j)
      for (int k = 0; k < C; ++k) {
        float run_sum = 0;
        for (int l = 0; l < D; ++l) {
          float v = x[size_t(at(i, j, k, l))];
          run_sum += v;
          INFO("(" << i << ", " << j << ", " << k << ", " << l << ")");
          REQUIRE(got[1][size_t(((l * B + j) * A + i) * C + k)] == 2 * v + 1);  // [D, B, A, C]
          REQUIRE(got[3][size_t(at(i, j, k, l))] == run_sum);
          REQUIRE(got[4][size_t(at(i, j, k, l))] == std::abs(v));
        }
      }
}

TEST_CASE("tiles of rank 4 and 5 compile for every back end; rank 6 is an error naming the line", "[frontend][codegen]") {
  Kernel k = compile(high_rank);
  for (const char* target : {"sm_90a", "sm_80", "gfx942"}) {
    INFO(target);
    CHECK(!codegen::compile(*k.impl(), codegen_checks::aligned(k), target).assembly.empty());
  }
  try {
    compile(rank6);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_high_rank.cpp:"));
    CHECK_THAT(e.what(), Catch::Contains("reshape: expected a tile shape of rank 0..5 with dims c x 2^k (c = 1, 3, ..., 15), "
                                         "found [2, 2, 2, 2, 2, 2]"));
  }
  try {
    compile(dot4);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_high_rank.cpp:"));
    CHECK_THAT(e.what(), Catch::Contains("dot: expected 2-D operands [M, K] and [K, N], or 3-D [B, M, K] and [B, K, N] "
                                         "for a batched dot") &&
                             Catch::Contains("found tile<2x2x4x4xf32> and tile<2x2x4x4xf32>"));
  }
}

TEST_CASE("tiles of rank 4 and 5: the same results on the GPU as on the interpreter", "[gpu]") {
  REQUIRE_GPU();
  Kernel k = compile(high_rank);
  gpu_oracle::same_on_both<float>([&](Device& d) { return run(d, k); }, 0, 0);
}

TEST_CASE("flip, sort and topk along a power-of-two axis of a tile with a dim of 3; along that dim an error naming "
          "the line", "[frontend][run]") {
  // Before, flip along a dim of 6 or 12 silently gave wrong elements and
  // sort failed inside its network with a reshape message.
  Device dev = Device::get("interp");
  Kernel k = compile(flip_odd<0>);
  std::vector<float> hx(48);
  for (int e = 0; e < 48; ++e) hx[size_t(e)] = float((e * 29) % 47) - 20.0f;
  Buffer x = dev.upload(hx), f = dev.alloc<float>(48), s = dev.alloc<float>(48);
  dev(k, Grid{1}, x, f, s);
  dev.synchronize();
  auto flipped = f.download<float>(), sorted = s.download<float>();
  for (int row = 0; row < 12; ++row) {
    std::vector<float> want(hx.begin() + row * 4, hx.begin() + row * 4 + 4);
    for (int l = 0; l < 4; ++l) REQUIRE(flipped[size_t(row * 4 + l)] == want[size_t(3 - l)]);
    std::sort(want.begin(), want.end());
    for (int l = 0; l < 4; ++l) REQUIRE(sorted[size_t(row * 4 + l)] == want[size_t(l)]);
  }
  auto refused = [](auto kernel, const std::string& op) {
    try {
      compile(kernel);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("test_high_rank.cpp:"));
      CHECK_THAT(e.what(), Catch::Contains(op + ": expected a power-of-two size along axis 0, found 3 (tile<3x2x2x4xf32>)"));
    }
  };
  refused(flip_odd<1>, "flip");
  refused(flip_odd<2>, "sort");
  refused(flip_odd<3>, "topk");
}
