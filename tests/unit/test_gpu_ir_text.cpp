// GPU IR text is the whole contract between the GPU passes and the
// lowering: a kernel's --emit=gpu text, parsed back and lowered
// (codegen::lower_gpu_ir, tiledsl-opt --emit=asm), gives the same assembly
// as the compile itself, on NVIDIA and AMD targets; the plan read back
// from the text (plan_from_ir) holds what the compile's own held.
#include <catch2/catch.hpp>

#include "../../examples/kernels/attention.h"
#include "../../examples/kernels/gemm.h"
#include "codegen/compile.h"
#include "codegen_checks.h"
#include "ir/parser.h"
#include "runtime/kernel.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using namespace codegen_checks;

namespace {

template <int R, int C>
void row_softmax(ptr<float> x, ptr<float> y) {
  auto r = arange(0, R), c = arange(0, C);
  auto t = load(x + col(r) * C + row(c));                // [R, C]
  auto e = exp(t - col(max(t, 1)));                       // [R, C]
  store(y + col(r) * C + row(c), e / col(sum(e, 1)));    // [R, C]
}

void same_from_text(const Kernel& k, const std::string& target) {
  INFO(k.impl()->name << " for " << target);
  auto spec = aligned(k);
  std::string text = codegen::emit_stage(*k.impl(), spec, target, codegen::Stage::Gpu);
  auto module = ir::parse(text, "gpu.tir");
  REQUIRE(module->functions.size() == 1);
  std::string from_text = codegen::lower_gpu_ir(*module->functions[0], spec, target, codegen::Stage::Asm);
  CHECK(from_text == codegen::emit_stage(*k.impl(), spec, target, codegen::Stage::Asm));
}

}  // namespace

TEST_CASE("GPU IR text lowers to the compile's own assembly", "[codegen]") {
  // Options the IR records: another pipelining depth, no FMA fusion.
  Kernel gemm = compile(kernels::gemm<bf16, 64, 64, 32, 8>,
                        {.name = "gemm", .num_warps = 4, .num_stages = 4, .fp_fusion = false});
  Kernel attn = compile(kernels::attention_fwd<bf16, 64, 64, 64, true>, {.name = "attention", .num_warps = 4});
  Kernel softmax = compile(row_softmax<4, 256>, {.name = "row_softmax"});
  for (const char* target : {"sm_90a", "sm_80", "gfx942"})
    for (const Kernel* k : {&gemm, &attn, &softmax}) same_from_text(*k, target);
}

TEST_CASE("GPU IR that does not match its target is a clear error", "[codegen]") {
  Kernel softmax = compile(row_softmax<4, 256>, {.name = "row_softmax"});
  auto spec = aligned(softmax);
  // 32-lane warps read back for a 64-lane target.
  auto module = ir::parse(codegen::emit_stage(*softmax.impl(), spec, "sm_90a", codegen::Stage::Gpu), "gpu.tir");
  CHECK_THROWS_WITH(codegen::lower_gpu_ir(*module->functions[0], spec, "gfx942", codegen::Stage::Asm),
                    Catch::Contains("expected GPU IR for the 64-lane warps of gfx942, found warp_size = 32"));
  // A dot whose instruction the target does not have.
  Kernel gemm = compile(kernels::gemm<bf16, 64, 64, 32, 8>, {.name = "gemm"});
  module = ir::parse(codegen::emit_stage(*gemm.impl(), aligned(gemm), "sm_80", codegen::Stage::Gpu), "gpu.tir");
  ir::walk(module->functions[0]->body, [](ir::Op* op) {
    if (op->kind == ir::OpKind::Dot) op->attrs["instr"] = std::string("mma.made.up");
  });
  CHECK_THROWS_WITH(codegen::lower_gpu_ir(*module->functions[0], aligned(gemm), "sm_80", codegen::Stage::Asm),
                    Catch::Contains("'dot' expects an instruction sm_80 has for this dot, found 'mma.made.up'"));
}
