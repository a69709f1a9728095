// Tiles whose dims are c x 2^k, c odd up to 15 (tl::is_tile_dim: 48 =
// 3 x 16, 40 = 5 x 8, 96, 160 ...), on the interpreter: a gemm over ragged
// M, N and K with such blocks (pointer form and tensor descriptors), a
// row reduction and a reshape of a 96-wide tile; each against a host
// reference. On GPU targets such tiles lay out with a repeat in registers:
// creation, elementwise ops, broadcasts, pointer loads and stores,
// reductions, transposes and reshapes of unit dims compile for every back
// end and give the interpreter's results on a GPU ([gpu]); other ops (a
// scan), two such dims in one tile, are refused naming the op and its line
// (the plan: docs/hopper-plan.md).
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "codegen/swizzled_tile.h"
#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

int g_line = 0;
#define MARK g_line = __LINE__;

// c = a b, a [M, K], b [K, N] of T, c [M, N] f32, all row-major; BM x BN
// x BK blocks, ragged. ACCUMULATE: c += a b, c read back in the epilogue
// by a plain load; where N leaves c's rows unaligned that load keeps its
// own layout and the accumulator is converted to it through shared memory
// (on sm_90a a [64, 96] one: a buffer of three [64, 32] panels).
template <class T, int BM, int BN, int BK, bool ACCUMULATE = false>
void gemm_ptrs(ptr<T> a, ptr<T> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto rows = program_id(0) * BM + arange(0, BM);                     // [BM] i32
  auto cols = program_id(1) * BN + arange(0, BN);                     // [BN] i32
  auto acc = zeros<float>({BM, BN});                                  // [BM, BN] f32
  for (auto k : range(0, K, BK)) {
    auto ks = k + arange(0, BK);                                      // [BK] i32
    auto at = load(a + col(rows) * K + row(ks), col(rows < M) & row(ks < K), T(0.0f));  // [BM, BK]
    auto bt = load(b + col(ks) * N + row(cols), col(ks < K) & row(cols < N), T(0.0f));  // [BK, BN]
    acc = dot(at, bt, acc);
  }
  auto cp = c + col(rows) * N + row(cols);                            // [BM, BN] ptr
  auto ok = col(rows < M) & row(cols < N);                            // [BM, BN] i1
  if constexpr (ACCUMULATE) store(cp, acc + load(cp, ok, 0.0f), ok);
  else store(cp, acc, ok);
}

// The same through tensor descriptors, of T (f32, or bf16 for sm_90a's
// tensor copies and wgmma: m64n160 on three warpgroups for 192 x 160).
template <class T, int BM, int BN, int BK>
void gemm_desc(ptr<T> a, ptr<T> b, ptr<float> c, scalar<int32_t> M, scalar<int32_t> N, scalar<int32_t> K) {
  auto da = make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto db = make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto dc = make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  auto m0 = program_id(0) * BM, n0 = program_id(1) * BN;
  auto acc = zeros<float>({BM, BN});                                  // [BM, BN] f32
  for (auto k : range(0, K, BK)) acc = dot(da.load({m0, k}), db.load({k, n0}), acc);
  dc.store({m0, n0}, acc);
}

// Per row of x [R, 96]: its sum, and its maximum through a reshape to
// [R, 3, 32] (max over the 32, then over the 3).
void rows96(ptr<float> x, ptr<float> sums, ptr<float> maxes) {
  auto r = arange(0, 4);                                              // [4] i32
  auto t = load(x + col(r) * 96 + row(arange(0, 96)));                // [4, 96] f32
  store(sums + r, sum(t, 1));
  auto parts = max(reshape(t, {4, 3, 32}), 2);                        // [4, 3] f32
  store(maxes + r, max(parts, 1));
}

void row_cumsums_of_3(ptr<float> x) {
  auto offs = col(arange(0, 64)) * 3 + row(arange(0, 3));             // [64, 3] i32
  auto y = load(x + offs);                                            // [64, 3] f32
  MARK store(x + offs, cumsum(y, 1));
}

