// Loops whose loads are pipelined into registers (pipeline_plan.h): copies
// issued iterations ahead into shared memory and read back where the load
// stands, or (depth 2, when registers allow) the next iteration's loads
// issued straight into registers. [gpu]: the same kernels on the GPU and
// the interpreter, at trip counts around the depth, with masks whose
// `other` is not zero, 1-D and 2-D tiles, column-major tiles and a tile
// smaller than the block, in both forms. [codegen]: the PTX shows which
// form and assembles without spills.
#include <catch2/catch.hpp>

#include <sstream>

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

// Softmax over rows, persistent and pipelined: two reductions a row.
template <int BLOCK>
void softmax_rows(ptr<float> out, ptr<bf16> in, scalar<int32_t> rows) {
  auto cols = arange(0, BLOCK);                                                      // [BLOCK] i32
  for (auto r : range(program_id(0), rows, num_programs(0), {.num_stages = 2})) {
    auto x = cast<float>(load(in + r * BLOCK + cols));                               // [BLOCK] f32
    auto num = exp(x - max(x, 0));                                                   // [BLOCK] f32
    store(out + r * BLOCK + cols, num / sum(num, 0));
  }
}

// A row times a weight vector the same for every row (an invariant load:
// copied once before the loop, in a copy group of its own), plus the
// row's sum.
template <int BLOCK, int S = 2, class W = bf16>
void weighted_rows(ptr<float> out, ptr<bf16> in, ptr<W> weight, scalar<int32_t> rows, scalar<int32_t> n) {
  auto cols = arange(0, BLOCK);                                                     // [BLOCK] i32
  auto mask = cols < n;                                                             // [BLOCK] i1
  for (auto r : range(program_id(0), rows, num_programs(0), {.num_stages = S})) {
    auto x = cast<float>(load(in + r * n + cols, mask, -1.5f));                     // [BLOCK] f32
    auto w = cast<float>(load(weight + cols, mask, 2.0f));                          // [BLOCK] f32
    store(out + r * BLOCK + cols, x * w + sum(x, 0));
  }
}

// Reductions across warps in a loop: one or two an iteration (the two
// exchange slots in turn), in if_ arms and in a nested loop.
void reductions_walk(ptr<float> out, ptr<float> in, scalar<int32_t> rows) {
  auto c = arange(0, 2048);                                          // [2048] i32
  auto acc = zeros<float>({2048});                                   // [2048] f32
  for (auto r : range(0, rows)) {
    auto x = load(in + r * 2048 + c);                                // [2048] f32
    auto m = max(x, 0);                                              // scalar f32
    acc = acc + (x - m);
    if_(m > 0.9f, [&] { acc = acc + sum(x, 0); }, [&] { acc = acc * 0.5f; });
    for (auto k : range(0, r % 3)) acc = acc + min(x * cast<float>(k + 1), 0);
  }
  store(out + c, acc);
}

// A carried pointer (not the induction variable) addresses the loads; depth
// 2, so the next step's tile is prefetched into registers.
void pointer_walk(ptr<float> out, ptr<float> in, scalar<int32_t> steps) {
  auto c = arange(0, 512);                                           // [512] i32
  auto p = in + c;                                                   // [512] ptr<f32>
  auto acc = zeros<float>({512});                                    // [512] f32
  for (auto k : range(0, steps, 1, {.num_stages = 2})) {
    acc = acc * 0.5f + load(p, c < 500, 3.0f);
    p += 512;
  }
  store(out + c, acc);
}

// One or two pipelined loops in sequence (shared-memory reuse).
template <int LOOPS>
void sequential_loops(ptr<float> out, ptr<float> in, scalar<int32_t> steps) {
  auto c = arange(0, 1024);                                          // [1024] i32
  auto a = zeros<float>({1024});                                     // [1024] f32
  for (auto k : range(0, steps)) a = a + load(in + k * 1024 + c);
  if (LOOPS == 2)
    for (auto k : range(0, steps)) a = a * load(in + k * 1024 + c);
  store(out + c, a);
}

