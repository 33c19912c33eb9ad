// The device a driver-level suite (dispatch, copy) measures, with its raw baseline: the same
// work written against the device's driver API, so that every figure is hal beside the driver.
#pragma once

#include <memory>
#include <string>

#include "hal/hal.hpp"
#include "raw_baseline.hpp"

namespace hal::bench {

struct BenchTarget {
  Device device;
  std::unique_ptr<RawBaseline> raw;
};

// Opens `id` ("opencl:0", "cuda:1") and its baseline. Throws hal::Error (Unsupported for a
// device without a baseline in this build, naming `suite`).
BenchTarget open_target(const std::string& id, const std::string& suite);

}  // namespace hal::bench
