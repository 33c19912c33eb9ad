#include "hal/cost_model.hpp"

#include <cmath>
#include <limits>

#include "sched/calibration_store.hpp"

namespace hal {

Workload Workload::matmul(int64_t m, int64_t n, int64_t k, DType dtype) {
  Workload workload;
  workload.name = "matmul " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                  std::to_string(k) + " " + std::string(to_string(dtype));
  const double element = static_cast<double>(size_of(dtype));
  workload.flops = 2.0 * m * n * k;
  workload.dtype = dtype;
  workload.bytes = element * (double(m) * k + double(k) * n + double(m) * n);
  workload.launches = 1;
  workload.memory_bytes = static_cast<uint64_t>(workload.bytes);
  return workload;
}

PerformanceFigures performance_figures(const Device& device, DType dtype, double flops_each) {
  PerformanceFigures figures;
  if (const std::shared_ptr<const Calibration> calibration = detail::find_calibration(device)) {
    const auto gflops = [&](DType of) {
      return flops_each > 0 ? calibration->matmul_gflops(of, flops_each)
                            : calibration->matmul_gflops(of);
    };
    figures.gflops = gflops(dtype);
    figures.bandwidth_gbps = calibration->device_bandwidth_gbps;
    figures.host_to_device_gbps = calibration->host_to_device_gbps;
    figures.device_to_host_gbps = calibration->device_to_host_gbps;
    figures.launch_latency_us = calibration->launch_latency_us;
    figures.provenance = Provenance::measured;
    // A dtype the calibration did not time (a quick one times f32 alone; f16 may be refused)
    // is priced at the measured f32 rate: a stand-in, so the figures say estimated.
    if (figures.gflops == 0 && dtype != DType::f32) {
      figures.gflops = gflops(DType::f32);
      if (figures.gflops > 0) figures.provenance = Provenance::estimated;
    }
    // A figure the calibration could not measure falls back to the stated peak, one by one: a
    // missing one would count as free (Estimate::unknown) and flatter the device. The figures
    // are then no longer all measured: they say so, as estimated.
    const PeakFigures& peak = device.info().peak;
    const auto or_peak = [&](double& figure, double stated) {
      if (figure > 0 || stated <= 0) return;
      figure = stated;
      figures.provenance = Provenance::estimated;
    };
    or_peak(figures.gflops, peak.f32_gflops);
    or_peak(figures.bandwidth_gbps, peak.bandwidth_gbps);
    or_peak(figures.launch_latency_us, peak.launch_latency_us);
    return figures;
  }
  const PeakFigures& peak = device.info().peak;
  figures.gflops = peak.f32_gflops;
  figures.bandwidth_gbps = peak.bandwidth_gbps;
  figures.launch_latency_us = peak.launch_latency_us;
  if (figures.gflops > 0 || figures.bandwidth_gbps > 0 || figures.launch_latency_us > 0)
    figures.provenance = Provenance::estimated;
  return figures;
}

namespace {

// amount x seconds_each, or 0 with `what` noted as unknown when seconds_each is (0).
double term(double amount, double seconds_each, const char* what, Estimate& out) {
  if (amount <= 0) return 0;
  // Not finite or not positive: unknown (a plugin may state a negative latency).
  if (!(seconds_each > 0 && std::isfinite(seconds_each))) {
    out.unknown.emplace_back(what);
    return 0;
  }
  return amount * seconds_each;
}

// Seconds per unit at `giga_per_second` (GFLOP/s, GB/s); 0 when the rate is unknown.
double per_giga(double giga_per_second) {
  return giga_per_second > 0 ? 1 / (giga_per_second * 1e9) : 0;
}

}  // namespace

Estimate estimate(const Workload& workload, const PerformanceFigures& figures) {
  Estimate out;
  out.provenance = figures.provenance;
  out.compute_seconds = term(workload.flops, per_giga(figures.gflops), "throughput", out);
  out.memory_seconds = term(workload.bytes, per_giga(figures.bandwidth_gbps), "bandwidth", out);
  out.transfer_seconds = term(workload.host_to_device_bytes, per_giga(figures.host_to_device_gbps),
                              "host_to_device_bandwidth", out) +
                         term(workload.device_to_host_bytes, per_giga(figures.device_to_host_gbps),
                              "device_to_host_bandwidth", out);
  out.launch_seconds = term(static_cast<double>(workload.launches),
                            figures.launch_latency_us * 1e-6, "latency", out);
  // Nothing the workload needs is known: no estimate at all.
  const bool needs_anything = workload.flops > 0 || workload.bytes > 0 ||
                              workload.host_to_device_bytes > 0 ||
                              workload.device_to_host_bytes > 0 || workload.launches > 0;
  const double busy = std::max(out.compute_seconds, out.memory_seconds);
  out.seconds = out.launch_seconds + out.transfer_seconds + busy;
  if (needs_anything && out.seconds == 0) {
    out.seconds = std::numeric_limits<double>::quiet_NaN();
    out.provenance = Provenance::unknown;
    return out;
  }
  out.bound = out.compute_seconds >= out.memory_seconds ? "compute" : "memory";
  if (out.transfer_seconds > busy && out.transfer_seconds >= out.launch_seconds)
    out.bound = "transfer";
  else if (out.launch_seconds > busy && out.launch_seconds > out.transfer_seconds)
    out.bound = "launch";
  return out;
}

Estimate estimate(const Workload& workload, const Device& device) {
  const double flops_each = workload.launches > 0 ? workload.flops / workload.launches : 0;
  return estimate(workload, performance_figures(device, workload.dtype, flops_each));
}

}  // namespace hal
