// Small helpers the case tables share.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "bad_input_case.hpp"

namespace hal::test::bad_input {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
inline constexpr size_t kSizeMax = std::numeric_limits<size_t>::max();

// A case that succeeds checks what it got: a wrong result is an exception that is not
// hal::Error, which fails the case with `what`.
inline void require(bool holds, const std::string& what) {
  if (!holds) throw std::logic_error("check failed: " + what);
}

// The first visible device other than `device` (there is always one here: the CPU and two sim
// devices at least).
inline Device another_device(const Device& device) {
  const std::vector<Device> others = other_devices(device);
  require(!others.empty(), "another device is visible");
  return others.front();
}

inline bool runs_host_kernels(const Device& device) {
  return device.info().has_feature(feature::kHostKernels);
}
inline bool compiles_portable_kernels(const Device& device) {
  return device.info().has_feature(feature::kPortableKernels);
}

}  // namespace hal::test::bad_input
