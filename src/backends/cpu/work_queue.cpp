#include "work_queue.hpp"

#include <utility>

namespace hal::cpu {

// Waking and sleeping pair sequentially consistent operations on two atomics, so a push can
// never slip between the worker's last look at the queue and its sleep:
//   producer: pushed_ += 1, then reads worker_sleeping_ (and notifies under sleep_mutex_);
//   worker:   worker_sleeping_ = true, then reads pushed_ (under sleep_mutex_) before waiting.
// At least one of them sees the other's write.

WorkQueue::WorkQueue() : thread_([this] { run(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lock(sleep_mutex_);
    stopping_ = true;
  }
  work_ready_.notify_one();
  thread_.join();
}

uint64_t WorkQueue::push(Task task) {
  uint64_t ticket;
  {
    std::lock_guard lock(queue_lock_);
    tasks_.push_back(std::move(task));
    ticket = pushed_.fetch_add(1) + 1;
  }
  if (worker_sleeping_.load()) {
    std::lock_guard lock(sleep_mutex_);
    work_ready_.notify_one();
  }
  return ticket;
}

void WorkQueue::wait_for(uint64_t ticket) {
  auto reached = [&] { return completed_.load() >= ticket; };
  if (spin_until(reached)) return;
  std::unique_lock lock(sleep_mutex_);
  // The same pairing as above, between done_waiters_ and completed_.
  done_waiters_.fetch_add(1);
  work_done_.wait(lock, reached);
  done_waiters_.fetch_sub(1);
}

std::exception_ptr WorkQueue::take_error() {
  std::lock_guard lock(sleep_mutex_);
  return std::exchange(error_, nullptr);
}

// Returns false when the queue is stopping and empty.
bool WorkQueue::sleep_until_work(uint64_t taken) {
  if (spin_until([&] { return pushed_.load(std::memory_order_acquire) > taken; })) return true;
  std::unique_lock lock(sleep_mutex_);
  worker_sleeping_.store(true);
  work_ready_.wait(lock, [&] { return pushed_.load() > taken || stopping_; });
  worker_sleeping_.store(false);
  return pushed_.load() > taken;
}

void WorkQueue::run() {
  uint64_t taken = 0;
  std::vector<Task> batch;
  while (sleep_until_work(taken)) {
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
        std::lock_guard lock(sleep_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      task = nullptr;  // release what the task held before anyone sees it completed
      completed_.fetch_add(1);
      if (done_waiters_.load() > 0) {
        std::lock_guard lock(sleep_mutex_);
        work_done_.notify_all();
      }
    }
    batch.clear();
  }
}

}  // namespace hal::cpu
