// Small helpers the case tables share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

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
inline bool runs_compiled_kernels(const Device& device) {
  return compiles_portable_kernels(device) && !runs_host_kernels(device);
}

// Another device that compiles kernels for itself, or none.
inline Device another_compiling_device(const Device& device) {
  for (const Device& other : other_devices(device))
    if (runs_compiled_kernels(other)) return other;
  return {};
}

// What a case on `device` marked with_another_device may touch: the device, another_device and
// another_compiling_device. The parent starts such a child with only these visible
// (HAL_DEVICES), and any other child with its own device alone, so that a child does not load
// drivers its case never uses (lavapipe's alone was a third of a child's start under ASan, and
// PoCL's a third of a cpu:0 child's); a child sees them in the registry's order, so it picks the
// same partners as the parent. A case that uses a partner unmarked finds none and fails.
inline std::vector<Device> devices_a_case_may_touch(const Device& device) {
  std::vector<Device> touched{device};
  if (other_devices(device).empty()) return touched;  // cases that need a partner say so
  for (const Device& partner : {another_device(device), another_compiling_device(device)})
    if (partner && std::find(touched.begin(), touched.end(), partner) == touched.end())
      touched.push_back(partner);
  return touched;
}

}  // namespace hal::test::bad_input
