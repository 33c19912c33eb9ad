// The caching allocator over a device that counts what it hands out and refuses past a
// capacity: nothing leaks, and a backend's refusal releases the cache and retries once.
#include "core/caching_allocator.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "counting_device.hpp"
#include "test_util.hpp"

namespace hal::detail {
namespace {

using test_devices::CountingDevice;
using test_devices::kMiB;

// The buffers are used on a thread that then ends, so that its cache of freed blocks (which
// holds the allocator, as a live buffer does) is flushed before the allocator goes.
TEST(CachingAllocator, ReturnsEveryReservedByteWhenDestroyed) {
  auto device = std::make_shared<CountingDevice>(256 * kMiB);
  {
    auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
    std::thread user([&] {
      std::vector<Buffer> held;
      for (size_t size : {100ul, 5000ul, 3 * kMiB, 12 * kMiB, 700ul})
        held.push_back(allocator->allocate(size));
      held.erase(held.begin() + 1);
      EXPECT_EQ(device->live(), allocator->stats().reserved_bytes.current);
      held.clear();
      EXPECT_GT(device->live(), 0u);  // cached
      EXPECT_EQ(allocator->stats().allocated_bytes.current, 0u);
    });
    user.join();
  }
  EXPECT_EQ(device->live(), 0u);
}

TEST(CachingAllocator, BackendRefusalReleasesTheCacheAndRetriesOnce) {
  auto device = std::make_shared<CountingDevice>(24 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  allocator->allocate(12 * kMiB);  // a 12 MiB segment, cached once the buffer is dropped
  EXPECT_EQ(device->live(), 12 * kMiB);
  Buffer big = allocator->allocate(16 * kMiB);  // 12 + 16 > 24: release, retry
  EXPECT_EQ(allocator->stats().num_alloc_retries, 1u);
  EXPECT_EQ(device->live(), 16 * kMiB);
}

TEST(CachingAllocator, RoundedSegmentsFallBackToTheRequestedSize) {
  auto device = std::make_shared<CountingDevice>(8 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  Buffer buffer = allocator->allocate(3 * kMiB);  // would be a 20 MiB segment
  EXPECT_EQ(device->live(), 3 * kMiB);
}

TEST(CachingAllocator, OutOfMemoryAfterTheRetrySaysWhy) {
  auto device = std::make_shared<CountingDevice>(16 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  Buffer held = allocator->allocate(12 * kMiB);
  test::expect_error(
      [&] { allocator->allocate(12 * kMiB); }, ErrorCode::OutOfMemory,
      {"counting:0", "12582912 bytes", "the backend refused it: counting device is full",
       "16.0 MiB total", "4.0 MiB free", "12.0 MiB allocated", "no limit set"});
  EXPECT_EQ(allocator->stats().num_ooms, 1u);
  held = Buffer();
  EXPECT_NO_THROW(allocator->allocate(12 * kMiB));  // usable after
}

// A 1 MiB request takes a 2 MiB small segment: all of a 2 MiB device, past both thresholds.
TEST(CachingAllocator, AThrowingPressureCallbackNeitherFailsNorLeaksTheAllocation) {
  auto device = std::make_shared<CountingDevice>(2 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  int calls = 0;
  const uint64_t id = allocator->add_pressure_callback([&](const MemoryPressureEvent&) {
    ++calls;
    EXPECT_EQ(allocator->stats().allocated_bytes.current, kMiB);  // the allocation is complete
    throw std::runtime_error("the observer failed");
  });
  test::LogCapture log(LogLevel::error);
  {
    Buffer buffer;
    EXPECT_NO_THROW(buffer = allocator->allocate(kMiB));
    EXPECT_TRUE(buffer);
    EXPECT_EQ(calls, 2);  // warning and critical, each caught
  }
  allocator->empty_cache();
  EXPECT_EQ(allocator->stats().allocated_bytes.current, 0u);
  EXPECT_EQ(allocator->stats().reserved_bytes.current, 0u);
  EXPECT_EQ(device->live(), 0u);
  const std::string lines = log.lines();
  EXPECT_NE(lines.find("memory pressure callback " + std::to_string(id) + " on counting:0"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find("the observer failed"), std::string::npos) << lines;
}

TEST(CachingAllocator, ACallbackThatRemovesItselfIsNotCalledAgain) {
  auto device = std::make_shared<CountingDevice>(2 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  std::vector<MemoryPressure> seen, seen_by_other;
  uint64_t id = 0;
  id = allocator->add_pressure_callback([&](const MemoryPressureEvent& event) {
    seen.push_back(event.level);
    allocator->remove_pressure_callback(id);
  });
  allocator->add_pressure_callback(
      [&](const MemoryPressureEvent& event) { seen_by_other.push_back(event.level); });
  test::LogCapture log(LogLevel::error);
  Buffer buffer = allocator->allocate(kMiB);  // crosses warning and critical at once
  EXPECT_EQ(seen, std::vector<MemoryPressure>{MemoryPressure::warning});
  EXPECT_EQ(seen_by_other,
            (std::vector<MemoryPressure>{MemoryPressure::warning, MemoryPressure::critical}));
  EXPECT_EQ(log.lines(), "");  // no callback threw
  test::expect_error([&] { allocator->remove_pressure_callback(id); }, ErrorCode::NotFound,
                     {std::to_string(id)});
}

TEST(CachingAllocator, RoundsSizes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
}

}  // namespace
}  // namespace hal::detail
