// local_allreduce_4dev: the local engine's all-reduce (src/dist/local) over 4 paced sim devices,
// timed on the host's clock, beside the alpha-beta model of those devices' links. A figure per
// size; each ratio measured / model should lie within 1.2x either way.
#pragma once

#include <vector>

#include "bench_report.hpp"
#include "hal/device.hpp"

namespace hal::bench {

// `devices`: 4 paced sim devices of equal figures. `rounds`: timings per size (the median is
// reported). Throws hal::Error when a result differs from the host's reference.
std::vector<Figure> measure_local_all_reduce(const std::vector<Device>& devices, int rounds);

}  // namespace hal::bench
