// The "interp" device: host memory tracked by interp::Memory, kernels run
// by the Tile IR interpreter, synchronously.
#pragma once

#include <memory>

#include "runtime/device.h"

namespace tl::interp {

std::shared_ptr<detail::DeviceImpl> make_interp_device();

}  // namespace tl::interp
