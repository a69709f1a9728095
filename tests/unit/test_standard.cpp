// Triton's standard library in tiledsl (include/tiledsl/standard.h): flip,
// sort, topk, cat, interleave, ravel, xor_sum and swizzle2d, composed of
// reshape/permute/split/join and elementwise ops. Each is checked on the
// interpreter against a plain C++ reference on tiles of rank 1 to 3 and
// several axes (sort and topk with ties, NaN, infinities and signed
// zeros); bad arguments against their messages; the code for sm_90a and
// gfx942 (without a GPU); and the GPU against the interpreter ([gpu]).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

// ---- host references -----------------------------------------------------------

// A tile shape as a host array: row-major, `axis` split into outer x n x inner.
struct Dims {
  std::vector<int64_t> shape;
  int axis;
  int64_t outer = 1, n = 1, inner = 1;
  Dims(std::vector<int64_t> s, int a) : shape(std::move(s)), axis(a < 0 ? a + int(shape.size()) : a) {
    for (int d = 0; d < int(shape.size()); ++d) (d < axis ? outer : d == axis ? n : inner) *= shape[size_t(d)];
  }
  size_t at(int64_t o, int64_t i, int64_t in) const { return size_t((o * n + i) * inner + in); }
};

// The order tl::sort defines: NaN above everything, -0.0 == +0.0.
template <class T>
bool sort_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Each line along the axis sorted (descending: reversed), the first k kept.
template <class T>
std::vector<T> ref_sort(const std::vector<T>& x, const Dims& d, bool descending, int64_t k = -1) {
  if (k < 0) k = d.n;
  std::vector<int64_t> out_shape = d.shape;
  out_shape[size_t(d.axis)] = k;
  Dims od(out_shape, d.axis);
  std::vector<T> out(size_t(d.outer * k * d.inner));
  for (int64_t o = 0; o < d.outer; ++o)
    for (int64_t in = 0; in < d.inner; ++in) {
      std::vector<T> line;
      for (int64_t i = 0; i < d.n; ++i) line.push_back(x[d.at(o, i, in)]);
      std::stable_sort(line.begin(), line.end(), sort_less<T>);
      if (descending) std::reverse(line.begin(), line.end());
      for (int64_t i = 0; i < k; ++i) out[od.at(o, i, in)] = line[size_t(i)];
    }
  return out;
}

template <class T>
std::vector<T> ref_flip(const std::vector<T>& x, const Dims& d) {
  std::vector<T> out(x.size());
  for (int64_t o = 0; o < d.outer; ++o)
    for (int64_t i = 0; i < d.n; ++i)
      for (int64_t in = 0; in < d.inner; ++in) out[d.at(o, d.n - 1 - i, in)] = x[d.at(o, i, in)];
  return out;
}

// Equal values, NaN equal to NaN (the sort moves values, so a NaN stays one).
template <class T>
void check_same(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(want[i])) {
        INFO("element " << i);
        CHECK(std::isnan(got[i]));
        continue;
      }
    }
    INFO("element " << i << ": got " << +got[i] << ", want " << +want[i]);
    CHECK(got[i] == want[i]);
  }
}

// Floats with many ties, and NaN, +-inf and +-0.0 sprinkled in.
std::vector<float> awkward_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(-6, 6), pick(0, 9);
  std::vector<float> x(n);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 0.0f, -0.0f};
  for (auto& e : x) e = pick(rng) < 2 ? special[size_t(v(rng) + 6) % 5] : float(v(rng)) * 0.5f;
  return x;
}
std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

template <class T>
std::vector<T> random_ints(size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(lo, hi);
  std::vector<T> x(n);
  for (auto& e : x) e = T(v(rng));
  return x;
}

// ---- kernels: one program loads a tile of shape D..., applies one function, stores -----

template <int64_t... D>
tile<int32_t> offsets() {
  return reshape(arange(0, (D * ...)), {D...});  // [D...] i32, row-major
}

template <class T, int Axis, bool Desc, int64_t... D>
void sort_kernel(ptr<T> x, ptr<T> out) {
  auto offs = offsets<D...>();
  store(out + offs, sort(load(x + offs), Axis, Desc));
}

template <class T, int Axis, int64_t... D>
void flip_kernel(ptr<T> x, ptr<T> out) {
  auto offs = offsets<D...>();
  store(out + offs, flip(load(x + offs), Axis));
}

// topk of [D...] along Axis into a tile with K there.
template <class T, int K, int Axis, int64_t... D>
void topk_kernel(ptr<T> x, ptr<T> out) {
  auto offs = offsets<D...>();
  auto top = topk(load(x + offs), K, Axis);
  auto shape = top.shape();
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<int64_t> s(shape.begin(), shape.end());
  // The result's own row-major offsets.
  store(out + reshape(arange(0, n), s), top);
}

template <class T, int Axis, int64_t... D>
void cat_kernel(ptr<T> a, ptr<T> b, ptr<T> out) {
  auto offs = offsets<D...>();
  auto c = cat(load(a + offs), load(b + offs), Axis);
  std::vector<int64_t> s = c.shape();
  store(out + reshape(arange(0, 2 * (D * ...)), s), c);
}

