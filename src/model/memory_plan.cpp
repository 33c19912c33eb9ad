#include "model/memory_plan.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace hal::model {
namespace {

bool overlap_in_time(const Lifetime& a, const Lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

int64_t rounded(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

int64_t most_alive_at_once(const std::vector<Lifetime>& lifetimes, int64_t alignment) {
  std::map<size_t, int64_t> change;  // step -> bytes starting minus bytes ended before it
  for (const Lifetime& l : lifetimes) {
    change[l.first] += rounded(l.bytes, alignment);
    change[l.last + 1] -= rounded(l.bytes, alignment);
  }
  int64_t alive = 0, most = 0;
  for (const auto& [step, delta] : change) most = std::max(most, alive += delta);
  return most;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<Lifetime>& lifetimes, int64_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(lifetimes.size(), 0);
  plan.lower_bound_bytes = most_alive_at_once(lifetimes, alignment);
  std::vector<size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lifetimes[a].bytes > lifetimes[b].bytes; });
  std::vector<size_t> placed;
  for (size_t index : order) {
    const Lifetime& l = lifetimes[index];
    const int64_t size = rounded(l.bytes, alignment);
    // The ranges taken by buffers alive at the same time, by offset; the first gap that
    // holds this one wins.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t other : placed)
      if (overlap_in_time(l, lifetimes[other]))
        taken.emplace_back(plan.offsets[other],
                           plan.offsets[other] + rounded(lifetimes[other].bytes, alignment));
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (begin - offset >= size) break;
      offset = std::max(offset, end);
    }
    plan.offsets[index] = offset;
    plan.peak_bytes = std::max(plan.peak_bytes, offset + size);
    placed.push_back(index);
  }
  return plan;
}

}  // namespace hal::model
