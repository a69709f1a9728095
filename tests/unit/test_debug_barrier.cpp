// tl::debug_barrier (issue 17): a barrier of the program's threads where
// the kernel says, in Tile IR as `barrier`; a no-op on the interpreter,
// bar.sync on NVIDIA, s_barrier on AMD; the same results everywhere.
#include <catch2/catch.hpp>

#include <vector>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using namespace gpu_oracle;

namespace {

// Row sums of 256 floats as 16 x 16 (a cross-thread reduction), with a
// barrier before and after it.
void row_sums(ptr<float> x, ptr<float> out) {
  auto offs = arange(0, 256);                         // [256] i32
  auto v = load(x + offs);                            // [256] f32
  debug_barrier();
  auto rows = sum(reshape(v, {16, 16}), 1);           // [16] f32
  debug_barrier();
  store(out + arange(0, 16), rows);
}

}  // namespace

TEST_CASE("debug_barrier is a barrier op in the Tile IR and a no-op on the interpreter", "[frontend][interp]") {
  Kernel k = compile(row_sums, {.name = "row_sums"});
  CHECK(codegen_checks::count(k.ir(), R"(\n  barrier\b)") == 2);
  auto dev = Device::get("interp");
  std::vector<float> h(256);
  for (int i = 0; i < 256; ++i) h[size_t(i)] = float(i % 7);
  auto x = dev.upload(h);
  auto out = dev.alloc<float>(16);
  dev(k, Grid{1}, x, out);
  auto got = out.download<float>();
  for (int r = 0; r < 16; ++r) {
    float want = 0;
    for (int c = 0; c < 16; ++c) want += h[size_t(r * 16 + c)];
    CHECK(got[size_t(r)] == want);
  }
}

TEST_CASE("debug_barrier lowers to the target's block barrier", "[codegen]") {
  using namespace codegen_checks;
  Kernel k = compile(row_sums, {.name = "row_sums"});
  std::string ptx = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Asm);
  CHECK(count(ptx, R"(bar\.sync\s+0;)") >= 2);
  check_assembles(ptx, "sm_90a");
  std::string gcn = codegen::emit_stage(*k.impl(), aligned(k), "gfx942", codegen::Stage::Asm);
  CHECK(count(gcn, R"(s_barrier)") >= 2);
}

TEST_CASE("debug_barrier: the same results on the GPU as on the interpreter", "[gpu]") {
  REQUIRE_GPU();
  Kernel k = compile(row_sums, {.name = "row_sums", .num_warps = 8});
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<float>(256, -1.0f, 1.0f, 5u));
    auto out = d.alloc<float>(16);
    d(k, Grid{1}, x, out);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>()};
  }, 1e-6, 1e-6);
}
