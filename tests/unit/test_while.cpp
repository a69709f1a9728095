// Traced while loops (tl::while_, control.h): Triton's test_while ported
// (a carried counter, a variable the loop must leave alone), carried tiles
// with a condition over a reduction, loops nested both ways with ifs, a
// loop of no trips, a spin lock over atomic_cas across programs, the
// tracer's errors, the code for sm_90a and gfx942, and the GPU against the
// interpreter ([gpu]).
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

// Triton's test_while: j counts up to *bound; curr_i gains one when j
// passes *cutoff; init_i, read in the body, is not carried.
void triton_while(ptr<int32_t> init_i, ptr<int32_t> bound, ptr<int32_t> cutoff, ptr<int32_t> out_i,
                  ptr<int32_t> out_init_i, ptr<int32_t> out_j) {
  scalar<int32_t> init = load(init_i);
  scalar<int32_t> curr = init;
  scalar<int32_t> j = full<int32_t>({}, 0);
  while_([&] { return j < load(bound); },
         [&] {
           curr = curr + cast<int32_t>(j == load(cutoff));
           j = j + 1;
           store(out_init_i, init);
         });
  store(out_i, curr);
  store(out_j, j);
}

// Per program: a row of 64 values doubled until its largest passes `limit`
// (a condition over a reduction of a carried tile), counting the rounds;
// then Euclid's gcd of (a, b) with a loop of no trips when b is 0; then a
// range whose body runs a while (a triangular sum) and an if.
void tiles(ptr<float> x, ptr<float> out, ptr<int32_t> counts, scalar<float> limit) {
  auto pid = program_id(0);
  auto offs = pid * 64 + arange(0, 64);
  tile<float> row = load(x + offs);
  scalar<int32_t> rounds = full<int32_t>({}, 0);
  while_([&] { return max(abs(row), 0) <= limit; },
         [&] {
           row = row * 2.0f;
           rounds = rounds + 1;
         });
  store(out + offs, row);
  scalar<int32_t> a = pid * 12 + 18, b = (pid % 3) * 8;
  while_([&] { return b != 0; },
         [&] {
           scalar<int32_t> t = a % b;
           a = b;
           b = t;
         });
  scalar<int32_t> tri = full<int32_t>({}, 0);
  for (auto i : range(0, pid + 1)) {
    scalar<int32_t> k = full<int32_t>({}, 0);
    while_([&] { return k <= i; },
           [&] {
             tri = tri + k;
             if_(k % 2 == 0, [&] { tri = tri + 100; });
             k = k + 1;
           });
  }
  store(counts + pid * 3, rounds);
  store(counts + pid * 3 + 1, a);
  store(counts + pid * 3 + 2, tri);
}

// Triton's serialized_add: every program takes the lock, adds one to the
// 128 values, and gives the lock back.
void serialized_add(ptr<float> data, ptr<int32_t> lock) {
  auto ptrs = data + arange(0, 128);
  while_([&] { return atomic_cas(lock, 0, 1, {.sem = "acquire"}) == 1; }, [] {});
  store(ptrs, load(ptrs) + 1.0f);
  debug_barrier();
  atomic_xchg(lock, 0, {.sem = "release"});
}

std::vector<int32_t> run_triton_while(Device& d, const Kernel& k, int32_t init, int32_t bound, int32_t cutoff) {
  auto bi = d.upload(std::vector<int32_t>{init}), bb = d.upload(std::vector<int32_t>{bound}),
       bc = d.upload(std::vector<int32_t>{cutoff});
  auto oi = d.upload(std::vector<int32_t>{-1}), oinit = d.upload(std::vector<int32_t>{-1}),
       oj = d.upload(std::vector<int32_t>{-1});
  d(k, Grid{1}, bi, bb, bc, oi, oinit, oj);
  d.synchronize();
  return {oi.download<int32_t>()[0], oinit.download<int32_t>()[0], oj.download<int32_t>()[0]};
}

std::vector<float> tiles_input() {
  std::vector<float> x(4 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3) * 0.25f + (i % 64 == 5 ? 0.125f * float(i / 64) : 0.0f);
  return x;
}

struct TilesRun {
  std::vector<float> out;
  std::vector<int32_t> counts;
};

TilesRun run_tiles(Device& d, const Kernel& k, float limit) {
  auto x = d.upload(tiles_input());
  auto out = d.alloc<float>(4 * 64);
  auto counts = d.alloc<int32_t>(4 * 3);
  d(k, Grid{4}, x, out, counts, limit);
  d.synchronize();
  return {out.download<float>(), counts.download<int32_t>()};
}

}  // namespace

TEST_CASE("while_: Triton's test_while, a carried counter and a value the loop leaves alone", "[while][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(triton_while, {.name = "triton_while"});
  CHECK(run_triton_while(d, k, 5, 10, 3) == std::vector<int32_t>{6, 5, 10});
  CHECK(run_triton_while(d, k, 5, 10, 12) == std::vector<int32_t>{5, 5, 10});
  // No trips: the body's store never runs.
  CHECK(run_triton_while(d, k, 7, 0, 0) == std::vector<int32_t>{7, -1, 0});
}

