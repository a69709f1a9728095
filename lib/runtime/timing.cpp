// Device::time_ms and Device::compile_stats (include/tiledsl/runtime.h):
// the device-independent part of timing (argument checks, the untimed
// warm-up run, the mean) around DeviceImpl::time_ms, which measures.
#include "runtime/device.h"

namespace tl {

double Device::time_ms(const std::function<void()>& work, int reps) {
  if (!impl_) throw Error("empty tl::Device: get one with tl::Device::get()");
  if (!work) throw Error("Device::time_ms: expected a function to time, found an empty std::function");
  if (reps < 1) throw Error("Device::time_ms: expected reps >= 1, found " + std::to_string(reps));
  // The first run compiles the kernels it launches; keep that out of the time.
  work();
  impl_->synchronize();
  return impl_->time_ms(work, reps) / reps;
}

CompileStats Device::compile_stats() const {
  if (!impl_) throw Error("empty tl::Device: get one with tl::Device::get()");
  return impl_->compile_stats();
}

}  // namespace tl
