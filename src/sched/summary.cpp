#include "hal/summary.hpp"

#include <algorithm>

namespace hal {

Summary summary() {
  Summary out;
  Registry& registry = Registry::instance();
  out.devices = registry.devices();
  out.backends = registry.backends();
  uint64_t largest_host = 0;
  for (const Device& device : out.devices) {
    const DeviceInfo& info = device.info();
    ++out.by_backend[std::string(info.backend())];
    ++out.by_vendor[info.vendor];
    ++out.by_kind[std::string(to_string(info.kind))];
    if (info.kind == DeviceKind::cpu)
      largest_host = std::max(largest_host, info.memory_total.bytes);
    else
      out.memory_total_bytes += info.memory_total.bytes;
    const MemoryFigure free = device.memory_free();
    if (free.provenance != Provenance::unknown && info.kind != DeviceKind::cpu)
      out.memory_free_bytes += free.bytes;
  }
  out.memory_total_bytes += largest_host;
  // The host's free memory, once: the CPU backend reads it from the kernel.
  for (const Device& device : out.devices)
    if (device.info().kind == DeviceKind::cpu) {
      const MemoryFigure free = device.memory_free();
      if (free.provenance != Provenance::unknown) {
        out.memory_free_bytes += free.bytes;
        break;
      }
    }
  return out;
}

}  // namespace hal
