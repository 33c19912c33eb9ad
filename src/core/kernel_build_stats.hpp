// Process-wide counts of kernel builds (hal::kernel_build_stats), added to by Device::compile.
#pragma once

#include "hal/kernel.hpp"

namespace hal::detail {

// A build that ended with `origin` after `seconds` (compiled or disk_cache; others are ignored).
void count_kernel_build(KernelOrigin origin, double seconds) noexcept;

}  // namespace hal::detail
