// The caching allocator's fast path: each thread keeps the blocks it freed recently, by exact
// size, in front of the shared pools, and takes them back without a lock or an atomic
// read-modify-write. Like glibc's tcache, but a thread's cache can be emptied by another thread
// (empty_cache, or an allocation that ran out of memory).
//
// A buffer freed by another thread than the one that took it (a stream's worker dropping an
// op's result) goes back to that thread: pushed onto its cache's `returned` list without a
// lock, and taken all at once by the owner when a request misses its bins, as mimalloc's
// thread-delayed frees are. Otherwise a thread that only allocates (the caller of ops) would
// never hit, and one that only frees (the worker) would overflow into the locked pools.
//
// Emptying a cache from another thread:
//
//   owner, around each use:   busy = 1; light fence; if (flush_requested) give up; ...; busy = 0
//   flusher:                  flush_requested = 1; heavy fence; wait while busy; take the blocks
//
// The heavy fence is membarrier(2), which makes every thread of the process execute a full
// barrier, so the owner's light fence is only a compiler barrier; without membarrier both are
// ordinary full fences. Under ThreadSanitizer, which models neither, the flags are
// sequentially consistent atomics.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace hal::detail {

#if defined(__SANITIZE_THREAD__)
#define HAL_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HAL_THREAD_SANITIZER 1
#endif
#endif

// The asymmetric pair of fences. heavy_fence() costs a system call; light_fence() nothing
// where membarrier is available.
// Set once membarrier is registered, during static initialisation; false until then, which
// only makes the light fence a full one.
extern const bool membarrier_registered;
void heavy_fence();
inline void light_fence() {
#ifndef HAL_THREAD_SANITIZER  // sequentially consistent flags there (see enter())
  if (membarrier_registered)
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// One thread's blocks of one allocator. `Parked` is the allocator's buffer type; each parked
// buffer links to the next through its own `next_parked` pointer.
template <class Parked>
struct ThreadBlockCache {
  static constexpr size_t kBins = 32;  // distinct sizes kept
  // Buffers of one size: at least 8, and as many small ones as fill 1 MiB, so that the results
  // of a thousand tiny ops in flight on a stream come back to their thread, not to the pools.
  static constexpr uint32_t kMinPerBin = 8;
  static constexpr size_t kBinBytes = 1 << 20;
  static uint32_t capacity(size_t block_bytes) noexcept {
    return std::max<uint32_t>(kMinPerBin, static_cast<uint32_t>(kBinBytes / block_bytes));
  }
  static constexpr size_t kMaxBytes = 8 << 20;  // in all, per thread and allocator
  struct Bin {
    size_t bytes = 0;  // the requested size its buffers have; 0: unused
    uint32_t count = 0;
    Parked* head = nullptr;
  };

  // The owner's side: false when a flush is under way (the owner then uses the shared pools).
  bool enter() noexcept {
#ifdef HAL_THREAD_SANITIZER
    busy.store(true, std::memory_order_seq_cst);
    if (flush_requested.load(std::memory_order_seq_cst)) {
#else
    busy.store(true, std::memory_order_relaxed);
    light_fence();
    if (flush_requested.load(std::memory_order_acquire)) {
#endif
      busy.store(false, std::memory_order_release);
      return false;
    }
    return true;
  }
  void leave() noexcept { busy.store(false, std::memory_order_release); }

  Bin* bin_of(size_t bytes) noexcept {
    Bin& bin = bins[(bytes >> 9 ^ bytes >> 14 ^ bytes) % kBins];
    if (bin.bytes == bytes) return &bin;
    if (bin.count == 0) {  // an empty bin changes size
      bin.bytes = bytes;
      return &bin;
    }
    return nullptr;
  }

  std::atomic<bool> busy{false};
  std::atomic<bool> flush_requested{false};
  std::array<Bin, kBins> bins{};
  size_t held_bytes = 0;  // rounded sizes of the parked blocks; owner (or flusher) only
  // Read by the allocator's stats() from any thread; written by whoever holds the cache.
  std::atomic<uint64_t> hits{0};          // allocations served here
  std::atomic<uint64_t> frees{0};         // buffers parked here when freed
  std::atomic<uint64_t> parked_bytes{0};  // held_bytes, for stats()
  std::atomic<uint64_t> parked_requested{0};
  bool retired = false;  // its thread has ended; under the allocator's caches_mutex_

  // Pushed by other threads, taken whole with one exchange (so no ABA): a stack linked through
  // next_parked, of at most about kMaxBytes (a pusher checks before it adds). closed() once the
  // owner has ended: pushers then keep the buffer themselves.
  // On their own line: other threads write them while the owner uses its bins.
  static Parked* closed() noexcept { return reinterpret_cast<Parked*>(alignof(Parked)); }
  alignas(64) std::atomic<Parked*> returned{nullptr};
  // What the list holds, added before a push (and taken back if the list was closed) and
  // subtracted by whoever takes it, so that stats() never sees less than the list holds.
  std::atomic<uint64_t> returned_bytes{0};  // rounded sizes
  std::atomic<uint64_t> returned_requested{0};
  std::atomic<uint64_t> returned_frees{0};  // buffers ever pushed: frees, for stats()
};

}  // namespace hal::detail