template <class T, int64_t... D>
void interleave_kernel(ptr<T> a, ptr<T> b, ptr<T> out) {
  auto offs = offsets<D...>();
  auto c = interleave(load(a + offs), load(b + offs));
  std::vector<int64_t> s = c.shape();
  store(out + reshape(arange(0, 2 * (D * ...)), s), c);
}

template <class T>
std::vector<T> run(const Kernel& k, const std::vector<std::vector<T>>& ins, size_t out_n, Device dev) {
  std::vector<Buffer> bufs;
  for (const auto& in : ins) bufs.push_back(dev.upload(in));
  Buffer out = dev.alloc<T>(out_n);
  if (bufs.size() == 1) dev(k, Grid{1}, bufs[0], out);
  else dev(k, Grid{1}, bufs[0], bufs[1], out);
  dev.synchronize();
  return out.download<T>();
}

template <class T, int Axis, bool Desc, int64_t... D>
void check_sort(std::vector<T> x) {
  Dims d({D...}, Axis);
  INFO("sort of " << sizeof...(D) << "-D tile along axis " << Axis << (Desc ? " descending" : ""));
  Kernel k = compile(sort_kernel<T, Axis, Desc, D...>, {.name = "sort"});
  check_same(run<T>(k, {x}, x.size(), Device::get("interp")), ref_sort(x, d, Desc));
}

template <class T, int K, int Axis, int64_t... D>
void check_topk(std::vector<T> x) {
  Dims d({D...}, Axis);
  INFO("topk " << K << " of " << sizeof...(D) << "-D tile along axis " << Axis);
  Kernel k = compile(topk_kernel<T, K, Axis, D...>, {.name = "topk"});
  auto want = ref_sort(x, d, true, K);
  check_same(run<T>(k, {x}, want.size(), Device::get("interp")), want);
}

template <class T, int Axis, int64_t... D>
void check_flip(std::vector<T> x) {
  Dims d({D...}, Axis);
  INFO("flip of " << sizeof...(D) << "-D tile along axis " << Axis);
  Kernel k = compile(flip_kernel<T, Axis, D...>, {.name = "flip"});
  check_same(run<T>(k, {x}, x.size(), Device::get("interp")), ref_flip(x, d));
}

}  // namespace

TEST_CASE("sort: every line along the axis in order, floats with NaN last, on ranks 1 to 3", "[standard][interp]") {
  check_sort<float, 0, false, 2>(awkward_floats(2, 1));
  check_sort<float, 0, false, 256>(awkward_floats(256, 2));
  check_sort<float, 0, true, 256>(awkward_floats(256, 3));
  check_sort<float, -1, false, 4, 32>(awkward_floats(128, 4));
  check_sort<float, 0, true, 16, 8>(awkward_floats(128, 5));
  check_sort<float, 1, false, 2, 16, 4>(awkward_floats(128, 6));
  check_sort<float, 2, true, 4, 2, 8>(awkward_floats(64, 7));
  check_sort<float, 0, false, 8, 2, 4>(awkward_floats(64, 8));
  check_sort<float, 1, false, 8, 1>(awkward_floats(8, 9));  // a dimension of 1: unchanged
}

TEST_CASE("sort: integers of several widths and signedness, with ties and extremes", "[standard][interp]") {
  auto xi = random_ints<int32_t>(128, -5, 5, 11);
  xi[3] = std::numeric_limits<int32_t>::min();
  xi[77] = std::numeric_limits<int32_t>::max();
  check_sort<int32_t, 1, false, 4, 32>(xi);
  check_sort<int32_t, 0, true, 4, 32>(xi);
  check_sort<uint8_t, 0, false, 64>(random_ints<uint8_t>(64, 0, 255, 12));    // unsigned compare: 200 > 100
  check_sort<int8_t, 0, true, 64>(random_ints<int8_t>(64, -128, 127, 13));
  auto xl = random_ints<int64_t>(32, -3, 3, 14);
  xl[5] = int64_t(1) << 40;
  xl[6] = -(int64_t(1) << 40);
  check_sort<int64_t, 0, false, 32>(xl);
}

TEST_CASE("sort: narrow floats and doubles", "[standard][interp]") {
  auto xf = awkward_floats(64, 21);
  std::vector<bf16> xb(xf.begin(), xf.end());
  Kernel k = compile(sort_kernel<bf16, 0, false, 64>, {.name = "sort"});
  auto got = run<bf16>(k, {xb}, 64, Device::get("interp"));
  std::vector<float> gotf(got.begin(), got.end()), xr(xb.begin(), xb.end());
  check_same(gotf, ref_sort(xr, Dims({64}, 0), false));
  std::vector<double> xd(xf.begin(), xf.end());
  check_sort<double, 0, true, 64>(xd);
}

