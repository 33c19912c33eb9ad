// Registers the test backend before GoogleTest instantiates the suites over the devices.
#include <gtest/gtest.h>

#include "device_suite.hpp"
#include "support/far_backend.hpp"

namespace hal::test {

std::vector<Device> suite_devices() { return devices(); }

}  // namespace hal::test

int main(int argc, char** argv) {
  hal::test::register_far_backend();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
