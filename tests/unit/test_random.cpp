// Random numbers (tiledsl/random.h): Philox 4x32 and 4x64 against
// Random123's reference answers and a host implementation of the test's own (bit for
// bit), rand's uniforms as Triton computes them from the same bits, randn's
// normals against the host's Box-Muller within a few ulp and by their
// moments, the seed's widths and signs, a dropout kernel as Triton's
// tutorial writes it, what an i64 offset or zero rounds say, the lowering
// for sm_90a and gfx942, and the GPU against the interpreter.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

constexpr uint32_t kMask = 0xffffffffu;

// Philox 4x32 as Salmon et al. define it (the test's own, for reference).
std::array<uint32_t, 4> philox_host(std::array<uint32_t, 4> c, uint32_t k0, uint32_t k1, int rounds = 10) {
  for (int r = 0; r < rounds; ++r) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k1, uint32_t(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

std::array<uint64_t, 4> philox64_host(std::array<uint64_t, 4> c, uint64_t k0, uint64_t k1, int rounds = 10) {
  for (int r = 0; r < rounds; ++r) {
    unsigned __int128 p0 = (unsigned __int128)0xD2E7470EE14C6C93ull * c[0];
    unsigned __int128 p1 = (unsigned __int128)0xCA5A826395121157ull * c[2];
    c = {uint64_t(p1 >> 64) ^ c[1] ^ k0, uint64_t(p1), uint64_t(p0 >> 64) ^ c[3] ^ k1, uint64_t(p0)};
    k0 += 0x9E3779B97F4A7C15ull;
    k1 += 0xBB67AE8584CAA73Bull;
  }
  return c;
}

float uniform64_host(uint64_t bits) {
  int64_t i = int64_t(bits);
  if (i < 0) i = ~i;
  return float(i) * 1.0842020432385337e-19f;
}

float uniform_host(uint32_t bits) {
  int32_t i = int32_t(bits);
  if (i < 0) i = ~i;
  return float(i) * 4.6566127342e-10f;
}

// Rows of four counter words in, rows of four words out, keyed by `seed`.
void philox_rows(ptr<uint32_t> out, ptr<uint32_t> ctr, scalar<uint64_t> seed) {
  auto row = arange(0, 4) * 4;  // [4] i32
  auto [r0, r1, r2, r3] = philox(seed, load(ctr + row), load(ctr + row + 1), load(ctr + row + 2), load(ctr + row + 3));
  store(out + row, r0);
  store(out + row + 1, r1);
  store(out + row + 2, r2);
  store(out + row + 3, r3);
}

// Philox 4x64 on rows of four counter words under the key (k0, k1).
void philox64_rows(ptr<uint64_t> out, ptr<uint64_t> ctr, scalar<uint64_t> k0, scalar<uint64_t> k1) {
  auto row = arange(0, 4) * 4;  // [4] i32
  auto r = philox_impl(load(ctr + row), load(ctr + row + 1), load(ctr + row + 2), load(ctr + row + 3), k0, k1);
  for (int j = 0; j < 4; ++j) store(out + row + j, r[size_t(j)]);
}

// 64-bit offsets (base + [0, 64)): Philox 4x64, keyed by the seed and zero.
void draws64(ptr<uint64_t> bits, ptr<float> uni, scalar<int64_t> seed, scalar<int64_t> base) {
  auto i = arange(0, 64);  // [64] i32
  auto offs = base + cast<int64_t>(i);
  auto r = randint4x(seed, offs);
  auto u = rand4x(seed, offs);
  for (int j = 0; j < 4; ++j) {
    store(bits + i * 4 + j, r[size_t(j)]);
    store(uni + i * 4 + j, u[size_t(j)]);
  }
}

// Every generator at offsets base + [0, 256), seeded by an i32 parameter.
template <int ROUNDS>
void draws(ptr<uint32_t> bits, ptr<float> uni, ptr<float> nrm, scalar<int32_t> seed, scalar<int32_t> base) {
  auto i = arange(0, 256);  // [256] i32
  auto offs = base + i;
  auto [b0, b1, b2, b3] = randint4x(seed, offs, ROUNDS);
  store(bits + i * 4, b0);
  store(bits + i * 4 + 1, b1);
  store(bits + i * 4 + 2, b2);
  store(bits + i * 4 + 3, b3);
  auto [u0, u1, u2, u3] = rand4x(seed, offs, ROUNDS);
  store(uni + i * 5, u0);
  store(uni + i * 5 + 1, u1);
  store(uni + i * 5 + 2, u2);
  store(uni + i * 5 + 3, u3);
  store(uni + i * 5 + 4, rand(seed, offs, ROUNDS));
  auto [n0, n1, n2, n3] = randn4x(seed, offs, ROUNDS);
  store(nrm + i * 5, n0);
  store(nrm + i * 5 + 1, n1);
  store(nrm + i * 5 + 2, n2);
  store(nrm + i * 5 + 3, n3);
  store(nrm + i * 5 + 4, randn(seed, offs, ROUNDS));
}

// Triton's tutorial "low-memory dropout": the mask is drawn from the seed,
// never stored.
void seeded_dropout(ptr<float> out, ptr<float> x, scalar<int32_t> n, scalar<float> p, scalar<int32_t> seed) {
  auto offs = program_id(0) * 128 + arange(0, 128);  // [128] i32
  auto mask = offs < n;
  auto v = load(x + offs, mask);
  auto keep = rand(seed, offs) > p;
  store(out + offs, where(keep, v / (1.0f - p), 0.0f), mask);
}

// A u64 seed and u32 offsets, and a C++ integer seed.
void seeds(ptr<uint32_t> out, scalar<uint64_t> seed, scalar<int64_t> signed_seed) {
  auto i = arange(0, 16);  // [16] i32
  auto u = cast<uint32_t>(i);
  store(out + i, randint(seed, u));
  store(out + 16 + i, randint(signed_seed, i));
  store(out + 32 + i, randint(uint64_t(0x123456789abcdef0ull), i));
  store(out + 48 + i, randint(-5, i));
}


}  // namespace

TEST_CASE("random: Philox 4x32-10 gives Random123's reference answers", "[rng]") {
  Device dev = Device::get("interp");
  Kernel k = compile(philox_rows, {.name = "philox_rows"});
  // Counter and key of Random123's known-answer tests for philox4x32_10.
  std::vector<uint32_t> ctr = {0, 0, 0, 0, kMask, kMask, kMask, kMask, 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344,
                               1, 2, 3, 4};
  std::array<std::array<uint32_t, 4>, 3> expected = {{{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
                                                      {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
                                                      {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}};
  std::array<uint64_t, 3> keys = {0, ~uint64_t(0), (uint64_t(0x299f31d0) << 32) | 0xa4093822};
  for (size_t t = 0; t < keys.size(); ++t) {
    Buffer out = dev.alloc<uint32_t>(16), c = dev.upload(ctr);
    dev(k, Grid{1}, out, c, keys[t]);
    auto got = out.download<uint32_t>();
    for (int j = 0; j < 4; ++j) CHECK(got[t * 4 + j] == expected[t][j]);
    // The other rows under the same key, as the host computes them.
    for (size_t row = 0; row < 4; ++row) {
      auto want = philox_host({ctr[row * 4], ctr[row * 4 + 1], ctr[row * 4 + 2], ctr[row * 4 + 3]}, uint32_t(keys[t]),
                              uint32_t(keys[t] >> 32));
      for (int j = 0; j < 4; ++j) CHECK(got[row * 4 + j] == want[j]);
    }
  }
}

TEST_CASE("random: Philox 4x64-10 gives Random123's reference answers; 64-bit offsets draw from it", "[rng]") {
  Device dev = Device::get("interp");
  Kernel k = compile(philox64_rows, {.name = "philox64_rows"});
  const uint64_t m = ~uint64_t(0);
  std::vector<uint64_t> ctr = {0, 0, 0, 0, m, m, m, m, 0x243f6a8885a308d3ull, 0x13198a2e03707344ull,
                               0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull, 1, 2, 3, 4};
  std::array<std::array<uint64_t, 2>, 3> keys = {{{0, 0}, {m, m}, {0x452821e638d01377ull, 0xbe5466cf34e90c6cull}}};
  std::array<std::array<uint64_t, 4>, 3> expected = {
      {{0x16554d9eca36314cull, 0xdb20fe9d672d0fdcull, 0xd7e772cee186176bull, 0x7e68b68aec7ba23bull},
       {0x87b092c3013fe90bull, 0x438c3c67be8d0224ull, 0x9cc7d7c69cd777b6ull, 0xa09caebf594f0ba0ull},
       {0xa528f45403e61d95ull, 0x38c72dbd566e9788ull, 0xa5a1610e72fd18b5ull, 0x57bd43b5e52b7fe6ull}}};
  for (size_t t = 0; t < keys.size(); ++t) {
    Buffer out = dev.alloc<uint64_t>(16), c = dev.upload(ctr);
    dev(k, Grid{1}, out, c, keys[t][0], keys[t][1]);
    auto got = out.download<uint64_t>();
    for (size_t j = 0; j < 4; ++j) CHECK(got[t * 4 + j] == expected[t][j]);
    for (size_t row = 0; row < 4; ++row) {
      auto want = philox64_host({ctr[row * 4], ctr[row * 4 + 1], ctr[row * 4 + 2], ctr[row * 4 + 3]}, keys[t][0],
                                keys[t][1]);
      for (size_t j = 0; j < 4; ++j) CHECK(got[row * 4 + j] == want[j]);
    }
  }

  Kernel d = compile(draws64, {.name = "draws64"});
  const int64_t seed = -987654321, base = (int64_t(1) << 40) + 5;
  Buffer bits = dev.alloc<uint64_t>(256), uni = dev.alloc<float>(256);
  dev(d, Grid{1}, bits, uni, seed, base);
  auto b = bits.download<uint64_t>();
  auto u = uni.download<float>();
  for (size_t i = 0; i < 64; ++i) {
    auto want = philox64_host({uint64_t(base) + i, 0, 0, 0}, uint64_t(seed), 0);
    for (size_t j = 0; j < 4; ++j) {
      REQUIRE(b[i * 4 + j] == want[j]);
      REQUIRE(u[i * 4 + j] == uniform64_host(want[j]));
      REQUIRE(u[i * 4 + j] < 1.0f);
    }
  }
}

TEST_CASE("random: randint, rand and randn draw what Triton's do", "[rng]") {
  Device dev = Device::get("interp");
  auto check = [&](Kernel k, int rounds, int32_t seed, int32_t base) {
    Buffer bits = dev.alloc<uint32_t>(256 * 4), uni = dev.alloc<float>(256 * 5), nrm = dev.alloc<float>(256 * 5);
    dev(k, Grid{1}, bits, uni, nrm, seed, base);
    auto b = bits.download<uint32_t>();
    auto u = uni.download<float>();
    auto n = nrm.download<float>();
    const uint64_t s = uint64_t(int64_t(seed));  // sign-extended, as Triton's .to(tl.uint64)
    double sum = 0, sum2 = 0;
    for (int i = 0; i < 256; ++i) {
      auto want = philox_host({uint32_t(base + i), 0, 0, 0}, uint32_t(s), uint32_t(s >> 32), rounds);
      for (int j = 0; j < 4; ++j) {
        REQUIRE(b[size_t(i) * 4 + j] == want[size_t(j)]);
        float uj = uniform_host(want[size_t(j)]);
        REQUIRE(u[size_t(i) * 5 + j] == uj);
        REQUIRE(uj >= 0.0f);
        REQUIRE(uj < 1.0f);
      }
      REQUIRE(u[size_t(i) * 5 + 4] == u[size_t(i) * 5]);
      // Box-Muller on the host, in double: a few ulp of f32 apart.
      for (int pair = 0; pair < 2; ++pair) {
        double u1 = std::max(1.0e-7, double(uniform_host(want[size_t(2 * pair)])));
        double u2 = uniform_host(want[size_t(2 * pair + 1)]);
        double r = std::sqrt(-2.0 * std::log(u1)), th = 6.283185307179586 * u2;
        CHECK(n[size_t(i) * 5 + 2 * pair] == Approx(r * std::cos(th)).margin(1e-5).epsilon(1e-5));
        CHECK(n[size_t(i) * 5 + 2 * pair + 1] == Approx(r * std::sin(th)).margin(1e-5).epsilon(1e-5));
      }
      REQUIRE(n[size_t(i) * 5 + 4] == n[size_t(i) * 5]);
      for (int j = 0; j < 4; ++j) sum += n[size_t(i) * 5 + j], sum2 += double(n[size_t(i) * 5 + j]) * n[size_t(i) * 5 + j];
    }
    // 1024 standard normals: mean within 4 sigma (0.125) of 0, variance near 1.
    double mean = sum / 1024, var = sum2 / 1024 - mean * mean;
    CHECK(std::abs(mean) < 0.125);
    CHECK(var > 0.8);
    CHECK(var < 1.2);
  };
  check(compile(draws<10>, {.name = "draws"}), 10, 12345, 0);
  check(compile(draws<10>, {.name = "draws"}), 10, -7, 1 << 20);
  check(compile(draws<7>, {.name = "draws7"}), 7, 42, 3);
}

TEST_CASE("random: seeds of every width, and a C++ integer seed", "[rng]") {
  Device dev = Device::get("interp");
  Kernel k = compile(seeds, {.name = "seeds"});
  Buffer out = dev.alloc<uint32_t>(64);
  const uint64_t useed = 0xfedcba9876543210ull;
  const int64_t sseed = -123456789012345;
  dev(k, Grid{1}, out, useed, sseed);
  auto got = out.download<uint32_t>();
  auto word = [](uint64_t seed, uint32_t offset) { return philox_host({offset, 0, 0, 0}, uint32_t(seed), uint32_t(seed >> 32))[0]; };
  for (uint32_t i = 0; i < 16; ++i) {
    CHECK(got[i] == word(useed, i));
    CHECK(got[16 + i] == word(uint64_t(sseed), i));
    CHECK(got[32 + i] == word(0x123456789abcdef0ull, i));
    CHECK(got[48 + i] == word(uint64_t(int64_t(-5)), i));
  }
}

TEST_CASE("random: Triton's seeded dropout", "[rng]") {
  Device dev = Device::get("interp");
  Kernel k = compile(seeded_dropout, {.name = "seeded_dropout"});
  const int n = 1000;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[size_t(i)] = float(i % 13) + 1.0f;
  Buffer bx = dev.upload(x), o1 = dev.alloc<float>(n), o2 = dev.alloc<float>(n);
  dev(k, Grid{uint32_t(cdiv(n, 128))}, o1, bx, n, 0.5f, 123);
  dev(k, Grid{uint32_t(cdiv(n, 128))}, o2, bx, n, 0.5f, 123);
  auto a = o1.download<float>(), b = o2.download<float>();
  CHECK(a == b);  // the same seed, the same mask
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    bool keep = uniform_host(philox_host({uint32_t(i), 0, 0, 0}, 123, 0)[0]) > 0.5f;
    REQUIRE(a[size_t(i)] == (keep ? x[size_t(i)] / 0.5f : 0.0f));
    kept += keep;
  }
  CHECK(kept > 430);
  CHECK(kept < 570);
}

namespace {
void zero_rounds(ptr<uint32_t> out) { store(out + arange(0, 4), randint(1, arange(0, 4), 0)); }
}  // namespace

TEST_CASE("random: zero rounds is an error at the caller's line", "[rng]") {
  CHECK_THROWS_WITH(compile(zero_rounds, {.name = "z"}),
                    Catch::Contains("test_random.cpp") && Catch::Contains("philox") &&
                        Catch::Contains("expected at least one round, found 0"));
}

TEST_CASE("random: the generators compile for sm_90a and gfx942", "[rng][codegen]") {
  Kernel k = compile(draws<10>, {.name = "draws"});
  codegen_checks::check_stores_on_sm90a_and_gfx942(k);
  std::string ptx = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), "sm_90a", codegen::Stage::Asm);
  CHECK(codegen_checks::count(ptx, R"(mul\.hi\.u32)") > 0);
  codegen_checks::check_stores_on_sm90a_and_gfx942(compile(seeded_dropout, {.name = "seeded_dropout"}));
  Kernel k64 = compile(draws64, {.name = "draws64"});
  codegen_checks::check_stores_on_sm90a_and_gfx942(k64);
  ptx = codegen::emit_stage(*k64.impl(), codegen_checks::aligned(k64), "sm_90a", codegen::Stage::Asm);
  CHECK(codegen_checks::count(ptx, R"(mul\.hi\.u64)") > 0);
}

TEST_CASE("random: the GPU draws what the interpreter draws", "[rng][gpu]") {
  REQUIRE_GPU();
  Kernel k = compile(draws<10>, {.name = "draws"});
  gpu_oracle::same_on_both<uint32_t>(
      [&](Device& d) {
        Buffer bits = d.alloc<uint32_t>(256 * 4), uni = d.alloc<float>(256 * 5), nrm = d.alloc<float>(256 * 5);
        d(k, Grid{1}, bits, uni, nrm, 2024, 77);
        d.synchronize();
        return std::vector<std::vector<uint32_t>>{bits.download<uint32_t>()};
      },
      0, 0);
  gpu_oracle::same_on_both<float>(
      [&](Device& d) {
        Buffer bits = d.alloc<uint32_t>(256 * 4), uni = d.alloc<float>(256 * 5), nrm = d.alloc<float>(256 * 5);
        d(k, Grid{1}, bits, uni, nrm, 2024, 77);
        d.synchronize();
        return std::vector<std::vector<float>>{uni.download<float>(), nrm.download<float>()};
      },
      1e-5, 1e-5);
}