TEST_CASE("topk: the k largest along the axis, in descending order", "[standard][interp]") {
  check_topk<float, 1, 0, 64>(awkward_floats(64, 31));    // the max (NaN if any)
  check_topk<float, 4, 0, 64>(awkward_floats(64, 32));
  check_topk<float, 64, 0, 64>(awkward_floats(64, 33));   // k == n: a descending sort
  check_topk<float, 8, 1, 4, 32>(awkward_floats(128, 34));
  check_topk<float, 2, 0, 16, 4>(awkward_floats(64, 35));
  check_topk<float, 4, 1, 2, 16, 2>(awkward_floats(64, 36));
  check_topk<int32_t, 8, -1, 8, 64>(random_ints<int32_t>(512, -20, 20, 37));
  std::vector<float> nan_free = awkward_floats(64, 38);
  for (auto& v : nan_free)
    if (std::isnan(v)) v = 1.25f;
  check_topk<float, 16, 0, 64>(nan_free);
}

TEST_CASE("flip: reversed along any axis", "[standard][interp]") {
  std::vector<int32_t> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t(i * 7 + 3);
  check_flip<int32_t, 0, 256>(x);
  check_flip<int32_t, 0, 2>({1, 2});
  check_flip<int32_t, 1, 8, 32>(x);
  check_flip<int32_t, 0, 8, 32>(x);
  check_flip<int32_t, 1, 4, 8, 8>(x);
  check_flip<int32_t, -1, 4, 8, 8>(x);
  check_flip<float, 0, 64>(awkward_floats(64, 41));  // bits move unchanged: NaN, -0.0
}

TEST_CASE("flip of a tile of pointers", "[standard][interp]") {
  Kernel k = compile(+[](ptr<int32_t> x, ptr<int32_t> out) {
    auto offs = arange(0, 16);                   // [16] i32
    auto p = flip(x + offs);                     // [16] ptr<i32>: x + 15, ..., x + 0
    store(out + offs, load(p));
  }, {.name = "flip_ptrs"});
  std::vector<int32_t> x(16);
  for (int i = 0; i < 16; ++i) x[size_t(i)] = i * i;
  auto got = run<int32_t>(k, {x}, 16, Device::get("interp"));
  for (int i = 0; i < 16; ++i) CHECK(got[size_t(i)] == (15 - i) * (15 - i));
}

TEST_CASE("cat and interleave keep every element in order", "[standard][interp]") {
  std::vector<int32_t> a(64), b(64);
  for (int i = 0; i < 64; ++i) a[size_t(i)] = i, b[size_t(i)] = 1000 + i;
  auto dev = Device::get("interp");
  auto cat_ref = [&](const Dims& d) {
    std::vector<int32_t> out;
    for (int64_t o = 0; o < d.outer; ++o) {
      for (int64_t e = 0; e < d.n * d.inner; ++e) out.push_back(a[size_t(o * d.n * d.inner + e)]);
      for (int64_t e = 0; e < d.n * d.inner; ++e) out.push_back(b[size_t(o * d.n * d.inner + e)]);
    }
    return out;
  };
  check_same(run<int32_t>(compile(cat_kernel<int32_t, 0, 64>), {a, b}, 128, dev), cat_ref(Dims({64}, 0)));
  check_same(run<int32_t>(compile(cat_kernel<int32_t, 0, 8, 8>), {a, b}, 128, dev), cat_ref(Dims({8, 8}, 0)));
  check_same(run<int32_t>(compile(cat_kernel<int32_t, 1, 8, 8>), {a, b}, 128, dev), cat_ref(Dims({8, 8}, 1)));
  check_same(run<int32_t>(compile(cat_kernel<int32_t, 1, 2, 4, 8>), {a, b}, 128, dev), cat_ref(Dims({2, 4, 8}, 1)));
  check_same(run<int32_t>(compile(cat_kernel<int32_t, -1, 2, 4, 8>), {a, b}, 128, dev), cat_ref(Dims({2, 4, 8}, 2)));

  auto inter_ref = [&] {
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(a[size_t(i)]), out.push_back(b[size_t(i)]);
    return out;
  };
  // Interleaving along the last dimension is interleaving the flat arrays.
  check_same(run<int32_t>(compile(interleave_kernel<int32_t, 64>), {a, b}, 128, dev), inter_ref());
  check_same(run<int32_t>(compile(interleave_kernel<int32_t, 8, 8>), {a, b}, 128, dev), inter_ref());
  check_same(run<int32_t>(compile(interleave_kernel<int32_t, 2, 4, 8>), {a, b}, 128, dev), inter_ref());
}

