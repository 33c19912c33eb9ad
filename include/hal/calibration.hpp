// Calibration: small built-in benchmarks that measure what a device reaches (copy bandwidth
// in each direction, matmul throughput, launch latency). Results are cached as JSON under
// HAL_CACHE_DIR (calibration/<uuid>.json), keyed by the device's UUID and driver version: a
// change of either makes the entry stale, and it is measured again. Thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hal/device.hpp"
#include "hal/dtype.hpp"

namespace hal {

struct MatmulFigure {
  DType dtype = DType::f32;
  int64_t size = 0;  // n of the n x n x n product that was timed
  double gflops = 0;
};

struct Calibration {
  std::string device_id, uuid, driver_version;
  double host_to_device_gbps = 0;
  double device_to_host_gbps = 0;
  double device_bandwidth_gbps = 0;  // an on-device copy: bytes read + written per second
  // Each size timed (they double until one product takes long enough): f32, then f16 and
  // bf16 where the device multiplies them. Small products reach less than large ones.
  std::vector<MatmulFigure> matmul;
  double launch_latency_us = 0;  // per op of a chain of dependent one-element ops
  double seconds = 0;            // what measuring took
  std::string measured_at;       // UTC, ISO 8601
  bool quick = false;            // measured with CalibrationOptions::quick
  bool from_cache = false;

  // The best throughput measured in `dtype`; 0 when not measured.
  double matmul_gflops(DType dtype) const;
  // The throughput of products of `flops_each` operations: interpolated between the measured
  // sizes (linear in log n, for n^3 = flops_each / 2), clamped at the smallest and largest,
  // and never below a smaller size's figure.
  double matmul_gflops(DType dtype, double flops_each) const;
};

struct CalibrationOptions {
  // Return a valid cached calibration instead of measuring (a quick one only for a quick
  // request: a full request measures again over a quick entry).
  bool use_cache = true;
  bool quick = false;  // smaller sizes, fewer repetitions, f32 matmul only
};

// Measures `device` (or returns its cached figures) and stores the result in the cache.
// A figure the device cannot produce (an op it lacks) stays 0; hal::Error only for a device
// that fails (DeviceLost, say).
Calibration calibrate(const Device& device, const CalibrationOptions& options = {});

// The cached calibration of `device` if one exists for its UUID and driver version. Lookups
// after the first are served from memory; reload_calibrations() forgets them, so that entries
// written by another process are read again.
std::optional<Calibration> cached_calibration(const Device& device);
void reload_calibrations();

// Where the calibration of `device` is cached; empty when there is no cache directory.
std::filesystem::path calibration_cache_file(const Device& device);

// The calibration as JSON (schema hal.calibration/1), as the cache stores it.
std::string to_json(const Calibration& calibration);

}  // namespace hal
