// EnergyMeter: which counter meters a device, powercap's RAPL package domains (cumulative
// microjoules) for the host's CPU, and following counters across their wraps. NVIDIA GPUs'
// counters are in energy_nvml.cpp.
#include "hal/energy.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "hal/error.hpp"

namespace hal {
namespace {

namespace fs = std::filesystem;

fs::path powercap_root() {
  const char* root = std::getenv("HAL_POWERCAP_ROOT");
  return root && *root ? fs::path(root) : fs::path("/sys/class/powercap");
}

// "intel-rapl:0" is a package; "intel-rapl:0:1" one of its parts (core, uncore, dram), which
// the package's counter already includes.
bool package_domain(const std::string& name) {
  constexpr std::string_view prefix = "intel-rapl:";
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return false;
  return std::all_of(name.begin() + prefix.size(), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<uint64_t> read_number(const fs::path& file) {
  std::ifstream in(file);
  uint64_t value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

std::string read_word(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

// Whether the device's work runs on the host's own cores.
bool runs_on_host_cpu(const DeviceInfo& info) {
  const std::string_view backend = info.backend();
  return info.kind == DeviceKind::cpu &&
         (backend == "cpu" || backend == "opencl" || backend == "vulkan");
}

}  // namespace

EnergyMeter EnergyMeter::of(const Device& device) {
  const DeviceInfo& info = device.info();
  if (info.backend() == "cuda") {
    try {
      return of_nvidia_gpu(info.uuid);
    } catch (const Error& e) {
      throw Error(e.code(), std::string(e.what()) + " (" + info.id + ")");
    }
  }
  if (!runs_on_host_cpu(info))
    throw Error(ErrorCode::Unsupported,
                "energy: " + info.id + " (" + std::string(to_string(info.kind)) +
                    ") has no energy counter hal reads; the host's CPU (Linux powercap RAPL) "
                    "and NVIDIA GPUs (NVML) are metered");
  const fs::path root = powercap_root();
  std::vector<fs::path> packages;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root, error))
    if (package_domain(entry.path().filename().string())) packages.push_back(entry.path());
  std::sort(packages.begin(), packages.end());
  if (packages.empty())
    throw Error(ErrorCode::Unsupported,
                "energy: no RAPL package domain under " + root.string() + " for " + info.id +
                    " (no powercap driver: a virtual machine, or a CPU without RAPL)");
  EnergyMeter meter;
  meter.source_ = "powercap";
  for (const fs::path& package : packages) {
    Domain domain;
    domain.name = (package / "energy_uj").string();
    domain.read = [file = domain.name] { return read_number(file); };
    domain.joules_per_unit = 1e-6;
    const std::optional<uint64_t> first = domain.read();
    if (!first)
      throw Error(ErrorCode::Unsupported,
                  "energy: cannot read " + domain.name + " for " + info.id +
                      " (since Linux 5.10 RAPL counters are readable by root alone)");
    domain.last = *first;
    domain.range = read_number(package / "max_energy_range_uj").value_or(0);
    const std::string name = read_word(package / "name");
    meter.source_ += std::string(meter.domains_.empty() ? " " : ", ") +
                     package.filename().string() + (name.empty() ? "" : " (" + name + ")");
    meter.domains_.push_back(std::move(domain));
  }
  return meter;
}

double EnergyMeter::joules() {
  double joules = 0;
  for (Domain& domain : domains_) {
    const std::optional<uint64_t> now = domain.read();
    if (!now) throw Error(ErrorCode::InvalidState, "energy: cannot read " + domain.name + " now");
    if (*now >= domain.last)
      domain.total += *now - domain.last;
    else  // wrapped (once: reads come often enough); without a stated range, from zero
      domain.total += (domain.range > domain.last ? domain.range - domain.last : 0) + *now;
    domain.last = *now;
    joules += static_cast<double>(domain.total) * domain.joules_per_unit;
  }
  return joules;
}

}  // namespace hal
