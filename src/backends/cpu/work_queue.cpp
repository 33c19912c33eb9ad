#include "work_queue.hpp"

#include <utility>

#include "spin_wait.hpp"

namespace hal::cpu {

WorkQueue::WorkQueue() : thread_([this] { run(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_one();
  thread_.join();
}

uint64_t WorkQueue::push(Task task) {
  uint64_t ticket;
  bool wake;
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    ticket = pushed_.fetch_add(1) + 1;
    wake = worker_sleeping_;
  }
  if (wake) work_ready_.notify_one();
  return ticket;
}

void WorkQueue::wait_for(uint64_t ticket) {
  auto reached = [&] { return completed_.load() >= ticket; };
  if (spin_until(reached)) return;
  std::unique_lock lock(mutex_);
  // Seen by the worker after it counts a completion (both sequentially consistent), so either
  // it notifies or `reached` already holds.
  done_waiters_.fetch_add(1);
  work_done_.wait(lock, reached);
  done_waiters_.fetch_sub(1);
}

std::exception_ptr WorkQueue::take_error() {
  std::lock_guard lock(mutex_);
  return std::exchange(error_, nullptr);
}

void WorkQueue::run() {
  uint64_t taken = 0;
  while (true) {
    spin_until([&] { return pushed_.load(std::memory_order_acquire) > taken; });
    Task task;
    {
      std::unique_lock lock(mutex_);
      while (tasks_.empty()) {
        if (stopping_) return;
        worker_sleeping_ = true;
        work_ready_.wait(lock);
        worker_sleeping_ = false;
      }
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    ++taken;
    try {
      task();
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    task = nullptr;  // release what the task held before anyone sees it completed
    completed_.fetch_add(1);
    if (done_waiters_.load() > 0) {
      std::lock_guard lock(mutex_);
      work_done_.notify_all();
    }
  }
}

}  // namespace hal::cpu
