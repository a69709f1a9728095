// The consumer's axpy compiled ahead of time (axpy_kernels.cpp) and run by a
// program linked with tiledsl's runtime library alone (no compiler, no
// LLVM): on the interpreter from the Tile IR the kernel carries, checked
// against the host. It checks that the compiler is indeed absent.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "axpy_aot_kernels.h"  // generated

int main() {
  tl::Kernel k = consumer::axpy_f32();
  if (tl::precompiled_binaries(k).size() != 4) {
    std::printf("expected 4 binaries (2 targets x 2 specializations), found %zu\nFAIL\n",
                tl::precompiled_binaries(k).size());
    return 1;
  }
  tl::Device dev = tl::Device::get("interp");
  const int n = 1000;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) hx[size_t(i)] = float(i) * 0.5f, hy[size_t(i)] = float(n - i);
  auto x = dev.upload(hx), y = dev.upload(hy);
  dev(k, tl::Grid{uint32_t((n + 127) / 128)}, y, x, 3.0f, n);
  auto got = y.download<float>();
  for (int i = 0; i < n; ++i)
    if (got[size_t(i)] != 3.0f * hx[size_t(i)] + hy[size_t(i)]) {
      std::printf("element %d: %g, expected %g\nFAIL\n", i, got[size_t(i)], 3.0f * hx[size_t(i)] + hy[size_t(i)]);
      return 1;
    }
  // What needs a compiler says so.
  try {
    tl::Device::inspector("sm_90a", "asm");
    std::printf("the inspector worked without a compiler\nFAIL\n");
    return 1;
  } catch (const tl::Error& e) {
    if (!std::strstr(e.what(), "needs tiledsl's compiler")) {
      std::printf("unexpected error: %s\nFAIL\n", e.what());
      return 1;
    }
  }
  std::printf("precompiled axpy over %d elements on the interpreter, without a compiler\nPASS\n", n);
  return 0;
}
