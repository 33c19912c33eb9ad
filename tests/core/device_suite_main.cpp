// Registers the test backend before GoogleTest instantiates the suites over the devices.
#include <gtest/gtest.h>

#include <cstdlib>

#include "device_suite.hpp"
#include "support/far_backend.hpp"
#include "test_main.hpp"

namespace hal::test {

std::vector<Device> suite_devices() { return devices(); }

}  // namespace hal::test

int main(int argc, char** argv) {
  // The suites run on two simulated devices too (plugins/sim), unless told otherwise; set
  // before hal loads its plugins, so that test discovery sees them as well.
  setenv("HAL_SIM_CONFIG", "devices=2", /*overwrite=*/0);
  hal::test::register_far_backend();
  ::testing::InitGoogleTest(&argc, argv);
  return hal::test::run_all_tests();
}
