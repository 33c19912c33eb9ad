#include "core/caching_allocator.hpp"

#include "core/trace_record.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iterator>
#include <thread>
#include <utility>

#include "backends/async/spin_wait.hpp"
#include "core/callback_thread.hpp"

#include "hal/log.hpp"
#include "hal/units.hpp"

namespace hal::detail {
namespace {

void add(MemoryStat& stat, uint64_t bytes) {
  stat.current += bytes;
  stat.peak = std::max(stat.peak, stat.current);
}

void subtract(MemoryStat& stat, uint64_t bytes) { stat.current -= bytes; }

}  // namespace

// A user's buffer: one block of a segment. When its last handle drops (the control block's
// dispose, Recycle), it goes back to its home cache, into this thread's, or its block goes back
// to the pools. The handle's control block is built in the buffer's own bytes when they are free
// (InlineControlBlock), so a hit allocates nothing; the object is freed only once no control
// block lives in it, since a weak reference keeps one after the buffer has gone back.
class CachingAllocator::PooledBuffer final : public BufferImpl {
 public:
  PooledBuffer(std::shared_ptr<CachingAllocator> allocator, Block* block, size_t bytes)
      : BufferImpl(block->segment->storage->device_ptr(), bytes, allocator->kind_,
                   *block->segment->storage, block->offset),
        allocator_(std::move(allocator)),
        block_(block),
        block_bytes_(block->size) {}
  ~PooledBuffer() override { release_block(); }

  void* host_pointer() const noexcept override {
    auto* base = static_cast<char*>(block_->segment->storage->host_pointer());
    return base ? base + block_->offset : nullptr;
  }

  CachingAllocator& allocator() const { return *allocator_; }
  size_t block_bytes() const { return block_bytes_; }
  // Gives the block back to the pools ahead of the object (which a control block may still be
  // living in); `parked_`: its free was counted already.
  void release_block() noexcept {
    if (block_) allocator_->release(std::exchange(block_, nullptr), parked_);
  }

  // Storage for the control block of a handle (InlineControlBlock), and its state: kLive while
  // a control block lives there (set by the thread making a handle, which saw it clear; cleared
  // by that block's release, on whichever thread drops the last weak reference); kDead once the
  // buffer is no cache's. Of the two that clear kLive and set kDead, the second frees the object.
  static constexpr size_t kControlBlockBytes = 48;
  static constexpr uint8_t kLive = 1, kDead = 2;
  alignas(16) std::byte control_block[kControlBlockBytes];
  std::atomic<uint8_t> state{0};
  PooledBuffer* next_parked = nullptr;  // in a cache's bin or returned list
  Cache* home = nullptr;  // the cache of the thread that took it last: where it goes back to
  bool parked_ = false;   // counted as freed already (taken out of a cache)

 private:
  std::shared_ptr<CachingAllocator> allocator_;
  Block* block_;
  size_t block_bytes_;  // block_->size, which stays put while the block is allocated
};

struct CachingAllocator::Recycle {
  void operator()(BufferImpl* buffer) const noexcept {
    auto* pooled = static_cast<PooledBuffer*>(buffer);
    pooled->allocator().recycle(pooled);
  }
};

// Where a handle's control block lives: in its buffer, or (while an older handle's block is
// still there, held by a weak reference) on the heap. Releasing the one in the buffer is the
// handle's last act: it frees the buffer if no cache took it, or marks the storage free.
template <class T>
struct CachingAllocator::InlineControlBlock {
  using value_type = T;
  InlineControlBlock(PooledBuffer* owner, bool inside) noexcept
      : buffer(owner), in_buffer(inside) {}
  template <class U>
  InlineControlBlock(const InlineControlBlock<U>& other) noexcept  // NOLINT: rebinding
      : buffer(other.buffer), in_buffer(other.in_buffer) {}
  T* allocate(size_t n) {
    static_assert(sizeof(T) <= PooledBuffer::kControlBlockBytes && alignof(T) <= 16,
                  "a handle's control block must fit in its buffer");
    if (!in_buffer) return static_cast<T*>(::operator new(n * sizeof(T)));
    return reinterpret_cast<T*>(buffer->control_block);
  }
  void deallocate(T* block, size_t) noexcept {
    if (!in_buffer) {
      ::operator delete(block);
    } else if (buffer->state.fetch_and(~PooledBuffer::kLive, std::memory_order_acq_rel) &
               PooledBuffer::kDead) {
      delete buffer;  // may destroy the allocator: nothing of it is touched after
    }
  }
  template <class U>
  bool operator==(const InlineControlBlock<U>& other) const noexcept {
    return buffer == other.buffer && in_buffer == other.in_buffer;
  }
  PooledBuffer* buffer;
  bool in_buffer;
};

BufferPtr CachingAllocator::handle(PooledBuffer* buffer) {
  if (buffer->state.load(std::memory_order_acquire) == 0) [[likely]] {
    buffer->state.store(PooledBuffer::kLive, std::memory_order_relaxed);  // no one else writes now
    return BufferPtr(buffer, Recycle{}, InlineControlBlock<char>(buffer, true));
  }
  // If the heap refuses the block, the shared_ptr hands the buffer to Recycle, which parks it.
  return BufferPtr(buffer, Recycle{}, InlineControlBlock<char>(buffer, false));
}

namespace {

using Cache = CachingAllocator::Cache;

std::atomic<uint64_t> next_allocator_id{1};

// The caches of the allocators this thread used; each also sits in its allocator's caches_.
// Retired (flushed into their allocators) when the thread ends.
struct ThreadCaches {
  struct Entry {
    uint64_t allocator_id;
    std::weak_ptr<CachingAllocator> allocator;
    std::shared_ptr<Cache> cache;
  };
  std::vector<Entry> entries;