// Reductions over a dim of c x 2^k, along it and across it, of x [32, 96]:
// row sums (the 96 repeat in registers, or on 12 warps in warps), column
// maxima, and the row maxima again through a transpose and reshapes that
// add and drop unit dims. rows[32], cols[96], again[32].
void odd_reductions(ptr<float> x, ptr<float> rows, ptr<float> cols, ptr<float> again) {
  auto r = arange(0, 32), c = arange(0, 96);                          // [32], [96] i32
  auto t = load(x + col(r) * 96 + row(c));                            // [32, 96] f32
  store(rows + r, sum(t, 1));                                         // [32]
  store(cols + c, max(t, 0));                                         // [96]
  auto tt = reshape(trans(t), {1, 96, 32});                           // [1, 96, 32] f32
  store(again + r, reshape(max(tt, 1), {32}));                        // [1, 32] -> [32]
}

void two_odd_dims(ptr<float> x) {
  MARK auto t = load(x + col(arange(0, 48)) * 40 + row(arange(0, 40)));  // [48, 40] f32
  store(x + col(arange(0, 48)) * 40 + row(arange(0, 40)), t * 2.0f);
}

// y = exp2(x) * s + (row - col) over rows [R, 96] of a [M, 96] matrix with
// a ragged last block (R = 16 rows a program).
void rows_of_96(ptr<float> x, ptr<float> y, scalar<int32_t> M, scalar<float> s) {
  auto rows = program_id(0) * 16 + arange(0, 16);                     // [16] i32
  auto cols = arange(0, 96);                                          // [96] i32
  auto at = col(rows) * 96 + row(cols);                               // [16, 96] i32
  auto ok = col(rows < M);                                            // [16, 1] i1
  auto v = load(x + at, ok, 0.0f);                                    // [16, 96] f32
  auto r = exp2(v) * s + cast<float>(col(rows) - row(cols));          // [16, 96] f32
  store(y + at, r, ok);
}

// out[0:48] = sum over k of x[k, 0:48] * (k + 1): a loop carrying a [48]
// tile, loads of [48] rows through the loop.
void carried_48(ptr<float> x, ptr<float> out, scalar<int32_t> K) {
  auto offs = arange(0, 48);                                          // [48] i32
  auto acc = zeros<float>({48});                                      // [48] f32
  for (auto k : range(0, K)) acc = acc + load(x + k * 48 + offs) * cast<float>(k + 1);
  store(out + offs, acc);
}

// A [192, 64] block (3 x 64 rows) copied with a ragged row count, and a
// [64, 160] one (5 x 32 columns): the GEMM tile's operand shapes.
template <int R, int C>
void copy_block(ptr<float> x, ptr<float> y, scalar<int32_t> rows_n) {
  auto rows = arange(0, R), cols = arange(0, C);
  auto ok = col(rows < rows_n);
  store(y + col(rows) * C + row(cols), load(x + col(rows) * C + row(cols), ok, -1.0f) + 1.0f);
}

// out = the sum of x's [BM, BN] row blocks (x [M, BN], ragged M): loads of
// [BM, BN] pipelined through shared-memory slots, rows of c x 2^k.
template <class T, int BM, int BN>
void block_sums(ptr<T> x, ptr<float> out, scalar<int32_t> M) {
  auto rows = arange(0, BM), cols = arange(0, BN);                    // [BM], [BN] i32
  auto acc = zeros<float>({BM, BN});                                  // [BM, BN] f32
  for (auto i : range(0, M, BM, {.num_stages = 3}))
    acc = acc + cast<float>(load(x + col(i + rows) * BN + row(cols), col(i + rows < M), 0.0f));
  store(out + col(rows) * BN + row(cols), acc);
}

std::vector<float> ramp(size_t n, float scale, int mod) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int(i * 7 % size_t(mod)) - mod / 2) * scale;
  return v;
}

