// The caching allocator on every device: reuse, rounding, splitting, coalescing, limits,
// pressure, out-of-memory messages, scopes, and many threads at once.
#include <cmath>
#include <optional>
#include <thread>

#include "device_suite.hpp"
#include "hal/backend.hpp"

namespace hal::test {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

class AllocatorSuite : public DeviceTest {
 protected:
  // Each test starts from an empty cache and leaves no limit behind.
  void SetUp() override {
    device().allocator().set_limit(0);
    device().empty_cache();
    ASSERT_EQ(stats().reserved_bytes.current, 0u) << "a buffer of an earlier test is still alive";
  }
  void TearDown() override {
    device().allocator().configure(AllocatorConfig{});
    device().empty_cache();
  }
  MemoryStats stats() const { return device().allocator().stats(); }
};

// Device::allocate refused 0 bytes; the allocator itself handed out a block of 0, whose size
// key (0) is also a free bin's.
TEST_P(AllocatorSuite, ZeroBytesAreRefusedAsByDeviceAllocate) {
  expect_error([&] { device().allocator().allocate(0); }, ErrorCode::InvalidArgument,
               {"allocate on " + id(), "size is 0 bytes"});
  EXPECT_EQ(stats().allocated_bytes.current, 0u);
  EXPECT_EQ(device().allocator().allocate(1).size(), 1u);
}

TEST_P(AllocatorSuite, FreedBlocksAreReused) {
  uint64_t first_offset;
  {
    Buffer buffer = device().allocate(4096);
    first_offset = buffer.impl()->storage_offset();
  }
  const MemoryStats before = stats();
  Buffer again = device().allocate(4096);
  const MemoryStats after = stats();
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  EXPECT_EQ(after.cache_misses, before.cache_misses);
  EXPECT_EQ(after.reserved_bytes.current, before.reserved_bytes.current);
  EXPECT_EQ(again.impl()->storage_offset(), first_offset);
}

TEST_P(AllocatorSuite, SmallRequestsAreRoundedAndSplitFromSmallSegments) {
  const uint64_t splits = stats().num_splits;  // counters are cumulative, like PyTorch's
  Buffer buffer = device().allocate(1000);
  EXPECT_EQ(buffer.size(), 1000u);
  const MemoryStats s = stats();
  EXPECT_EQ(s.requested_bytes.current, 1000u);
  EXPECT_EQ(s.allocated_bytes.current, 1024u);  // multiples of 512 bytes
  EXPECT_EQ(s.reserved_bytes.current, 2 * kMiB);
  EXPECT_EQ(s.num_splits, splits + 1);
  const MemorySnapshot snapshot = device().allocator().snapshot();
  ASSERT_EQ(snapshot.segments.size(), 1u);
  EXPECT_TRUE(snapshot.segments[0].small_pool);
  ASSERT_EQ(snapshot.segments[0].blocks.size(), 2u);
  EXPECT_TRUE(snapshot.segments[0].blocks[0].allocated);
  EXPECT_EQ(snapshot.segments[0].blocks[0].requested, 1000u);
  EXPECT_FALSE(snapshot.segments[0].blocks[1].allocated);
  EXPECT_EQ(snapshot.segments[0].blocks[1].offset, 1024u);
  EXPECT_EQ(snapshot.segments[0].blocks[1].size, 2 * kMiB - 1024);
}

TEST_P(AllocatorSuite, FreeNeighboursCoalesce) {
  {
    Buffer a = device().allocate(4096), b = device().allocate(4096), c = device().allocate(4096);
    b = Buffer();
    a = Buffer();  // merges with b's block
    EXPECT_EQ(device().allocator().snapshot().segments[0].blocks.size(), 3u);  // a+b, c, rest
  }  // c merges with both sides
  const MemorySnapshot snapshot = device().allocator().snapshot();
  ASSERT_EQ(snapshot.segments.size(), 1u);
  ASSERT_EQ(snapshot.segments[0].blocks.size(), 1u);
  EXPECT_EQ(snapshot.segments[0].blocks[0].size, 2 * kMiB);
  EXPECT_GE(stats().num_merges, 3u);
  EXPECT_EQ(stats().allocated_bytes.current, 0u);
}

TEST_P(AllocatorSuite, LargeRequestsUseLargeSegments) {
  Buffer medium = device().allocate(3 * kMiB);
  EXPECT_EQ(stats().reserved_bytes.current, 20 * kMiB);
  Buffer fits = device().allocate(11 * kMiB);  // from the 17 MiB left of that segment
  EXPECT_EQ(stats().reserved_bytes.current, 20 * kMiB);
  Buffer large = device().allocate(7 * kMiB + 1);  // 6 MiB are left: a segment of its own
  EXPECT_EQ(stats().reserved_bytes.current, 20 * kMiB + 20 * kMiB);
  Buffer huge = device().allocate(17 * kMiB + 1);  // >= 10 MiB: its own, rounded to 2 MiB
  EXPECT_EQ(stats().reserved_bytes.current, 40 * kMiB + 18 * kMiB);
  const MemorySnapshot snapshot = device().allocator().snapshot();
  for (const auto& segment : snapshot.segments) EXPECT_FALSE(segment.small_pool);
}

TEST_P(AllocatorSuite, EmptyCacheReturnsUnusedSegmentsOnly) {
  const uint64_t segment_frees = stats().num_segment_frees;
  Buffer kept = device().allocate(4096);
  { Buffer dropped = device().allocate(5 * kMiB); }
  EXPECT_EQ(stats().reserved_bytes.current, 2 * kMiB + 20 * kMiB);
  device().empty_cache();
  EXPECT_EQ(stats().reserved_bytes.current, 2 * kMiB);
  EXPECT_EQ(stats().num_segment_frees, segment_frees + 1);
  kept = Buffer();
  device().empty_cache();
  EXPECT_EQ(stats().reserved_bytes.current, 0u);
}

TEST_P(AllocatorSuite, LimitGivesAnExactOutOfMemoryAndTheDeviceWorksAfter) {
  device().allocator().set_limit(4 * kMiB);
  Buffer held = device().allocate(3 * kMiB);  // a 20 MiB segment would pass the limit: exact
  EXPECT_EQ(stats().reserved_bytes.current, 3 * kMiB);
  const uint64_t ooms = stats().num_ooms;
  expect_error([&] { device().allocate(2 * kMiB); }, ErrorCode::OutOfMemory,
               {"out of memory on " + id(), "tried to allocate 2097152 bytes", "limit 4.0 MiB",
                "3.0 MiB allocated", "0 B reserved but unallocated", "total", "free",
                "allocator().set_limit"});
  EXPECT_EQ(stats().num_ooms, ooms + 1);
  // Freeing makes room: the cached segment is released and the allocation retried.
  held = Buffer();
  const uint64_t retries = stats().num_alloc_retries;
  // The cached 3 MiB block is too small, and 3 cached + 3.5 > 4: release it, then retry.
  Buffer again = device().allocate(3 * kMiB + kMiB / 2);
  EXPECT_EQ(stats().num_alloc_retries, retries + 1);
  EXPECT_EQ(stats().reserved_bytes.current, 3 * kMiB + kMiB / 2);
  Stream stream = device().create_stream();
  stream.fill(again, uint8_t{5}, 2 * kMiB);
  unsigned char out[16];
  stream.copy_to_host(out, again, 16, 2 * kMiB - 16);
  stream.synchronize();
  EXPECT_EQ(out[15], 5);
}

TEST_P(AllocatorSuite, InitialReserveIsOneSegmentAtTheFirstAllocation) {
  AllocatorConfig config;
  config.initial_reserve_bytes = 30 * kMiB;
  device().allocator().configure(config);
  Buffer first = device().allocate(3 * kMiB);
  EXPECT_EQ(stats().reserved_bytes.current, 30 * kMiB);
  Buffer second = device().allocate(20 * kMiB);  // fits in what was reserved
  EXPECT_EQ(stats().reserved_bytes.current, 30 * kMiB);
}

TEST_P(AllocatorSuite, LargeSegmentsGrowByTheGrowthFactor) {
  AllocatorConfig config;
  config.growth_factor = 2.0;
  config.max_segment_bytes = 64 * kMiB;
  device().allocator().configure(config);
  std::vector<Buffer> held;
  for (int i = 0; i < 3; ++i) held.push_back(device().allocate(9 * kMiB));
  // 20 MiB holds two; the third needs a new segment, twice the last.
  EXPECT_EQ(stats().reserved_bytes.current, 20 * kMiB + 40 * kMiB);
}

TEST_P(AllocatorSuite, MaxSegmentBytesBoundsTheSharedSegment) {
  AllocatorConfig config;
  config.max_segment_bytes = 4 * kMiB;
  device().allocator().configure(config);
  std::vector<Buffer> held;
  held.push_back(device().allocate(3 * kMiB));  // a shared segment of 4 MiB, not 20
  EXPECT_EQ(stats().reserved_bytes.current, 4 * kMiB);
  held.push_back(device().allocate(6 * kMiB));  // larger than the bound: a segment of its size
  EXPECT_EQ(stats().reserved_bytes.current, 4 * kMiB + 6 * kMiB);
}

TEST_P(AllocatorSuite, LimitFractionIsChecked) {
  for (double bad : {0.0, -0.5, 1.5, std::nan("")})
    expect_error([&] { device().allocator().set_limit_fraction(bad); }, ErrorCode::InvalidArgument,
                 {id(), "not in (0, 1]"});
  const uint64_t total = device().info().memory_total.bytes;
  if (total == 0) {  // no fraction of memory the device does not tell, rather than no limit
    expect_error([&] { device().allocator().set_limit_fraction(0.5); }, ErrorCode::Unsupported,
                 {id(), "does not tell"});
    return;
  }
  device().allocator().set_limit_fraction(0.5);
  EXPECT_EQ(device().allocator().config().limit_bytes, total - total / 2);  // rounded up
}

TEST_P(AllocatorSuite, BadConfigurationsAreRefused) {
  AllocatorConfig config;
  config.growth_factor = 0.5;
  expect_error([&] { device().allocator().configure(config); }, ErrorCode::InvalidArgument,
               {"growth factor"});
  config = AllocatorConfig{};
  config.warning_fraction = 0.99;
  config.critical_fraction = 0.9;
  expect_error([&] { device().allocator().configure(config); }, ErrorCode::InvalidArgument,
               {"warning <= critical"});
  expect_error([&] { device().allocator().add_pressure_callback(nullptr); },
               ErrorCode::InvalidArgument, {"empty"});
  expect_error([&] { device().allocator().remove_pressure_callback(987654); }, ErrorCode::NotFound,
               {"987654", id()});
}

TEST_P(AllocatorSuite, PressureCallbacksFireOncePerRise) {
  device().allocator().set_limit(40 * kMiB);
  std::vector<MemoryPressure> seen;
  const uint64_t callback =
      device().allocator().add_pressure_callback([&](const MemoryPressureEvent& e) {
        EXPECT_EQ(e.device, id());
        EXPECT_EQ(e.limit_bytes, 40 * kMiB);
        seen.push_back(e.level);
      });
  {
    std::vector<Buffer> held;
    for (int i = 0; i < 3; ++i) held.push_back(device().allocate(10 * kMiB));  // 75%
    EXPECT_TRUE(seen.empty());
    held.push_back(device().allocate(6 * kMiB));  // 90%: warning
    EXPECT_EQ(seen, std::vector<MemoryPressure>{MemoryPressure::warning});
    held.push_back(device().allocate(2 * kMiB));  // 95%: critical
    EXPECT_EQ(seen,
              (std::vector<MemoryPressure>{MemoryPressure::warning, MemoryPressure::critical}));
    held.pop_back();
    held.push_back(device().allocate(2 * kMiB));  // still above: no new call
    EXPECT_EQ(seen.size(), 2u);
  }
  device().empty_cache();  // falls below both thresholds: re-armed
  std::vector<Buffer> again;
  for (int i = 0; i < 3; ++i) again.push_back(device().allocate(10 * kMiB));
  again.push_back(device().allocate(6 * kMiB));
  EXPECT_EQ(seen.size(), 3u);
  device().allocator().remove_pressure_callback(callback);
}

TEST_P(AllocatorSuite, EachSupportedKindHasItsOwnAllocator) {
  for (MemoryKind kind : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unified}) {
    if (!device().impl()->supports(kind)) {
      expect_error([&] { device().allocator(kind); }, ErrorCode::InvalidArgument,
                   {id(), std::string(to_string(kind))});
      continue;
    }
    Allocator& allocator = device().allocator(kind);
    allocator.empty_cache();
    Buffer buffer = allocator.allocate(4096);
    EXPECT_EQ(buffer.kind(), kind);
    EXPECT_EQ(allocator.stats().allocated_bytes.current, 4096u);
    EXPECT_EQ(&allocator, &device().allocator(kind));
  }
}

