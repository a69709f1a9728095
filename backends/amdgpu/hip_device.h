// The "hip" devices: AMD GPU n ("hip:n"; "hip" is GPU 0) through the HIP runtime, loaded at run time
// with dlopen("libamdhip64.so") and our own declarations of the few entry
// points we call (no HIP headers, no link against ROCm), so it builds and
// reports itself unavailable anywhere without ROCm. Kernels are compiled by
// codegen::compile to a code object (gfx90a, gfx942, gfx1100), kept in the
// kernel cache (through the launch path of runtime/launcher.h), loaded with
// hipModuleLoadData and launched with hipModuleLaunchKernel.
#pragma once

#include <functional>
#include <string>

#include "runtime/device.h"

namespace tl::amdgpu {

// The registry entry: available() when libamdhip64 loads and finds a GPU.
// Without the library the reason is "no AMD GPU: libamdhip64.so not found".
detail::DeviceEntry hip_device_entry();

// The compile target for a GPU whose architecture name (gcnArchName, e.g.
// "gfx942:sramecc+:xnack-") is `arch`: the exact gfx name when `is_known`
// accepts it, else a tl::Error naming the GPU and the targets we have. (AMD
// code objects do not run on another gfx version.)
std::string hip_target_for(const std::string& arch, const std::function<bool(const std::string&)>& is_known);

}  // namespace tl::amdgpu
