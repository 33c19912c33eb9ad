// Launch arguments against the kernel's signature (Kernel::params): Stream::launch checks
// every backend's launches here, before anything reaches the driver.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hal/kernel.hpp"

namespace hal::detail {

// What is wrong with `args` for a kernel taking `params` (their count, kinds, scalar sizes, and
// local memory of at least 1 byte), as the rest of a sentence that names the launch ("argument
// 1 (x): the kernel takes a buffer (...), given an 8-byte scalar"); nullopt when they match.
// Allocates only on a mismatch: launch is a hot path.
std::optional<std::string> argument_mismatch(const std::vector<KernelParam>& params,
                                             std::span<const KernelArg> args);

// "a buffer (__global const float* x)", "a 4-byte scalar (uint n)", "local memory".
std::string describe(const KernelParam& param);
// "a buffer", "an 8-byte scalar", "256 bytes of local memory".
std::string describe(const KernelArg& arg);

}  // namespace hal::detail