TEST_P(AllocatorSuite, MemoryKindsThatAreNotHalsAreRefused) {
  const auto bad = static_cast<MemoryKind>(77);
  for (AllocationMode mode : {AllocationMode::cached, AllocationMode::direct})
    expect_error([&] { device().allocate(16, bad, mode); }, ErrorCode::InvalidArgument,
                 {"allocate on " + id(), "memory kind 77 is not one of hal's"});
  expect_error([&] { device().allocator(static_cast<MemoryKind>(3)); }, ErrorCode::InvalidArgument,
               {"allocator on " + id(), "memory kind 3"});
  expect_error([&] { device().allocator(bad); }, ErrorCode::InvalidArgument, {"memory kind 77"});
  MemoryScope scope(device());
  expect_error([&] { scope.allocate(16, bad); }, ErrorCode::InvalidArgument, {"memory kind 77"});
  expect_error([&] { device().allocate(16, MemoryKind::device, static_cast<AllocationMode>(9)); },
               ErrorCode::InvalidArgument, {"allocation mode 9 is neither cached nor direct"});
}

TEST_P(AllocatorSuite, DirectAllocationsBypassTheCache) {
  Buffer direct = device().allocate(4096, MemoryKind::device, AllocationMode::direct);
  EXPECT_EQ(direct.size(), 4096u);
  EXPECT_EQ(stats().reserved_bytes.current, 0u);
  EXPECT_EQ(stats().num_allocs, device().allocator().stats().num_allocs);
}

