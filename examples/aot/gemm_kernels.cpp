// The generator of the gemm example's ahead-of-time form: traces the gemm
// kernel of examples/kernels/gemm.h in the configurations of
// gemm_configs.h, for bf16 and f16, and compiles them for the targets the
// build names (tiledsl_add_aot_kernels in CMakeLists.txt runs it). Each has
// two binaries a target: one for row-major, 16-aligned operands (the
// example's default launch: pointers and sizes divisible by 16, unit inner
// strides) and one any arguments can use (ragged sizes, column-major).
#include <tiledsl/aot.h>

#include "gemm_configs.h"

int main(int argc, char** argv) {
  // Parameters: a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn.
  const std::vector<std::string> specializations = {"16,16,16,16,16,16,16,1,16,1,16,1", ""};
  std::vector<tl::aot::KernelSpec> specs;
  for (const auto& g : examples::aot_gemm_configs()) {
    specs.push_back({examples::aot_gemm_symbol("bf16", g.config), kernels::compile_gemm<tl::bf16>(g.config),
                     specializations, g.targets});
    specs.push_back({examples::aot_gemm_symbol("f16", g.config), kernels::compile_gemm<tl::f16>(g.config),
                     specializations, g.targets});
  }
  return tl::aot::main(argc, argv, specs);
}
