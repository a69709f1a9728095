// The consumer's axpy compiled ahead of time, in a program linked with
// tiledsl::tiledsl that calls nothing of the compiler itself: linked with
// --no-as-needed (embedding.md; GCC's --as-needed default on Debian would
// drop the library), what needs a compiler (the inspector; a launch no
// binary fits) has it.
#include <cstdio>
#include <string>

#include "axpy_aot_kernels.h"  // generated

int main() {
  tl::Kernel k = consumer::axpy_f32();
  try {
    tl::Device insp = tl::Device::inspector("sm_80", "asm");
    auto x = insp.alloc<float>(256), y = insp.alloc<float>(256);
    insp(k, tl::Grid{2}, y, x, 3.0f, 256);  // no sm_80 binary: compiled here
  } catch (const tl::Error& e) {
    std::printf("%s\nFAIL\n", e.what());
    return 1;
  }
  std::printf("a precompiled kernel compiled for sm_80 at run time, the compiler linked with --no-as-needed\nPASS\n");
  return 0;
}
