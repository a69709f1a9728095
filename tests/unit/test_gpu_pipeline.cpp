// Loops whose loads are pipelined into registers (pipeline_plan.h): copies
// issued iterations ahead into shared memory, read back where the load
// stands. [gpu]: the same kernels on the GPU and the interpreter, at trip
// counts around the depth, with masks whose `other` is not zero, 1-D and
// 2-D tiles, column-major tiles and a tile smaller than the block.
// [codegen]: the PTX shows the copies and assembles without spills.
#include <catch2/catch.hpp>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {
using namespace gpu_oracle;

// Each program walks rows pid, pid + P, ... of `in` ([rows, n] bf16),
// storing 2x each row and its sum. The loop stores, so its loads are
// pipelined only because it asks for a depth.
template <int BLOCK, int S>
void rows_walk(ptr<float> out, ptr<float> sums, ptr<bf16> in, scalar<int32_t> rows, scalar<int32_t> n) {
  auto cols = arange(0, BLOCK);                                                     // [BLOCK] i32
  auto mask = cols < n;                                                             // [BLOCK] i1
  for (auto r : range(program_id(0), rows, num_programs(0), {.num_stages = S})) {
    auto x = cast<float>(load(in + r * n + cols, mask, -1.5f));                     // [BLOCK] f32
    store(out + r * BLOCK + cols, x * 2.0f);
    store(sums + r, sum(x, 0));
  }
}

// Sums `steps` tiles of [m, n] (masked to [BM, BN]), the k-th scaled by
// k + 1, stored row-major or column-major. No stores in the loop: the
// kernel's default depth applies.
template <int BM, int BN, bool COL>
void tiles_sum(ptr<float> out, ptr<float> in, scalar<int32_t> m, scalar<int32_t> n, scalar<int32_t> steps) {
  auto i = col(arange(0, BM));                                       // [BM, 1] i32
  auto j = row(arange(0, BN));                                       // [1, BN] i32
  auto offs = COL ? i + j * m : i * n + j;                           // [BM, BN] i32
  auto mask = (i < m) & (j < n);                                     // [BM, BN] i1
  auto acc = zeros<float>({BM, BN});                                 // [BM, BN] f32
  for (auto k : range(0, steps, 1)) {
    acc = acc + load(in + k * m * n + offs, mask, 0.25f) * cast<float>(k + 1);
  }
  store(out + i * BN + j, acc);
}

// A tile of 32 elements on 4 warps: several threads hold each element.
void small_sum(ptr<float> out, ptr<float> in, scalar<int32_t> steps) {
  auto c = arange(0, 32);                                            // [32] i32
  auto acc = zeros<float>({32});                                     // [32] f32
  for (auto k : range(0, steps, 1)) acc = acc + load(in + k * 32 + c) * cast<float>(k % 3 + 1);
  store(out + c, acc);
}

template <int BLOCK, int S>
void check_rows(int rows, int n, int programs) {
  INFO("BLOCK " << BLOCK << " stages " << S << " rows " << rows << " n " << n << " programs " << programs);
  auto k = compile(rows_walk<BLOCK, S>, {.name = "rows_walk", .num_warps = 4});
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<bf16>(size_t(std::max(rows, 1)) * n, -2, 2, 11));
    auto out = d.upload(std::vector<float>(size_t(std::max(rows, 1)) * BLOCK, 7.0f));
    auto sums = d.upload(std::vector<float>(std::max(rows, 1), 7.0f));
    d(k, Grid{uint32_t(programs)}, out, sums, x, rows, n);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>(), sums.download<float>()};
  }, 1e-5, 1e-4);
}

template <int BM, int BN, bool COL>
void check_tiles(int m, int n, int steps) {
  INFO(BM << "x" << BN << (COL ? " column-major" : " row-major") << " m " << m << " n " << n << " steps " << steps);
  auto k = compile(tiles_sum<BM, BN, COL>, {.name = "tiles_sum", .num_warps = 4});
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<float>(size_t(std::max(steps, 1)) * m * n, -1, 1, 12));
    auto out = d.alloc<float>(BM * BN);
    d(k, Grid{1}, out, x, m, n, steps);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>()};
  }, 1e-5, 1e-5);
}

}  // namespace

TEST_CASE("loads pipelined into registers match at trip counts 0, 1, 2, S-1, S and many", "[gpu]") {
  REQUIRE_GPU();
  // 3 programs over `rows` rows: trip counts 0 .. 9 per program.
  for (int rows : {0, 1, 3, 5, 6, 9, 27}) {
    check_rows<1024, 2>(rows, 1000, 3);
    check_rows<1024, 3>(rows, 1024, 3);
  }
  check_rows<256, 4>(40, 200, 4);
  for (int steps : {0, 1, 2, 3, 9}) {
    check_tiles<32, 64, false>(30, 61, steps);
    check_tiles<64, 32, true>(64, 29, steps);
  }
  check_tiles<16, 128, false>(16, 128, 5);
  for (int steps : {0, 1, 2, 7}) {
    same_on_both<float>([&](Device& d) {
      auto k = compile(small_sum, {.name = "small_sum", .num_warps = 4});
      auto x = d.upload(random<float>(size_t(std::max(steps, 1)) * 32, -1, 1, 13));
      auto out = d.alloc<float>(32);
      d(k, Grid{1}, out, x, steps);
      d.synchronize();
      return std::vector<std::vector<float>>{out.download<float>()};
    }, 1e-5, 1e-5);
  }
}

// Without a GPU: the loops above copy asynchronously, wait with the right
// number of groups in flight, and assemble without spills.
TEST_CASE("loads pipelined into registers lower to cp.async and assemble", "[codegen]") {
  using namespace codegen_checks;
  auto ptx_of = [](const Kernel& k) {
    return codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Asm);
  };
  // Two stages, one buffer: wait for the only group in flight; each thread
  // reads back what it copied, so the loop's only barriers are the sum's.
  Kernel rows2 = compile(rows_walk<4096, 2>, {.name = "rows_walk", .num_warps = 8});
  std::string ptx = ptx_of(rows2);
  CHECK(count(ptx, R"(cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16)") > 0);
  CHECK(count(ptx, R"(cp\.async\.wait_group 0;)") == 2);  // in the loop, and draining after it
  CHECK(count(ptx, R"(ld\.shared\.v4\.b32|ld\.shared\.v4\.u32)") > 0);
  check_assembles(ptx, "sm_90a");
  Kernel rows3 = compile(rows_walk<1024, 3>, {.name = "rows_walk", .num_warps = 4});
  CHECK(count(ptx_of(rows3), R"(cp\.async\.wait_group 1;)") == 1);
  // A loop that stores and names no depth keeps its loads in place.
  Kernel plain = compile(rows_walk<1024, -1>, {.name = "rows_walk", .num_warps = 4});
  CHECK(count(ptx_of(plain), R"(cp\.async)") == 0);
  // A loop that stores nothing is pipelined at the kernel's depth (3).
  Kernel tiles = compile(tiles_sum<64, 32, true>, {.name = "tiles_sum", .num_warps = 4});
  std::string tptx = ptx_of(tiles);
  CHECK(count(tptx, R"(cp\.async\.wait_group 1;)") == 1);
  check_assembles(tptx, "sm_90a");
}
