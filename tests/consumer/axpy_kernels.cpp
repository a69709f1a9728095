// The consumer's ahead-of-time generator: axpy compiled at build time
// (tiledsl_add_aot_kernels in CMakeLists.txt) for an NVIDIA and an AMD
// target, in a 16-aligned specialization and a general one.
#include <tiledsl/aot.h>

#include "axpy.h"

int main(int argc, char** argv) {
  return tl::aot::main(argc, argv, {{.symbol = "axpy_f32",
                                     .kernel = tl::compile(axpy, {.name = "axpy"}),
                                     .specializations = {"16,16,-,16", ""}}});
}
