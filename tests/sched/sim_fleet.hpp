// The simulated fleet the selection tests run on, and its figures worked out independently of
// hal: plugins/sim's mixed=1 scales each device's memory, throughput and bandwidth by fixed
// fractions of the configured ones (plugins/sim/sim.hpp).
#pragma once

#include <cstdint>

namespace hal::test {

inline constexpr const char* kSimFleetConfig =
    "devices=1024,mixed=1,gflops=16,bandwidth_gbps=100,memory=8G,launch_us=5";
inline constexpr uint32_t kSimFleetSize = 1024;

struct SimFigures {
  double gflops, bandwidth_gbps, launch_us;
  uint64_t memory_bytes;
};

inline SimFigures sim_figures(uint32_t i) {
  return {16.0 * ((5 * i % 16) + 1) / 16, 100.0 * ((3 * i % 8) + 1) / 8, 5.0,
          (8ull << 30) / 8 * ((i % 8) + 1)};
}

}  // namespace hal::test
