// What the op suites share: tensors from host numbers and back (the conformance suite's own,
// cts/values.hpp), and which devices run which kinds of ops.
#pragma once

#include <vector>

#include "device_suite.hpp"
#include "values.hpp"

namespace hal::test {

// The conformance suite's conversions (cts/values.hpp), shared rather than written twice.
using cts::make;
using cts::numbers;

// The devices' kernels (host, portable, or a backend's own shaders: Vulkan's): suites of ops
// skip devices without them.
inline bool runs_kernels(const Device& device) {
  return device.info().has_feature(feature::kHostKernels) ||
         device.info().has_feature(feature::kPortableKernels) ||
         device.info().backend() == "vulkan";
}

// Devices that run ops themselves, without kernels (plugins such as sim).
inline bool has_builtin_ops(const Device& device) {
  return device.info().has_feature(feature::kBuiltinBinary) ||
         device.info().has_feature(feature::kBuiltinUnary) ||
         device.info().has_feature(feature::kBuiltinReduce);
}

}  // namespace hal::test