template <class K>
void check_gemm(K kernel, int bm, int bn) {
  Device dev = Device::get("interp");
  Kernel k = compile(kernel);
  for (auto [M, N, Kd] : std::vector<std::array<int, 3>>{{48, 40, 24}, {50, 37, 30}, {97, 81, 7}, {1, 1, 1}}) {
    auto ha = ramp(size_t(M * Kd), 0.25f, 13), hb = ramp(size_t(Kd * N), 0.5f, 11);
    Buffer a = dev.upload(ha), b = dev.upload(hb), c = dev.upload(std::vector<float>(size_t(M * N), -1.0f));
    dev(k, Grid{uint32_t((M + bm - 1) / bm), uint32_t((N + bn - 1) / bn)}, a, b, c, M, N, Kd);
    dev.synchronize();
    auto hc = c.download<float>();
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double want = 0;
        for (int l = 0; l < Kd; ++l) want += double(ha[size_t(i * Kd + l)]) * hb[size_t(l * N + j)];
        INFO(M << " x " << N << " x " << Kd << " at (" << i << ", " << j << ")");
        REQUIRE(hc[size_t(i * N + j)] == Approx(want).margin(1e-4));
      }
  }
}

}  // namespace

TEST_CASE("tile dims: c x 2^k is a tile dim, up to c = 15", "[frontend]") {
  for (int64_t d : {1, 2, 3, 5, 6, 12, 15, 48, 96, 160, 192, 240, 15 << 10}) CHECK(is_tile_dim(d));
  for (int64_t d : {0, -4, 17, 34, 100, 200}) CHECK_FALSE(is_tile_dim(d));
}

TEST_CASE("tile dims: a gemm on 48 x 40 x 24 blocks, ragged, on the interpreter", "[frontend][run]") {
  check_gemm(gemm_ptrs<float, 48, 40, 24>, 48, 40);
}

TEST_CASE("tile dims: a gemm through tensor descriptors on 48 x 40 x 24 blocks", "[frontend][run][descriptor]") {
  check_gemm(gemm_desc<float, 48, 40, 24>, 48, 40);
}

TEST_CASE("tile dims: a 96-wide row's sum, and its max through a reshape", "[frontend][run]") {
  Device dev = Device::get("interp");
  auto hx = ramp(4 * 96, 0.125f, 29);
  Buffer x = dev.upload(hx), s = dev.upload(std::vector<float>(4)), m = dev.upload(std::vector<float>(4));
  dev(compile(rows96), Grid{1}, x, s, m);
  dev.synchronize();
  auto hs = s.download<float>(), hm = m.download<float>();
  for (int r = 0; r < 4; ++r) {
    double want_s = 0;
    float want_m = -INFINITY;
    for (int j = 0; j < 96; ++j) want_s += hx[size_t(r * 96 + j)], want_m = std::max(want_m, hx[size_t(r * 96 + j)]);
    CHECK(hs[size_t(r)] == Approx(want_s));
    CHECK(hm[size_t(r)] == want_m);
  }
}

TEST_CASE("tile dims: elementwise ops, broadcasts, loads and stores compile for every back end", "[codegen]") {
  std::vector<Kernel> ks = {compile(rows_of_96), compile(carried_48), compile(copy_block<192, 64>),
                            compile(copy_block<64, 160>, {.num_warps = 8}),
                            // 12 warps (three warpgroups) repeat 3 x 4 warps.
                            compile(rows_of_96, {.num_warps = 12}), compile(carried_48, {.num_warps = 12}),
                            compile(copy_block<192, 160>, {.num_warps = 12}), compile(copy_block<64, 64>, {.num_warps = 12}),
                            compile(odd_reductions), compile(odd_reductions, {.num_warps = 12})};
  for (const Kernel& k : ks)
    for (const char* target : {"sm_90a", "sm_80", "gfx942", "gfx1100"}) {
      INFO(k.name() << " for " << target);
      auto c = codegen::compile(*k.impl(), codegen_checks::aligned(k), target);
      if (std::string(target).rfind("sm_", 0) == 0) codegen_checks::check_assembles(c.assembly, target);
    }
}

