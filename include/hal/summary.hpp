// What this machine has: every device across backends, counted and summed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hal/device.hpp"
#include "hal/registry.hpp"

namespace hal {

struct Summary {
  std::vector<Device> devices;            // visible ones (HAL_DEVICES applies)
  std::vector<MemoryFigure> memory_free;  // what each of `devices` reported, in their order
  std::vector<BackendStatus> backends;
  std::map<std::string, uint32_t> by_backend, by_vendor, by_kind;
  // Device memory, summed; devices of kind cpu share the host's memory, so only the largest
  // of them counts, and the host's free memory counts once (the first CPU-kind device that
  // can tell). A device that cannot tell its free memory adds nothing to the free sum.
  uint64_t memory_total_bytes = 0;
  uint64_t memory_free_bytes = 0;
};

Summary summary();

}  // namespace hal
