// Where threads wait for a condition that other threads make true: the waiter spins briefly,
// then sleeps; the thread that makes the condition true wakes sleepers only when there are some.
//
// No wake-up is lost: a waiter counts itself a sleeper, then reads the condition; a waker writes
// the condition, then reads the count. All four are sequentially consistent, so at least one
// of them sees the other's write; `ready` must therefore read its atomics with (default)
// sequentially consistent loads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "backends/async/spin_wait.hpp"

namespace hal::async {

class WaitPoint {
 public:
  template <class Ready>
  void wait(Ready ready) const {
    if (spin_until(ready)) return;
    sleep_until(ready);
  }

  // The same without the spinning, for a waiter that has just spun itself.
  template <class Ready>
  void sleep_until(Ready ready) const {
    std::unique_lock lock(mutex_);
    sleepers_.fetch_add(1);
    cv_.wait(lock, ready);
    sleepers_.fetch_sub(1);
  }

  // Call after the write that makes a waiter's condition true.
  void notify() const {
    if (sleepers_.load() == 0) return;
    std::lock_guard lock(mutex_);
    cv_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  mutable std::atomic<int> sleepers_{0};
};

}  // namespace hal::async
