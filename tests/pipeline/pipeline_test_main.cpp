// The tests of many devices in one process: paced simulation, synchronize_all, copies between
// devices and pipelines. CTest runs each group in a process of its own with the HAL_SIM_CONFIG
// it needs (tests/CMakeLists.txt); the far test backend is registered before hal looks.
#include <gtest/gtest.h>

#include "support/far_backend.hpp"
#include "test_main.hpp"

int main(int argc, char** argv) {
  hal::test::register_far_backend();
  ::testing::InitGoogleTest(&argc, argv);
  return hal::test::run_all_tests();
}
