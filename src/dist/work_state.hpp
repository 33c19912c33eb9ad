// One rank's part of one collective, as a Work handle shares it: done or not, and its error.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "hal/dist.hpp"

namespace hal::dist::detail {

class WorkState {
 public:
  WorkState(Collective kind, uint64_t sequence) : kind_(kind), sequence_(sequence) {}
  virtual ~WorkState() = default;
  WorkState(const WorkState&) = delete;
  WorkState& operator=(const WorkState&) = delete;

  Collective kind() const { return kind_; }
  uint64_t sequence() const { return sequence_; }
  bool completed() const { return done_.load(std::memory_order_acquire); }
  // Advances the engine without waiting, where it needs a thread for that (Work::completed).
  virtual void poll() {}

  // Blocks until finished, driving the engine meanwhile where it needs that; rethrows the
  // error.
  void wait();
  // Marks it finished, with `error` if it failed; wakes the waiters. Only the first call counts.
  void finish(std::exception_ptr error = nullptr);
  std::exception_ptr error() const;

 protected:
  // One slice of waiting: an engine whose progress needs the waiting thread (MPI's requests
  // advance only while someone tests them) does some here. The default sleeps until finished.
  virtual void drive();
  // For drive(): waits up to `slice` for the finish, or less.
  void wait_for_finish(std::chrono::microseconds slice);

 private:
  const Collective kind_;
  const uint64_t sequence_;
  mutable std::mutex mutex_;
  std::condition_variable finished_;
  std::atomic<bool> done_{false};
  std::exception_ptr error_;
};

}  // namespace hal::dist::detail
