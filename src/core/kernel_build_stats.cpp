#include "core/kernel_build_stats.hpp"

#include <mutex>

#include "hal/cache.hpp"

namespace hal {
namespace {

std::mutex stats_mutex;
KernelBuildStats stats;  // guarded by stats_mutex; builds are milliseconds, a lock is nothing

}  // namespace

KernelBuildStats kernel_build_stats() {
  const std::lock_guard lock(stats_mutex);
  return stats;
}

namespace detail {

void count_kernel_build(KernelOrigin origin, double seconds) noexcept {
  const std::lock_guard lock(stats_mutex);
  switch (origin) {
    case KernelOrigin::compiled:
      ++stats.compiled;
      stats.compile_seconds += seconds;
      break;
    case KernelOrigin::disk_cache:
      ++stats.from_disk;
      stats.disk_seconds += seconds;
      break;
    case KernelOrigin::memory_cache:
    case KernelOrigin::host:
      break;
  }
}

}  // namespace detail
}  // namespace hal
