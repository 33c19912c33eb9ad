// An in-order queue of tasks run by one dedicated thread: the engine of a CPU stream.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace hal::cpu {

// Tasks run one after another in push order. A task that throws does not stop the queue: the
// first exception is kept for take_error(). Thread-safe.
class WorkQueue {
 public:
  using Task = std::function<void()>;

  WorkQueue();
  // Runs every task already pushed, then joins the thread.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Returns the task's ticket: 1 for the first task, then 2, 3 ...
  uint64_t push(Task task);
  // Blocks until the task with `ticket` (and so every earlier one) has run.
  void wait_for(uint64_t ticket);
  void wait_all() { wait_for(pushed_.load()); }
  bool idle() const { return completed_.load() == pushed_.load(); }
  // The first exception a task threw since the last call, or null.
  std::exception_ptr take_error();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<Task> tasks_;
  bool worker_sleeping_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::atomic<uint64_t> pushed_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<int> done_waiters_{0};
  std::thread thread_;  // last: starts after every other member exists
};

}  // namespace hal::cpu
