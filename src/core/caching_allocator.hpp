// The caching allocator: one per device and memory kind. Segments come from the backend;
// requests are served from blocks of them, split and coalesced, in two pools (small requests
// of at most 1 MiB, and large ones), after PyTorch's CUDA caching allocator.
//
// A block is returned when its buffer's last reference drops. In hal, enqueued work holds the
// buffers it uses (the record-stream rule of ARCHITECTURE.md), so by then no work on any
// stream still uses the block, and any stream may reuse it at once.
//
// In front of the pools, each thread that allocates keeps the buffers it freed last, by exact
// size (thread_block_cache.hpp): a request of a size the thread freed recently takes one back
// without the lock, and the buffer object is reused with its handle's control block, which
// lives inside it, so a hit touches neither the heap nor a shared cache line. A buffer freed on
// another thread goes back to the cache of the thread that took it. Those blocks stay
// "allocated" in the pools until they are flushed back: when the thread ends, by empty_cache,
// when an allocation runs out of memory, and when the thread itself would otherwise make a new
// segment.
#pragma once

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <vector>

#include "core/thread_block_cache.hpp"
#include "hal/allocator.hpp"
#include "hal/backend.hpp"

namespace hal::detail {

// The largest allocation the device takes of `kind`: its limit is the device memory's alone
// (pinned host memory is the host's); 0 where there is none.
uint64_t largest_allocation(const DeviceImpl& device, MemoryKind kind);
// OutOfMemory for a request past it, cached or direct, naming the device and its figures.
void refuse_past_largest(const DeviceImpl& device, MemoryKind kind, size_t bytes);

class CachingAllocator final : public Allocator,
                               public std::enable_shared_from_this<CachingAllocator> {
 public:
  static constexpr size_t kMinBlockSize = 512;        // every size rounds up to a multiple
  static constexpr size_t kSmallSize = 1 << 20;       // largest request of the small pool
  static constexpr size_t kSmallSegment = 2 << 20;    // segments of the small pool
  static constexpr size_t kLargeSegment = 20 << 20;   // segments for requests under 10 MiB
  static constexpr size_t kMinLargeAlloc = 10 << 20;  // from here, a segment per request
  static constexpr size_t kRoundLarge = 2 << 20;      // ... rounded up to 2 MiB

  static size_t round_size(size_t bytes);

  CachingAllocator(DeviceImpl& device, MemoryKind kind);
  // Returns every segment to the backend. No buffer of it is alive: each holds the allocator.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws OutOfMemory with the figures after releasing cached segments and retrying once.
  // InvalidArgument for 0 bytes, as Device::allocate (a block of 0 would look like a free bin).
  Buffer allocate(size_t bytes) override;
  BufferPtr allocate_block(size_t bytes);
  // A buffer of exactly `bytes` that this thread freed recently, or null: the fast path, which
  // neither locks nor throws. Its size passed every check when it was first allocated.
  BufferPtr try_parked(size_t bytes) noexcept;

  // Counts and current figures are exact, the threads' caches included (a block parked in one
  // counts as freed); a peak counts the parked blocks as allocated, as the pools see them.
  MemoryStats stats() const override;
  // Both flush every thread's cache first (flush_thread_caches), so that the peaks restart
  // from, and the snapshot shows, the blocks users hold.
  void reset_peak_stats() override;
  MemorySnapshot snapshot() const override;
  // Drops holds whose work is done, flushes every thread's cache, then returns every segment
  // with no block in use.
  void empty_cache() override;

  AllocatorConfig config() const override;
  void configure(const AllocatorConfig& config) override;
  void set_limit(uint64_t bytes) override;
  void set_limit_fraction(double fraction) override;
  uint64_t add_pressure_callback(MemoryPressureCallback callback) override;
  void remove_pressure_callback(uint64_t id) override;

  // Keeps `buffer` alive until `fence`, on `stream`'s work, is ready (record_stream). Holds
  // whose fence is ready are dropped at the next allocation; when memory runs out, all are
  // waited for and dropped, but those of a stream whose callback this thread runs (its work
  // waits for this thread).
  void hold_until(BufferPtr buffer, std::shared_ptr<HostFence> fence, const StreamImpl* stream);
  // Drops the holds whose fences are ready (all, waiting for them, when `wait`); returns how
  // many. Takes the lock itself: dropping a buffer returns its block, which needs it.
  size_t drop_holds(bool wait);
  // After the limit or thresholds changed (under the lock).
  void follow_new_limit();

  // Returns the blocks of every thread's cache to the pools; waits for a thread that is using
  // its cache at that moment (a few instructions). Not with mutex_ held.
  void flush_thread_caches();

  class PooledBuffer;
  using Cache = ThreadBlockCache<PooledBuffer>;
  // Called when a thread ends: its cache's blocks go back to the pools and it stops taking
  // returns. It stays (its counts are part of stats()) until a new thread reuses it, so a
  // buffer's home cache is valid as long as the buffer's allocator.
  void retire_cache(const std::shared_ptr<Cache>& cache);

 private:
  struct Segment;
  struct Block {
    Segment* segment;
    size_t offset;
    size_t size;
    size_t requested = 0;
    bool allocated = false;
    std::list<Block>::iterator self{};
  };
  struct Segment {
    uint64_t id;
    BufferPtr storage;
    size_t size;
    bool small;
    std::list<Block> blocks;  // in address order
  };
  struct BlockOrder {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeBlocks = std::set<Block*, BlockOrder>;
  struct Recycle;  // a PooledBuffer handle's deleter: recycle()
  template <class T>
  struct InlineControlBlock;  // where the handle's control block lives (the buffer's bytes)
  struct Pending;             // pressure callbacks to run once the lock is released

  struct Hold {
    BufferPtr buffer;
    std::shared_ptr<HostFence> fence;
    const StreamImpl* stream;  // whose work the fence follows; compared, never used
  };
  // `retried`: whether this allocation already counted a retry in num_alloc_retries (one
  // allocation counts one, however many ways it made room).
  BufferPtr allocate_once(size_t bytes, Cache* own, bool& retried);
  // The calling thread's cache of this allocator, made on first use when `make`; null when
  // the thread is ending.
  Cache* thread_cache(bool make);
  Cache* find_thread_cache(bool make);
  BufferPtr take_parked(Cache& cache, size_t bytes);
  static BufferPtr handle(PooledBuffer* buffer);  // a user's handle, allocating nothing
  // Sends a buffer whose last handle has dropped back to its home cache, parks it in this
  // thread's, or discards it.
  void recycle(PooledBuffer* buffer) noexcept;
  // Returns the block of a buffer no cache takes to the pools, and frees the object once no
  // control block lives in it.
  static void discard(PooledBuffer* buffer) noexcept;
  // Into one of `cache`'s bins when there is room; its owner is inside enter() ... leave().
  static bool park(Cache& cache, PooledBuffer& buffer) noexcept;
  // Onto `home`'s returned list; false when its thread has ended.
  static bool push_returned(Cache& home, PooledBuffer& buffer) noexcept;
  // The owner takes its returned list into its bins; what does not fit goes to the pools.
  void take_returned(Cache& cache);
  // The sizes of buffers taken out of a cache, whose frees were counted already.
  struct Taken {
    uint64_t bytes = 0, requested = 0;                                 // rounded and requested
    void add(PooledBuffer* buffer, std::vector<PooledBuffer*>& into);  // marks it, counts it
  };
  // Drops taken buffers from the pools' allocated figures; mutex_ held.
  void forget_freed(const Taken& taken);
  // Takes every parked and returned buffer out of `cache`, whose owner is not using it, and
  // closes its returned list when `closing`; caches_mutex_ held.
  void take_all_parked(Cache& cache, std::vector<PooledBuffer*>& taken, bool closing = false);
  void discard_parked(const std::vector<PooledBuffer*>& taken);  // their blocks to the pools
  void flush_own_cache(Cache& cache);
  // `parked`: the buffer was counted as freed when it was parked.
  void release(Block* block, bool parked = false);
  Block* take_free_block(FreeBlocks& pool, size_t size);
  Block* new_segment(bool small, size_t size, bool& retried);
  Block* split(Block* block, size_t size, FreeBlocks& pool);
  size_t release_cached();    // returns bytes released; lock held
  size_t release_segments();  // the same without touching the device
  void update_pressure(Pending& pending);
  // Calls the pending callbacks still registered, without the lock; logs what they throw.
  void notify(const Pending& pending);
  void log_callback_failure(uint64_t id, std::string_view what) const;
  uint64_t pressure_limit() const;     // the limit, or the device's memory when none is set
  int current_pressure_level() const;  // 0 below warning, 1 from warning, 2 from critical
  [[noreturn]] void throw_out_of_memory(size_t bytes, size_t segment_bytes, const std::string& why);
  FreeBlocks& pool_of(const Segment& segment) { return segment.small ? small_free_ : large_free_; }

  DeviceImpl& device_;
  const MemoryKind kind_;
  const uint64_t id_;  // never reused, unlike an address: how a thread finds its cache
  // Lock order: caches_mutex_, then mutex_.
  mutable std::mutex caches_mutex_;
  std::vector<std::shared_ptr<Cache>> caches_;  // of the threads that allocated here
  mutable std::mutex mutex_;
  AllocatorConfig config_;
  std::list<Segment> segments_;
  FreeBlocks small_free_;
  FreeBlocks large_free_;
  MemoryStats stats_;
  uint64_t next_segment_id_ = 0;
  size_t last_large_segment_ = 0;
  bool initial_reserve_made_ = false;  // re-armed when the configured reserve changes
  int pressure_level_ = 0;             // 0 none, 1 warning, 2 critical: each fires once per rise
  // Shared, so that a call runs outside the lock while the callback may be removed.
  std::map<uint64_t, std::shared_ptr<const MemoryPressureCallback>> callbacks_;
  std::vector<Hold> holds_;
  std::atomic<size_t> hold_count_{0};  // holds_.size(), read without the lock
  uint64_t next_callback_id_ = 1;
};

}  // namespace hal::detail
