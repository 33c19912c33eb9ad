#include "backends/cpu/cpu_backend.hpp"

#include "backends/cpu/cpu_device.hpp"

namespace hal::cpu {

BackendProbe CpuBackend::probe() {
  BackendProbe probe;
  probe.available = true;
  probe.devices.push_back(std::make_shared<CpuDevice>());
  return probe;
}

}  // namespace hal::cpu
