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
// /sys/class/powercap (tests use one). Other devices have no meter yet. docs/evidence.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hal/device.hpp"

namespace hal {

class EnergyMeter {
 public:
  // The meter of `device`. Unsupported naming the device and the reason where there is none: a
  // device that is not the host's CPU, no powercap package domain, or one this process may not
  // read (since Linux 5.10 energy_uj is readable by root alone).
  static EnergyMeter of(const Device& device);

  // Joules used since the meter was made, summed over its domains. Each counter wraps at its
  // max_energy_range_uj, which is followed as long as reads come at least once a wrap (about
  // an hour at 60 W for a 2^32 uJ range). InvalidState naming the file if a counter can no
  // longer be read.
  double joules();
  // What it reads: "powercap intel-rapl:0 (package-0), intel-rapl:1 (package-1)".
  const std::string& source() const { return source_; }

 private:
  struct Domain {
    std::string file;    // .../energy_uj
    uint64_t range = 0;  // max_energy_range_uj; 0 where the domain does not say
    uint64_t last = 0;   // the latest reading, in uJ
    uint64_t total = 0;  // uJ since the meter was made
  };
  std::vector<Domain> domains_;
  std::string source_;
};

}  // namespace hal
