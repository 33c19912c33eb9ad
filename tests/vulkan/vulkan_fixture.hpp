// The first Vulkan device, or a skip saying why there is none.
#pragma once

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace hal::test {

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto found = backend_devices("vulkan");
    if (found.empty()) GTEST_SKIP() << "no Vulkan device: " << backend_reason("vulkan");
    device = found.front();
  }
  Device device;
};

}  // namespace hal::test
