// An in-order queue of tasks run by one dedicated thread: the engine of a CPU stream.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/async/inline_task.hpp"
#include "backends/async/spin_lock.hpp"
#include "backends/async/wait_point.hpp"

namespace hal {
class StreamImpl;
}

namespace hal::async {

// PREFETCHW: the line, in exclusive state, ready for a store. Executes as a no-op on x86-64
// processors that lack it; a plain prefetch elsewhere.
inline void prefetch_line_for_write(const void* address) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address, 1);
#endif
}

// Tasks run one after another in push order. A task that throws does not stop the queue: the
// first exception is kept for take_error(). Thread-safe.
class WorkQueue {
 public:
  using Task = InlineTask;

  WorkQueue();
  // `on_idle` runs on the worker when it has found no task for a while and is about to sleep,
  // and after every kIdleEvery tasks run without such a pause.
  static constexpr uint64_t kIdleEvery = 1024;
  explicit WorkQueue(InlineTask on_idle);
  // The queue of `stream`: what a task held is dropped marked as a callback's captures of that
  // stream (detail::ReleasingCallback), so that a deleter among them that synchronizes the
  // stream or one of its events, or drops its last handle, does not wait for this very thread.
  WorkQueue(const StreamImpl* stream, InlineTask on_idle);
  // Runs every task already pushed, then joins the thread.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Returns the task's ticket: 1 for the first task, then 2, 3 ...
  uint64_t push(Task task) {
    return push(
        std::move(task), [] {}, [](uint64_t) noexcept {});
  }
  // The same, calling also(ticket) under the queue's lock, after the task is queued: what a
  // stream records about its tasks stays in the order of their tickets. prepare() runs under
  // the lock before anything is queued, and may throw (nothing queued then, as when the task
  // finds no room); also() may not, since by then the task is queued and will run: it must
  // find ready what prepare() set aside.
  template <class Prepare, class Also>
  uint64_t push(Task task, Prepare prepare, Also also) {
    static_assert(noexcept(also(uint64_t{})), "also() runs once the task is queued: noexcept");
    uint64_t ticket;
    {
      std::lock_guard lock(queue_lock_);
      prepare();
      tasks_.push_back(std::move(task));
      ticket = pushed_.fetch_add(1) + 1;
      also(ticket);
      if (tasks_.size() < tasks_.capacity()) prefetch_for_write(tasks_.data() + tasks_.size());
    }
    work_ready_.notify();
    return ticket;
  }
  // Calls fn() under the queue's lock (for what also() of push keeps).
  template <class Fn>
  void locked(Fn fn) {
    std::lock_guard lock(queue_lock_);
    fn();
  }
  // Blocks until the task with `ticket` (and so every earlier one) has run.
  void wait_for(uint64_t ticket);
  void wait_all() { wait_for(pushed_.load()); }
  // The same, calling help() while it would spin: a waiter with nothing else to do can take
  // part of the work the task has handed out (help() returns whether it found any).
  template <class Help>
  void wait_all(Help help) {
    const uint64_t ticket = pushed_.load();
    const Hurry hurry(waiters_);
    const auto ready = [&] { return completed_.load() >= ticket; };
    if (spin_until([&] {
          while (help()) {
          }
          return ready();
        }))
      return;
    work_done_.sleep_until(ready);
  }
  bool idle() const { return completed_.load() == pushed_.load(); }
  // Whether the calling thread is this queue's worker: inside a task, or on_idle, or what they
  // call (a deleter of something they drop). Waiting for the queue there would wait for itself.
  bool on_worker_thread() const { return worker_of_this_thread == this; }
  uint64_t completed() const { return completed_.load(); }
  // The first exception a task threw since the last call, or null.
  std::exception_ptr take_error();
  // The same, left for take_error: what a task on the worker sees of the tasks before it (an
  // event's record, which reports their failure).
  std::exception_ptr peek_error();

 private:
  void run();
  // Asks for the cache lines of the slot the next push will fill, owned for writing. The
  // worker read them when it last ran a task there; without this, each push's stores wait for
  // those lines to come back from the worker's core, and the ticket's locked add waits for the
  // stores.
  static void prefetch_for_write(const Task* slot) {
    const auto* bytes = reinterpret_cast<const char*>(slot);
    for (size_t line = 0; line < sizeof(Task); line += 64) prefetch_line_for_write(bytes + line);
  }
  // While tasks keep coming (each batch within kGatherTime of the last), a worker that finds
  // the queue empty lets the next tasks gather for up to kGatherTime before it looks again:
  // each look pulls the cache line producers write over to the worker's core, and the next push
  // must take it back, a few hundred nanoseconds a push when the worker looks after every task
  // (hal_bench_stream: an enqueue 410-530 ns before, 210-270 after). A thread waiting in
  // wait_for or wait_all cuts the gathering short; a queue whose tasks come seldom never waits.
  static constexpr std::chrono::nanoseconds kGatherTime{3000};
  void gather() const;
  struct Hurry {
    explicit Hurry(std::atomic<int>& count) : count_(count) { count_.fetch_add(1); }
    ~Hurry() { count_.fetch_sub(1); }
    std::atomic<int>& count_;
  };

  // The queue whose worker this thread is: set when the worker starts.
  static inline constinit thread_local const WorkQueue* worker_of_this_thread = nullptr;

  SpinLock queue_lock_;      // guards tasks_
  std::vector<Task> tasks_;  // swapped with the worker's batch: no allocation once warm
  WaitPoint work_ready_;     // the worker waits for pushed_ > taken, or stopping_
  WaitPoint work_done_;      // waiters wait for completed_ to reach their ticket
  std::atomic<bool> stopping_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;  // under error_mutex_
  InlineTask on_idle_;
  const StreamImpl* stream_ = nullptr;  // whose tasks' captures are dropped marked, or none
  // Apart, on their own cache lines: producers write `pushed_`, the worker `completed_`.
  alignas(64) std::atomic<uint64_t> pushed_{0};
  alignas(64) std::atomic<uint64_t> completed_{0};
  alignas(64) std::atomic<int> waiters_{0};  // threads in wait_for or wait_all
  std::thread thread_;                       // last: starts after every other member exists
};

}  // namespace hal::async