TEST_CASE("tile dims: GPU targets refuse other ops on such tiles, naming the op", "[frontend][codegen]") {
  Kernel sums = compile(row_cumsums_of_3);
  int sums_line = g_line;
  Kernel two = compile(two_odd_dims);
  int two_line = g_line;
  for (const char* target : {"sm_90a", "sm_80", "gfx942"}) {
    INFO(target);
    CHECK_THROWS_WITH(codegen::compile(*sums.impl(), codegen_checks::aligned(sums), target),
                      Catch::Contains("test_tile_dims.cpp:" + std::to_string(sums_line) +
                                      ": 'scan' on tile<64x3xf32>: " + target +
                                      " lowers tiles whose dims are not powers of two for creation, elementwise ops, "
                                      "broadcasts, loads, stores, reductions, transposes, reshapes of unit dims and "
                                      "warpgroup dots only, so far (the interpreter runs them all)"));
  }
  CHECK_THROWS_WITH(codegen::compile(*two.impl(), codegen_checks::aligned(two), "sm_90a"),
                    Catch::Contains("test_tile_dims.cpp:" + std::to_string(two_line) + ": '") &&
                        Catch::Contains("on tile<48x40xptr<f32>>: sm_90a lowers tiles with at most one dim that is not a power of two, so far"));
}

TEST_CASE("tile dims: swizzled buffers of c x 2^k rows, in panels or few rows, map each offset where it is stored",
          "[layout]") {
  // {rows, cols, contiguous dim, element bytes}: rows of c x 2^k in two or
  // four panels ([192, 128] bf16 and f32), both dims c x 2^k (five and six
  // panels), rows whose power-of-two part is below the swizzle's 8-row
  // pattern ([12, 64]: 4 rows, [6, 64], [3, 64]), stored along dim 0.
  const std::vector<std::array<int, 4>> tiles = {
      {192, 128, 1, 2}, {192, 128, 1, 4}, {96, 128, 1, 2}, {24, 256, 1, 2}, {192, 160, 1, 2}, {192, 384, 1, 2},
      {12, 64, 1, 2},   {6, 64, 1, 2},    {3, 64, 1, 4},   {12, 128, 1, 2}, {128, 192, 0, 2}, {64, 96, 1, 2},
      {192, 64, 1, 2},  {128, 64, 1, 2}};
  for (auto [r, c, contiguous, eb] : tiles) {
    INFO(r << " x " << c << " contiguous along " << contiguous << ", " << eb << "-byte elements");
    auto t = codegen::SwizzledTile::plan(r, c, contiguous, eb);
    REQUIRE(t.layout_refusal().empty());
    ir::LinearLayout l = t.layout();
    REQUIRE(l.in_size(ir::kOffset) == r * c);
    for (int o = 0; o < r * c; ++o) {
      auto at = l.apply({{ir::kOffset, o}});
      REQUIRE(t.elem_offset(at[0], at[1]) == o);
    }
  }
  // Rows of a power of two keep the full pattern, however few.
  CHECK(codegen::SwizzledTile::plan(4, 64, 1, 2).max_phase == 8);
  CHECK(codegen::SwizzledTile::plan(12, 64, 1, 2).max_phase == 4);
}

TEST_CASE("tile dims: pipelined loads of c x 2^k rows in panels or fewer than 8 rows, and a 192 x 128 x 128 gemm",
          "[codegen]") {
  // Each once threw from the buffer's layout, naming neither op nor line:
  // [192, 128] bf16 slots hold two panels of all 192 rows, the f32 result
  // four; a [12, 64] slot's rows repeat every 4.
  for (const Kernel& k : {compile(block_sums<bf16, 12, 64>), compile(block_sums<float, 3, 64>),
                          compile(block_sums<bf16, 96, 128>, {.num_warps = 8}), compile(block_sums<float, 48, 128>),
                          compile(block_sums<bf16, 192, 128>, {.num_warps = 12})})
    for (const char* target : {"sm_90a", "sm_80"}) {
      INFO(k.name() << " for " << target);
      auto c = codegen::compile(*k.impl(), codegen_checks::aligned(k), target);
      CHECK(codegen_checks::count(c.assembly, R"(cp\.async\.cg\.shared\.global|cp\.async\.ca\.shared\.global)") > 0);
      codegen_checks::check_assembles(c.assembly, target);
    }
  Kernel desc = compile(gemm_desc<bf16, 192, 128, 128>, {.num_warps = 12, .num_stages = 2});
  auto c = codegen::compile(*desc.impl(), codegen_checks::aligned(desc), "sm_90a");
  CHECK(codegen_checks::count(c.assembly, R"(wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.bf16\.bf16)") > 0);
  // The [192, 128] f32 result: four panels of 32, a tensor store each.
  CHECK(codegen_checks::count(c.assembly, R"(cp\.async\.bulk\.tensor\.2d\.global\.shared::cta)") == 4);
  codegen_checks::check_assembles(c.assembly, "sm_90a");
}