TEST_P(AllocatorSuite, MemoryScopeReturnsWhatItAllocated) {
  const uint64_t before = stats().allocated_bytes.current;
  {
    MemoryScope scope(device());
    for (int i = 0; i < 5; ++i) scope.allocate(4096 * (i + 1));
    EXPECT_EQ(scope.size(), 5u);
    EXPECT_GT(stats().allocated_bytes.current, before);
  }
  EXPECT_EQ(stats().allocated_bytes.current, before);
  expect_error([] { MemoryScope scope{Device()}; }, ErrorCode::InvalidArgument, {"empty"});
}

TEST_P(AllocatorSuite, PeaksAndReset) {
  device().allocator().reset_peak_stats();
  { Buffer big = device().allocate(3 * kMiB); }
  EXPECT_EQ(stats().allocated_bytes.peak, 3 * kMiB);
  EXPECT_EQ(stats().allocated_bytes.current, 0u);
  device().allocator().reset_peak_stats();
  EXPECT_EQ(stats().allocated_bytes.peak, 0u);
  EXPECT_EQ(stats().reserved_bytes.peak, stats().reserved_bytes.current);
}

// A slow kernel on one stream still reads a buffer whose last handle the host dropped; another
// stream allocates the same size and overwrites what it gets. Were the block reused before the
// first stream's work was done, the first stream would read the second's bytes.
TEST_P(AllocatorSuite, BlocksAreNotReusedWhileEnqueuedWorkStillReadsThem) {
  Stream slow = device().create_stream();
  Stream other = device().create_stream();
  Gate gate;
  const size_t bytes = 64 * 1024;
  const auto original = pattern_bytes(bytes, 21);
  std::vector<unsigned char> read_back(bytes);
  Buffer copy = device().allocate(bytes);
  {
    Buffer source = device().allocate(bytes);
    slow.copy_from_host(source, original.data(), bytes);
    slow.synchronize();
    slow.host_callback(gate.hold());
    slow.copy(copy, source, bytes);  // still queued behind the gate
  }                                  // the host's last handle is gone
  Buffer reused = device().allocate(bytes);
  other.fill(reused, uint8_t{0xAB}, bytes);
  other.synchronize();
  gate.open();
  slow.copy_to_host(read_back.data(), copy, bytes);
  slow.synchronize();
  EXPECT_EQ(read_back, original);
  // Once the work is done the block is cached again and reused.
  const uint64_t hits = stats().cache_hits;
  Buffer next = device().allocate(bytes);
  EXPECT_EQ(stats().cache_hits, hits + 1);
}

