// Paced simulation (HAL_SIM_CONFIG pace=1): each piece of work on a sim stream completes no
// earlier than its modelled time on the wall clock, work queued back to back adds up, streams of
// different devices run side by side, and per-device figures give devices different speeds.
// Timings are checked as lower bounds only; that work overlaps is checked by the order in which
// events complete. CTest runs this group with
//   HAL_SIM_CONFIG=devices=2,pace=1,launch_us=1000,bandwidth_gbps=0.1,gflops=0.1:0.2
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>

#include "fleet.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

// The figures of the group's HAL_SIM_CONFIG, which the model's times follow.
constexpr double kLaunchUs = 1000, kBandwidthGbps = 0.1;
constexpr double kGflops[2] = {0.1, 0.2};

// launch_us + the longer of bytes over the bandwidth and flops over the throughput (GB/s and
// GFLOP/s are bytes and flops per ns).
double modelled_ms(double bytes, double flops, int device) {
  return (kLaunchUs + std::max(bytes / kBandwidthGbps, flops / kGflops[device]) / 1000) / 1000;
}

class SimPacing : public ::testing::Test {
 protected:
  void SetUp() override {
    sims = sim_devices(2);
    if (sims.empty()) GTEST_SKIP() << "needs 2 paced sim devices (see tests/CMakeLists.txt)";
    for (int i = 0; i < 2; ++i) {
      const PeakFigures& peak = sims[i].info().peak;
      ASSERT_DOUBLE_EQ(peak.f32_gflops, kGflops[i]) << sims[i].id() << ": not this group's fleet";
      ASSERT_DOUBLE_EQ(peak.bandwidth_gbps, kBandwidthGbps) << sims[i].id();
    }
  }
  std::vector<Device> sims;
};

TEST_F(SimPacing, ACopyTakesItsModelledTimeOnTheWallClock) {
  const size_t bytes = 1 << 20;  // 10.5 ms at 0.1 GB/s, and 1 ms to launch
  std::vector<unsigned char> host = pattern_bytes(bytes, 3), back(bytes);
  Buffer buffer = sims[0].allocate(bytes);
  Stream stream = sims[0].create_stream();
  const Event start = stream.record();
  const auto wall = WallClock::now();
  stream.copy_from_host(buffer, host.data(), bytes);
  const Event end = stream.record();
  stream.synchronize();
  const double expected = modelled_ms(bytes, 0, 0);
  EXPECT_GE(ms_since(wall), expected);
  EXPECT_NEAR(Event::elapsed_ms(start, end), expected, 1e-6);  // the model's own clock
  stream.copy_to_host(back.data(), buffer, bytes);
  stream.synchronize();
  EXPECT_EQ(back, host);
}

TEST_F(SimPacing, WorkQueuedBackToBackAddsUp) {
  const size_t bytes = 10'000;  // 0.1 ms each at 0.1 GB/s, and 1 ms to launch
  constexpr int kFills = 8;
  Buffer buffer = sims[0].allocate(bytes);
  Stream stream = sims[0].create_stream();
  const auto wall = WallClock::now();
  for (int i = 0; i < kFills; ++i) stream.fill(buffer, uint8_t(i), bytes);
  stream.synchronize();
  EXPECT_GE(ms_since(wall), kFills * modelled_ms(bytes, 0, 0));
  std::vector<uint8_t> out(bytes);
  stream.copy_to_host(out.data(), buffer, bytes);
  stream.synchronize();
  EXPECT_EQ(out.front(), kFills - 1);
}

TEST_F(SimPacing, AnIdleStreamsNextWorkStartsWhenEnqueued) {
  // The timeline left behind by earlier work is in the past: the next piece still takes its
  // whole modelled time from its enqueue.
  const size_t bytes = 10'000;
  Buffer buffer = sims[0].allocate(bytes);
  Stream stream = sims[0].create_stream();
  stream.fill(buffer, uint8_t{1}, bytes);
  stream.synchronize();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto wall = WallClock::now();
  stream.fill(buffer, uint8_t{2}, bytes);
  stream.synchronize();
  EXPECT_GE(ms_since(wall), modelled_ms(bytes, 0, 0));
}

