// What libtiledsl_runtime exports for libtiledsl, the compiler, which links
// it: the Tile IR (lib/ir), the target-independent passes and the axis
// analysis (lib/transforms), the compiler's registration and the kernel
// cache's binary format (lib/runtime). Both libraries are compiled with
// hidden visibility and otherwise export only the public API
// (include/tiledsl); this is an interface between two libraries of one
// build, not an API (its headers are not installed).
#pragma once

// Around a header's declarations: everything declared between is exported.
#define TILEDSL_SHARED_BEGIN _Pragma("GCC visibility push(default)")
#define TILEDSL_SHARED_END _Pragma("GCC visibility pop")
// On one declaration.
#define TILEDSL_SHARED __attribute__((visibility("default")))
