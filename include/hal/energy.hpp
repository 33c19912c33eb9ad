// Energy counters: the joules a device has used, where the platform counts them.
//
//   hal::EnergyMeter meter = hal::EnergyMeter::of(hal::device("cpu:0"));
//   const double before = meter.joules();
//   ... work ...
//   const double used = meter.joules() - before;
//
// A device that is the host's CPU (cpu:0, and OpenCL or Vulkan devices of kind cpu, such as PoCL
// and lavapipe) is metered by Linux powercap's RAPL package domains
// (/sys/class/powercap/intel-rapl:N/energy_uj, every package: the device's threads may run on
// any). They count the whole package, whatever runs on it, so an A/B of energy wants a machine
// that is otherwise quiet. HAL_POWERCAP_ROOT names another directory laid out like
// /sys/class/powercap (tests use one). An NVIDIA GPU (a cuda device) is metered by NVML, the
// driver's management library (libnvidia-ml.so.1, opened at run time; HAL_NVML_LIBRARY names
// another): the board's energy since the driver loaded, on Volta and later. Other devices have
// no meter yet. docs/evidence.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hal/device.hpp"

namespace hal {

class EnergyMeter {
 public:
  // The meter of `device`. Unsupported naming the device and the reason where there is none: a
  // device that is neither the host's CPU nor an NVIDIA GPU, no powercap package domain, or one
  // this process may not read (since Linux 5.10 energy_uj is readable by root alone), no NVML,
  // or a GPU whose NVML counts no energy (before Volta).
  static EnergyMeter of(const Device& device);
  // The meter of the NVIDIA GPU with `uuid` (as hal's cuda devices give it, or NVML's "GPU-..."
  // form), through NVML: also a GPU that hal does not drive. Unsupported as above.
  static EnergyMeter of_nvidia_gpu(const std::string& uuid);

  // Joules used since the meter was made, summed over its domains. Each counter wraps at its
  // max_energy_range_uj, which is followed as long as reads come at least once a wrap (about
  // an hour at 60 W for a 2^32 uJ range). InvalidState naming the file if a counter can no
  // longer be read.
  double joules();
  // What it reads: "powercap intel-rapl:0 (package-0), intel-rapl:1 (package-1)", or
  // "nvml GPU-8f6c...".
  const std::string& source() const { return source_; }

 private:
  // One cumulative counter: a RAPL package's (microjoules, wrapping at its range) or a GPU's
  // (NVML's millijoules).
  struct Domain {
    std::function<std::optional<uint64_t>()> read;  // nullopt: it cannot be read now
    std::string name;                               // what errors name: the file, the GPU
    double joules_per_unit = 0;                     // 1e-6 for microjoules
    uint64_t range = 0;  // where it wraps; 0 where the counter does not say
    uint64_t last = 0;   // the latest reading
    uint64_t total = 0;  // units since the meter was made
  };
  std::vector<Domain> domains_;
  std::string source_;
};

}  // namespace hal
