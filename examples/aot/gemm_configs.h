// The configurations the ahead-of-time form of the gemm example carries
// (examples/aot/gemm_kernels.cpp compiles them; examples/gemm.cpp built
// with TILEDSL_GEMM_AOT launches them): each GPU target's default, and the
// small tiles the interpreter and --small use, each for bf16 and f16.
#pragma once

#include <string>
#include <vector>

#include "../kernels/gemm.h"

namespace examples {

struct AotGemm {
  kernels::GemmConfig config;
  std::vector<std::string> targets;  // empty: every target of the build
};

inline std::vector<AotGemm> aot_gemm_configs() {
  return {
      {kernels::small_gemm_config(), {}},
      {kernels::default_gemm_config("sm_80"), {"sm_80"}},
      {kernels::default_gemm_config("gfx942"), {"gfx942"}},
      {kernels::default_gemm_config("sm_90a"), {"sm_90a"}},
      // ... and its form for rows that are not whole 128-byte lines.
      {kernels::default_gemm_config("sm_90a", 1, 1, 2), {"sm_90a"}},
  };
}

// The accessor symbol of `dtype`'s kernel for `c`: "gemm_bf16_128x256x64_8_3_persistent".
inline std::string aot_gemm_symbol(const std::string& dtype, const kernels::GemmConfig& c) {
  std::string s = "gemm_" + dtype + "_" + c.str();
  for (char& ch : s)
    if (ch == ':') ch = '_';
  return s;
}

}  // namespace examples
