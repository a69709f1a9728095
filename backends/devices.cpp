// The GPU devices this build offers, in order of preference (the first one
// available wins Device::get("")). The drivers are loaded with dlopen, so
// every entry is always compiled in and simply reports itself unavailable on
// a machine without that vendor's driver or GPU.
#include "amdgpu/hip_device.h"
#include "nvptx/cuda_device.h"
#include "runtime/device.h"

namespace tl::detail {

std::vector<DeviceEntry> builtin_gpu_devices() {
  return {nvptx::cuda_device_entry(), amdgpu::hip_device_entry()};
}

}  // namespace tl::detail
