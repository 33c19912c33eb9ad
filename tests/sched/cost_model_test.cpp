// The roofline cost model's arithmetic, and where its figures come from.
#include <cmath>

#include "hal/calibration.hpp"
#include "hal/cost_model.hpp"
#include "hal/select.hpp"
#include "sched/calibration_store.hpp"
#include "sim_fleet.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

TEST(CostModel, MatmulWorkloadCountsFlopsAndBytes) {
  const Workload w = Workload::matmul(64, 32, 16, DType::f16);
  EXPECT_DOUBLE_EQ(w.flops, 2.0 * 64 * 32 * 16);
  EXPECT_DOUBLE_EQ(w.bytes, 2.0 * (64 * 16 + 16 * 32 + 64 * 32));
  EXPECT_EQ(w.launches, 1u);
  EXPECT_EQ(w.dtype, DType::f16);
  EXPECT_EQ(w.memory_bytes, 2u * (64 * 16 + 16 * 32 + 64 * 32));
  EXPECT_NE(w.name.find("64x32x16 f16"), std::string::npos) << w.name;
}

TEST(CostModel, EachTermAndTheBoundFollowTheRoofline) {
  PerformanceFigures f;
  f.gflops = 100;              // 1e11 flop/s
  f.bandwidth_gbps = 50;       // 5e10 B/s
  f.host_to_device_gbps = 10;  // 1e10 B/s
  f.device_to_host_gbps = 20;
  f.launch_latency_us = 4;
  f.provenance = Provenance::measured;
  Workload w;
  w.flops = 2e9;  // 20 ms
  w.bytes = 5e8;  // 10 ms
  w.launches = 10;
  const Estimate compute = estimate(w, f);
  EXPECT_DOUBLE_EQ(compute.compute_seconds, 0.02);
  EXPECT_DOUBLE_EQ(compute.memory_seconds, 0.01);
  EXPECT_DOUBLE_EQ(compute.launch_seconds, 40e-6);
  EXPECT_DOUBLE_EQ(compute.seconds, 0.02 + 40e-6);  // compute and memory overlap
  EXPECT_EQ(compute.bound, "compute");
  EXPECT_EQ(compute.provenance, Provenance::measured);
  EXPECT_TRUE(compute.unknown.empty());

  w.bytes = 5e9;  // 100 ms
  EXPECT_EQ(estimate(w, f).bound, "memory");
  w.host_to_device_bytes = 2e9;  // 200 ms
  w.device_to_host_bytes = 2e9;  // 100 ms
  const Estimate transfer = estimate(w, f);
  EXPECT_DOUBLE_EQ(transfer.transfer_seconds, 0.3);
  EXPECT_EQ(transfer.bound, "transfer");
  EXPECT_NEAR(transfer.seconds, 0.3 + 0.1 + 40e-6, 1e-12);

  Workload tiny;
  tiny.flops = 1000;
  tiny.launches = 100;
  EXPECT_EQ(estimate(tiny, f).bound, "launch");
}

TEST(CostModel, UnknownFiguresAreNamedAndNothingKnownIsNaN) {
  PerformanceFigures peaks;
  peaks.gflops = 100;
  peaks.provenance = Provenance::estimated;
  Workload w = Workload::matmul(256, 256, 256);
  const Estimate partial = estimate(w, peaks);
  EXPECT_TRUE(partial.known());
  EXPECT_EQ(partial.provenance, Provenance::estimated);
  EXPECT_EQ(partial.unknown, (std::vector<std::string>{"bandwidth", "latency"}));
  EXPECT_DOUBLE_EQ(partial.seconds, w.flops / 100e9);  // a lower bound

  const Estimate none = estimate(w, PerformanceFigures{});
  EXPECT_FALSE(none.known());
  EXPECT_TRUE(std::isnan(none.seconds));
  EXPECT_EQ(none.provenance, Provenance::unknown);

  EXPECT_DOUBLE_EQ(estimate(Workload{}, peaks).seconds, 0.0);  // no work costs nothing
}

