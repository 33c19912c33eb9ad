// Choosing a device: the best one for stated needs, with the reason every other one lost; the
// default device; and DeviceScope, which sets the default for a thread.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "hal/cost_model.hpp"
#include "hal/device.hpp"
#include "hal/device_info.hpp"
#include "hal/dtype.hpp"

namespace hal {

struct Requirements {
  uint64_t min_free_memory = 0;  // bytes
  // Measured matmul throughput in the workload's dtype (f32 without one), from the cached
  // calibration: an uncalibrated device fails this requirement.
  double min_tflops = 0;
  // Preferred vendors, best first, matched case-insensitively as a part of the device's vendor
  // ("amd" also matches "Advanced Micro Devices"). A listed vendor ranks above every unlisted
  // one; unlisted vendors are still eligible.
  std::vector<std::string> vendors;
  std::vector<DeviceKind> kinds;  // allowed kinds; empty: all
  std::vector<DType> dtypes;      // every one required
  std::vector<std::string> features;
  // The work to run: eligible devices rank by its predicted time (hal/cost_model.hpp), and it
  // needs its memory_bytes free.
  std::optional<Workload> workload;
};

struct Candidate {
  Device device;
  bool eligible = false;
  // Why it was chosen, which requirement it failed, or how it ranked below the choice.
  std::string reason;
  double predicted_seconds = std::numeric_limits<double>::quiet_NaN();
  Provenance figures = Provenance::unknown;  // of the prediction
};

struct Selection {
  Device device;  // the choice; empty when no device fits
  // Every device: the choice first, then the other eligible ones in rank order, then the
  // ineligible ones in the registry's order.
  std::vector<Candidate> candidates;

  std::string to_string() const;  // a table: device, predicted time, reason
};

// Ranks `devices` against `requirements`. Eligible devices rank by vendor preference, then by
// predicted time (known before unknown), then by kind: GPU without unified memory (discrete) >
// GPU with it (integrated) > accelerator > CPU, then by the order given.
Selection rank_devices(const Requirements& requirements, const std::vector<Device>& devices);

// The best visible device (HAL_DEVICES applies). Throws NotFound listing each device and the
// requirement it failed when none fits.
Selection select_device(const Requirements& requirements = {});

// The workload default_device() ranks by: a 2048^3 f32 matmul.
Workload reference_workload();

// The innermost DeviceScope of this thread, else the best visible device for
// reference_workload(). Throws NotFound when no device is visible.
Device default_device();

// Makes `device` the default of the calling thread until the scope ends; scopes nest.
// Not copyable or movable: it belongs to the thread and block that made it.
class DeviceScope {
 public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Device previous_;
  bool had_previous_;
};

}  // namespace hal