TEST_CASE("interleave of scalars, ravel and xor_sum", "[standard][interp]") {
  Kernel k = compile(+[](ptr<int32_t> x, ptr<int32_t> out) {
    auto v = load(x + offsets<4, 16>());                       // [4, 16] i32
    auto flat = ravel(v);                                      // [64]
    store(out + arange(0, 64), flat);
    store(out + 64 + arange(0, 4), xor_sum(v, 1));            // [4]
    auto pair = interleave(load(x + 1), load(x + 2));          // [2]
    store(out + 68 + arange(0, 2), pair);
  }, {.name = "misc"});
  auto x = random_ints<int32_t>(64, -100000, 100000, 51);
  auto got = run<int32_t>(k, {x}, 70, Device::get("interp"));
  for (int i = 0; i < 64; ++i) CHECK(got[size_t(i)] == x[size_t(i)]);
  for (int r = 0; r < 4; ++r) {
    int32_t want = 0;
    for (int c = 0; c < 16; ++c) want ^= x[size_t(r * 16 + c)];
    CHECK(got[size_t(64 + r)] == want);
  }
  CHECK(got[68] == x[1]);
  CHECK(got[69] == x[2]);
}

TEST_CASE("swizzle2d: Triton's grouped order of a grid, a short last group included", "[standard][interp]") {
  // An 8 x 16 grid in groups of 3 rows (the last group has 2), the rows a
  // traced argument and the rest C++ integers.
  Kernel k = compile(+[](ptr<int32_t> out, scalar<int32_t> size_i) {
    auto i = col(arange(0, 8));                                // [8, 1] i32
    auto j = row(arange(0, 16));                               // [1, 16] i32
    auto [si, sj] = swizzle2d(i, j, size_i, 16, 3);            // [8, 16] i32 each
    auto offs = offsets<8, 16>();
    store(out + offs, si);
    store(out + 128 + offs, sj);
  }, {.name = "swizzle"});
  auto dev = Device::get("interp");
  auto out = dev.alloc<int32_t>(256);
  dev(k, Grid{1}, out, 8);
  auto got = out.download<int32_t>();
  std::vector<int> seen(128, 0);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) {
      // Triton's formula (all values non-negative: // is /).
      int ij = i * 16 + j, gj = 3 * 16, group = ij / gj, off_i = group * 3;
      int rows = std::min(8 - off_i, 3);
      ij %= gj;
      int ni = off_i + ij % rows, nj = ij / rows;
      INFO("(" << i << ", " << j << ")");
      CHECK(got[size_t(i * 16 + j)] == ni);
      CHECK(got[size_t(128 + i * 16 + j)] == nj);
      ++seen[size_t(ni * 16 + nj)];
    }
  // A permutation of the grid.
  CHECK(std::count(seen.begin(), seen.end(), 1) == 128);
}

// ---- errors name the caller's line ----------------------------------------------

