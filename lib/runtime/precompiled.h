// The launch side of kernels compiled ahead of time (tiledsl/precompiled.h
// is the public side): which binary a launch uses.
#pragma once

#include <string>
#include <string_view>

#include "codegen/compile.h"
#include "runtime/kernel.h"

namespace tl::runtime {

// The binary of `k` for `device` ("cuda", "hip") and `target` whose
// specialization the launch's arguments (`spec`) satisfy: the most
// specialized one (the most entries other than d1), the first of those on
// a tie; nullptr when none fits.
const detail::PrecompiledEntry* pick_precompiled(const detail::KernelImpl& k, std::string_view device,
                                                 std::string_view target, const codegen::Specialization& spec);

// The error when none fits and there is no compiler: what the launch
// needed and what the kernel has.
std::string no_precompiled_binary(const detail::KernelImpl& k, std::string_view device, std::string_view target,
                                  const codegen::Specialization& spec);

}  // namespace tl::runtime
