// The heterogeneous data-parallel figures of `hal bench train`, on the paced fleet that
// kHeteroFleet describes (set as HAL_SIM_CONFIG by the suite's main before hal starts).
#pragma once

#include <vector>

#include "bench_report.hpp"

namespace hal::bench {

inline constexpr const char* kHeteroFleet =
    "devices=4,pace=1,gflops=0.05:0.05:0.1:0.2,bandwidth_gbps=100,launch_us=10";

std::vector<Figure> measure_hetero_scaling(bool quick);

}  // namespace hal::bench
