// The template backend (src/backends/null), registered in-process as a new backend would be:
// hal drives it completely (memory, copies to and from other backends, events, the conformance
// suite), and what it leaves out is Unsupported naming the device.
#include <gtest/gtest.h>

#include <numeric>
#include <thread>
#include <vector>

#include "backends/null/null_backend.hpp"
#include "cts.hpp"
#include "hal/hal.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

constexpr uint64_t kNullMemory = uint64_t{64} << 20;

// DeviceImpl is an interface: hal's per-device state lives in its core, not in the backend.
static_assert(std::is_abstract_v<DeviceImpl>);
static_assert(sizeof(DeviceImpl) ==
                  sizeof(void*) + sizeof(std::enable_shared_from_this<DeviceImpl>),
              "DeviceImpl holds no state beyond its vtable (core state is in src/core)");

Device null_device() {
  static const bool registered = [] {
    register_backend(null_backend::make_backend(kNullMemory));
    return true;
  }();
  (void)registered;
  return Registry::instance().device("null:0");
}

TEST(NullBackend, IsFoundAsABackendWithOneDevice) {
  const Device device = null_device();
  EXPECT_EQ(device.id(), "null:0");
  EXPECT_EQ(device.info().kind, DeviceKind::accelerator);
  EXPECT_EQ(device.info().memory_total.bytes, kNullMemory);
  bool listed = false;
  for (const BackendStatus& backend : Registry::instance().backends())
    if (backend.name == "null") {
      listed = true;
      EXPECT_EQ(backend.device_count, 1u);
    }
  EXPECT_TRUE(listed);
}

TEST(NullBackend, CopiesRoundTripThroughMemoryTheHostCannotAddress) {
  const Device device = null_device();
  Stream stream = device.create_stream();
  std::vector<uint32_t> in(4096), out(4096, 0);
  std::iota(in.begin(), in.end(), 7u);
  Buffer a = device.allocate(in.size() * 4), b = device.allocate(in.size() * 4);
  expect_error([&] { (void)a.host_data(); }, ErrorCode::Unsupported, {"null:0"});
  stream.copy_from_host(a, in.data(), in.size() * 4);
  stream.copy(b, a, in.size() * 4);
  stream.copy_to_host(out.data(), b, out.size() * 4);
  stream.synchronize();
  EXPECT_EQ(out, in);

  stream.fill(b, uint32_t{0xabcd1234}, out.size());
  stream.copy_to_host(out.data(), b, out.size() * 4);
  stream.synchronize();
  EXPECT_EQ(out, std::vector<uint32_t>(out.size(), 0xabcd1234));
}

TEST(NullBackend, CopiesToAndFromTheCpuAreStagedByHal) {
  const Device device = null_device();
  const Device cpu = Registry::instance().device("cpu:0");
  Stream stream = device.create_stream();
  std::vector<float> in(1000), out(1000, 0);
  std::iota(in.begin(), in.end(), 0.5f);
  Buffer on_cpu = cpu.allocate(4000), on_null = device.allocate(4000), back = cpu.allocate(4000);
  std::memcpy(on_cpu.host_data(), in.data(), 4000);
  stream.copy(on_null, on_cpu, 4000);
  stream.copy(back, on_null, 4000);
  stream.synchronize();
  std::memcpy(out.data(), back.host_data(), 4000);
  EXPECT_EQ(out, in);
}

TEST(NullBackend, EventsOrderWorkAndTimeIt) {
  const Device device = null_device();
  Stream first = device.create_stream(), second = device.create_stream();
  Event start = first.record();
  Buffer buffer = device.allocate(1 << 20);
  first.fill(buffer, uint8_t{3}, buffer.size());
  Event done = first.record();
  second.wait(done);
  std::vector<uint8_t> out(16);
  second.copy_to_host(out.data(), buffer, out.size());
  second.synchronize();
  EXPECT_EQ(out, std::vector<uint8_t>(16, 3));
  EXPECT_GE(Event::elapsed_ms(start, done), 0.0);
}

TEST(NullBackend, WhatItLeavesOutIsUnsupportedNamingTheDevice) {
  const Device device = null_device();
  expect_error(
      [&] {
        device.compile({"k", "KERNEL void k(GLOBAL float* x) {}"});
      },
      ErrorCode::Unsupported, {"null:0", "compiling kernels"});
  expect_error([&] { device.allocate(16, MemoryKind::pinned_host); }, ErrorCode::InvalidArgument,
               {"null:0", "pinned_host"});
  Stream stream = device.create_stream();
  expect_error([&] { stream.begin_capture(); }, ErrorCode::Unsupported, {"null:0"});
}

TEST(NullBackend, MemoryComesFromHalsCachingAllocatorAndGoesBack) {
  const Device device = null_device();
  device.empty_cache();
  const uint64_t free_before = device.memory_free().bytes;
  {
    Buffer a = device.allocate(1000), b = device.allocate(3 << 20);
    const MemoryStats stats = device.allocator().stats();
    EXPECT_GE(stats.allocated_bytes.current, (3u << 20) + 1000);
    EXPECT_LT(device.memory_free().bytes, free_before);
  }
  device.empty_cache();
  EXPECT_EQ(device.memory_free().bytes, free_before);
  expect_error([&] { device.allocate(kNullMemory + 1); }, ErrorCode::OutOfMemory, {"null:0"});
  Buffer after = device.allocate(1 << 20);  // still usable
  EXPECT_EQ(after.size(), 1u << 20);
}

// The first use of a device from many threads at once makes one core, which all then share.
TEST(NullBackend, ManyThreadsShareTheDevicesCore) {
  const Device device = null_device();
  std::vector<std::thread> threads;
  std::vector<int> ok(16, 0);
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      Stream stream = device.create_stream();
      for (int i = 0; i < 50; ++i) {
        Buffer buffer = device.allocate(4096);
        stream.fill(buffer, static_cast<uint8_t>(t), buffer.size());
        uint8_t last = 0;
        stream.copy_to_host(&last, buffer, 1, 4095);
        stream.synchronize();
        ok[t] += last == static_cast<uint8_t>(t);
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok, std::vector<int>(16, 50));
  EXPECT_EQ(device.allocator().stats().active_bytes.current, 0u);
}

// The conformance suite, as a new backend would run it: nothing fails, and what is not
// supported says why.
TEST(NullBackend, PassesTheConformanceSuite) {
  const cts::Report report = cts::run(null_device());
  ASSERT_GE(report.cases.size(), 300u);
  size_t passed = 0;
  for (const cts::CaseResult& result : report.cases) {
    EXPECT_NE(result.status, cts::Status::failed) << result.name << ": " << result.reason;
    if (result.status == cts::Status::not_supported) {
      EXPECT_FALSE(result.reason.empty()) << result.name;
    }
    passed += result.status == cts::Status::passed;
  }
  EXPECT_GE(passed, 30u) << "memory, stream, event and copy cases run on the template backend";
}

}  // namespace
}  // namespace hal::test