TEST_CASE("tile dims: a 64 x 96 accumulator read back by a load of unaligned rows goes through a buffer of panels",
          "[codegen]") {
  // Once refused ("a row-major buffer of [64, ...] with a dimension after
  // the first that is not a power of two is not lowered yet").
  // (sm_80 lowers dots of such tiles on no instruction yet.)
  Kernel k = compile(gemm_ptrs<bf16, 64, 96, 32, true>);
  codegen::Specialization spec = codegen_checks::aligned(k);
  spec.args[4] = codegen::int_arg_facts(380);  // N: rows of 1520 bytes
  auto c = codegen::compile(*k.impl(), spec, "sm_90a");
  CHECK(codegen_checks::count(c.assembly, R"(wgmma\.mma_async\.sync\.aligned\.m64n96k16\.f32\.bf16\.bf16)") > 0);
  CHECK(codegen_checks::count(c.assembly, R"(st\.shared)") > 0);
  codegen_checks::check_assembles(c.assembly, "sm_90a");
}

namespace {
void run_all(const Kernel& k96, const Kernel& k48, const Kernel& k192, const Kernel& k160);
}

TEST_CASE("tile dims: the same results on the GPU as on the interpreter", "[gpu]") {
  REQUIRE_GPU();
  Kernel k96 = compile(rows_of_96), k48 = compile(carried_48);
  Kernel k192 = compile(copy_block<192, 64>, {.num_warps = 8}), k160 = compile(copy_block<64, 160>);
  run_all(k96, k48, k192, k160);
  // 12 warps: three warpgroups, the warps' repeat along 192 or replicating.
  run_all(compile(rows_of_96, {.num_warps = 12}), compile(carried_48, {.num_warps = 12}),
          compile(copy_block<192, 64>, {.num_warps = 12}), compile(copy_block<64, 160>, {.num_warps = 12}));
  // Reductions along and across a dim of 96, on 4 warps and on 12 (the
  // warps' repeat then along the 96: an exchange of three groups).
  for (int warps : {4, 12}) {
    INFO(warps << " warps");
    Kernel k = compile(odd_reductions, {.num_warps = warps});
    gpu_oracle::same_on_both<float>([&](Device& d) {
      Buffer x = d.upload(ramp(32 * 96, 0.375f, 89)), rows = d.upload(std::vector<float>(32)),
             cols = d.upload(std::vector<float>(96)), again = d.upload(std::vector<float>(32));
      d(k, Grid{1}, x, rows, cols, again);
      d.synchronize();
      return std::vector<std::vector<float>>{rows.download<float>(), cols.download<float>(), again.download<float>()};
    }, 1e-5, 1e-5);
  }
  Kernel k12 = compile(copy_block<192, 160>, {.num_warps = 12});
  gpu_oracle::same_on_both<float>([&](Device& d) {
    Buffer a = d.upload(ramp(192 * 160, 1.0f, 103)), b = d.upload(std::vector<float>(192 * 160, 7.0f));
    d(k12, Grid{1}, a, b, 131);
    d.synchronize();
    return std::vector<std::vector<float>>{b.download<float>()};
  }, 0, 0);
}

