#include "core/thread_block_cache.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

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

}  // namespace hal::detail