namespace {
int g_line = 0;
#define MARK g_line = __LINE__;
std::string at_line(int line) { return std::string(__FILE__) + ":" + std::to_string(line) + ": "; }
template <class F>
std::string compile_error(F fn) {
  g_line = 0;
  try {
    compile(fn);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected tl::compile to throw tl::Error");
  return "";
}
}  // namespace

TEST_CASE("standard functions: bad arguments are errors naming the line", "[standard][frontend]") {
  std::string e = compile_error(+[](ptr<float> x) {
    auto v = load(x + arange(0, 16));
    MARK store(x + arange(0, 4), topk(v, 3));
  });
  CHECK(e == at_line(g_line) + "topk: expected k a power of two from 1 to 16 (dim 0 of tile<16xf32>), found 3");
  e = compile_error(+[](ptr<float> x) {
    auto v = load(x + arange(0, 16));
    MARK store(x + arange(0, 32), topk(v, 32));
  });
  CHECK(e == at_line(g_line) + "topk: expected k a power of two from 1 to 16 (dim 0 of tile<16xf32>), found 32");
  e = compile_error(+[](ptr<float> x) {
    auto v = load(x);
    MARK store(x, sort(v));
  });
  CHECK(e == at_line(g_line) + "sort: expected a tile of rank 1 to 5, found f32");
  e = compile_error(+[](ptr<float> x) {
    auto v = load(x + offsets<4, 4>());
    MARK store(x + offsets<4, 4>(), flip(v, 2));
  });
  CHECK(e == at_line(g_line) + "flip: expected an axis in -2..1 for a rank-2 tile, found 2");
  e = compile_error(+[](ptr<float> x) {
    auto a = load(x + arange(0, 8));
    auto b = load(x + arange(0, 16));
    MARK store(x + arange(0, 16), cat(a, b));
  });
  CHECK(e == at_line(g_line) + "cat: expected two tiles of one shape, found tile<8xf32> and tile<16xf32>");
  e = compile_error(+[](ptr<float> x) {
    auto a = load(x + arange(0, 8));
    auto b = load(x + arange(0, 4));
    MARK store(x + arange(0, 16), interleave(a, b));
  });
  CHECK(e == at_line(g_line) + "interleave: expected two tiles of one shape, found tile<8xf32> and tile<4xf32>");
}

// ---- the GPU targets ---------------------------------------------------------------

namespace {
// A MoE router's step: per row of logits, the top 8 of 64 experts, and the
// row sorted and reversed, for every row a program (rows along axis 0).
void route(ptr<float> logits, ptr<float> top, ptr<float> sorted, ptr<float> flipped) {
  auto r = program_id(0);
  auto offs = offsets<16, 64>();                          // [16, 64] i32
  auto x = load(logits + r * 1024 + offs);                // [16, 64] f32
  auto t = topk(x, 8);                                    // [16, 8] f32
  store(top + r * 128 + offsets<16, 8>(), t);
  store(sorted + r * 1024 + offs, sort(x, 1));
  store(flipped + r * 1024 + offs, flip(x, 0));
}
// cat and interleave of int32 tiles, and sort along the first axis.
void shuffle(ptr<int32_t> a, ptr<int32_t> out) {
  auto offs = offsets<8, 32>();                           // [8, 32] i32
  auto x = load(a + offs);                                // [8, 32] i32
  auto y = x * 3 + 1;
  store(out + offsets<16, 32>(), cat(x, y, 0));           // [16, 32]
  store(out + 512 + offsets<8, 64>(), interleave(x, y));  // [8, 64]
  store(out + 1024 + offs, sort(x, 0, true));             // [8, 32]
}
// Triton's options (issue 17) on [8, 32] rows: argmax/argmin with the
// highest index winning ties, sum and cumsum in a given type (i8 wrapping,
// f64), NaN-propagating maximum and max, div_rn, sqrt (correctly rounded,
// Triton's sqrt_rn).
void options(ptr<float> a, ptr<float> b, ptr<int32_t> idx, ptr<int8_t> i8, ptr<double> f64, ptr<float> out) {
  auto offs = offsets<8, 32>();                           // [8, 32] i32
  auto x = load(a + offs), y = load(b + offs);            // [8, 32] f32
  auto r = arange(0, 8), c = arange(0, 32);               // [8], [32] i32
  auto q = cast<int32_t>(floor(x * 2.0f));                // [8, 32] i32: many ties
  store(idx + r, argmax(q, 1, {.tie_break_left = false}));
  store(idx + 8 + c, argmin(q, 0, {.tie_break_left = false}));
  store(idx + 40 + r, argmax(q, 1));
  auto bytes = cast<int8_t>(q * 37);                      // [8, 32] i8
  store(i8 + r, sum(bytes, 1, dtype<int8_t>));
  store(i8 + 8 + offs, cumsum(bytes, 1, dtype<int8_t>));
  store(i8 + 264 + offs, cumsum(bytes, 0, true, dtype<int8_t>));
  store(f64 + r, sum(x, 1, dtype<double>));
  auto xn = where(col(r) == row(c) * 2, y / 0.0f * 0.0f, x);  // [8, 32] f32: a NaN in some rows
  store(out + offs, maximum(xn, y, PropagateNan::all));
  store(out + 256 + offs, minimum(xn, y, PropagateNan::all));
  store(out + 512 + r, max(xn, 1, PropagateNan::all));
  store(out + 520 + r, min(xn, 1, PropagateNan::none));
  store(out + 528 + offs, div_rn(x, y));
  store(out + 784 + offs, sqrt(abs(x)));                  // Triton's sqrt_rn
}

// propagate_nan's maximum and minimum with a C++ number on either side.
void nan_numbers(ptr<float> a, ptr<float> out) {
  auto i = arange(0, 64);                                 // [64] i32
  auto x = load(a + i);                                   // [64] f32, NaN at every fifth
  store(out + i, maximum(x, 0.5f, PropagateNan::all));
  store(out + 64 + i, minimum(2.0, x, PropagateNan::all));  // a double takes x's type
  store(out + 128 + i, maximum(x, 0.5f, PropagateNan::none));
}

// fp_downcast_rounding: f32 to bf16 and f16, f64 to f32, toward zero and
// to nearest.
void downcasts(ptr<float> a, ptr<double> b, ptr<bf16> ob, ptr<f16> oh, ptr<float> of) {
  auto i = arange(0, 256);                                // [256] i32
  auto x = load(a + i);                                   // [256] f32
  auto y = load(b + i);                                   // [256] f64
  store(ob + i, cast<bf16>(x, {.fp_downcast_rounding = Rounding::rtz}));
  store(ob + 256 + i, cast<bf16>(x, CastOptions{}));
  store(oh + i, cast<f16>(x, {.fp_downcast_rounding = Rounding::rtz}));
  store(oh + 256 + i, cast<f16>(x, {.fp_downcast_rounding = Rounding::rtne}));
  store(of + i, cast<float>(y, {.fp_downcast_rounding = Rounding::rtz}));
}

// input_precision "tf32x3" beside "tf32", with and without an accumulator.
void dots3(ptr<float> a, ptr<float> b, ptr<float> out) {
  auto offs = offsets<32, 32>();                          // [32, 32] i32
  auto x = load(a + offs), y = load(b + offs);            // [32, 32] f32
  store(out + offs, dot(x, y, {.input_precision = "tf32x3"}));
  store(out + 1024 + offs, dot(x, y, {.input_precision = "tf32"}));
  store(out + 2048 + offs, dot(x, y, full<float>({32, 32}, 1.0f), {.input_precision = "tf32x3"}));
}

// Inputs for it: specials (NaN, infinities, zeros), values past f16's
// range and in its subnormals, exact ones, and random ones of both signs.
std::vector<float> downcast_inputs() {
  std::vector<float> v = {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.5f,
                          65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f, 3.4e38f, -3.4e38f, 6e-8f, -6e-8f, 1e-7f, 3e-5f,
                          1.00390625f, -1.00390625f, 1e-40f};
  std::mt19937 rng(91);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-30, 20), sign(0, 1);
  while (v.size() < 256) v.push_back((sign(rng) ? -1.0f : 1.0f) * std::ldexp(mant(rng), expo(rng)));
  return v;
}

// Whether `r` is x rounded toward zero among the values `next` steps
// through: |r| <= |x|, the same sign, and the next value above |r| past |x|.
template <class Next>
bool toward_zero(double x, double r, Next next) {
  if (std::isnan(x)) return std::isnan(r);
  if (std::isinf(x)) return r == x;
  return std::fabs(r) <= std::fabs(x) && (r == 0 || std::signbit(r) == std::signbit(x)) &&
         next(std::fabs(r)) > std::fabs(x);
}

// The downcasts kernel's results on `d`: bf16 (rtz, then rtne), f16 (the
// same), f32; its inputs are downcast_inputs() and, in f64, the same a
// hair larger (between two floats).
struct DowncastRun {
  std::vector<float> xs{};
  std::vector<double> ys{};
  std::vector<bf16> b{};
  std::vector<f16> h{};
  std::vector<float> f{};
};
DowncastRun run_downcasts(Device& d, const Kernel& k) {
  DowncastRun r{downcast_inputs()};
  for (float x : r.xs) r.ys.push_back(double(x) * (1.0 + 1e-9));
  auto a = d.upload(r.xs);
  auto b = d.upload(r.ys);
  auto ob = d.alloc<bf16>(512);
  auto oh = d.alloc<f16>(512);
  auto of = d.alloc<float>(256);
  d(k, Grid{1}, a, b, ob, oh, of);
  d.synchronize();
  r.b = ob.download<bf16>();
  r.h = oh.download<f16>();
  r.f = of.download<float>();
  return r;
}

// The options kernel's results on `d` for inputs xs, ys.
struct OptionsRun {
  std::vector<int32_t> idx;
  std::vector<int8_t> i8;
  std::vector<double> f64;
  std::vector<float> out;
};
OptionsRun run_options(Device& d, const Kernel& k, const std::vector<float>& xs, const std::vector<float>& ys) {
  auto x = d.upload(xs), y = d.upload(ys);
  auto idx = d.alloc<int32_t>(48);
  auto i8 = d.alloc<int8_t>(520);
  auto f64 = d.alloc<double>(8);
  auto out = d.alloc<float>(1040);
  d(k, Grid{1}, x, y, idx, i8, f64, out);
  d.synchronize();
  return {idx.download<int32_t>(), i8.download<int8_t>(), f64.download<double>(), out.download<float>()};
}
}  // namespace