// Work hal cannot see (a library given the raw address) uses a buffer on a stream: record_stream
// holds the memory until that stream's work so far is done.
TEST_P(AllocatorSuite, RecordStreamHoldsMemoryUntilTheStreamsWorkIsDone) {
  Stream stream = device().create_stream();
  Gate gate;
  stream.host_callback(gate.hold());
  uint64_t held_offset;
  {
    Buffer buffer = device().allocate(8192);
    held_offset = buffer.impl()->storage_offset();
    record_stream(buffer, stream);
  }
  Buffer other = device().allocate(8192);
  EXPECT_NE(other.impl()->storage_offset(), held_offset);
  EXPECT_EQ(stats().allocated_bytes.current, 2 * 8192u);
  gate.open();
  stream.synchronize();
  other = Buffer();
  Buffer again = device().allocate(8192);  // the hold is dropped first: its block is free
  EXPECT_EQ(stats().allocated_bytes.current, 8192u);
  expect_error([&] { record_stream(Buffer(), stream); }, ErrorCode::InvalidArgument,
               {"buffer is empty"});
  expect_error([&] { record_stream(again, Stream()); }, ErrorCode::InvalidArgument,
               {"stream is empty"});
}

TEST_P(AllocatorSuite, OutOfMemoryWaitsForHeldMemoryBeforeGivingUp) {
  device().allocator().set_limit(24 * kMiB);
  Stream stream = device().create_stream();
  Gate gate;
  stream.host_callback(gate.hold());
  {
    Buffer big = device().allocate(16 * kMiB);
    record_stream(big, stream);
  }
  device().empty_cache();  // the hold's work is not done: its segment stays
  EXPECT_EQ(stats().reserved_bytes.current, 16 * kMiB);
  const uint64_t retries = stats().num_alloc_retries;
  // The allocation below cannot fit beside the held 16 MiB: it must wait for the stream's work,
  // which another thread lets go a little later.
  std::thread opener([&gate] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    gate.open();
  });
  Buffer next = device().allocate(20 * kMiB);
  opener.join();
  EXPECT_GT(stats().num_alloc_retries, retries);
  EXPECT_EQ(stats().reserved_bytes.current, 20 * kMiB);
}

