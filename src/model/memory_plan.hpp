// Memory planning from lifetimes: every buffer given an offset in one arena such that buffers
// alive at the same step never share bytes, placed largest first at the lowest offset that
// fits (the greedy-by-size strategy of TFLite's and ONNX Runtime's planners).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hal::model {

struct Lifetime {
  int64_t bytes = 0;
  size_t first = 0, last = 0;  // the steps it is alive at, inclusive
};

struct MemoryPlan {
  std::vector<int64_t> offsets;   // per lifetime, in the arena
  int64_t peak_bytes = 0;         // the arena's size
  int64_t lower_bound_bytes = 0;  // the most bytes alive at one step
};

// Sizes are rounded up to `alignment` (as allocators do) before both figures are taken.
MemoryPlan plan_memory(const std::vector<Lifetime>& lifetimes, int64_t alignment = 256);

}  // namespace hal::model
