// A roofline cost model: the time of a workload on a device from its arithmetic, the bytes it
// moves and the launches it makes, using the device's calibrated figures (hal/calibration.hpp)
// or, where it has none, its stated peaks (DeviceInfo::peak), marked as such.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "hal/device.hpp"
#include "hal/device_info.hpp"
#include "hal/dtype.hpp"

namespace hal {

// What a piece of work costs, in the units the model needs.
struct Workload {
  std::string name;
  double flops = 0;                 // arithmetic operations
  DType dtype = DType::f32;         // of the arithmetic
  double bytes = 0;                 // read plus written in device memory by the work
  double host_to_device_bytes = 0;  // copied in before it
  double device_to_host_bytes = 0;  // copied out after it
  uint64_t launches = 0;            // kernels or ops enqueued
  uint64_t memory_bytes = 0;        // device memory held at once (selection checks it)

  // C[m x n] = A[m x k] B[k x n]: 2mnk flops, A and B read and C written once.
  static Workload matmul(int64_t m, int64_t n, int64_t k, DType dtype = DType::f32);
};

// The figures the model uses for one device and dtype; 0 where unknown.
struct PerformanceFigures {
  double gflops = 0;          // matmul throughput in the workload's dtype
  double bandwidth_gbps = 0;  // device memory, read + written
  double host_to_device_gbps = 0;
  double device_to_host_gbps = 0;
  double launch_latency_us = 0;
  // measured: every figure from a calibration; estimated: from stated peaks, all or some (a
  // calibration's gaps filled from them); unknown: neither.
  Provenance provenance = Provenance::unknown;
};

// The device's cached calibration where there is one, else its peaks. Never measures.
// `flops_each` (the flops of one launch, when known) picks the throughput of products that
// size from the calibrated curve; 0 takes the best measured.
PerformanceFigures performance_figures(const Device& device, DType dtype = DType::f32,
                                       double flops_each = 0);

struct Estimate {
  double seconds = 0;  // launch + transfer + max(compute, memory); NaN when nothing is known
  double compute_seconds = 0, memory_seconds = 0, transfer_seconds = 0, launch_seconds = 0;
  std::string bound;  // the largest term: "compute", "memory", "transfer" or "launch"
  Provenance provenance = Provenance::unknown;
  // Figures the workload needs that the device lacks ("throughput", "bandwidth", ...); their
  // terms count as 0, so an estimate with gaps is a lower bound.
  std::vector<std::string> unknown;

  bool known() const { return !std::isnan(seconds); }
};

Estimate estimate(const Workload& workload, const PerformanceFigures& figures);
// With the device's figures for the workload's dtype and its flops per launch.
Estimate estimate(const Workload& workload, const Device& device);

}  // namespace hal