TEST_CASE("Triton's options: tie_break_left, dtype of sum and cumsum, propagate_nan, div_rn, sqrt_rn",
          "[standard][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(options, {.name = "options"});
  auto xs = random_floats(256, -4.0f, 4.0f, 81), ys = random_floats(256, 0.5f, 3.0f, 82);
  auto [gi, gb, gd, go] = run_options(d, k, xs, ys);
  auto q = [&](int r, int c) { return int(std::floor(xs[size_t(r * 32 + c)] * 2.0f)); };
  for (int r = 0; r < 8; ++r) {
    int hi = 0, lo = 0;
    for (int c = 0; c < 32; ++c) {
      if (q(r, c) >= q(r, hi)) hi = c;  // the highest index among the maxima
      if (q(r, c) > q(r, lo)) lo = c;   // the lowest
    }
    CHECK(gi[size_t(r)] == hi);
    CHECK(gi[size_t(40 + r)] == lo);
    int8_t total = 0;
    double wide = 0;
    for (int c = 0; c < 32; ++c) {
      total = int8_t(total + int8_t(q(r, c) * 37));
      wide += double(xs[size_t(r * 32 + c)]);
      CHECK(gb[size_t(8 + r * 32 + c)] == total);  // wraps in i8
    }
    CHECK(gb[size_t(r)] == total);
    CHECK(gd[size_t(r)] == Approx(wide).epsilon(1e-12));
  }
  for (int c = 0; c < 32; ++c) {
    int at = 0;
    for (int r = 0; r < 8; ++r)
      if (q(r, c) <= q(at, c)) at = r;
    CHECK(gi[size_t(8 + c)] == at);
    int8_t total = 0;
    for (int r = 7; r >= 0; --r) {
      total = int8_t(total + int8_t(q(r, c) * 37));
      CHECK(gb[size_t(264 + r * 32 + c)] == total);
    }
  }
  for (int r = 0; r < 8; ++r) {
    bool nan_row = r % 2 == 0 && r / 2 < 32;
    float mx = -INFINITY, mn = INFINITY;
    for (int c = 0; c < 32; ++c) {
      size_t i = size_t(r * 32 + c);
      bool nan = r == 2 * c;
      float xv = xs[i], yv = ys[i];
      CHECK(std::isnan(go[i]) == nan);
      CHECK(std::isnan(go[256 + i]) == nan);
      if (!nan) {
        CHECK(go[i] == std::max(xv, yv));
        CHECK(go[256 + i] == std::min(xv, yv));
        mn = std::min(mn, xv);
      }
      mx = std::max(mx, xv);
      CHECK(go[528 + i] == float(double(xv) / double(yv)));  // correctly rounded
      CHECK(go[784 + i] == std::sqrt(std::fabs(xv)));
    }
    CHECK(std::isnan(go[512 + size_t(r)]) == nan_row);
    if (!nan_row) CHECK(go[512 + size_t(r)] == mx);
    CHECK(go[520 + size_t(r)] == mn);  // none: the NaN loses
  }
}