TEST_F(SimPacing, WaitingForAnotherStreamsEventMovesTheTimeline) {
  const size_t big = 1 << 20, small = 10'000;
  std::vector<unsigned char> host(big);
  Buffer a = sims[0].allocate(big), b = sims[1].allocate(small);
  Stream first = sims[0].create_stream(), second = sims[1].create_stream();
  const auto wall = WallClock::now();
  first.copy_from_host(a, host.data(), big);
  second.wait(first.record());
  second.fill(b, uint8_t{1}, small);
  second.synchronize();
  EXPECT_GE(ms_since(wall), modelled_ms(big, 0, 0) + modelled_ms(small, 0, 1));
  first.synchronize();
}

TEST_F(SimPacing, PerDeviceThroughputGivesEachDeviceItsSpeed) {
  // gflops=0.1:0.2: the same matmul is modelled (and paced) at twice the speed on sim:1.
  constexpr int64_t n = 64;
  const double bytes = 3.0 * n * n * 4, flops = 2.0 * n * n * n;
  for (int i = 0; i < 2; ++i) {
    Stream stream = sims[i].create_stream();
    const Tensor a = full({n, n}, 1.0, DType::f32, stream);
    const Tensor b = full({n, n}, 2.0, DType::f32, stream);
    stream.synchronize();
    const Event start = stream.record();
    const auto wall = WallClock::now();
    const Tensor c = matmul(a, b, stream);
    const Event end = stream.record();
    end.synchronize();
    const double expected = modelled_ms(bytes, flops, i);
    EXPECT_GE(ms_since(wall), expected) << sims[i].id();
    EXPECT_NEAR(Event::elapsed_ms(start, end), expected, 1e-6) << sims[i].id();
    EXPECT_EQ(c.to_vector<float>(stream).at(5), 2.0f * n);
  }
}

TEST_F(SimPacing, StreamsOfTwoDevicesRunSideBySide) {
  // sim:0 copies for ~22 ms while sim:1 fills for ~1.1 ms: sim:1's work completes while
  // sim:0's is still running, which it could not if one waited for the other.
  const size_t big = 2 << 20, small = 10'000;
  std::vector<unsigned char> host(big);
  Buffer a = sims[0].allocate(big), b = sims[1].allocate(small);
  Stream slow = sims[0].create_stream(), quick = sims[1].create_stream();
  slow.copy_from_host(a, host.data(), big);
  const Event slow_done = slow.record();
  quick.fill(b, uint8_t{1}, small);
  const Event quick_done = quick.record();
  std::atomic<bool> slow_done_first{true}, quick_seen_by_slow{false};
  quick.host_callback([&] { slow_done_first = slow_done.query(); });
  slow.host_callback([&] { quick_seen_by_slow = quick_done.query(); });
  quick.synchronize();
  slow.synchronize();
  EXPECT_FALSE(slow_done_first) << "sim:1's fill waited for sim:0's copy";
  EXPECT_TRUE(quick_seen_by_slow);
}

TEST_F(SimPacing, CopiesBetweenDevicesOverlapComputeOnAnotherStream) {
  // On sim:1, a matmul modelled at ~22 ms on its compute stream; on another stream of sim:1,
  // a copy from sim:0 (peer) of ~1.1 ms, and a copy to cpu:0 of ~1.1 ms. The copies complete
  // before the matmul does.
  constexpr int64_t n = 128;
  const size_t bytes = 10'000;
  const auto input = pattern_bytes(bytes, 9);
  Stream setup = sims[0].create_stream();
  Buffer on_sim0 = sims[0].allocate(bytes);
  setup.copy_from_host(on_sim0, input.data(), bytes);
  setup.synchronize();

  Stream compute = sims[1].create_stream(), transfer = sims[1].create_stream();
  const Tensor a = full({n, n}, 1.0, DType::f32, compute);
  compute.synchronize();
  const Tensor product = matmul(a, a, compute);
  const Event computed = compute.record();
  Buffer on_sim1 = sims[1].allocate(bytes);
  Buffer on_cpu = device("cpu:0").allocate(bytes);
  transfer.copy(on_sim1, on_sim0, bytes);  // peer: sim copies between its devices
  transfer.copy(on_cpu, on_sim1, bytes);   // into host memory
  const Event copied = transfer.record();
  std::atomic<bool> computed_before_copies{true}, copies_before_compute{false};
  transfer.host_callback([&] { computed_before_copies = computed.query(); });
  compute.host_callback([&] { copies_before_compute = copied.query(); });
  transfer.synchronize();
  compute.synchronize();
  EXPECT_FALSE(computed_before_copies) << "the copies waited for the compute stream";
  EXPECT_TRUE(copies_before_compute);
  EXPECT_EQ(std::memcmp(on_cpu.data<unsigned char>(), input.data(), bytes), 0);
  EXPECT_EQ(product.to_vector<float>(compute).at(0), float(n));
}