// A pipelined row of 128 KB beside a scan whose layout conversions need
// 128 KB of scratch: together more than a block's shared memory.
void crowded(ptr<float> out, ptr<float> in, ptr<float> grid, scalar<int32_t> rows) {
  auto c = arange(0, 32768);                                         // [32768] i32
  auto g = col(arange(0, 128)) * 256 + row(arange(0, 256));          // [128, 256] i32
  for (auto r : range(0, rows, 1, {.num_stages = 2})) {
    auto x = load(in + r * 32768 + c);                               // [32768] f32
    store(out + r * 32768 + c, x * 2.0f);
    store(grid + g, cumsum(load(grid + g), 0));
  }
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

// weighted_rows at depth S over `rows` rows of 4000, on `programs`
// programs. f32 weights share the rows' layout (16 elements a thread:
// four 16-byte vectors, where the rows have two).
template <int S, class W = bf16>
void check_weighted(int rows, int programs, int seed) {
  auto k = compile(weighted_rows<4096, S, W>, {.name = "weighted_rows" + std::to_string(S), .num_warps = 8});
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<bf16>(size_t(std::max(rows, 1)) * 4000, -2, 2, seed));
    auto w = d.upload(random<W>(4000, -2, 2, seed + 1));
    auto out = d.upload(std::vector<float>(size_t(std::max(rows, 1)) * 4096, 7.0f));
    d(k, Grid{uint32_t(programs)}, out, x, w, rows, 4000);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>()};
  }, 1e-5, 1e-3);
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
  Kernel pw = compile(pointer_walk, {.name = "pointer_walk", .num_warps = 4});
  for (int steps : {0, 1, 2, 3, 8})
    same_out<float>(pw, Grid{1}, size_t(std::max(steps, 1)) * 512, -1, 1, 18, 512, steps, 1e-6, 1e-6);
  Kernel rw = compile(reductions_walk, {.name = "reductions_walk", .num_warps = 8});
  for (int rows : {0, 1, 2, 5})
    same_out<float>(rw, Grid{1}, size_t(std::max(rows, 1)) * 2048, -1, 1, 14, 2048, rows, 1e-4, 1e-3);
  for (int rows : {0, 1, 2, 9}) check_weighted<2>(rows, 3, 16);
  for (int rows : {0, 1, 2, 3, 9}) check_weighted<3>(rows, 2, 19);
  for (int rows : {0, 1, 5}) check_weighted<2, float>(rows, 2, 21);
  check_weighted<3, float>(9, 3, 22);
  same_out<bf16>(compile(softmax_rows<4096>, {.name = "softmax_rows", .num_warps = 8}), Grid{5}, 4096 * 37, -8, 8, 15,
                 4096 * 37, 37, 1e-5, 1e-7);
  Kernel ss = compile(small_sum, {.name = "small_sum", .num_warps = 4});
  for (int steps : {0, 1, 2, 7})
    same_out<float>(ss, Grid{1}, size_t(std::max(steps, 1)) * 32, -1, 1, 13, 32, steps, 1e-5, 1e-5);
}

