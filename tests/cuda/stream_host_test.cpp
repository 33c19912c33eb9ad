// The CUDA backend's host code (device description, launch geometry and checks, the references
// a stream keeps until its fences pass, error reports) against hal's stand-in driver
// (backends/cuda/stand_in_driver.hpp): no GPU, so it runs everywhere, sanitizers included. What
// only a GPU can show (kernels' results, the driver's own ordering) is cuda_backend_test's.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/stand_in_driver.hpp"
#include "hal/hal.hpp"
#include "test_util.hpp"

namespace hal::cuda {
namespace {

using stand_in::Driver;
using stand_in::Launch;
using test::expect_error;

class StandInCuda : public ::testing::Test {
 protected:
  // Declared first: destroyed after everything made from it.
  Driver driver;
  Device device = driver.device();
  Kernel kernel = driver.kernel(device, "empty");
  // Direct allocations: dropping a buffer frees it in the driver, which the counts show.
  Buffer buffer(size_t bytes) const {
    return device.allocate(bytes, MemoryKind::device, AllocationMode::direct);
  }
};

TEST_F(StandInCuda, DescribesTheDeviceFromTheDriversAttributes) {
  const DeviceInfo& info = device.info();
  EXPECT_EQ(info.id, "cuda:0");
  EXPECT_EQ(info.name, "hal stand-in GPU");
  EXPECT_EQ(info.architecture, "sm_90");
  EXPECT_EQ(info.driver_version, "CUDA 13.0");
  EXPECT_EQ(info.memory_total.bytes, size_t{80} << 30);
  EXPECT_EQ(info.limits.max_work_group_size, 1024u);
  EXPECT_EQ(info.compute_units, 132u);
  EXPECT_TRUE(info.has_feature("tensor_cores"));
  EXPECT_TRUE(info.has_feature(feature::kBf16));
}

TEST_F(StandInCuda, LaunchesCoverTheGlobalSizeWithBlocks) {
  driver.record_launches();
  Stream stream = device.create_stream();
  stream.launch(kernel, LaunchConfig::linear(1000));
  Launch launch = driver.last_launch();
  EXPECT_EQ(std::vector<unsigned>(launch.grid, launch.grid + 3), (std::vector<unsigned>{4, 1, 1}));
  EXPECT_EQ(std::vector<unsigned>(launch.block, launch.block + 3),
            (std::vector<unsigned>{256, 1, 1}));

  stream.launch(kernel, LaunchConfig::grid(100, 30));  // 16x16 blocks by default in 2-d
  launch = driver.last_launch();
  EXPECT_EQ(std::vector<unsigned>(launch.grid, launch.grid + 3), (std::vector<unsigned>{7, 2, 1}));

  LaunchConfig config = LaunchConfig::grid(64, 8, 3);
  config.local = {32, 4, 0};  // 0: one in that dimension
  config.shared_bytes = 1024;
  stream.launch(kernel, config);
  launch = driver.last_launch();
  EXPECT_EQ(std::vector<unsigned>(launch.grid, launch.grid + 3), (std::vector<unsigned>{2, 2, 3}));
  EXPECT_EQ(std::vector<unsigned>(launch.block, launch.block + 3),
            (std::vector<unsigned>{32, 4, 1}));
  EXPECT_EQ(launch.shared_bytes, 1024u);
  stream.synchronize();
  EXPECT_EQ(driver.counts().launches, 3u);
}

TEST_F(StandInCuda, DefaultBlocksStayWithinTheKernelsOwnThreadLimit) {
  // A kernel heavy in registers: the driver allows it 128 threads a block, not the device's 1024.
  const Kernel heavy = driver.kernel(device, "heavy", 128);
  driver.record_launches();
  Stream stream = device.create_stream();
  stream.launch(heavy, LaunchConfig::linear(1000));
  Launch launch = driver.last_launch();
  EXPECT_EQ(std::vector<unsigned>(launch.block, launch.block + 3),
            (std::vector<unsigned>{128, 1, 1}));
  EXPECT_EQ(std::vector<unsigned>(launch.grid, launch.grid + 3), (std::vector<unsigned>{8, 1, 1}));
  stream.launch(heavy, LaunchConfig::grid(100, 30));
  launch = driver.last_launch();
  EXPECT_EQ(std::vector<unsigned>(launch.block, launch.block + 3),
            (std::vector<unsigned>{16, 8, 1}));
  EXPECT_EQ(std::vector<unsigned>(launch.grid, launch.grid + 3), (std::vector<unsigned>{7, 4, 1}));

  LaunchConfig config = LaunchConfig::linear(1024);
  config.local = {256, 1, 1};  // within the device's limit, past the kernel's
  expect_error([&] { stream.launch(heavy, config); }, ErrorCode::InvalidArgument,
               {"launch of 'heavy'", "has 256 threads; the kernel allows at most 128",
                "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"});
  stream.launch(kernel, config);  // the stand-in's other kernels keep 1024
  stream.synchronize();
  EXPECT_EQ(driver.counts().launches, 3u);
}

// Read back as the driver would: a device address for each buffer (at its offset), the value
// of each scalar.
template <class T>
T parameter(const Launch& launch, size_t i) {
  T value{};
  EXPECT_EQ(launch.parameters.at(i).size(), sizeof value);
  std::memcpy(&value, launch.parameters.at(i).data(), sizeof value);
  return value;
}

TEST_F(StandInCuda, ArgumentsReachTheDriverAsParameters) {
  driver.record_launches({sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(float), 4});
  Stream stream = device.create_stream();
  const Buffer a = buffer(64), b = buffer(64);
  stream.launch(kernel, LaunchConfig::linear(16), {a, KernelArg(b, 16), 7.5f, uint32_t{16}});
  const Launch launch = driver.last_launch();
  const auto address = [](const Buffer& buffer) {
    const NativeMemory memory = native_memory(buffer);
    return reinterpret_cast<CUdeviceptr>(memory.handle) + memory.offset;
  };
  EXPECT_EQ(parameter<CUdeviceptr>(launch, 0), address(a));
  EXPECT_EQ(parameter<CUdeviceptr>(launch, 1), address(b) + 16);
  EXPECT_EQ(parameter<float>(launch, 2), 7.5f);
  EXPECT_EQ(parameter<uint32_t>(launch, 3), 16u);
  stream.synchronize();
}

TEST_F(StandInCuda, ALaunchKeepsItsBuffersUntilAFenceAfterItHasPassed) {
  Stream stream = device.create_stream();
  driver.defer_completion(true);
  {
    const Buffer input = buffer(4096);
    EXPECT_EQ(driver.counts().allocations_live, 1u);
    stream.launch(kernel, LaunchConfig::linear(1024), {input});
  }                              // the caller's handle is gone; the launch has not run
  EXPECT_FALSE(stream.query());  // fences the launch; the fence has not passed
  EXPECT_EQ(driver.counts().allocations_live, 1u) << "freed under a launch still in flight";
  driver.complete();
  EXPECT_TRUE(stream.query());
  EXPECT_EQ(driver.counts().allocations_live, 0u) << "kept after its launch had run";
  driver.defer_completion(false);
}

TEST_F(StandInCuda, SynchronizeReleasesWhatUnfencedLaunchesHeld) {
  Stream stream = device.create_stream();
  driver.defer_completion(true);
  stream.launch(kernel, LaunchConfig::linear(1), {buffer(256)});
  EXPECT_EQ(driver.counts().allocations_live, 1u);
  stream.synchronize();  // the driver runs everything enqueued
  EXPECT_EQ(driver.counts().allocations_live, 0u);
  driver.defer_completion(false);
}

TEST_F(StandInCuda, ALoopOverTheSameBuffersTakesNoReferenceALaunch) {
  Stream stream = device.create_stream();
  driver.defer_completion(true);
  {
    const Buffer data = buffer(256);
    constexpr int kLaunches = 1000;
    for (int i = 0; i < kLaunches; ++i) stream.launch(kernel, LaunchConfig::linear(64), {data});
    // The caller's and one per batch, a batch closing every 64 commands: its fence comes after
    // every one of them.
    const long batches = (kLaunches + 63) / 64;
    EXPECT_EQ(data.impl().use_count(), 1 + batches);
    EXPECT_EQ(kernel.impl().use_count(), 1 + batches);
  }
  EXPECT_FALSE(stream.query());
  EXPECT_EQ(driver.counts().allocations_live, 1u) << "freed under launches still in flight";
  driver.complete();
  EXPECT_TRUE(stream.query());
  EXPECT_EQ(driver.counts().allocations_live, 0u);
  driver.defer_completion(false);
}

TEST_F(StandInCuda, FencesAreReusedRatherThanMadePerBatch) {
  constexpr int kLaunches = 64 * 200;
  {
    Stream stream = device.create_stream();
    std::vector<Buffer> data;
    for (int i = 0; i < 16; ++i) data.push_back(buffer(256));  // more than a batch looks back on
    for (int i = 0; i < kLaunches; ++i)
      stream.launch(kernel, LaunchConfig::linear(64), {data[i % data.size()]});
    stream.synchronize();
    EXPECT_EQ(driver.counts().launches, static_cast<uint64_t>(kLaunches));
    // A fence a batch of 64 references: about 200 batches, whose events, once passed, are
    // recorded again.
    EXPECT_GE(driver.counts().event_records, 150u);
    EXPECT_LE(driver.counts().events_created, 8u);
  }
  EXPECT_EQ(driver.counts().events_live, 0u) << "the stream's fences outlived it";
  EXPECT_EQ(driver.counts().allocations_live, 0u);
}

TEST_F(StandInCuda, AFailedLaunchNamesTheKernelAndItsGeometry) {
  Stream stream = device.create_stream();
  driver.fail_launches(CUDA_ERROR_INVALID_VALUE);
  expect_error([&] { stream.launch(kernel, LaunchConfig::linear(1000)); },
               ErrorCode::InvalidArgument,
               {"cuda:0 (hal stand-in GPU)", "launch of 'empty'",
                "grid {4, 1, 1} and block {256, 1, 1}", "CUDA_ERROR_INVALID_VALUE"});
  driver.fail_launches(CUDA_SUCCESS);
  stream.launch(kernel, LaunchConfig::linear(1));  // the stream is intact
  stream.synchronize();
  EXPECT_EQ(driver.counts().launches, 1u);
}

TEST_F(StandInCuda, GeometryBeyondTheDevicesLimitsIsRefusedBeforeTheDriver) {
  Stream stream = device.create_stream();
  LaunchConfig config = LaunchConfig::linear(4096);
  config.local = {2048, 1, 1};
  expect_error([&] { stream.launch(kernel, config); }, ErrorCode::InvalidArgument,
               {"has 2048 threads; cuda:0 allows at most 1024"});
  config = LaunchConfig::grid(1, 1u << 20);  // 65 536 blocks of 16 in y: the limit is 65 535
  EXPECT_THROW(stream.launch(kernel, config), Error);
  config = LaunchConfig::linear(1);
  config.shared_bytes = 228 * 1024;  // the opt-in limit is 227 KiB
  EXPECT_THROW(stream.launch(kernel, config), Error);
  EXPECT_EQ(driver.counts().launches, 0u);
}

TEST_F(StandInCuda, WorkThatFailedOnTheDeviceSurfacesAtSynchronize) {
  Stream stream = device.create_stream();
  stream.launch(kernel, LaunchConfig::linear(1));
  driver.fail_work(CUDA_ERROR_ILLEGAL_ADDRESS);
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
               {"CUDA_ERROR_ILLEGAL_ADDRESS"});
  driver.fail_work(CUDA_SUCCESS);
}

// CUDA keeps a device's error: an event after the failed work reports it, as the stream does.
TEST_F(StandInCuda, AnEventAfterWorkThatFailedOnTheDeviceReportsIt) {
  Stream stream = device.create_stream();
  stream.launch(kernel, LaunchConfig::linear(1));
  const Event event = stream.record();
  driver.fail_work(CUDA_ERROR_ILLEGAL_ADDRESS);
  const std::vector<std::string> failure{"cuda:0", "before its record failed",
                                         "CUDA_ERROR_ILLEGAL_ADDRESS"};
  expect_error([&] { event.synchronize(); }, ErrorCode::AsyncFailure, failure);
  EXPECT_TRUE(event.query());  // completed, failed: synchronize says which
  expect_error([&] { stream.synchronize(); }, ErrorCode::AsyncFailure,
               {"CUDA_ERROR_ILLEGAL_ADDRESS"});
  driver.fail_work(CUDA_SUCCESS);
  event.synchronize();
}

TEST_F(StandInCuda, AnEventIsDoneWhenTheWorkBeforeItHasRun) {
  Stream first = device.create_stream(), second = device.create_stream();
  driver.defer_completion(true);
  first.launch(kernel, LaunchConfig::linear(1), {buffer(64)});
  auto event = std::make_unique<Event>(first.record());
  EXPECT_TRUE(event->recorded());
  EXPECT_FALSE(event->query());
  second.wait(*event);  // enqueued behind the event, which the second stream keeps
  second.launch(kernel, LaunchConfig::linear(1));
  EXPECT_FALSE(second.query());  // fences its commands, which are held too
  EXPECT_FALSE(first.query());
  EXPECT_EQ(driver.counts().allocations_live, 1u);
  driver.complete();
  EXPECT_TRUE(event->query());
  EXPECT_TRUE(first.query());
  EXPECT_EQ(driver.counts().allocations_live, 0u);
  // The caller's event goes; the wait's reference keeps its CUevent until the wait has run.
  const uint64_t events = driver.counts().events_live;
  event.reset();
  EXPECT_EQ(driver.counts().events_live, events);
  second.synchronize();
  EXPECT_LT(driver.counts().events_live, events);
  driver.defer_completion(false);
}

TEST_F(StandInCuda, CopiesAndFillsMoveTheBytes) {
  Stream stream = device.create_stream();
  const Buffer data = buffer(64);
  std::vector<uint32_t> in(16), out(16);
  for (uint32_t i = 0; i < 16; ++i) in[i] = i * 3;
  stream.copy_from_host(data, in.data(), 64);
  stream.copy_to_host(out.data(), data, 64);
  stream.synchronize();
  EXPECT_EQ(out, in);
  stream.fill(data, uint32_t{0xabcd1234}, 8, 4);  // elements 4 to 11
  stream.copy_to_host(out.data(), data, 64);
  stream.synchronize();
  for (uint32_t i = 0; i < 16; ++i)
    EXPECT_EQ(out[i], i >= 4 && i < 12 ? 0xabcd1234u : i * 3) << "element " << i;
}

TEST_F(StandInCuda, ManyThreadsLaunchOnOneStream) {
  constexpr int kThreads = 8, kEach = 2000;
  Stream stream = device.create_stream();
  driver.defer_completion(true);  // every buffer stays in use until complete()
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        const Buffer own = buffer(128);
        for (int i = 0; i < kEach; ++i) {
          stream.launch(kernel, LaunchConfig::linear(32), {own, i});
          if (i % 500 == 0) stream.query();
        }
      });
    for (std::thread& thread : threads) thread.join();
  }
  EXPECT_EQ(driver.counts().allocations_live, static_cast<uint64_t>(kThreads))
      << "a thread's buffer was freed under its launches";
  driver.defer_completion(false);  // runs everything
  stream.synchronize();
  const stand_in::Counts counts = driver.counts();
  EXPECT_EQ(counts.launches, static_cast<uint64_t>(kThreads) * kEach);
  EXPECT_EQ(counts.allocations_live, 0u);
}

}  // namespace
}  // namespace hal::cuda
