// EnergyMeter of NVIDIA GPUs through NVML, the driver's management library, opened at run time
// (hal builds and runs without it): nvmlDeviceGetTotalEnergyConsumption, the board's
// millijoules since the driver loaded (Volta and later). The few declarations hal calls are
// NVML's stable C ABI, written out here: Debian ships no nvml.h.
#include <dlfcn.h>

#include <cstdlib>
#include <memory>

#include "hal/energy.hpp"
#include "hal/error.hpp"

namespace hal {
namespace {

using NvmlReturn = int;  // nvmlReturn_t
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;

// The library, initialised, for as long as a meter uses it (nvmlInit_v2 and nvmlShutdown are
// reference counted by NVML itself).
class Nvml {
 public:
  static std::shared_ptr<const Nvml> open();
  ~Nvml() {
    shutdown_();
    dlclose(library_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  std::string error(NvmlReturn code) const {
    const char* text = error_string_ ? error_string_(code) : nullptr;
    return "NVML: " + std::string(text ? text : "error") + " (" + std::to_string(code) + ")";
  }

  NvmlReturn (*handle_by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*total_energy)(NvmlDevice, unsigned long long*) = nullptr;

 private:
  explicit Nvml(void* library) : library_(library) {}
  void* library_;
  NvmlReturn (*shutdown_)() = nullptr;
  const char* (*error_string_)(NvmlReturn) = nullptr;
};

template <class F>
bool bind(void* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  return function != nullptr;
}

std::shared_ptr<const Nvml> Nvml::open() {
  const char* named = std::getenv("HAL_NVML_LIBRARY");
  const std::string file = named && *named ? named : "libnvidia-ml.so.1";
  void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw Error(ErrorCode::Unsupported,
                "energy: cannot open " + file + " (NVML, which comes with NVIDIA's driver)");
  std::shared_ptr<Nvml> nvml(new Nvml(library));
  NvmlReturn (*init)() = nullptr;
  if (!bind(library, "nvmlInit_v2", init) || !bind(library, "nvmlShutdown", nvml->shutdown_) ||
      !bind(library, "nvmlDeviceGetHandleByUUID", nvml->handle_by_uuid) ||
      !bind(library, "nvmlDeviceGetTotalEnergyConsumption", nvml->total_energy)) {
    nvml->shutdown_ = [] { return kNvmlSuccess; };  // nothing to shut down
    throw Error(ErrorCode::Unsupported,
                "energy: " + file +
                    " lacks NVML's functions (nvmlInit_v2, nvmlShutdown, "
                    "nvmlDeviceGetHandleByUUID, nvmlDeviceGetTotalEnergyConsumption)");
  }
  bind(library, "nvmlErrorString", nvml->error_string_);
  if (const NvmlReturn status = init(); status != kNvmlSuccess) {
    const std::string why = nvml->error(status);
    nvml->shutdown_ = [] { return kNvmlSuccess; };  // not initialised
    throw Error(ErrorCode::Unsupported, "energy: nvmlInit_v2 failed: " + why);
  }
  return nvml;
}

}  // namespace

EnergyMeter EnergyMeter::of_nvidia_gpu(const std::string& uuid) {
  const std::string nvml_uuid = uuid.starts_with("GPU-") ? uuid : "GPU-" + uuid;
  std::shared_ptr<const Nvml> nvml = Nvml::open();
  NvmlDevice device = nullptr;
  if (const NvmlReturn status = nvml->handle_by_uuid(nvml_uuid.c_str(), &device);
      status != kNvmlSuccess)
    throw Error(ErrorCode::Unsupported,
                "energy: NVML has no GPU " + nvml_uuid + ": " + nvml->error(status));
  Domain domain;
  domain.name = "NVML's counter of " + nvml_uuid;
  domain.joules_per_unit = 1e-3;
  domain.read = [nvml, device]() -> std::optional<uint64_t> {
    unsigned long long millijoules = 0;
    if (nvml->total_energy(device, &millijoules) != kNvmlSuccess) return std::nullopt;
    return millijoules;
  };
  unsigned long long first = 0;
  if (const NvmlReturn status = nvml->total_energy(device, &first); status != kNvmlSuccess)
    throw Error(ErrorCode::Unsupported, "energy: GPU " + nvml_uuid +
                                            " gives no energy counter (NVML counts it on Volta "
                                            "and later GPUs): " +
                                            nvml->error(status));
  domain.last = first;
  EnergyMeter meter;
  meter.source_ = "nvml " + nvml_uuid;
  meter.domains_.push_back(std::move(domain));
  return meter;
}

}  // namespace hal
