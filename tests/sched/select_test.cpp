// Selection among 1 024 simulated devices of mixed memory and speed, checked against a brute
// force over the fleet's figures; every reason a device loses; the default device and scopes.
#include <cmath>
#include <thread>

#include "hal/calibration.hpp"
#include "hal/select.hpp"
#include "sim_fleet.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

class SelectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sims = backend_devices("sim");
    ASSERT_EQ(sims.size(), kSimFleetSize) << backend_reason("sim");
  }
  // The roofline time of `w` on sim:i from the fleet's formulas, not from hal.
  static double predicted(const Workload& w, uint32_t i) {
    const SimFigures f = sim_figures(i);
    return w.launches * f.launch_us * 1e-6 +
           std::max(w.flops / (f.gflops * 1e9), w.bytes / (f.bandwidth_gbps * 1e9));
  }
  // The first device with the least predicted time among those with `min_memory` bytes.
  static uint32_t brute_force_best(const Workload& w, uint64_t min_memory) {
    uint32_t best = kSimFleetSize;
    for (uint32_t i = 0; i < kSimFleetSize; ++i)
      if (sim_figures(i).memory_bytes >= min_memory &&
          (best == kSimFleetSize || predicted(w, i) < predicted(w, best)))
        best = i;
    return best;
  }
  ScopedCacheDir cache{"calibration"};  // no calibration: the fleet's stated peaks decide
  std::vector<Device> sims;
};

TEST_F(SelectTest, ChoosesTheFastestOf1024DevicesByTheCostModel) {
  for (const Workload& w : {Workload::matmul(1024, 1024, 1024), Workload::matmul(8, 8, 1 << 20)}) {
    Requirements needs;
    needs.workload = w;
    const Selection s = rank_devices(needs, sims);
    const uint32_t best = brute_force_best(w, 0);
    ASSERT_TRUE(s.device) << w.name;
    EXPECT_EQ(s.device.id(), "sim:" + std::to_string(best)) << w.name;
    ASSERT_EQ(s.candidates.size(), sims.size());
    EXPECT_EQ(s.candidates.front().device, s.device);
    EXPECT_NE(s.candidates.front().reason.find("chosen"), std::string::npos);
    for (size_t rank = 0; rank < s.candidates.size(); ++rank) {
      const Candidate& c = s.candidates[rank];
      const auto index = static_cast<uint32_t>(std::stoul(c.device.id().substr(4)));
      EXPECT_TRUE(c.eligible);
      EXPECT_EQ(c.figures, Provenance::estimated);
      EXPECT_NEAR(c.predicted_seconds, predicted(w, index), 1e-9 * predicted(w, index))
          << c.device.id();
      if (rank == 0) continue;
      EXPECT_LE(s.candidates[rank - 1].predicted_seconds, c.predicted_seconds);
      // A loser either takes longer, saying by how much, or ties and comes later.
      const bool slower = c.predicted_seconds > s.candidates.front().predicted_seconds;
      EXPECT_NE(c.reason.find(slower ? "predicted" : "ties with"), std::string::npos)
          << c.device.id() << ": " << c.reason;
    }
  }
}

TEST_F(SelectTest, MemoryRequirementNarrowsTheFleet) {
  Requirements needs;
  needs.min_free_memory = 15ull << 29;  // 7.5 GiB: only every eighth device has 8 GiB
  needs.workload = Workload::matmul(512, 512, 512);
  const Selection s = rank_devices(needs, sims);
  EXPECT_EQ(s.device.id(), "sim:" + std::to_string(brute_force_best(*needs.workload, 15ull << 29)));
  size_t eligible = 0;
  for (const Candidate& c : s.candidates) {
    const auto index = static_cast<uint32_t>(std::stoul(c.device.id().substr(4)));
    EXPECT_EQ(c.eligible, sim_figures(index).memory_bytes >= (15ull << 29)) << c.device.id();
    if (c.eligible) {
      ++eligible;
      continue;
    }
    EXPECT_NE(c.reason.find("free, needs 7.5 GiB"), std::string::npos) << c.reason;
  }
  EXPECT_EQ(eligible, kSimFleetSize / 8);
  // Eligible devices come first, every ineligible one after them.
  for (size_t i = 0; i < s.candidates.size(); ++i)
    EXPECT_EQ(s.candidates[i].eligible, i < eligible);
}

