// The "cuda" devices: NVIDIA GPU n ("cuda:n"; "cuda" is GPU 0) through the
// CUDA driver (dlopen, see cuda_driver.h) and the GPU's primary context, the
// one the CUDA runtime uses, so that memory and streams of libraries built
// on the runtime are valid here. Kernels are compiled by
// codegen::compile to PTX, linked to a cubin by the driver's JIT linker,
// kept in the kernel cache (memory + disk), all through the launch path of
// runtime/launcher.h, and launched with cuLaunchKernel.
#pragma once

#include <functional>
#include <string>

#include "runtime/device.h"

namespace tl::nvptx {

// The registry entry: available() when a driver loads and finds a GPU;
// create(n) opens GPU n of the driver's count.
detail::DeviceEntry cuda_device_entry();

// The compile target for a GPU of compute capability major.minor:
// 9.0 -> "sm_90a", 8.9 -> "sm_89", 8.6 -> "sm_86", 8.0 -> "sm_80"; other 8.x
// and 9.x take the highest of those not above them. Newer GPUs take the
// highest target whose PTX runs on later GPUs ("sm_90a" PTX does not, as
// its wgmma/setmaxnreg exist only on 9.0), so "sm_90" when `is_known`
// accepts it, else "sm_89". Below 8.0 throws tl::Error.
std::string cuda_target_for(int major, int minor, const std::function<bool(const std::string&)>& is_known);

// True when `target` was picked for a GPU newer than any target we know
// (used to explain a driver that rejects the code).
bool cuda_target_is_fallback(int major, int minor);

}  // namespace tl::nvptx