TEST_CASE("while_: carried tiles, reductions in the condition, loops nested both ways", "[while][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(tiles, {.name = "tiles"});
  TilesRun r = run_tiles(d, k, 10.0f);
  std::vector<float> x = tiles_input();
  for (int p = 0; p < 4; ++p) {
    INFO("program " << p);
    float m = 0;
    for (int i = 0; i < 64; ++i) m = std::max(m, std::fabs(x[size_t(p * 64 + i)]));
    int rounds = 0;
    while (m <= 10.0f) m *= 2, ++rounds;
    CHECK(r.counts[size_t(p * 3)] == rounds);
    for (int i = 0; i < 64; ++i) CHECK(r.out[size_t(p * 64 + i)] == std::ldexp(x[size_t(p * 64 + i)], rounds));
    int a = p * 12 + 18, b = (p % 3) * 8;
    CHECK(r.counts[size_t(p * 3 + 1)] == (b == 0 ? a : std::gcd(a, b)));
    int tri = 0;
    for (int i = 0; i <= p; ++i)
      for (int kk = 0; kk <= i; ++kk) tri += kk + (kk % 2 == 0 ? 100 : 0);
    CHECK(r.counts[size_t(p * 3 + 2)] == tri);
  }
}

TEST_CASE("while_: a spin lock over atomic_cas serializes the programs", "[while][interp]") {
  Device d = Device::get("interp");
  Kernel k = compile(serialized_add, {.name = "serialized_add", .num_warps = 4});
  auto data = d.upload(std::vector<float>(128, 0.0f));
  auto lock = d.upload(std::vector<int32_t>{0});
  d(k, Grid{16}, data, lock);
  d.synchronize();
  CHECK(data.download<float>() == std::vector<float>(128, 16.0f));
  CHECK(lock.download<int32_t>()[0] == 0);
}

TEST_CASE("while_: the IR holds one while op with the carried values", "[while][frontend]") {
  Kernel k = compile(triton_while, {.name = "triton_while"});
  std::string ir = k.ir();
  CHECK(codegen_checks::count(ir, "while ") == 1);
  // curr and j are carried; init is not (the body reads it as it is).
  CHECK(ir.find("= while") != std::string::npos);
}

namespace {
int g_line = 0;  // the line of the while_ that fails, set while tracing

void assigns(ptr<int32_t> p) {
  scalar<int32_t> i = load(p);
  g_line = __LINE__ + 1;
  while_([&] { i = i + 1; return i < 10; }, [&] { store(p, i); });
}
void tile_cond(ptr<int32_t> p) {
  tile<int32_t> v = load(p + arange(0, 32));
  g_line = __LINE__ + 1;
  while_([&] { return v < 10; }, [&] { v = v + 1; });
  store(p + arange(0, 32), v);
}
void retyped(ptr<int32_t> p) {
  tile<int32_t> w = load(p + arange(0, 32));
  g_line = __LINE__ + 1;
  while_([&] { return load(p) < 10; }, [&] { w = load(p + arange(0, 64)); });
  store(p + arange(0, 32), w);
}
void user_throws(ptr<int32_t> p) {
  scalar<int32_t> i = load(p);
  while_([&] { return i < 10; },
         [&] {
           for (auto k : range(0, 4)) {
             i = i + k;
             throw std::runtime_error("user code threw");
           }
         });
}
}  // namespace

TEST_CASE("while_: errors name the line", "[while][frontend]") {
  auto here = [] { return "test_while.cpp:" + std::to_string(g_line); };
  CHECK_THROWS_WITH(compile(assigns, {.name = "assigns"}),
                    Catch::Contains(here()) && Catch::Contains("expected the condition to leave variables unchanged"));
  CHECK_THROWS_WITH(compile(tile_cond, {.name = "tile_cond"}),
                    Catch::Contains(here()) &&
                        Catch::Contains("expected the condition to return a scalar bool, found tile<32xi1>"));
  CHECK_THROWS_WITH(compile(retyped, {.name = "retyped"}),
                    Catch::Contains(here()) && Catch::Contains("expected a loop-carried variable to keep its type"));
  CHECK_THROWS_WITH(compile(user_throws, {.name = "user_throws"}), Catch::Contains("user code threw"));
  // The trace is left clean: the next kernel compiles.
  CHECK_NOTHROW(compile(triton_while, {.name = "triton_while"}));
}

TEST_CASE("while_: kernels compile for sm_90a and gfx942", "[while][codegen]") {
  for (Kernel k : {compile(triton_while, {.name = "triton_while"}), compile(tiles, {.name = "tiles"}),
                   compile(serialized_add, {.name = "serialized_add", .num_warps = 4})})
    codegen_checks::check_stores_on_sm90a_and_gfx942(k);
}

TEST_CASE("while_: the same results on the GPU as on the interpreter", "[while][gpu]") {
  REQUIRE_GPU();
  Kernel kw = compile(triton_while, {.name = "triton_while"});
  gpu_oracle::same_on_both<int32_t>([&](Device& d) {
    return std::vector<std::vector<int32_t>>{run_triton_while(d, kw, 5, 10, 3), run_triton_while(d, kw, 5, 10, 12),
                                             run_triton_while(d, kw, 7, 0, 0)};
  }, 0, 0);
  Kernel kt = compile(tiles, {.name = "tiles", .num_warps = 2});
  gpu_oracle::same_on_both<float>([&](Device& d) {
    TilesRun r = run_tiles(d, kt, 10.0f);
    return std::vector<std::vector<float>>{r.out, std::vector<float>(r.counts.begin(), r.counts.end())};
  }, 0, 0);
  // Many programs at once on the GPU: the lock serializes them.
  Kernel ks = compile(serialized_add, {.name = "serialized_add", .num_warps = 4});
  Device g = Device::get("cuda");
  auto data = g.upload(std::vector<float>(128, 0.0f));
  auto lock = g.upload(std::vector<int32_t>{0});
  g(ks, Grid{512}, data, lock);
  g.synchronize();
  CHECK(data.download<float>() == std::vector<float>(128, 512.0f));
  CHECK(lock.download<int32_t>()[0] == 0);
}