TEST_F(SelectTest, EachRequirementSaysWhyADeviceFailedIt) {
  const std::vector<Device> two{hal::device("cpu:0"), sims[3]};
  const auto reason_of = [&](const Requirements& needs, const std::string& id) {
    for (const Candidate& c : rank_devices(needs, two).candidates)
      if (c.device.id() == id) return std::make_pair(c.eligible, c.reason);
    return std::make_pair(false, std::string("missing"));
  };
  Requirements f16;
  f16.dtypes = {DType::f16};
  EXPECT_EQ(reason_of(f16, "sim:3"), std::make_pair(false, std::string("lacks dtype f16")));
  EXPECT_TRUE(reason_of(f16, "cpu:0").first);

  Requirements host_kernels;
  host_kernels.features = {std::string(feature::kHostKernels)};
  EXPECT_EQ(reason_of(host_kernels, "sim:3"),
            std::make_pair(false, std::string("lacks feature host_kernels")));

  Requirements gpus;
  gpus.kinds = {DeviceKind::gpu};
  EXPECT_EQ(reason_of(gpus, "cpu:0"),
            std::make_pair(false, std::string("kind cpu is not allowed")));

  Requirements fast;
  fast.min_tflops = 0.001;  // measured figures only: nothing is calibrated in this cache
  const auto [eligible, reason] = reason_of(fast, "sim:3");
  EXPECT_FALSE(eligible);
  EXPECT_NE(reason.find("not calibrated: run `hal calibrate --device sim:3`"), std::string::npos)
      << reason;

  calibrate(sims[3], {.use_cache = true, .quick = true});  // 16 GFLOP/s by the fleet's model
  EXPECT_TRUE(reason_of(fast, "sim:3").first) << reason_of(fast, "sim:3").second;
  Requirements faster;
  faster.min_tflops = 1;
  const auto [fast_enough, why] = reason_of(faster, "sim:3");
  EXPECT_FALSE(fast_enough);
  EXPECT_NE(why.find("measured 0.016 TFLOP/s, needs 1"), std::string::npos) << why;
  // What cannot rank anything is refused: NaN was accepted and ignored.
  Requirements nan_tflops;
  nan_tflops.min_tflops = std::nan("");
  expect_error([&] { select_device(nan_tflops); }, ErrorCode::InvalidArgument,
               {"min_tflops", "must be finite and >= 0"});
  Requirements negative_work;
  negative_work.workload = Workload::matmul(8, 8, 8);
  negative_work.workload->flops = -5;
  expect_error([&] { select_device(negative_work); }, ErrorCode::InvalidArgument,
               {"workload 'matmul 8x8x8 f32': flops -5", "must be finite and >= 0"});
}

// An f16 workload's min_tflops was judged by the f32 figure where f16 was not measured (a quick
// calibration measures f32 only; sim has no f16 at all): f32's rate says nothing of f16's. Only
// a figure in the workload's dtype counts now; without one the throughput is unknown and the
// reason says so.
TEST_F(SelectTest, AThroughputRequirementCountsOnlyTheWorkloadsDtype) {
  const Device sim = sims[5];
  calibrate(sim, {.use_cache = true, .quick = true});  // 10 GFLOP/s in f32, nothing in f16
  Requirements needs;
  needs.min_tflops = 0.001;
  needs.workload = Workload::matmul(64, 64, 64, DType::f16);
  const Candidate f16 = rank_devices(needs, {sim}).candidates.at(0);
  EXPECT_FALSE(f16.eligible) << "judged by the f32 figure: " << f16.reason;
  EXPECT_NE(f16.reason.find("unknown f16 throughput: not measured (" + sim.id() + " has no f16)"),
            std::string::npos)
      << f16.reason;
  needs.workload = Workload::matmul(64, 64, 64, DType::f32);
  const Candidate f32 = rank_devices(needs, {sim}).candidates.at(0);
  EXPECT_TRUE(f32.eligible) << f32.reason;
}