  ThreadCaches() = default;
  ThreadCaches(const ThreadCaches&) = delete;
  ThreadCaches& operator=(const ThreadCaches&) = delete;
  ~ThreadCaches();
};

// The hot path's part: the allocator of the last lookup and its cache. Trivially destructible,
// so still readable while the thread's other thread_locals are destroyed.
struct LastCache {
  uint64_t allocator_id;
  Cache* cache;
  bool thread_ending;
};
thread_local LastCache last_cache{0, nullptr, false};
thread_local ThreadCaches thread_caches;

ThreadCaches::~ThreadCaches() {
  last_cache = {0, nullptr, true};  // frees from here on go straight to the pools
  for (Entry& entry : entries)
    if (std::shared_ptr<CachingAllocator> allocator = entry.allocator.lock())
      allocator->retire_cache(entry.cache);
  entries.clear();
}

}  // namespace

// Pressure events to deliver once the lock is released, by callback id: a callback removed
// meanwhile (by an earlier call of the same batch, say) is skipped.
struct CachingAllocator::Pending {
  std::vector<std::pair<uint64_t, MemoryPressureEvent>> calls;
};

bool CachingAllocator::BlockOrder::operator()(const Block* a, const Block* b) const {
  if (a->size != b->size) return a->size < b->size;
  if (a->segment->id != b->segment->id) return a->segment->id < b->segment->id;
  return a->offset < b->offset;
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

CachingAllocator::CachingAllocator(DeviceImpl& device, MemoryKind kind)
    : device_(device), kind_(kind), id_(next_allocator_id.fetch_add(1)) {}

CachingAllocator::~CachingAllocator() {
  // Runs while the device is being destroyed (the device owns it): no virtual calls on it here.
  std::lock_guard lock(mutex_);
  release_segments();
}

// The largest allocation the device takes of `kind`: its limit is the device memory's alone
// (pinned host memory is the host's); 0 where there is none.
uint64_t largest_allocation(const DeviceImpl& device, MemoryKind kind) {
  return kind == MemoryKind::device ? device.info().limits.max_allocation_bytes : 0;
}

void refuse_past_largest(const DeviceImpl& device, MemoryKind kind, size_t bytes) {
  const uint64_t limit = largest_allocation(device, kind);
  if (limit == 0 || bytes <= limit) return;
  const DeviceInfo& info = device.info();
  throw Error(ErrorCode::OutOfMemory, "allocate on " + info.id + ": " + std::to_string(bytes) +
                                          " bytes (" + format_bytes(bytes) +
                                          ") exceeds the device's largest allocation of " +
                                          std::to_string(limit) + " bytes (" + format_bytes(limit) +
                                          "); total " + format_bytes(info.memory_total.bytes) +
                                          ", free " + format_memory(device.memory_free()));
}

namespace {

// Whether a flush would give the pools anything: blocks parked in, or returned to, a thread's
// cache. caches_mutex_ held.
bool any_parked(const std::vector<std::shared_ptr<CachingAllocator::Cache>>& caches) {
  return std::any_of(caches.begin(), caches.end(), [](const auto& cache) {
    return cache->parked_bytes.load(std::memory_order_relaxed) > 0 ||
           cache->returned_bytes.load(std::memory_order_relaxed) > 0;
  });
}

}  // namespace

Buffer CachingAllocator::allocate(size_t bytes) {
  if (bytes == 0)
    throw Error(ErrorCode::InvalidArgument,
                "allocate on " + device_.info().id + ": size is 0 bytes; ask for at least 1");
  return Buffer(allocate_block(bytes));
}

BufferPtr CachingAllocator::allocate_block(size_t bytes) {
  if (hold_count_.load(std::memory_order_relaxed) > 0) drop_holds(false);
  Cache* own = thread_cache(true);
  if (own) {
    if (BufferPtr parked = take_parked(*own, bytes)) return parked;
  }
  // Memory held for work of other libraries (record_stream) and blocks parked in threads'
  // caches: wait for the one, flush the other; whether that left anything to retry with.
  bool retried = false;
  const auto make_room = [&] {
    const size_t dropped = drop_holds(true);
    bool parked = false;
    {
      std::lock_guard lock(caches_mutex_);
      parked = any_parked(caches_);
    }
    if (dropped == 0 && !parked) return false;
    flush_thread_caches();
    std::lock_guard lock(mutex_);
    if (!std::exchange(retried, true)) ++stats_.num_alloc_retries;
    return true;
  };
  // Each refusal counts once in num_ooms, here: whichever check made it, after the retry where
  // there was one.
  try {
    if (bytes > SIZE_MAX - kRoundLarge) {
      std::lock_guard lock(mutex_);  // the message reads the figures
      throw_out_of_memory(bytes, 0, "the size overflows");
    }
    refuse_past_largest(device_, kind_, bytes);  // no retry makes room for it
    try {
      return allocate_once(bytes, own, retried);
    } catch (const Error& error) {
      if (error.code() != ErrorCode::OutOfMemory || !make_room()) throw;
    }
    return allocate_once(bytes, own, retried);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::OutOfMemory) {
      std::lock_guard lock(mutex_);
      ++stats_.num_ooms;
    }
    throw;
  }
}

BufferPtr CachingAllocator::try_parked(size_t bytes) noexcept {
  if (hold_count_.load(std::memory_order_relaxed) > 0) return nullptr;  // allocate_block drops them
  Cache* own = thread_cache(false);
  if (!own) return nullptr;
  try {
    return take_parked(*own, bytes);
  } catch (...) {  // no control block: the buffer went back to the cache
    return nullptr;
  }
}

[[gnu::always_inline]] inline CachingAllocator::Cache* CachingAllocator::thread_cache(bool make) {
  if (last_cache.allocator_id == id_) [[likely]]
    return last_cache.cache;
  if (last_cache.thread_ending) return nullptr;
  return find_thread_cache(make);
}

CachingAllocator::Cache* CachingAllocator::find_thread_cache(bool make) {
  ThreadCaches& mine = thread_caches;
  for (const ThreadCaches::Entry& entry : mine.entries)
    if (entry.allocator_id == id_) {
      last_cache = {id_, entry.cache.get(), false};
      return entry.cache.get();
    }
  if (!make) return nullptr;
  std::shared_ptr<Cache> cache;
  {
    // A cache whose thread has ended, if there is one: caches are never freed while their
    // allocator lives (buffers name theirs), so their number stays that of the threads alive.
    std::lock_guard lock(caches_mutex_);
    for (const auto& candidate : caches_)
      if (candidate->retired) {
        cache = candidate;
        cache->retired = false;
        cache->returned.store(nullptr, std::memory_order_release);  // open again
        break;
      }
    if (!cache) {
      cache = std::make_shared<Cache>();
      caches_.push_back(cache);
    }
  }
  mine.entries.push_back({id_, weak_from_this(), cache});
  last_cache = {id_, cache.get(), false};
  return cache.get();
}

namespace {

// Counters of a cache change only where its owner (or a flusher that excludes the owner)
// writes them: a load and a store, not a read-modify-write.
void bump(std::atomic<uint64_t>& counter, uint64_t by) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}
void drop(std::atomic<uint64_t>& counter, uint64_t by) {
  counter.store(counter.load(std::memory_order_relaxed) - by, std::memory_order_relaxed);
}

}  // namespace

