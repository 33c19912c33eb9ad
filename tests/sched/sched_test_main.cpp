// The selection and calibration tests run among 1 024 simulated devices of mixed memory and
// speed (plugins/sim, mixed=1), set before hal loads its plugins.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "sim_fleet.hpp"
#include "test_main.hpp"

int main(int argc, char** argv) {
  // `sched_test --print-sim-uuid`: sim:0's UUID under the HAL_SIM_CONFIG given, which sim reads
  // once, when hal loads it; the calibration tests compare configurations in such processes.
  if (argc == 2 && std::string_view(argv[1]) == "--print-sim-uuid") {
    try {
      std::printf("%s\n", hal::device("sim:0").info().uuid.c_str());
      return 0;
    } catch (const hal::Error& error) {
      std::fprintf(stderr, "%s\n", error.what());
      return 1;
    }
  }
  setenv("HAL_SIM_CONFIG", hal::test::kSimFleetConfig, /*overwrite=*/1);
  ::testing::InitGoogleTest(&argc, argv);
  return hal::test::run_all_tests();
}