// Without a GPU: the loops above prefetch into registers or copy
// asynchronously into shared memory, wait with the right number of groups
// in flight, and assemble without spills.
TEST_CASE("pipelined loads lower to register prefetch or cp.async and assemble", "[codegen]") {
  using namespace codegen_checks;
  auto ptx_of = [](const Kernel& k) {
    return codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Asm);
  };
  // Depth 2, 16 bf16 a thread: the next row goes straight into registers
  // (two 16-byte loads a thread before the loop, two in it), no copies.
  Kernel rows2 = compile(rows_walk<4096, 2>, {.name = "rows_walk", .num_warps = 8});
  std::string ptx = ptx_of(rows2);
  CHECK(count(ptx, R"(cp\.async)") == 0);
  CHECK(count(ptx, R"(ld\.global[.a-z0-9_:]*\.v4\.b32)") == 4);
  check_assembles(ptx, "sm_90a");
  // A carried pointer runs ahead with the prefetch: a 16-byte load a
  // thread before the loop and in it (LLVM may unroll the loop).
  Kernel pw = compile(pointer_walk, {.name = "pointer_walk", .num_warps = 4});
  std::string pwptx = ptx_of(pw);
  CHECK(count(pwptx, R"(cp\.async)") == 0);
  CHECK(count(pwptx, R"(ld\.global[.a-z0-9_:]*\.v4\.b32)") >= 2);
  check_assembles(pwptx, "sm_90a");
  // Softmax rows with their prefetch (their barriers: the max's and the
  // sum's exchanges in different slots, insert-barriers.tir's @max_sum).
  Kernel sm = compile(softmax_rows<4096>, {.name = "softmax_rows", .num_warps = 8});
  std::string smptx = ptx_of(sm);
  CHECK(count(smptx, R"(div\.full\.f32)") == 1);  // one reciprocal a row, then multiplies
  check_assembles(smptx, "sm_90a");
  // With a weight vector (invariant: copied once, before the loop, 2
  // copies a thread) the rows go through shared memory too (prologue and
  // loop, 2 copies a thread each), read back 16 bytes at a time. (Their
  // commit groups and waits: expand-pipelines.tir.)
  Kernel wr = compile(weighted_rows<4096>, {.name = "weighted_rows", .num_warps = 8});
  std::string wptx = ptx_of(wr);
  CHECK(count(wptx, R"(cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16)") == 6);
  CHECK(count(wptx, R"(ld\.shared\.v4\.b32|ld\.shared\.v4\.u32)") > 0);
  check_assembles(wptx, "sm_90a");
  // f32 weights in the rows' layout (16 a thread): four 16-byte copies and
  // reads a thread, no conversion between them and the rows.
  Kernel wf = compile(weighted_rows<4096, 2, float>, {.name = "weighted_rows", .num_warps = 8});
  std::string wfptx = ptx_of(wf);
  CHECK(count(wfptx, R"(cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16)") == 8);
  CHECK(count(wfptx, R"(ld\.shared\.v4\.b32)") == 6);  // rows: 2, weights: 4
  check_assembles(wfptx, "sm_90a");
  Kernel wr3 = compile(weighted_rows<4096, 3>, {.name = "weighted_rows3", .num_warps = 8});
  check_assembles(ptx_of(wr3), "sm_90a");
  // Shared memory follows lifetimes: a pipeline's buffers live for its
  // loop, so two loops in sequence reuse the same bytes.
  Kernel one = compile(sequential_loops<1>, {.name = "loops1"}), two = compile(sequential_loops<2>, {.name = "loops2"});
  int64_t one_bytes = codegen::compile(*one.impl(), aligned(one), "sm_90a").shared_bytes;
  CHECK(one_bytes >= 2 * 1024 * 4);  // 3 stages: 2 slots of 1024 f32
  CHECK(codegen::compile(*two.impl(), aligned(two), "sm_90a").shared_bytes == one_bytes);
  // Register pipelines give way when the body's scratch needs the room:
  // schedule-loops leaves the row in place and says so (FileCheck:
  // schedule-loops.tir), and the kernel compiles in one lowering.
  Kernel crowd = compile(crowded, {.name = "crowded", .num_warps = 8});
  auto ck = codegen::compile(*crowd.impl(), aligned(crowd), "sm_90a");
  CHECK(ck.shared_bytes >= 128 * 256 * 4);
  std::string crowd_gpu = codegen::emit_stage(*crowd.impl(), aligned(crowd), "sm_90a", codegen::Stage::Gpu);
  CHECK(crowd_gpu.find("schedule = \"loads read into registers left in place") != std::string::npos);
  CHECK(crowd_gpu.find("pipeline =") == std::string::npos);
  // Which loops are scheduled at which depth (a loop that stores and names
  // none keeps its loads in place; one that stores nothing takes the
  // kernel's): FileCheck, schedule-loops.tir.
}

// The basic block (its label) that each cp.async of LLVM IR `ir` lies in.
static std::vector<std::string> copy_blocks(const std::string& ir) {
  std::vector<std::string> blocks;
  std::string block = "entry";
  std::istringstream in(ir);
  for (std::string line; std::getline(in, line);) {
    if (auto colon = line.find(':'); colon != std::string::npos && !line.empty() && line[0] != ' ' &&
                                     line.find("define") == std::string::npos)
      block = line.substr(0, colon);
    if (line.find("cp.async.c") != std::string::npos) blocks.push_back(block);
  }
  return blocks;
}

// A tile that several threads hold (32 f32 on 4 warps: every warp, and
// lanes 8-31 of each) is copied by its owners alone; the others branch
// around the copy, which would write zeros even with its predicate off
// (compute-sanitizer's racecheck reported each replica's copy as a
// write-write race). A tile with no replicas copies with no branch.
TEST_CASE("pipelined copies of a replicated tile are issued by its owners alone", "[codegen]") {
  using namespace codegen_checks;
  auto ir_of = [](const Kernel& k) {
    return codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Llvm);
  };
  auto replicated = copy_blocks(ir_of(compile(small_sum, {.name = "small_sum", .num_warps = 4})));
  REQUIRE(!replicated.empty());
  for (const auto& b : replicated) CHECK(b.rfind("guarded", 0) == 0);
  auto whole = copy_blocks(ir_of(compile(tiles_sum<64, 32, true>, {.name = "tiles_sum", .num_warps = 4})));
  REQUIRE(!whole.empty());
  for (const auto& b : whole) CHECK(b.rfind("guarded", 0) != 0);
}
