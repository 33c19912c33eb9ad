#include "backends/async/work_queue.hpp"

#include <utility>

#include "core/callback_thread.hpp"

namespace hal::async {

WorkQueue::WorkQueue() : thread_([this] { run(); }) {}

WorkQueue::WorkQueue(InlineTask on_idle)
    : on_idle_(std::move(on_idle)), thread_([this] { run(); }) {}

WorkQueue::WorkQueue(const StreamImpl* stream, InlineTask on_idle)
    : on_idle_(std::move(on_idle)), stream_(stream), thread_([this] { run(); }) {}

WorkQueue::~WorkQueue() {
  stopping_.store(true);
  work_ready_.notify();
  thread_.join();
}

void WorkQueue::wait_for(uint64_t ticket) {
  const Hurry hurry(waiters_);
  work_done_.wait([&] { return completed_.load() >= ticket; });
}

void WorkQueue::gather() const {
  const auto until = std::chrono::steady_clock::now() + kGatherTime;
  for (unsigned i = 1; waiters_.load(std::memory_order_relaxed) == 0; ++i) {
    cpu_relax();
    if ((i & 15) == 0 && std::chrono::steady_clock::now() >= until) return;
  }
}

std::exception_ptr WorkQueue::take_error() {
  std::lock_guard lock(error_mutex_);
  return std::exchange(error_, nullptr);
}

std::exception_ptr WorkQueue::peek_error() {
  std::lock_guard lock(error_mutex_);
  return error_;
}

void WorkQueue::run() {
  worker_of_this_thread = this;
  uint64_t taken = 0, idle_at = 0;
  std::vector<Task> batch;
  bool streaming = false;  // the last batch came within kGatherTime of the one before
  while (true) {
    auto ready = [&] { return pushed_.load() > taken || stopping_.load(); };
    if (!ready()) {
      const auto looked = std::chrono::steady_clock::now();
      if (streaming) gather();
      if (!on_idle_) {
        work_ready_.wait(ready);
      } else if (!spin_until(ready)) {
        on_idle_();  // nothing came while spinning: the worker goes to sleep
        idle_at = taken;
        work_ready_.sleep_until(ready);
      }
      streaming = std::chrono::steady_clock::now() - looked < kGatherTime;
    } else {
      streaming = true;
    }
    if (pushed_.load() == taken) return;  // stopping, and everything pushed has run
    {
      // Take everything queued at once: one lock per batch, not per task.
      std::lock_guard lock(queue_lock_);
      batch.swap(tasks_);
    }
    taken += batch.size();
    for (Task& task : batch) {
      try {
        task();
      } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      // Release what the task held before anyone sees it completed.
      if (stream_) {
        const detail::ReleasingCallback releasing(stream_);
        task = nullptr;
      } else {
        task = nullptr;
      }
      completed_.fetch_add(1);
      work_done_.notify();
    }
    batch.clear();
    if (on_idle_ && taken - idle_at >= kIdleEvery) {
      on_idle_();
      idle_at = taken;
    }
  }
}

}  // namespace hal::async