TEST_CASE("Triton's options: propagate_nan with a C++ number on either side", "[standard][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(nan_numbers, {.name = "nan_numbers"});
  CHECK(k.ir().find("standard.h") == std::string::npos);  // every op at the caller's line
  std::vector<float> xs(64);
  for (int i = 0; i < 64; ++i) xs[size_t(i)] = i % 5 == 0 ? std::nanf("") : float(i - 32) / 8.0f;
  auto out = d.alloc<float>(192);
  d(k, Grid{1}, d.upload(xs), out);
  d.synchronize();
  auto got = out.download<float>();
  for (int i = 0; i < 64; ++i) {
    float x = xs[size_t(i)];
    INFO("element " << i << " x " << x);
    if (std::isnan(x)) {
      CHECK(std::isnan(got[size_t(i)]));
      CHECK(std::isnan(got[size_t(64 + i)]));
      CHECK(got[size_t(128 + i)] == 0.5f);
    } else {
      CHECK(got[size_t(i)] == std::max(x, 0.5f));
      CHECK(got[size_t(64 + i)] == std::min(2.0f, x));
      CHECK(got[size_t(128 + i)] == std::max(x, 0.5f));
    }
  }
}

TEST_CASE("Triton's options: fp_downcast_rounding rtz and rtne", "[standard][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(downcasts, {.name = "downcasts"});
  auto [xs, ys, gb, gh, gf] = run_downcasts(d, k);
  auto next_bf16 = [](double m) { return double(bf16::from_bits(uint16_t(bf16(float(m)).bits + 1))); };
  auto next_f16 = [](double m) { return double(f16::from_bits(uint16_t(f16(float(m)).bits + 1))); };
  auto next_f32 = [](double m) { return double(std::nextafter(float(m), INFINITY)); };
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO("x = " << xs[i]);
    CHECK(toward_zero(xs[i], float(gb[i]), next_bf16));
    if (!std::isnan(xs[i])) CHECK(gb[i].bits == uint16_t(std::bit_cast<uint32_t>(xs[i]) >> 16));  // truncated
    CHECK(gb[256 + i].bits == bf16(xs[i]).bits);
    CHECK(toward_zero(xs[i], float(gh[i]), next_f16));
    CHECK((std::isnan(xs[i]) ? std::isnan(float(gh[256 + i])) : gh[256 + i].bits == f16(xs[i]).bits));
    CHECK(toward_zero(ys[i], gf[i], next_f32));
  }
  // Past f16's range toward zero is its largest finite value, not infinity.
  CHECK(float(gh[8]) == 65504.0f);
  CHECK(float(gh[10]) == 65504.0f);
  CHECK(float(gh[11]) == -65504.0f);
  CHECK(float(gh[256 + 9]) == INFINITY);  // 65520 to nearest
}

// The error of each result against the exact sum, in units of the sum of
// the products' magnitudes: tf32x3 within 2^-20 of it (f32 rounding of a
// 32-term sum), tf32 alone well outside (2^-11 a product).
std::vector<double> dot_errors(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& got,
                               double plus) {
  std::vector<double> err;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) {
      double exact = plus, mag = std::fabs(plus);
      for (int k = 0; k < 32; ++k) {
        exact += double(a[size_t(i * 32 + k)]) * double(b[size_t(k * 32 + j)]);
        mag += std::fabs(double(a[size_t(i * 32 + k)]) * double(b[size_t(k * 32 + j)]));
      }
      err.push_back(std::fabs(double(got[size_t(i * 32 + j)]) - exact) / mag);
    }
  return err;
}