TEST(CostModel, UncalibratedDevicesUseTheirStatedPeaks) {
  ScopedCacheDir cache("calibration");
  const std::vector<Device> sims = backend_devices("sim");
  ASSERT_EQ(sims.size(), kSimFleetSize) << backend_reason("sim");
  const SimFigures want = sim_figures(5);
  const PerformanceFigures f = performance_figures(sims[5]);
  EXPECT_EQ(f.provenance, Provenance::estimated);
  EXPECT_DOUBLE_EQ(f.gflops, want.gflops);
  EXPECT_DOUBLE_EQ(f.bandwidth_gbps, want.bandwidth_gbps);
  EXPECT_DOUBLE_EQ(f.launch_latency_us, want.launch_us);
  EXPECT_EQ(f.host_to_device_gbps, 0.0);  // no stated figure: the model names it unknown

  // The CPU's peak: cores x GHz x f32 operations per cycle of its widest FMA unit.
  const DeviceInfo& cpu = hal::device("cpu:0").info();
  if (cpu.clock_mhz == 0) GTEST_SKIP() << "the CPU's clock is unknown here, so is its peak";
  const double per_cycle = cpu.peak.f32_gflops / (cpu.compute_units * cpu.clock_mhz / 1e3);
  const double widest = cpu.has_feature("avx512f")                          ? 64
                        : cpu.has_feature("avx2") && cpu.has_feature("fma") ? 32
                        : cpu.has_feature("avx")                            ? 16
                                                                            : 8;
  EXPECT_NEAR(per_cycle, widest, 1e-9);
}

// A calibration's gap (a figure it could not measure) filled from the stated peak was labelled
// measured, so `hal select` called a figure of the peaks "(calibrated)". Figures partly from the
// peaks are now estimated; a calibration that measured every one gives measured figures.
TEST(CostModel, FiguresFilledFromTheStatedPeaksAreNotCalledMeasured) {
  ScopedCacheDir cache("calibration");
  const std::vector<Device> sims = backend_devices("sim");
  ASSERT_EQ(sims.size(), kSimFleetSize) << backend_reason("sim");
  const Device sim = sims[7];
  const SimFigures want = sim_figures(7);
  Calibration c;
  c.device_id = sim.id();
  c.uuid = sim.info().uuid;
  c.driver_version = sim.info().driver_version;
  c.matmul = {{DType::f32, 128, 2}};
  c.host_to_device_gbps = c.device_to_host_gbps = 3;
  c.launch_latency_us = 9;
  c.device_bandwidth_gbps = 0;  // not measured: the peak's is taken
  c.measured_at = "2026-01-01T00:00:00Z";
  hal::detail::store_calibration(sim, c);
  const PerformanceFigures mixed = performance_figures(sim);
  EXPECT_DOUBLE_EQ(mixed.gflops, 2);
  EXPECT_DOUBLE_EQ(mixed.bandwidth_gbps, want.bandwidth_gbps);
  EXPECT_EQ(mixed.provenance, Provenance::estimated);
  const Workload w = Workload::matmul(256, 256, 256);
  EXPECT_EQ(estimate(w, sim).provenance, Provenance::estimated);
  Requirements requirements;
  requirements.workload = w;
  const Selection selection = rank_devices(requirements, {sim});
  ASSERT_EQ(selection.candidates.size(), 1u);
  EXPECT_EQ(selection.candidates[0].figures, Provenance::estimated);
  EXPECT_EQ(selection.candidates[0].reason.find("(calibrated)"), std::string::npos)
      << selection.candidates[0].reason;

  c.device_bandwidth_gbps = 40;
  hal::detail::store_calibration(sim, c);
  const PerformanceFigures measured = performance_figures(sim);
  EXPECT_DOUBLE_EQ(measured.bandwidth_gbps, 40);
  EXPECT_EQ(measured.provenance, Provenance::measured);
  // f16 was not timed (a quick calibration times f32 alone): priced at the f32 rate, and
  // called estimated, not calibrated.
  const PerformanceFigures half = performance_figures(sim, DType::f16);
  EXPECT_DOUBLE_EQ(half.gflops, 2);
  EXPECT_EQ(half.provenance, Provenance::estimated);
  EXPECT_EQ(estimate(Workload::matmul(256, 256, 256, DType::f16), sim).provenance,
            Provenance::estimated);
  c.matmul.push_back({DType::f16, 128, 5});
  hal::detail::store_calibration(sim, c);
  EXPECT_DOUBLE_EQ(performance_figures(sim, DType::f16).gflops, 5);
  EXPECT_EQ(performance_figures(sim, DType::f16).provenance, Provenance::measured);
}

}  // namespace
}  // namespace hal::test
