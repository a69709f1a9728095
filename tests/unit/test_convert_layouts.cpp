// The layout conversions the GPU IR holds (codegen/convert_layouts.h),
// read from --emit=gpu text: a store of a dot's f32 accumulator makes its
// addresses in the accumulator's layout; one of a reduction's result
// recomputes them where the value is, or moves the value when they cannot
// be recomputed; and kernels whose values agree
// on one layout have no conversion at all.
#include <catch2/catch.hpp>

#include <regex>

#include "codegen_checks.h"
#include "codegen/compile.h"
#include "runtime/kernel.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using namespace codegen_checks;

namespace {

template <int BM, int BN, int BK>
void dot_store(ptr<bf16> a, ptr<bf16> b, ptr<float> c, scalar<int32_t> m_valid) {
  auto m = arange(0, BM), n = arange(0, BN), k = arange(0, BK);
  auto at = load(a + col(m) * BK + row(k));  // [BM, BK]
  auto bt = load(b + col(k) * BN + row(n));  // [BK, BN]
  auto acc = dot(at, bt);                    // [BM, BN] f32
  store(c + col(m) * BN + row(n), acc, col(m) < m_valid);
}

template <int R, int C>
void row_sums(ptr<float> x, ptr<float> out) {
  auto r = arange(0, R), c = arange(0, C);
  auto t = load(x + col(r) * C + row(c));  // [R, C]
  store(out + r, sum(t, 1));               // [R]
}

// The same sums scattered through loaded indices.
template <int R, int C>
void row_sums_scattered(ptr<float> x, ptr<int32_t> idx, ptr<float> out) {
  auto r = arange(0, R), c = arange(0, C);
  auto t = load(x + col(r) * C + row(c));  // [R, C]
  store(out + load(idx + r), sum(t, 1));   // [R]
}

template <int BLOCK>
void scale(ptr<float> x, ptr<float> y, scalar<float> s) {
  auto i = arange(0, BLOCK);
  store(y + i, load(x + i) * s);
}

std::string gpu_ir(const Kernel& k, const std::string& target) {
  return codegen::emit_stage(*k.impl(), aligned(k), target, codegen::Stage::Gpu);
}

}  // namespace

TEST_CASE("a store from a dot's accumulator computes its addresses and mask there", "[codegen]") {
  Kernel k = compile(dot_store<64, 64, 32>, {.name = "dot_store"});
  for (const char* target : {"sm_80", "sm_90a", "gfx942"}) {
    INFO(target);
    std::string ir = gpu_ir(k, target);
    // f32 from the accumulator's layout covers whole sectors (assign-layouts
    // anchors the store there): the addresses and the mask are made in it.
    std::smatch dot;
    REQUIRE(std::regex_search(ir, dot, std::regex(R"(= dot .* : tile<64x64xf32, (#l\d+)>)")));
    const std::string acc = dot[1].str();
    CHECK(count(ir, R"(= addptr %\d+, %\d+ : tile<64x64xptr<f32>, )" + acc + ">") == 1);
    CHECK(count(ir, R"(: tile<64x64xi1, )" + acc + ">") >= 1);
    CHECK(count(ir, R"(store %\d+, %\d+, %\d+)") == 1);
    // The accumulator itself stays where the dot left it.
    CHECK(count(ir, R"(= convert_layout %\d+( \{[^}]*\})? : tile<64x64xf32)") == 0);
  }
}

TEST_CASE("a row sum is stored from where the reduction leaves it, or moved there", "[codegen]") {
  // Addresses from an arange: recomputed in the sums' layout.
  std::string ir = gpu_ir(compile(row_sums<64, 128>, {.name = "row_sums"}), "sm_90a");
  CHECK(count(ir, R"(= convert_layout %\d+ \{move = "remat"\} : tile<64xptr<f32>, #l\d+>)") == 1);
  CHECK(count(ir, R"(= convert_layout %\d+( \{[^}]*\})? : tile<64xf32)") == 0);
  // Addresses from loaded indices cannot be: the sums move (lanes of other
  // warps hold them, so not by recomputing) through a buffer at byte 0
  // (expand-conversions), read back after a barrier (insert-barriers; none
  // before it, since nothing used shared memory earlier).
  ir = gpu_ir(compile(row_sums_scattered<64, 128>, {.name = "row_sums_scattered"}), "sm_90a");
  CHECK(count(ir, R"(%\d+ = local_alloc %\d+ \{scratch = 0\} : smem<64xf32, #l\d+>[^\n]*\n)"
                  R"(\s*barrier[^\n]*\n\s*%\d+ = local_load %\d+ : tile<64xf32, #l\d+>)") == 1);
  CHECK(count(ir, R"(\bbarrier\b)") == 1);
  CHECK(count(ir, R"(convert_layout %\d+ \{move = "shared")") == 0);
  CHECK(count(ir, R"(= convert_layout %\d+( \{[^}]*\})? : tile<64xptr<f32>)") == 0);
}

TEST_CASE("values that agree on one layout need no conversion", "[codegen]") {
  Kernel k = compile(scale<1024>, {.name = "scale"});
  for (const char* target : {"sm_90a", "gfx942"}) {
    INFO(target);
    std::string ir = gpu_ir(k, target);
    CHECK(count(ir, "= convert_layout ") == 0);
    // The splat of the scale is made in the layout of the load it meets.
    CHECK(count(ir, R"(splat %\d+ : tile<1024xf32, #l1>)") == 1);
  }
}