TEST_F(SelectTest, PreferredVendorsRankBeforeTime) {
  const Device cpu = hal::device("cpu:0");
  const std::vector<Device> two{cpu, sims[3]};
  Requirements hal_first;
  hal_first.vendors = {"HAL", cpu.info().vendor};  // case does not matter
  Selection s = rank_devices(hal_first, two);
  EXPECT_EQ(s.device.id(), "sim:3");
  EXPECT_NE(s.candidates[1].reason.find("is preferred less than HAL"), std::string::npos)
      << s.candidates[1].reason;

  Requirements cpu_only;
  cpu_only.vendors = {cpu.info().vendor};
  s = rank_devices(cpu_only, two);
  EXPECT_EQ(s.device.id(), "cpu:0");
  EXPECT_EQ(s.candidates[1].reason, "vendor hal is not among the preferred vendors");
  EXPECT_TRUE(s.candidates[1].eligible) << "an unlisted vendor is still eligible";
}

TEST_F(SelectTest, NoDeviceFitsIsAnErrorNamingEveryDevice) {
  Requirements needs;
  needs.min_free_memory = 1ull << 50;  // a PiB
  try {
    select_device(needs);
    FAIL() << "a PiB of free memory was found";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::NotFound);
    const std::string message = error.what();
    EXPECT_NE(message.find("no device meets the requirements"), std::string::npos);
    for (const Device& device : devices())
      EXPECT_NE(message.find("\n  " + device.id() + ": "), std::string::npos) << device.id();
    EXPECT_NE(message.find("needs 1.0 PiB"), std::string::npos) << message.substr(0, 300);
  }
  // The fleet is intact: a later selection works.
  EXPECT_TRUE(select_device({}).device);
}

TEST_F(SelectTest, TheDefaultDeviceFollowsScopesPerThreadAndHalDevices) {
  const Device best = rank_devices({}, devices()).device;
  EXPECT_EQ(default_device(), best);
  const Device cpu = hal::device("cpu:0");
  {
    DeviceScope outer(cpu);
    EXPECT_EQ(default_device(), cpu);
    {
      DeviceScope inner(sims[7]);
      EXPECT_EQ(default_device(), sims[7]);
      Device elsewhere;
      std::thread([&] { elsewhere = default_device(); }).join();
      EXPECT_EQ(elsewhere, best) << "a scope belongs to its thread";
    }
    EXPECT_EQ(default_device(), cpu);
  }
  EXPECT_EQ(default_device(), best);
  expect_error([] { DeviceScope none{Device{}}; }, ErrorCode::InvalidArgument,
               {"DeviceScope", "no device"});
  EXPECT_EQ(default_device(), best) << "a refused scope changes nothing";
  {
    ScopedSelector only_cpu("cpu:0");
    EXPECT_EQ(default_device().id(), "cpu:0");
  }
  {
    ScopedSelector nothing("!*:*");
    expect_error([] { default_device(); }, ErrorCode::NotFound, {"no device is visible"});
  }
}

TEST_F(SelectTest, ManyThreadsSelectAtOnce) {
  Requirements needs;
  needs.workload = Workload::matmul(1024, 1024, 1024);
  const std::string want = "sim:" + std::to_string(brute_force_best(*needs.workload, 0));
  std::vector<std::thread> threads;
  std::atomic<int> agreed{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i)
        if (rank_devices(needs, sims).device.id() == want) ++agreed;
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(agreed.load(), 40);
}

}  // namespace
}  // namespace hal::test