// Inside a stream's callback, a hold on that stream's later work cannot be waited for: that
// work waits for the callback. The allocation there fails as it would without the hold.
TEST_P(AllocatorSuite, OutOfMemoryInAStreamsCallbackDoesNotWaitForThatStreamsHolds) {
  device().allocator().set_limit(64 * kMiB);
  Stream stream = device().create_stream();
  std::optional<ErrorCode> failed;
  {
    Buffer held = device().allocate(40 * kMiB);
    stream.host_callback([&] {
      try {
        Buffer more = device().allocate(40 * kMiB);
      } catch (const Error& error) {
        failed = error.code();
      }
    });
    record_stream(held, stream);  // its hold follows the callback
  }
  stream.synchronize();
  EXPECT_EQ(failed, ErrorCode::OutOfMemory);
  // The hold's work is done now: the same allocation fits.
  EXPECT_NO_THROW(device().allocate(40 * kMiB));
}

// A new limit re-arms the thresholds it is not past, and one below what is reserved gives back
// what buffers no longer use, blocks parked in a thread's cache included.
TEST_P(AllocatorSuite, ANewLimitRearmsPressureAndGivesBackEveryUnusedSegment) {
  device().allocator().set_limit(20 * kMiB);
  std::vector<MemoryPressure> seen;
  const uint64_t callback = device().allocator().add_pressure_callback(
      [&](const MemoryPressureEvent& e) { seen.push_back(e.level); });
  std::vector<Buffer> held{device().allocate(20 * kMiB)};  // 100 %: warning and critical
  EXPECT_EQ(seen.size(), 2u);
  device().allocator().set_limit(40 * kMiB);     // now at 50 %
  held.push_back(device().allocate(16 * kMiB));  // 36 MiB, 90 %: warning again
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen.back(), MemoryPressure::warning);
  device().allocator().remove_pressure_callback(callback);
  held.clear();
  { Buffer parked = device().allocate(64 * 1024); }  // into this thread's cache
  device().allocator().set_limit(1 * kMiB);
  EXPECT_EQ(stats().reserved_bytes.current, 0u);
}

