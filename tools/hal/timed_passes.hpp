// How the demo times a workload on a device: warm-up passes, then timed ones.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "hal/cache.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"

namespace hal::tool {

struct WorkloadResult {
  double seconds = 0;         // per pass, by the device's events
  std::vector<float> output;  // of the last pass
};

// Seconds of building kernels a pass may take and still count as having built nothing.
inline constexpr double kBuiltNothing = 0.01;

// Seconds this process has spent building kernels (compiling, or reading the disk cache).
inline double build_seconds() {
  const KernelBuildStats stats = kernel_build_stats();
  return stats.compile_seconds + stats.disk_seconds;
}

// A warm-up pass (it compiles kernels, fills the allocator's cache), then up to `repeat` timed
// passes, as many as fit in about 2 s. A first pass of a second or more that built no kernels
// is the measurement itself: first-use costs are small beside it, and repeating it would keep
// the demo busy for minutes on a slow device (lavapipe's matmul takes tens of seconds). A pass
// that built kernels is a warm-up however long it took, and the next pass is looked at
// instead (up to kMostUntimed passes): the driver compiles again at a kernel's first launch (PoCL),
// so a cold cache made opencl:0's MLP take 4 s against 75 ms warm. Kernels built in no measurable
// time (Vulkan's embedded SPIR-V) do not count.
template <class Pass>
WorkloadResult timed_passes(Stream& stream, int repeat, Pass&& pass) {
  constexpr int kMostUntimed = 4;  // a workload that builds kernels on every pass gives up
  Tensor out;
  double untimed = 0;  // seconds of the last untimed pass
  for (int warm_ups = 0; warm_ups < kMostUntimed; ++warm_ups) {
    const double built_before = build_seconds();
    const auto start = std::chrono::steady_clock::now();
    out = pass();
    stream.synchronize();
    untimed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (build_seconds() - built_before < kBuiltNothing) break;
  }
  if (untimed >= 1.0) return {untimed, out.to_vector<float>(stream)};
  const int passes = std::clamp(static_cast<int>(2.0 / std::max(untimed, 1e-9)), 1, repeat);
  const double seconds = timed_on_device(stream, [&] {
    for (int i = 0; i < passes; ++i) out = pass();
  });
  return {seconds / passes, out.to_vector<float>(stream)};
}

}  // namespace hal::tool
