// The caching allocator's per-thread caches (thread_block_cache.hpp): a freed buffer comes
// back to the thread that asks for its size again, also when another thread (a stream's worker)
// freed it; a weak reference never holds a block; statistics stay exact with many threads
// allocating, freeing each other's buffers, keeping weak references and flushing at once;
// empty_cache and running out of memory flush every thread's cache, and a block still used by
// a stream's work is never handed out again before that work ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "core/caching_allocator.hpp"
#include "counting_device.hpp"
#include "hal/hal.hpp"

namespace hal::detail {
namespace {

using test_devices::CountingDevice;
using test_devices::kMiB;

constexpr auto kPatience = std::chrono::seconds(30);  // bounds every wait below

// A thread that runs `work`, then waits to be told to end (so that its cache stays alive).
class ParkedThread {
 public:
  template <class Work>
  explicit ParkedThread(Work work)
      : thread_([this, work] {
          work();
          std::unique_lock lock(mutex_);
          worked_ = true;
          changed_.notify_all();
          changed_.wait_for(lock, kPatience, [this] { return ending_; });
        }) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, kPatience, [this] { return worked_; });
  }
  ~ParkedThread() {
    {
      std::lock_guard lock(mutex_);
      ending_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool worked_ = false, ending_ = false;
  std::thread thread_;
};

TEST(AllocatorFastPath, AFreedBufferOfTheSameSizeComesBackAndIsCounted) {
  auto device = std::make_shared<CountingDevice>(64 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  std::thread user([&] {
    const void* first;
    {
      Buffer buffer = allocator->allocate(4000);
      first = buffer.impl().get();
    }
    Buffer again = allocator->allocate(4000);
    EXPECT_EQ(again.impl().get(), first);  // the same buffer, from the thread's cache
    EXPECT_EQ(again.size(), 4000u);
    Buffer other = allocator->allocate(4096);  // same rounded size, another request: the pools
    EXPECT_NE(other.impl().get(), first);
    const MemoryStats stats = allocator->stats();
    EXPECT_EQ(stats.num_allocs, 3u);
    EXPECT_EQ(stats.num_frees, 1u);
    EXPECT_EQ(stats.cache_hits + stats.cache_misses, stats.num_allocs);
    EXPECT_EQ(stats.allocated_bytes.current, 2 * 4096u);
    EXPECT_EQ(stats.requested_bytes.current, 4000u + 4096u);
  });
  user.join();
  const MemoryStats stats = allocator->stats();  // the thread's counts outlive it
  EXPECT_EQ(stats.num_allocs, 3u);
  EXPECT_EQ(stats.num_frees, 3u);
  EXPECT_EQ(stats.allocated_bytes.current, 0u);
  EXPECT_EQ(stats.requested_bytes.current, 0u);
}

// The usual life of an op's result: made by the caller, dropped by whoever ran the work last.
TEST(AllocatorFastPath, ABufferFreedOnAnotherThreadGoesBackToTheThreadThatTookIt) {
  auto device = std::make_shared<CountingDevice>(64 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  std::vector<const void*> made;
  {
    std::vector<Buffer> batch;
    for (int i = 0; i < 100; ++i) {
      batch.push_back(allocator->allocate(64));
      made.push_back(batch.back().impl().get());
    }
    std::thread([moved = std::move(batch)]() mutable { moved.clear(); }).join();
  }
  MemoryStats stats = allocator->stats();
  EXPECT_EQ(stats.num_frees, 100u);  // counted when freed, though not back in a bin yet
  EXPECT_EQ(stats.allocated_bytes.current, 0u);
  EXPECT_EQ(stats.requested_bytes.current, 0u);
  std::vector<Buffer> again;
  for (int i = 0; i < 100; ++i) {
    again.push_back(allocator->allocate(64));
    EXPECT_NE(std::find(made.begin(), made.end(), again.back().impl().get()), made.end());
  }
  stats = allocator->stats();
  EXPECT_EQ(stats.num_allocs, 200u);
  EXPECT_GE(stats.cache_hits, 100u);  // and the pools' hits of the first round
  EXPECT_EQ(stats.cache_hits + stats.cache_misses, 200u);
  EXPECT_EQ(stats.allocated_bytes.current, 100 * CachingAllocator::kMinBlockSize);
  again.clear();
  allocator->empty_cache();
  stats = allocator->stats();
  EXPECT_EQ(stats.num_frees, 200u);
  EXPECT_EQ(stats.allocated_bytes.current, 0u);
  EXPECT_EQ(device->live(), 0u);
}

// Blocks freed for a thread that is not asking for them wait on its list only up to what a
// cache holds: the rest go to the pools, where another thread's request finds them.
TEST(AllocatorFastPath, ReturnsBeyondWhatACacheHoldsGoToThePools) {
  auto device = std::make_shared<CountingDevice>(256 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  {
    std::vector<Buffer> batch;
    for (int i = 0; i < 8; ++i) batch.push_back(allocator->allocate(4 * kMiB));
    std::thread([moved = std::move(batch)]() mutable { moved.clear(); }).join();
  }
  const uint64_t reserved = allocator->stats().reserved_bytes.current;
  std::vector<Buffer> other;
  std::thread([&] {
    for (int i = 0; i < 6; ++i) other.push_back(allocator->allocate(4 * kMiB));
  }).join();
  // At most 8 MiB (two blocks) stayed on this thread's list; the other thread reused the rest.
  EXPECT_EQ(allocator->stats().reserved_bytes.current, reserved);
  other.clear();
  allocator->empty_cache();
  EXPECT_EQ(device->live(), 0u);
  EXPECT_EQ(allocator->stats().num_frees, 14u);
}

// The thread that took a buffer has ended when the buffer is freed: it goes to the freeing
// thread's cache or the pools, and nothing is lost.
TEST(AllocatorFastPath, ABufferOutlivingItsThreadIsFreedWhereItDrops) {
  auto device = std::make_shared<CountingDevice>(64 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  std::vector<Buffer> kept;
  std::thread([&] {
    for (int i = 0; i < 20; ++i) kept.push_back(allocator->allocate(4096));
  }).join();
  kept.clear();
  MemoryStats stats = allocator->stats();
  EXPECT_EQ(stats.num_allocs, 20u);
  EXPECT_EQ(stats.num_frees, 20u);
  EXPECT_EQ(stats.allocated_bytes.current, 0u);
  allocator->empty_cache();
  EXPECT_EQ(device->live(), 0u);
  // The ended thread's cache serves the next thread that allocates.
  std::thread([&] { Buffer buffer = allocator->allocate(4096); }).join();
  stats = allocator->stats();
  EXPECT_EQ(stats.num_allocs, 21u);
  EXPECT_EQ(stats.num_frees, 21u);
}

// A weak reference keeps the handle's control block, which lives in the buffer, but never its
// memory: the block goes back when the last handle drops, and a new handle of the same buffer
// gets a control block of its own meanwhile.
TEST(AllocatorFastPath, AWeakReferenceHoldsNoMemory) {
  auto device = std::make_shared<CountingDevice>(64 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  std::weak_ptr<BufferImpl> weak;
  const void* first;
  {
    Buffer buffer = allocator->allocate(kMiB);
    first = buffer.impl().get();
    weak = buffer.impl();
  }
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(allocator->stats().allocated_bytes.current, 0u);
  {
    Buffer again = allocator->allocate(kMiB);  // the same buffer, with a control block apart
    EXPECT_EQ(again.impl().get(), first);
    std::weak_ptr<BufferImpl> second = again.impl();
    again = Buffer();
    EXPECT_TRUE(second.expired());
  }
  allocator->empty_cache();  // the weak reference still lives in the buffer's bytes
  EXPECT_EQ(device->live(), 0u);
  EXPECT_EQ(allocator->stats().allocated_bytes.current, 0u);
  weak.reset();  // its control block's release frees the buffer object (LeakSanitizer checks)
  const MemoryStats stats = allocator->stats();
  EXPECT_EQ(stats.num_allocs, 2u);
  EXPECT_EQ(stats.num_frees, 2u);
}

TEST(AllocatorFastPath, AReusedHandleLeavesOldWeakReferencesExpired) {
  auto device = std::make_shared<CountingDevice>(64 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  std::weak_ptr<BufferImpl> old;
  {
    Buffer buffer = allocator->allocate(512);
    old = buffer.impl();
  }
  Buffer again = allocator->allocate(512);
  EXPECT_TRUE(old.expired());
  EXPECT_EQ(old.lock(), nullptr);
  again = Buffer();
  allocator->empty_cache();
  EXPECT_EQ(device->live(), 0u);
}

// 16 threads allocate sizes from a small set (so that most requests hit their cache), keep a
// few, hand some to a neighbour to free, while another thread empties the cache and reads the
// statistics the whole time. Afterwards every count balances.
TEST(AllocatorFastPath, SixteenThreadsKeepTheStatisticsExact) {
  constexpr int kThreads = 16, kRounds = 2000;
  auto device = std::make_shared<CountingDevice>(4096 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  std::mutex handoff_mutex;
  std::vector<std::vector<Buffer>> handoff(kThreads);        // buffers for thread i to free
  std::vector<std::weak_ptr<BufferImpl>> watched(kThreads);  // kept past their buffers
  std::atomic<int> running{kThreads};
  std::thread flusher([&] {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (running.load() > 0 && std::chrono::steady_clock::now() < deadline) {
      allocator->empty_cache();
      const MemoryStats stats = allocator->stats();
      EXPECT_LE(stats.num_frees, stats.num_allocs);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      const size_t sizes[] = {64, 4000, 4096, 65536, kMiB, 3 * kMiB};
      std::vector<Buffer> kept;
      for (int round = 0; round < kRounds; ++round) {
        const size_t size = sizes[random() % std::size(sizes)];
        Buffer buffer = allocator->allocate(size);
        EXPECT_EQ(buffer.size(), size);
        if (random() % 16 == 0) {
          std::lock_guard lock(handoff_mutex);
          watched[random() % kThreads] = buffer.impl();  // dropped by another thread, later
        }
        if (random() % 8 == 0) {
          std::lock_guard lock(handoff_mutex);
          handoff[(t + 1) % kThreads].push_back(std::move(buffer));
        } else if (kept.size() < 4) {
          kept.push_back(std::move(buffer));
        } else {
          kept[random() % kept.size()] = std::move(buffer);
        }
        if (round % 64 == 0) {
          std::vector<Buffer> mine;
          std::lock_guard lock(handoff_mutex);
          mine.swap(handoff[t]);
        }
      }
      running.fetch_sub(1);
    });
  for (std::thread& thread : threads) thread.join();
  flusher.join();
  handoff.clear();
  watched.clear();

  const uint64_t allocations = uint64_t{kThreads} * kRounds;
  MemoryStats stats = allocator->stats();
  EXPECT_EQ(stats.num_allocs, allocations);
  EXPECT_EQ(stats.num_frees, allocations);
  EXPECT_EQ(stats.cache_hits + stats.cache_misses, allocations);
  EXPECT_GT(stats.cache_hits, allocations / 2);  // the sizes repeat: most come from caches
  EXPECT_EQ(stats.allocated_bytes.current, 0u);
  EXPECT_EQ(stats.active_bytes.current, 0u);
  EXPECT_EQ(stats.requested_bytes.current, 0u);
  EXPECT_GE(stats.requested_bytes.peak, 3 * kMiB);
  allocator->empty_cache();
  stats = allocator->stats();
  EXPECT_EQ(stats.reserved_bytes.current, 0u);
  EXPECT_EQ(stats.num_segment_allocs, stats.num_segment_frees);
  EXPECT_EQ(device->live(), 0u);
}

TEST(AllocatorFastPath, EmptyCacheFlushesTheCachesOfLivingThreads) {
  auto device = std::make_shared<CountingDevice>(64 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  ParkedThread other([&] {
    for (size_t size : {512ul, 4096ul, 100000ul}) allocator->allocate(size);
  });
  MemoryStats stats = allocator->stats();
  EXPECT_EQ(stats.allocated_bytes.current, 0u);  // freed, though parked in the thread's cache
  EXPECT_EQ(stats.num_frees, 3u);
  EXPECT_EQ(stats.allocated_bytes.peak, 512u + 4096u + 100352u);  // the pools' view
  EXPECT_GT(device->live(), 0u);

  allocator->empty_cache();  // the other thread is alive and does not take part
  stats = allocator->stats();
  EXPECT_EQ(stats.reserved_bytes.current, 0u);
  EXPECT_EQ(stats.allocated_bytes.current, 0u);
  EXPECT_EQ(stats.num_frees, 3u);  // a flush is not another free
  EXPECT_EQ(device->live(), 0u);
}

TEST(AllocatorFastPath, RunningOutOfMemoryFlushesOtherThreadsCaches) {
  auto device = std::make_shared<CountingDevice>(2 * kMiB);
  auto allocator = std::make_shared<CachingAllocator>(*device, MemoryKind::device);
  ParkedThread other([&] { allocator->allocate(kMiB); });  // a 2 MiB segment, now parked
  EXPECT_EQ(device->live(), 2 * kMiB);
  Buffer big;
  EXPECT_NO_THROW(big = allocator->allocate(2 * kMiB));  // fits once the parked block is back
  EXPECT_EQ(big.size(), 2 * kMiB);
  // One allocation, one retry: flushing the parked block and releasing the cached segment it
  // left are two ways of making room for the same request.
  EXPECT_EQ(allocator->stats().num_alloc_retries, 1u);
  EXPECT_EQ(allocator->stats().num_ooms, 0u);
}

// On cpu:0: a buffer that a stream's work drops last (here a callback that owns it, on the
// stream's worker) comes back to the thread that allocated it.
TEST(AllocatorFastPath, ABufferAStreamDropsComesBackToTheCaller) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  constexpr size_t kBytes = 4096 + 768;  // a size no other test of this process uses
  const void* made;
  {
    Buffer buffer = cpu.allocate(kBytes);
    made = buffer.impl().get();
    stream.host_callback([owned = std::move(buffer)] {});
  }
  stream.synchronize();  // the callback, and with it the buffer, is gone on the worker
  Buffer again = cpu.allocate(kBytes);
  EXPECT_EQ(again.impl().get(), made);
}

// On cpu:0: a buffer whose last handle is dropped while work on a stream still uses it stays
// that work's until it has run, so an allocation of the same size meanwhile gets other memory,
// whether the work is hal's (a launch) or another library's (record_stream).
TEST(AllocatorFastPath, ABlockStillUsedByAStreamIsNotHandedOut) {
  const Device cpu = device("cpu:0");
  Stream stream = cpu.create_stream();
  constexpr size_t kBytes = 4096 + 256;
  { Buffer warm = cpu.allocate(kBytes); }  // the thread's cache now holds one of this size
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  stream.host_callback([opened] { opened.wait_for(kPatience); });

  Buffer used = cpu.allocate(kBytes);
  void* used_at = used.host_data();
  static const Kernel touch = host_kernel(
      "touch", [](const KernelChunk& chunk) { chunk.args.ptr<unsigned char>(0)[0] = 7; });
  stream.launch(touch, LaunchConfig::linear(1), {used});
  Buffer recorded = cpu.allocate(kBytes);
  void* recorded_at = recorded.host_data();
  record_stream(recorded, stream);
  used = Buffer();      // the launch holds it
  recorded = Buffer();  // record_stream holds it

  std::vector<Buffer> meanwhile;
  for (int i = 0; i < 4; ++i) {
    meanwhile.push_back(cpu.allocate(kBytes));
    EXPECT_NE(meanwhile.back().host_data(), used_at);
    EXPECT_NE(meanwhile.back().host_data(), recorded_at);
  }
  gate.set_value();
  stream.synchronize();
}

}  // namespace
}  // namespace hal::detail