TEST_CASE("Triton's options: dot's input_precision tf32x3", "[standard][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(dots3, {.name = "dots3"});
  auto xs = random_floats(1024, -2.0f, 2.0f, 93), ys = random_floats(1024, -2.0f, 2.0f, 94);
  auto a = d.upload(xs), b = d.upload(ys);
  auto out = d.alloc<float>(3072);
  d(k, Grid{1}, a, b, out);
  d.synchronize();
  auto got = out.download<float>();
  std::vector<float> x3(got.begin(), got.begin() + 1024), t(got.begin() + 1024, got.begin() + 2048),
      x3_acc(got.begin() + 2048, got.end());
  auto worst = [](const std::vector<double>& e) { return *std::max_element(e.begin(), e.end()); };
  CHECK(worst(dot_errors(xs, ys, x3, 0.0)) < std::ldexp(1.0, -20));
  CHECK(worst(dot_errors(xs, ys, x3_acc, 1.0)) < std::ldexp(1.0, -20));
  CHECK(worst(dot_errors(xs, ys, t, 0.0)) > std::ldexp(1.0, -16));  // the plain tf32 dot is coarser
}

TEST_CASE("Triton's options: errors name the line", "[standard][frontend]") {
  auto bad = [](ptr<float> a) {
    auto x = load(a + arange(0, 32));
    store(a + arange(0, 32), cast<float>(argmax(x, 1, {.tie_break_left = false})));  // rank 1 has no axis 1
  };
  CHECK_THROWS_WITH(compile(bad, {.name = "bad"}), Catch::Contains("test_standard.cpp") && Catch::Contains("axis"));
}

TEST_CASE("standard functions compile for sm_90a and gfx942", "[standard][codegen]") {
  for (Kernel k : {compile(route, {.name = "route"}), compile(shuffle, {.name = "shuffle"}),
                   compile(options, {.name = "options"}), compile(downcasts, {.name = "downcasts"}),
                   compile(dots3, {.name = "dots3", .num_warps = 4})}) {
    codegen_checks::check_stores_on_sm90a_and_gfx942(k);
  }
}

TEST_CASE("standard functions: the same results on the GPU as on the interpreter", "[standard][gpu]") {
  REQUIRE_GPU();
  Kernel kr = compile(route, {.name = "route", .num_warps = 4});
  gpu_oracle::same_on_both<float>([&](Device& d) {
    auto x = d.upload(awkward_floats(4 * 1024, 61));
    auto top = d.alloc<float>(4 * 128), sorted = d.alloc<float>(4 * 1024), flipped = d.alloc<float>(4 * 1024);
    d(kr, Grid{4}, x, top, sorted, flipped);
    d.synchronize();
    return std::vector<std::vector<float>>{top.download<float>(), sorted.download<float>(), flipped.download<float>()};
  }, 0, 0);
  Kernel ko = compile(options, {.name = "options"});
  auto xs = random_floats(256, -4.0f, 4.0f, 81), ys = random_floats(256, 0.5f, 3.0f, 82);
  gpu_oracle::same_on_both<float>([&](Device& d) {
    OptionsRun r = run_options(d, ko, xs, ys);
    std::vector<float> ints(r.idx.begin(), r.idx.end()), sums(r.f64.begin(), r.f64.end());
    ints.insert(ints.end(), r.i8.begin(), r.i8.end());
    return std::vector<std::vector<float>>{ints, sums, r.out};
  }, 1e-6, 0);  // the f64 sums may add in another order
  Kernel kd = compile(downcasts, {.name = "downcasts"});
  gpu_oracle::same_on_both<float>([&](Device& d) {
    DowncastRun r = run_downcasts(d, kd);
    // Every result's bits, exactly; a NaN as -1 (its payload is the
    // target's: 0x7fff from NVIDIA's cvt, 0x7fc0 from the interpreter).
    std::vector<float> bits;
    for (bf16 v : r.b) bits.push_back(std::isnan(float(v)) ? -1.0f : float(v.bits));
    for (f16 v : r.h) bits.push_back(std::isnan(float(v)) ? -1.0f : float(v.bits));
    for (float v : r.f) {
      uint32_t b = std::bit_cast<uint32_t>(v);
      bits.push_back(std::isnan(v) ? -1.0f : float(b >> 16));
      bits.push_back(std::isnan(v) ? -1.0f : float(b & 0xffffu));
    }
    return std::vector<std::vector<float>>{bits};
  }, 0, 0);
  Kernel k3 = compile(dots3, {.name = "dots3", .num_warps = 4});
  gpu_oracle::same_on_both<float>([&](Device& d) {
    auto a = d.upload(random_floats(1024, -2.0f, 2.0f, 93)), b = d.upload(random_floats(1024, -2.0f, 2.0f, 94));
    auto out = d.alloc<float>(3072);
    d(k3, Grid{1}, a, b, out);
    d.synchronize();
    auto got = out.download<float>();
    got.resize(1024);  // tf32x3 (the tf32 products may round differently on the tensor cores)
    return std::vector<std::vector<float>>{got};
  }, 1e-5, 1e-5);
  Kernel ks = compile(shuffle, {.name = "shuffle", .num_warps = 2});
  gpu_oracle::same_on_both<int32_t>([&](Device& d) {
    auto a = d.upload(random_ints<int32_t>(256, -1000, 1000, 62));
    auto out = d.alloc<int32_t>(1280);
    d(ks, Grid{1}, a, out);
    d.synchronize();
    return std::vector<std::vector<int32_t>>{out.download<int32_t>()};
  }, 0, 0);
}