[[gnu::always_inline]] inline BufferPtr CachingAllocator::take_parked(Cache& cache, size_t bytes) {
  if (!cache.enter()) return nullptr;
  Cache::Bin& bin = cache.bins[(bytes >> 9 ^ bytes >> 14 ^ bytes) % Cache::kBins];
  if (bin.bytes != bytes || bin.count == 0) [[unlikely]] {
    cache.leave();
    PooledBuffer* returned = cache.returned.load(std::memory_order_relaxed);
    if (returned == nullptr || returned == Cache::closed()) return nullptr;
    take_returned(cache);
    if (!cache.enter()) return nullptr;
    if (bin.bytes != bytes || bin.count == 0) {
      cache.leave();
      return nullptr;
    }
  }
  PooledBuffer* buffer = bin.head;
  bin.head = buffer->next_parked;
  --bin.count;
  cache.held_bytes -= buffer->block_bytes();
  bump(cache.hits, 1);
  drop(cache.parked_bytes, buffer->block_bytes());
  drop(cache.parked_requested, bytes);
  cache.leave();
  buffer->next_parked = nullptr;
  buffer->home = &cache;
  if (trace::enabled()) [[unlikely]]
    trace::detail::note_allocation(true);
  return handle(buffer);
}

bool CachingAllocator::park(Cache& cache, PooledBuffer& buffer) noexcept {
  const size_t bytes = buffer.size();
  Cache::Bin* bin = cache.bin_of(bytes);
  if (!bin || bin->count >= Cache::capacity(buffer.block_bytes()) ||
      cache.held_bytes + buffer.block_bytes() > Cache::kMaxBytes)
    return false;
  buffer.next_parked = bin->head;
  bin->head = &buffer;
  ++bin->count;
  cache.held_bytes += buffer.block_bytes();
  bump(cache.parked_bytes, buffer.block_bytes());
  bump(cache.parked_requested, bytes);
  return true;
}

