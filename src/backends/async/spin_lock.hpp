// A lock for critical sections of a few instructions (a push, a swap), where a contended
// std::mutex would sleep in the kernel for far longer than the section takes.
#pragma once

#include <atomic>

#include "backends/async/spin_wait.hpp"

namespace hal::async {

class SpinLock {
 public:
  void lock() noexcept {
    for (unsigned i = 0; locked_.exchange(true, std::memory_order_acquire); ++i) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++i < 64)
          cpu_relax();
        else
          std::this_thread::yield();
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace hal::async