TEST_F(SimPacing, StagedCopiesFromAnotherBackendArePacedOnTheStreamsDevice) {
  // far:0's memory is not the host's: a copy into sim:0 goes through sim:0's pinned memory,
  // then sim:0's copy from the host, which is paced like any other.
  const size_t bytes = 1 << 20;
  const auto input = pattern_bytes(bytes, 5);
  Device far = device("far:0");
  Stream far_stream = far.create_stream();
  Buffer on_far = far.allocate(bytes);
  far_stream.copy_from_host(on_far, input.data(), bytes);
  far_stream.synchronize();
  Buffer on_sim = sims[0].allocate(bytes);
  Stream stream = sims[0].create_stream();
  std::vector<unsigned char> out(bytes);
  const auto wall = WallClock::now();
  stream.copy(on_sim, on_far, bytes);
  stream.synchronize();
  EXPECT_GE(ms_since(wall), modelled_ms(bytes, 0, 0));
  stream.copy_to_host(out.data(), on_sim, bytes);
  stream.synchronize();
  EXPECT_EQ(out, input);
}

TEST_F(SimPacing, APipelinesStagesOverlap) {
  // Stage 0 (sim:0, ~6.2 ms a micro-batch) and stage 1 (sim:1, ~3.6 ms): stage 0 starts on
  // micro-batch i + 1 before stage 1 is done with micro-batch i. Each stage notes, from its
  // stream, when it starts and ends each micro-batch.
  constexpr int64_t n = 64;
  constexpr int kBatches = 6;
  std::mutex mutex;
  std::vector<std::tuple<bool, int, int>> log;  // (end, stage, micro-batch) in the order seen
  std::vector<PipelineStage> stages;
  for (int k = 0; k < 2; ++k) {
    Stream setup = sims[k].create_stream();
    const Tensor w = full({n, n}, 0.5, DType::f32, setup);
    setup.synchronize();
    auto calls = std::make_shared<int>(0);
    stages.push_back({"matmul", sims[k], [&, k, w, calls](const Tensors& in, Stream& s) {
                        const int batch = (*calls)++;
                        auto note = [&, k, batch](bool end) {
                          return [&, k, batch, end] {
                            std::lock_guard lock(mutex);
                            log.emplace_back(end, k, batch);
                          };
                        };
                        s.host_callback(note(false));
                        Tensors out{matmul(in[0], w, s)};
                        s.host_callback(note(true));
                        return out;
                      }});
  }
  Pipeline pipeline(std::move(stages));
  Stream setup = sims[0].create_stream();
  std::vector<Tensors> batches;
  for (int i = 0; i < kBatches; ++i) batches.push_back({full({n, n}, 1.0, DType::f32, setup)});
  setup.synchronize();
  const auto wall = WallClock::now();
  const std::vector<Tensors> outputs = pipeline.run(batches);
  EXPECT_GE(ms_since(wall), kBatches * modelled_ms(3.0 * n * n * 4, 2.0 * n * n * n, 0));

  auto position = [&](bool end, int stage, int batch) {
    const auto found = std::find(log.begin(), log.end(), std::make_tuple(end, stage, batch));
    EXPECT_NE(found, log.end());
    return found - log.begin();
  };
  int overlapped = 0;
  for (int i = 0; i + 1 < kBatches; ++i)
    if (position(false, 0, i + 1) < position(true, 1, i)) ++overlapped;
  EXPECT_GT(overlapped, 0) << "stage 0 never worked while stage 1 did";
  Stream reader = sims[1].create_stream();
  EXPECT_EQ(outputs.back()[0].to_vector<float>(reader).at(0), 0.5f * n * 0.5f * n);
}

}  // namespace
}  // namespace hal::test
