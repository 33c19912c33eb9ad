#include "core/thread_block_cache.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

namespace hal::detail {
namespace {

// Registers the process for expedited private membarriers once; false where the kernel (or
// a sandbox) refuses, and under ThreadSanitizer, which cannot see what the call orders.
bool register_membarrier() {
#ifdef HAL_THREAD_SANITIZER
  return false;
#else
  const long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

// Freed control blocks of this thread, reused by its next handles. Chunks are ordinary heap
// memory, so a block freed on another thread simply joins that thread's list.
constexpr size_t kChunkBytes = 64;
constexpr unsigned kMaxChunks = 256;

struct Chunk {
  Chunk* next;
};
// The list itself, read on every handle: trivially destructible, so no guard on access.
struct ChunkList {
  Chunk* head;
  unsigned count;
  bool reaper_armed;  // ChunkReaper made for this thread
  bool gone;          // the thread is ending: no more reuse
};
thread_local ChunkList chunks{nullptr, 0, false, false};

// Frees the list when the thread ends; made the first time a chunk is kept.
struct ChunkReaper {
  ChunkReaper() = default;
  bool armed = false;
  ChunkReaper(const ChunkReaper&) = delete;
  ChunkReaper& operator=(const ChunkReaper&) = delete;
  ~ChunkReaper() {
    chunks.gone = true;
    while (Chunk* chunk = chunks.head) {
      chunks.head = chunk->next;
      ::operator delete(chunk);
    }
    chunks.count = 0;
  }
};
thread_local ChunkReaper chunk_reaper;

}  // namespace

extern const bool membarrier_registered = register_membarrier();

void heavy_fence() {
#ifdef HAL_THREAD_SANITIZER
  // The flags are sequentially consistent atomics there (see the header): nothing to add,
  // and GCC rejects a standalone fence under -fsanitize=thread.
  return;
#else
  if (membarrier_registered &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
    return;
  // Not registered: the owners' light fences are full fences, and so is this.
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

void* take_control_block_storage(size_t bytes) {
  if (bytes > kChunkBytes) return ::operator new(bytes);
  if (Chunk* chunk = chunks.head) {
    chunks.head = chunk->next;
    --chunks.count;
    return chunk;
  }
  return ::operator new(kChunkBytes);
}

void give_control_block_storage(void* storage, size_t bytes) noexcept {
  if (bytes > kChunkBytes) {
    ::operator delete(storage);
    return;
  }
  if (chunks.count < kMaxChunks && !chunks.gone) {
    if (!chunks.reaper_armed) [[unlikely]] {
      chunks.reaper_armed = true;
      chunk_reaper.armed = true;  // makes it, so that its destructor runs at thread exit
    }
    chunks.head = ::new (storage) Chunk{chunks.head};
    ++chunks.count;
    return;
  }
  ::operator delete(storage);
}

}  // namespace hal::detail