namespace {
void run_all(const Kernel& k96, const Kernel& k48, const Kernel& k192, const Kernel& k160) {
  gpu_oracle::same_on_both<float>([&](Device& d) {
    std::vector<std::vector<float>> outs;
    const int M = 37;
    Buffer x = d.upload(ramp(size_t(M * 96), 0.0625f, 31)), y = d.upload(std::vector<float>(size_t(M * 96), -5.0f));
    d(k96, Grid{3}, x, y, M, 0.5f);
    Buffer xs = d.upload(ramp(5 * 48, 0.25f, 17)), o = d.upload(std::vector<float>(48));
    d(k48, Grid{1}, xs, o, 5);
    Buffer a = d.upload(ramp(192 * 64, 1.0f, 101)), b = d.upload(std::vector<float>(192 * 64, 7.0f));
    d(k192, Grid{1}, a, b, 150);
    Buffer c = d.upload(ramp(64 * 160, 1.0f, 97)), e = d.upload(std::vector<float>(64 * 160, 7.0f));
    d(k160, Grid{1}, c, e, 64);
    d.synchronize();
    for (Buffer* out : {&y, &o, &b, &e}) outs.push_back(out->download<float>());
    return outs;
  }, 1e-6, 1e-6);
}
}  // namespace

TEST_CASE("tile dims: a 192 x 160 x 64 gemm on sm_90a: tensor copies in and out, m64n160 wgmma on three warpgroups", "[codegen]") {
  Kernel k = compile(gemm_desc<bf16, 192, 160, 64>, {.num_warps = 12});
  auto c = codegen::compile(*k.impl(), codegen_checks::aligned(k), "sm_90a");
  CHECK(codegen_checks::count(c.assembly, R"(wgmma\.mma_async\.sync\.aligned\.m64n160k16\.f32\.bf16\.bf16)") > 0);
  CHECK(codegen_checks::count(c.assembly, R"(cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global)") > 0);
  // The [192, 160] result goes out through a buffer of five panels (its
  // offsets repeat rows, then panels) as five tensor stores of [192, 32].
  CHECK(codegen_checks::count(c.assembly, R"(cp\.async\.bulk\.tensor\.2d\.global\.shared::cta)") == 5);
  codegen_checks::check_assembles(c.assembly, "sm_90a");
}

namespace {
// Kernel `k` (gemm_ptrs or gemm_desc over bf16, BM x BN blocks) on each
// M x N x K of `shapes`, c first filled with `c0`: the same c on the GPU as
// on the interpreter.
void same_gemm_on_both(const Kernel& k, int bm, int bn, const std::vector<std::array<int, 3>>& shapes,
                       float c0_scale) {
  for (auto [M, N, K] : shapes) {
    INFO(k.name() << " at " << M << " x " << N << " x " << K);
    std::vector<bf16> ha(size_t(M * K)), hb(size_t(K * N));
    for (size_t i = 0; i < ha.size(); ++i) ha[i] = bf16(float(int(i * 7 % 13) - 6) * 0.25f);
    for (size_t i = 0; i < hb.size(); ++i) hb[i] = bf16(float(int(i * 5 % 11) - 5) * 0.5f);
    gpu_oracle::same_on_both<float>([&](Device& d) {
      Buffer a = d.upload(ha), b = d.upload(hb), cb = d.upload(ramp(size_t(M * N), c0_scale, 29));
      d(k, Grid{uint32_t((M + bm - 1) / bm), uint32_t((N + bn - 1) / bn)}, a, b, cb, M, N, K);
      d.synchronize();
      return std::vector<std::vector<float>>{cb.download<float>()};
    }, 1e-5, 1e-4);
  }
}
}  // namespace

TEST_CASE("tile dims: c += a b on 64 x 96 blocks, rows aligned or not, the same on the GPU as on the interpreter", "[gpu]") {
  REQUIRE_GPU();
  same_gemm_on_both(compile(gemm_ptrs<bf16, 64, 96, 32, true>), 64, 96, {{256, 384, 96}, {200, 380, 70}, {64, 97, 32}},
                    0.125f);
}

TEST_CASE("tile dims: a 192 x 160 x 64 gemm, the same on the GPU as on the interpreter", "[gpu]") {
  REQUIRE_GPU();
  same_gemm_on_both(compile(gemm_desc<bf16, 192, 160, 64>, {.num_warps = 12}), 192, 160,
                    {{192, 160, 64}, {400, 333, 200}, {200, 480, 16}}, 1.0f);
}
