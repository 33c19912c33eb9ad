#include "hal/summary.hpp"

#include <algorithm>
#include <limits>

#include "core/checked_math.hpp"
#include "hal/error.hpp"

namespace hal {

namespace {

// What the device says it has free; a device that cannot answer (lost, say) cannot tell, and
// the summary still lists every device.
MemoryFigure free_memory(const Device& device) {
  try {
    return device.memory_free();
  } catch (const Error&) {
    return {};
  }
}

// Device memory summed, held at the largest figure rather than wrapped: plugins may claim
// figures near 2^64 (plugin.h takes them as given).
uint64_t saturating_add(uint64_t sum, uint64_t bytes) {
  return detail::checked_add(sum, bytes).value_or(std::numeric_limits<uint64_t>::max());
}

}  // namespace

Summary summary() {
  Summary out;
  Registry& registry = Registry::instance();
  out.devices = registry.devices();
  out.backends = registry.backends();
  uint64_t largest_host = 0;
  bool host_free_counted = false;
  for (const Device& device : out.devices) {
    const DeviceInfo& info = device.info();
    ++out.by_backend[std::string(info.backend())];
    ++out.by_vendor[info.vendor];
    ++out.by_kind[std::string(to_string(info.kind))];
    const MemoryFigure free = out.memory_free.emplace_back(free_memory(device));
    const bool host_memory = info.kind == DeviceKind::cpu;
    if (host_memory)
      largest_host = std::max(largest_host, info.memory_total.bytes);
    else
      out.memory_total_bytes = saturating_add(out.memory_total_bytes, info.memory_total.bytes);
    if (free.provenance == Provenance::unknown || (host_memory && host_free_counted)) continue;
    out.memory_free_bytes = saturating_add(out.memory_free_bytes, free.bytes);
    host_free_counted = host_free_counted || host_memory;
  }
  out.memory_total_bytes = saturating_add(out.memory_total_bytes, largest_host);
  return out;
}

}  // namespace hal
