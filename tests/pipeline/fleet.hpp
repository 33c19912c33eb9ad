// What the tests of many devices share: the sim devices a group's HAL_SIM_CONFIG made (a test
// skips, saying so, when there are fewer than it needs), and wall-clock readings for the paced
// tests' lower bounds.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "hal/hal.hpp"

namespace hal::test {

// sim:0 .. sim:(count - 1), or none when there are fewer.
inline std::vector<Device> sim_devices(size_t count) {
  std::vector<Device> sims;
  for (size_t i = 0; i < count; ++i) {
    try {
      sims.push_back(device("sim:" + std::to_string(i)));
    } catch (const Error&) {
      return {};
    }
  }
  return sims;
}

#define HAL_NEED_SIMS(name, count)                                                          \
  const std::vector<Device> name = sim_devices(count);                                      \
  if (name.empty())                                                                         \
  GTEST_SKIP() << "needs " << (count) << " sim devices (HAL_SIM_CONFIG=devices=" << (count) \
               << ", as tests/CMakeLists.txt sets)"

using WallClock = std::chrono::steady_clock;

inline double ms_since(WallClock::time_point start) {
  return std::chrono::duration<double, std::milli>(WallClock::now() - start).count();
}

}  // namespace hal::test