bool CachingAllocator::push_returned(Cache& home, PooledBuffer& buffer) noexcept {
  const uint64_t bytes = buffer.block_bytes(), requested = buffer.size();
  // A list holds no more than a cache does: blocks on it serve only its owner, who may not ask
  // again for a while, so past that they go to the pools, where every thread finds them.
  if (home.returned_bytes.load(std::memory_order_relaxed) + bytes > Cache::kMaxBytes) return false;
  // Counted first, so that whoever takes the list never subtracts what was not added.
  home.returned_bytes.fetch_add(bytes, std::memory_order_relaxed);
  home.returned_requested.fetch_add(requested, std::memory_order_relaxed);
  home.returned_frees.fetch_add(1, std::memory_order_relaxed);
  PooledBuffer* head = home.returned.load(std::memory_order_relaxed);
  do {
    if (head == Cache::closed()) {
      home.returned_bytes.fetch_sub(bytes, std::memory_order_relaxed);
      home.returned_requested.fetch_sub(requested, std::memory_order_relaxed);
      home.returned_frees.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    buffer.next_parked = head;
  } while (!home.returned.compare_exchange_weak(head, &buffer, std::memory_order_release,
                                                std::memory_order_relaxed));
  return true;
}

void CachingAllocator::take_returned(Cache& cache) {
  PooledBuffer* list = cache.returned.exchange(nullptr, std::memory_order_acquire);
  uint64_t bytes = 0, requested = 0;
  for (PooledBuffer* buffer = list; buffer; buffer = buffer->next_parked) {
    bytes += buffer->block_bytes();
    requested += buffer->size();
  }
  // Off the list's figures before into the bins': meanwhile stats() counts them as allocated,
  // never twice as free.
  cache.returned_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  cache.returned_requested.fetch_sub(requested, std::memory_order_relaxed);
  std::vector<PooledBuffer*> spilled;  // no room in the bins, or a flush under way
  Taken spilled_sizes;
  const bool entered = cache.enter();
  while (list) {
    PooledBuffer* buffer = list;
    list = buffer->next_parked;
    if (!entered || !park(cache, *buffer)) spilled_sizes.add(buffer, spilled);
  }
  if (entered) cache.leave();
  if (spilled.empty()) return;
  {
    std::lock_guard lock(mutex_);
    forget_freed(spilled_sizes);
  }
  discard_parked(spilled);
}

// A buffer freed by the thread that took it is parked there; one freed elsewhere goes home, so
// that a thread allocating what another frees (an op's result, dropped by the stream's worker)
// finds it again.
void CachingAllocator::recycle(PooledBuffer* buffer) noexcept {
  Cache* own = thread_cache(false);
  if (Cache* home = buffer->home; home && home != own && push_returned(*home, *buffer)) return;
  if (own && own->enter()) {
    const bool parked = park(*own, *buffer);
    own->leave();
    if (parked) {
      bump(own->frees, 1);  // the owner's counter: written by no one else
      return;
    }
  }
  discard(buffer);  // may destroy this allocator: nothing of it is touched after
}

void CachingAllocator::discard(PooledBuffer* buffer) noexcept {
  // The block goes back now; the object when no control block lives in it any more (one still
  // does while this is the releasing handle's, or a weak reference keeps an older one).
  buffer->release_block();
  if (!(buffer->state.fetch_or(PooledBuffer::kDead, std::memory_order_acq_rel) &
        PooledBuffer::kLive))
    delete buffer;  // may destroy this allocator: nothing of it is touched after
}

void CachingAllocator::Taken::add(PooledBuffer* buffer, std::vector<PooledBuffer*>& into) {
  buffer->next_parked = nullptr;
  buffer->parked_ = true;  // its free was counted when it was parked or returned
  bytes += buffer->block_bytes();
  requested += buffer->size();
  into.push_back(buffer);
}

void CachingAllocator::forget_freed(const Taken& taken) {
  subtract(stats_.allocated_bytes, taken.bytes);
  subtract(stats_.active_bytes, taken.bytes);
  subtract(stats_.requested_bytes, taken.requested);
}

void CachingAllocator::take_all_parked(Cache& cache, std::vector<PooledBuffer*>& taken,
                                       bool closing) {
  Taken parked, returned;
  for (Cache::Bin& bin : cache.bins) {
    for (PooledBuffer* buffer = bin.head; buffer;) {
      PooledBuffer* next = buffer->next_parked;
      parked.add(buffer, taken);
      buffer = next;
    }
    bin = Cache::Bin{};
  }
  cache.held_bytes = 0;
  if (!cache.retired) {  // a retired cache's list is closed and empty
    PooledBuffer* list =
        cache.returned.exchange(closing ? Cache::closed() : nullptr, std::memory_order_acquire);
    while (list) {
      PooledBuffer* buffer = list;
      list = buffer->next_parked;
      returned.add(buffer, taken);
    }
  }
  // The pools' view drops them now, under both locks, so that stats() never counts them
  // twice or not at all; their blocks follow in discard_parked.
  std::lock_guard lock(mutex_);
  drop(cache.parked_bytes, parked.bytes);
  drop(cache.parked_requested, parked.requested);
  cache.returned_bytes.fetch_sub(returned.bytes, std::memory_order_relaxed);
  cache.returned_requested.fetch_sub(returned.requested, std::memory_order_relaxed);
  forget_freed(parked);
  forget_freed(returned);
}

void CachingAllocator::discard_parked(const std::vector<PooledBuffer*>& taken) {
  // The caller holds a reference to this allocator, so the last buffer cannot destroy it.
  for (PooledBuffer* buffer : taken) discard(buffer);
}

void CachingAllocator::flush_thread_caches() {
  auto self = shared_from_this();  // a parked buffer may hold the last other reference
  std::vector<PooledBuffer*> taken;
  {
    std::lock_guard lock(caches_mutex_);
    if (caches_.empty()) return;
    for (const auto& cache : caches_) cache->flush_requested.store(true, std::memory_order_seq_cst);
    heavy_fence();
    for (const auto& cache : caches_) {
      // The owner is inside enter() ... leave(): a few instructions.
      for (unsigned spins = 0; cache->busy.load(std::memory_order_seq_cst); ++spins) {
        if (spins < 64)
          async::cpu_relax();
        else
          std::this_thread::yield();
      }
      take_all_parked(*cache, taken);
      cache->flush_requested.store(false, std::memory_order_seq_cst);
    }
  }
  discard_parked(taken);
}

void CachingAllocator::flush_own_cache(Cache& cache) {
  std::vector<PooledBuffer*> taken;
  {
    // The owner is this thread, outside enter() ... leave(); the lock keeps flushers out.
    std::lock_guard lock(caches_mutex_);
    take_all_parked(cache, taken);
  }
  discard_parked(taken);
}

void CachingAllocator::retire_cache(const std::shared_ptr<Cache>& cache) {
  std::vector<PooledBuffer*> taken;
  {
    std::lock_guard lock(caches_mutex_);
    take_all_parked(*cache, taken, /*closing=*/true);
    cache->retired = true;
  }
  discard_parked(taken);
}

void CachingAllocator::hold_until(BufferPtr buffer, std::shared_ptr<HostFence> fence,
                                  const StreamImpl* stream) {
  std::lock_guard lock(mutex_);
  holds_.push_back({std::move(buffer), std::move(fence), stream});
  hold_count_.store(holds_.size());
}

namespace {
// A fence whose device was lost (or whose work failed) throws rather than answer: its work runs
// no more (a backend reports a loss only once the device's streams run nothing), so it counts as
// done. Asked inside the allocator, a throw would fail an allocation on another device.
bool fence_done(HostFence& fence) {
  try {
    return fence.ready();
  } catch (...) {
    return true;
  }
}
// On the thread running (or releasing) one of `stream`'s callbacks, the stream's later work
// waits for this thread: a hold on that work cannot be waited for here.
bool waits_for_this_thread(const StreamImpl* stream) {
  return RunningCallback::of(stream) || ReleasingCallback::of(stream);
}
void wait_for_fence(HostFence& fence) {
  try {
    fence.wait();
  } catch (...) {  // as above: nothing of its work is left to wait for
  }
}
}  // namespace

size_t CachingAllocator::drop_holds(bool wait) {
  std::vector<Hold> dropped;
  {
    std::lock_guard lock(mutex_);
    std::vector<Hold> kept;
    kept.reserve(holds_.size());  // no allocation once holds begin to move
    dropped.reserve(holds_.size());
    for (Hold& hold : holds_)
      (!fence_done(*hold.fence) && (!wait || waits_for_this_thread(hold.stream)) ? kept : dropped)
          .push_back(std::move(hold));
    holds_ = std::move(kept);
    hold_count_.store(holds_.size());
  }
  for (Hold& hold : dropped) wait_for_fence(*hold.fence);
  return dropped.size();  // the buffers are released here, outside the lock
}

BufferPtr CachingAllocator::allocate_once(size_t bytes, Cache* own, bool& retried) {
  const size_t size = round_size(bytes);
  Pending pending;
  Block* block;
  {
    std::unique_lock lock(mutex_);
    const bool small = size <= kSmallSize;
    FreeBlocks& pool = small ? small_free_ : large_free_;
    block = take_free_block(pool, size);
    if (!block && own && own->parked_bytes.load(std::memory_order_relaxed) > 0) {
      // Rather than a new segment, the blocks this thread parked (coalesced where they can be).
      lock.unlock();
      flush_own_cache(*own);
      lock.lock();
      block = take_free_block(pool, size);
    }
    if (trace::enabled()) [[unlikely]]
      trace::detail::note_allocation(block != nullptr);
    if (block) {
      ++stats_.cache_hits;
    } else {
      block = new_segment(small, size, retried);
      ++stats_.cache_misses;  // once the segment is made: a refused allocation is no miss
    }
    block = split(block, size, pool);
    block->allocated = true;
    block->requested = bytes;
    ++stats_.num_allocs;
    add(stats_.allocated_bytes, block->size);
    add(stats_.active_bytes, block->size);
    add(stats_.requested_bytes, bytes);
    update_pressure(pending);
  }
  PooledBuffer* made = nullptr;
  try {
    made = new PooledBuffer(shared_from_this(), block, bytes);
  } catch (...) {
    release(block);
    throw;
  }
  made->home = own;
  BufferPtr buffer = handle(made);
  // Only now that the buffer owns its block: a callback that throws cannot leak it.
  notify(pending);
  return buffer;
}

void CachingAllocator::notify(const Pending& pending) {
  for (const auto& [id, event] : pending.calls) {
    std::shared_ptr<const MemoryPressureCallback> callback;
    {
      std::lock_guard lock(mutex_);
      auto found = callbacks_.find(id);
      if (found == callbacks_.end()) continue;
      callback = found->second;
    }
    // The allocation has succeeded; a failing observer must not turn it into an error.
    try {
      (*callback)(event);
    } catch (const std::exception& error) {
      log_callback_failure(id, error.what());
    } catch (...) {
      log_callback_failure(id, "an exception that is not a std::exception");
    }
  }
}

void CachingAllocator::log_callback_failure(uint64_t id, std::string_view what) const {
  log(LogLevel::error, "memory pressure callback " + std::to_string(id) + " on " +
                           device_.info().id + " (" + std::string(to_string(kind_)) +
                           " memory) threw, and the allocation went ahead: " + std::string(what));
}

CachingAllocator::Block* CachingAllocator::take_free_block(FreeBlocks& pool, size_t size) {
  Segment probe{0, nullptr, 0, false, {}};
  Block key{&probe, 0, size};
  auto it = pool.lower_bound(&key);
  if (it == pool.end()) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

CachingAllocator::Block* CachingAllocator::new_segment(bool small, size_t size, bool& retried) {
  size_t segment_bytes;
  if (small) {
    segment_bytes = kSmallSegment;
  } else {
    const size_t own_size = (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
    // A shared segment for requests under kMinLargeAlloc, no larger than max_segment_bytes
    // allows (nor smaller than the request); larger requests get a segment of their own.
    segment_bytes =
        size < kMinLargeAlloc
            ? std::max(own_size, std::min<size_t>(kLargeSegment, config_.max_segment_bytes /
                                                                     kRoundLarge * kRoundLarge))
            : own_size;
    if (config_.growth_factor > 1.0 && last_large_segment_ > 0) {
      const double grown = static_cast<double>(last_large_segment_) * config_.growth_factor;
      const size_t capped = static_cast<size_t>(
          std::min<double>(grown, static_cast<double>(config_.max_segment_bytes)));
      segment_bytes = std::max(segment_bytes, capped / kRoundLarge * kRoundLarge);
    }
    if (!initial_reserve_made_ && config_.initial_reserve_bytes > 0) {
      // Rounded up, or down where up would wrap past 2^64 to 0 (the reserve then ignored).
      const size_t reserve = config_.initial_reserve_bytes;
      const size_t whole = reserve > SIZE_MAX - (kRoundLarge - 1)
                               ? reserve / kRoundLarge * kRoundLarge
                               : (reserve + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
      segment_bytes = std::max<size_t>(segment_bytes, whole);
      initial_reserve_made_ = true;
    }
  }
  const uint64_t device_max = largest_allocation(device_, kind_);
  if (device_max > 0 && segment_bytes > device_max && size <= device_max) segment_bytes = size;

  const size_t rounded = segment_bytes;
  auto within_limit = [&](size_t bytes) {
    // Subtracted, not added: reserved + bytes could wrap past 2^64 and pass.
    return config_.limit_bytes == 0 ||
           (stats_.reserved_bytes.current <= config_.limit_bytes &&
            bytes <= config_.limit_bytes - stats_.reserved_bytes.current);
  };
  BufferPtr storage;
  for (int attempt = 0; !storage; ++attempt) {
    // A segment rounded up past the limit may still fit at the request's own size.
    segment_bytes = within_limit(rounded) || !within_limit(size) ? rounded : size;
    std::string why;
    if (within_limit(segment_bytes)) {
      try {
        storage = device_.allocate(segment_bytes, kind_);
        break;
      } catch (const Error& error) {
        if (error.code() != ErrorCode::OutOfMemory) throw;
        why = "the backend refused it: " + error.message();
      }
      if (segment_bytes > size) {  // the rounded segment was too much: the request alone?
        try {
          storage = device_.allocate(size, kind_);
          segment_bytes = size;
          break;
        } catch (const Error& error) {
          if (error.code() != ErrorCode::OutOfMemory) throw;
        }
      }
    } else {
      why = "it would pass the limit of " + format_bytes(config_.limit_bytes) +
            " set with allocator().set_limit";
    }
    // Release what the cache holds and try once more, as PyTorch does.
    if (attempt == 0 && release_cached() > 0) {
      if (!std::exchange(retried, true)) ++stats_.num_alloc_retries;
      continue;
    }
    throw_out_of_memory(size, segment_bytes, why);  // counted by allocate_block
  }
  Segment& segment = segments_.emplace_back(
      Segment{next_segment_id_++, std::move(storage), segment_bytes, small, {}});
  segment.blocks.push_back(Block{&segment, 0, segment_bytes});
  segment.blocks.back().self = std::prev(segment.blocks.end());
  ++stats_.num_segment_allocs;
  add(stats_.reserved_bytes, segment_bytes);
  if (!small) last_large_segment_ = segment_bytes;
  return &segment.blocks.back();
}

CachingAllocator::Block* CachingAllocator::split(Block* block, size_t size, FreeBlocks& pool) {
  const size_t remaining = block->size - size;
  // Small pool: any remainder that can hold a block; large pool: only a remainder that is
  // itself large, so that large segments are not shredded by small leftovers.
  const bool worth_it = block->segment->small ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (!worth_it) return block;
  Segment& segment = *block->segment;
  auto rest = segment.blocks.insert(std::next(block->self),
                                    Block{&segment, block->offset + size, remaining});
  rest->self = rest;
  block->size = size;
  pool.insert(&*rest);
  ++stats_.num_splits;
  return block;
}

void CachingAllocator::release(Block* block, bool parked) {
  {
    std::lock_guard lock(mutex_);
    if (!parked) {  // a parked block's figures left when it was taken from its cache
      ++stats_.num_frees;
      subtract(stats_.allocated_bytes, block->size);
      subtract(stats_.active_bytes, block->size);
      subtract(stats_.requested_bytes, block->requested);
    }
    block->allocated = false;
    block->requested = 0;
    Segment& segment = *block->segment;
    FreeBlocks& pool = pool_of(segment);
    // Coalesce with free neighbours: the one before absorbs this block, this one the next.
    if (block->self != segment.blocks.begin()) {
      Block& before = *std::prev(block->self);
      if (!before.allocated) {
        pool.erase(&before);
        before.size += block->size;
        segment.blocks.erase(block->self);
        block = &before;
        ++stats_.num_merges;
      }
    }
    if (auto after = std::next(block->self); after != segment.blocks.end() && !after->allocated) {
      pool.erase(&*after);
      block->size += after->size;
      segment.blocks.erase(after);
      ++stats_.num_merges;
    }
    pool.insert(block);
  }
}

size_t CachingAllocator::release_cached() {
  const size_t released = release_segments();
  // Falling below a threshold re-arms its callback.
  pressure_level_ = std::min(pressure_level_, current_pressure_level());
  return released;
}

size_t CachingAllocator::release_segments() {
  size_t released = 0;
  for (auto it = segments_.begin(); it != segments_.end();) {
    if (it->blocks.size() == 1 && !it->blocks.front().allocated) {
      pool_of(*it).erase(&it->blocks.front());
      released += it->size;
      subtract(stats_.reserved_bytes, it->size);
      ++stats_.num_segment_frees;
      it = segments_.erase(it);  // the storage goes back to the backend here
    } else {
      ++it;
    }
  }
  // Growth restarts from the default once no large segment is left.
  if (std::none_of(segments_.begin(), segments_.end(),
                   [](const Segment& seg) { return !seg.small; }))
    last_large_segment_ = 0;
  return released;
}

uint64_t CachingAllocator::pressure_limit() const {
  return config_.limit_bytes ? config_.limit_bytes : device_.info().memory_total.bytes;
}

int CachingAllocator::current_pressure_level() const {
  const uint64_t limit = pressure_limit();
  if (limit == 0) return 0;
  const double used =
      static_cast<double>(stats_.reserved_bytes.current) / static_cast<double>(limit);
  return used >= config_.critical_fraction ? 2 : used >= config_.warning_fraction ? 1 : 0;
}

void CachingAllocator::update_pressure(Pending& pending) {
  if (callbacks_.empty()) return;
  const int level = current_pressure_level();
  if (level <= pressure_level_) return;
  for (int crossed = pressure_level_ + 1; crossed <= level; ++crossed) {
    MemoryPressureEvent event{device_.info().id, kind_,
                              crossed == 2 ? MemoryPressure::critical : MemoryPressure::warning,
                              stats_.reserved_bytes.current, pressure_limit()};
    for (const auto& [id, callback] : callbacks_) pending.calls.emplace_back(id, event);
  }
  pressure_level_ = level;
}

void CachingAllocator::throw_out_of_memory(size_t bytes, size_t segment_bytes,
                                           const std::string& why) {
  const DeviceInfo& info = device_.info();
  const MemoryFigure free = device_.memory_free();
  const uint64_t allocated = stats_.allocated_bytes.current;
  const uint64_t cached = stats_.reserved_bytes.current - allocated;
  std::string message = "out of memory on " + info.id + " (" + std::string(to_string(kind_)) +
                        " memory): tried to allocate " + std::to_string(bytes) + " bytes (" +
                        format_bytes(bytes) + ")";
  if (segment_bytes > bytes) message += " in a new segment of " + format_bytes(segment_bytes);
  message += ", and " + why + ". The device has " + format_bytes(info.memory_total.bytes) +
             " total and " + format_memory(free) + " free; hal has " + format_bytes(allocated) +
             " allocated and " + format_bytes(cached) + " reserved but unallocated";
  message +=
      config_.limit_bytes ? "; limit " + format_bytes(config_.limit_bytes) : "; no limit set";
  message +=
      ". Try: release buffers you no longer need, use smaller or fewer buffers, "
      "empty_cache() if other programs share the device";
  if (config_.limit_bytes) message += ", or raise the limit with allocator().set_limit";
  message += ".";
  log(LogLevel::warn, message);
  throw Error(ErrorCode::OutOfMemory, message);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard caches_lock(caches_mutex_);
  std::lock_guard lock(mutex_);
  MemoryStats stats = stats_;
  for (const auto& cache : caches_) {
    // Retired caches too: their counts stay theirs. Parked and returned buffers are freed.
    const uint64_t hits = cache->hits.load(std::memory_order_relaxed);
    const uint64_t bytes = cache->parked_bytes.load(std::memory_order_relaxed) +
                           cache->returned_bytes.load(std::memory_order_relaxed);
    stats.num_allocs += hits;
    stats.cache_hits += hits;
    stats.num_frees += cache->frees.load(std::memory_order_relaxed) +
                       cache->returned_frees.load(std::memory_order_relaxed);
    stats.allocated_bytes.current -= bytes;
    stats.active_bytes.current -= bytes;
    stats.requested_bytes.current -= cache->parked_requested.load(std::memory_order_relaxed) +
                                     cache->returned_requested.load(std::memory_order_relaxed);
  }
  return stats;
}

void CachingAllocator::reset_peak_stats() {
  flush_thread_caches();  // so that the pools' figures are the users' again
  std::lock_guard lock(mutex_);
  for (MemoryStat* stat : {&stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                           &stats_.requested_bytes})
    stat->peak = stat->current;
}

MemorySnapshot CachingAllocator::snapshot() const {
  // Parked blocks go back to the pools first: the snapshot shows what users hold.
  const_cast<CachingAllocator*>(this)->flush_thread_caches();
  std::lock_guard lock(mutex_);
  MemorySnapshot snapshot{device_.info().id, kind_, {}};
  for (const Segment& segment : segments_) {
    MemorySegmentInfo info{segment.id, segment.size, segment.small, {}};
    for (const Block& block : segment.blocks)
      info.blocks.push_back({block.offset, block.size, block.requested, block.allocated});
    snapshot.segments.push_back(std::move(info));
  }
  return snapshot;
}

void CachingAllocator::empty_cache() {
  drop_holds(false);
  flush_thread_caches();
  std::lock_guard lock(mutex_);
  release_cached();
}

AllocatorConfig CachingAllocator::config() const {
  std::lock_guard lock(mutex_);
  return config_;
}

void CachingAllocator::configure(const AllocatorConfig& config) {
  const std::string& id = device_.info().id;
  if (!(config.growth_factor >= 1.0) || config.growth_factor > 64)
    throw Error(ErrorCode::InvalidArgument, "allocator of " + id + ": growth factor " +
                                                std::to_string(config.growth_factor) +
                                                " is not in [1, 64]");
  if (!(config.warning_fraction > 0 && config.warning_fraction <= config.critical_fraction &&
        config.critical_fraction <= 1.0))
    throw Error(ErrorCode::InvalidArgument, "allocator of " + id + ": pressure thresholds " +
                                                std::to_string(config.warning_fraction) + " and " +
                                                std::to_string(config.critical_fraction) +
                                                " must satisfy 0 < warning <= critical <= 1");
  if (config.max_segment_bytes < kRoundLarge)
    throw Error(ErrorCode::InvalidArgument, "allocator of " + id + ": max segment of " +
                                                std::to_string(config.max_segment_bytes) +
                                                " bytes is below 2 MiB");
  if (config.limit_bytes) flush_thread_caches();
  std::lock_guard lock(mutex_);
  if (config.initial_reserve_bytes != config_.initial_reserve_bytes) initial_reserve_made_ = false;
  config_ = config;
  follow_new_limit();
}

void CachingAllocator::set_limit(uint64_t bytes) {
  if (bytes) flush_thread_caches();
  std::lock_guard lock(mutex_);
  config_.limit_bytes = bytes;
  follow_new_limit();
}

void CachingAllocator::follow_new_limit() {
  // Under a lower limit, give back what the cache holds beyond it (blocks parked in threads'
  // caches were flushed first: they hold segments too).
  if (config_.limit_bytes && stats_.reserved_bytes.current > config_.limit_bytes) release_cached();
  // Thresholds of the new limit that are not crossed fire again when they are.
  pressure_level_ = std::min(pressure_level_, current_pressure_level());
}

namespace {

// "1e-10", "0.5", "nan": std::to_string's six decimals would show a tiny fraction as 0.
std::string fraction_text(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", fraction);
  return text;
}

// `fraction` (0, 1] of `total` bytes, rounded up: a positive fraction never becomes 0, which
// means no limit. In double, a total near 2^64 (a plugin's claim) rounds up past uint64_t's
// range, whose conversion is undefined: such a product is the total itself.
uint64_t fraction_of(uint64_t total, double fraction) {
  const double bytes = std::ceil(fraction * static_cast<double>(total));
  constexpr double kPastLargest = 18446744073709551616.0;  // 2^64
  if (bytes >= kPastLargest) return total;
  return std::clamp<uint64_t>(static_cast<uint64_t>(bytes), 1, total);
}

}  // namespace

void CachingAllocator::set_limit_fraction(double fraction) {
  const DeviceInfo& info = device_.info();
  if (!(fraction > 0.0 && fraction <= 1.0))
    throw Error(ErrorCode::InvalidArgument, "allocator of " + info.id + ": limit fraction " +
                                                fraction_text(fraction) + " is not in (0, 1]");
  // Any fraction of 0 bytes would be 0: no limit at all.
  if (info.memory_total.bytes == 0)
    throw Error(ErrorCode::Unsupported,
                "allocator of " + info.id + ": limit fraction " + fraction_text(fraction) +
                    " of the device's memory, which the device does not tell; set a limit in "
                    "bytes (set_limit) instead");
  set_limit(fraction_of(info.memory_total.bytes, fraction));
}

uint64_t CachingAllocator::add_pressure_callback(MemoryPressureCallback callback) {
  if (!callback) throw Error(ErrorCode::InvalidArgument, "memory pressure callback is empty");
  std::lock_guard lock(mutex_);
  callbacks_.emplace(next_callback_id_,
                     std::make_shared<const MemoryPressureCallback>(std::move(callback)));
  return next_callback_id_++;
}

void CachingAllocator::remove_pressure_callback(uint64_t id) {
  std::lock_guard lock(mutex_);
  if (callbacks_.erase(id) == 0)
    throw Error(ErrorCode::NotFound,
                "no memory pressure callback " + std::to_string(id) + " on " + device_.info().id);
}

}  // namespace hal::detail
