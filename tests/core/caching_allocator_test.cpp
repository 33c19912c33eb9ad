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

// Each refused allocation is one out-of-memory, and no cache miss: a miss is an allocation a
// new segment served, so hits and misses add up to the allocations made.
TEST(CachingAllocator, ARefusedAllocationCountsAsAnOutOfMemoryAndNoMiss) {
  auto device = std::make_shared<CountingDevice>(16 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  Buffer held = allocator->allocate(12 * kMiB);
  for (int i = 0; i < 3; ++i)
    test::expect_error([&] { allocator->allocate(12 * kMiB); }, ErrorCode::OutOfMemory,
                       {"counting:0"});
  const MemoryStats stats = allocator->stats();
  EXPECT_EQ(stats.num_allocs, 1u);
  EXPECT_EQ(stats.cache_misses, 1u);
  EXPECT_EQ(stats.cache_hits + stats.cache_misses, stats.num_allocs);
  EXPECT_EQ(stats.num_ooms, 3u);
}

// A size that overflows is refused at once and counted once, even with parked blocks that a
// retry would flush (the retry's uncounting once took the count below 0: 2^64 - 1 OOMs).
TEST(CachingAllocator, AnOverflowingSizeIsOneOutOfMemoryWithoutARetry) {
  auto device = std::make_shared<CountingDevice>(16 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  allocator->allocate(4096);  // dropped at once: parked in this thread's cache
  test::expect_error([&] { allocator->allocate(SIZE_MAX); }, ErrorCode::OutOfMemory,
                     {"counting:0", "the size overflows"});
  EXPECT_EQ(allocator->stats().num_ooms, 1u);
  EXPECT_EQ(allocator->stats().num_alloc_retries, 0u);
}

// The device's largest allocation bounds its device memory, however it is asked for (Device,
// its allocator, a direct allocation), and each refusal of a cached one counts; pinned host
// memory is the host's, which the bound does not cover.
TEST(CachingAllocator, TheLargestAllocationBoundsDeviceMemoryOnly) {
  auto impl = std::make_shared<CountingDevice>(64 * kMiB);
  impl->set_max_allocation(4 * kMiB);
  impl->offer_pinned_host();
  const Device device(impl);
  test::expect_error([&] { device.allocate(8 * kMiB); }, ErrorCode::OutOfMemory,
                     {"allocate on counting:0", "8388608 bytes",
                      "largest allocation of 4194304 bytes", "free 64.0 MiB"});
  EXPECT_EQ(device.allocator().stats().num_ooms, 1u);
  test::expect_error([&] { device.allocator().allocate(8 * kMiB); }, ErrorCode::OutOfMemory,
                     {"largest allocation"});
  EXPECT_EQ(device.allocator().stats().num_ooms, 2u);
  test::expect_error([&] { device.allocate(8 * kMiB, MemoryKind::device, AllocationMode::direct); },
                     ErrorCode::OutOfMemory, {"largest allocation"});
  EXPECT_EQ(device.allocate(4 * kMiB).size(), 4 * kMiB);
  EXPECT_EQ(device.allocate(8 * kMiB, MemoryKind::pinned_host).size(), 8 * kMiB);
  EXPECT_EQ(device.allocate(8 * kMiB, MemoryKind::pinned_host, AllocationMode::direct).size(),
            8 * kMiB);
  EXPECT_EQ(device.allocator(MemoryKind::pinned_host).stats().num_ooms, 0u);
}

// A positive fraction never becomes 0, which is no limit: it rounds up, to a byte at least. A
// device that does not tell its memory has no fraction of it to give.
TEST(CachingAllocator, ALimitFractionRoundsUpAndNeedsTheDevicesMemory) {
  auto device = std::make_shared<CountingDevice>(size_t{1} << 30);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  allocator->set_limit_fraction(1e-10);  // 0.107 bytes
  EXPECT_EQ(allocator->config().limit_bytes, 1u);
  test::expect_error([&] { allocator->allocate(512); }, ErrorCode::OutOfMemory, {"limit 1 B"});
  allocator->set_limit_fraction(0.3);  // 322122547.2 bytes
  EXPECT_EQ(allocator->config().limit_bytes, 322122548u);
  allocator->set_limit_fraction(1.0);
  EXPECT_EQ(allocator->config().limit_bytes, size_t{1} << 30);

  auto unknown = std::make_shared<CountingDevice>(0);
  auto unknown_allocator = std::make_shared<CachingAllocator>(*unknown, MemoryKind::device);
  test::expect_error([&] { unknown_allocator->set_limit_fraction(0.5); }, ErrorCode::Unsupported,
                     {"counting:0", "limit fraction 0.5", "does not tell", "set_limit"});
  EXPECT_EQ(unknown_allocator->config().limit_bytes, 0u);
}

TEST(CachingAllocator, RoundsSizes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
}

}  // namespace
}  // namespace hal::detail