TEST_P(AllocatorSuite, ManyThreadsAllocateAndFreeMixedSizes) {
  const MemoryStats before = stats();
  std::vector<std::thread> threads;
  std::atomic<int> corrupted{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Stream stream = device().create_stream();
      std::vector<Buffer> live;
      uint32_t state = 12345u + static_cast<uint32_t>(t);
      for (int i = 0; i < 300; ++i) {
        state = state * 1664525u + 1013904223u;
        const size_t sizes[] = {100, 4096, 70'000, 600'000, 3'000'000};
        const size_t size = sizes[(state >> 8) % 5];
        Buffer buffer = device().allocate(size);
        const uint32_t tag = static_cast<uint32_t>(t * 100'000 + i);
        stream.fill(buffer, tag, 16);
        live.push_back(buffer);
        if (live.size() > 6) live.erase(live.begin() + (state >> 16) % live.size());
        if (i % 50 == 49) {
          // Every live buffer still holds its own tag: no block was handed out twice.
          for (const Buffer& held : live) {
            uint32_t head = 0;
            stream.copy_to_host(&head, held, 4);
            stream.synchronize();
            if (head / 100'000 != static_cast<uint32_t>(t)) corrupted.fetch_add(1);
          }
        }
      }
      stream.synchronize();
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(corrupted.load(), 0);
  const MemoryStats after = stats();
  EXPECT_EQ(after.allocated_bytes.current, before.allocated_bytes.current);
  EXPECT_EQ(after.requested_bytes.current, before.requested_bytes.current);
  EXPECT_EQ(after.num_allocs - before.num_allocs, 8u * 300u);
  EXPECT_EQ(after.num_frees - before.num_frees, 8u * 300u);
  device().empty_cache();
  EXPECT_EQ(stats().reserved_bytes.current, 0u);
}

HAL_DEVICE_SUITE(AllocatorSuite);

}  // namespace
}  // namespace hal::test
