// The caching allocator over a device that counts what it hands out and refuses past a
// capacity: nothing leaks, and a backend's refusal releases the cache and retries once.
#include "caching_allocator.hpp"

#include <gtest/gtest.h>

#include <atomic>

#include "test_util.hpp"

namespace hal::detail {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

class CountingDevice final : public DeviceImpl {
 public:
  explicit CountingDevice(size_t capacity) {
    info_.id = "counting:0";
    info_.memory_total = {capacity, Provenance::measured};
    info_.memory_free = info_.memory_total;
    info_.limits.max_allocation_bytes = capacity;
  }
  const DeviceInfo& info() const override { return info_; }
  MemoryFigure memory_free() const override {
    return {info_.memory_total.bytes - live_.load(), Provenance::measured};
  }
  BufferPtr allocate(size_t bytes, MemoryKind kind) override {
    ++calls_;
    if (live_.load() + bytes > info_.memory_total.bytes)
      throw Error(ErrorCode::OutOfMemory, "counting device is full");
    live_ += bytes;
    return std::make_shared<Counted>(shared_from_this(), bytes, kind, live_);
  }
  std::shared_ptr<StreamImpl> create_stream() override { throw_unsupported(*this, "streams"); }
  std::shared_ptr<EventImpl> create_event() override { throw_unsupported(*this, "events"); }

  size_t live() const { return live_.load(); }
  int calls() const { return calls_; }

 private:
  struct Counted final : BufferImpl {
    Counted(std::shared_ptr<DeviceImpl> device, size_t size, MemoryKind kind,
            std::atomic<size_t>& live)
        : BufferImpl(std::move(device), size, kind), live_(live) {}
    ~Counted() override { live_ -= size(); }
    std::atomic<size_t>& live_;
  };
  DeviceInfo info_;
  std::atomic<size_t> live_{0};
  int calls_ = 0;
};

TEST(CachingAllocator, ReturnsEveryReservedByteWhenDestroyed) {
  auto device = std::make_shared<CountingDevice>(256 * kMiB);
  {
    auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
    std::vector<Buffer> held;
    for (size_t size : {100ul, 5000ul, 3 * kMiB, 12 * kMiB, 700ul})
      held.push_back(allocator->allocate(size));
    held.erase(held.begin() + 1);
    EXPECT_EQ(device->live(), allocator->stats().reserved_bytes.current);
    held.clear();
    EXPECT_GT(device->live(), 0u);  // cached
    EXPECT_EQ(allocator->stats().allocated_bytes.current, 0u);
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

TEST(CachingAllocator, RoundsSizes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
}

}  // namespace
}  // namespace hal::detail
