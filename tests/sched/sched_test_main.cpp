// The selection and calibration tests run among 1 024 simulated devices of mixed memory and
// speed (plugins/sim, mixed=1), set before hal loads its plugins.
#include <gtest/gtest.h>

#include <cstdlib>

#include "sim_fleet.hpp"

int main(int argc, char** argv) {
  setenv("HAL_SIM_CONFIG", hal::test::kSimFleetConfig, /*overwrite=*/1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
