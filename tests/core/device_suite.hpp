// The core suite runs against every visible device of every backend: each test file declares
// its suite as a DeviceTest and instantiates it with HAL_DEVICE_SUITE.
#pragma once

#include <gtest/gtest.h>

#include "hal/hal.hpp"
#include "test_util.hpp"

namespace hal {
// Test names and failure messages show the device's id.
inline void PrintTo(const Device& device, std::ostream* out) { *out << device.id(); }
}  // namespace hal

namespace hal::test {

std::vector<Device> suite_devices();

class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  const Device& device() const { return GetParam(); }
  const std::string& id() const { return GetParam().id(); }
  bool runs_host_kernels() const { return device().info().has_feature(feature::kHostKernels); }
};

}  // namespace hal::test

#define HAL_DEVICE_SUITE(suite)                                                                  \
  INSTANTIATE_TEST_SUITE_P(AllDevices, suite, ::testing::ValuesIn(::hal::test::suite_devices()), \
                           [](const ::testing::TestParamInfo<::hal::Device>& p) {                \
                             return ::hal::test::test_name(p.param.id());                        \
                           })
