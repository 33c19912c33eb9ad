// The CPU device's pool of threads for parallel kernels: one per hardware thread, the calling
// thread included.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/async/spin_lock.hpp"
#include "backends/async/wait_point.hpp"

namespace hal::cpu {

// Many threads may call parallel_for at once (one per stream running a kernel); their jobs
// share the workers. A parallel_for called from inside another one runs too: the caller always
// takes part, so nested jobs cannot deadlock. Thread-safe.
class ThreadPool {
 public:
  // `threads` counts the caller: a pool of 1 runs everything on the calling thread.
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Calls fn(i) for every i in [0, count), spread over the pool; returns when all calls have
  // returned, rethrowing the first exception any of them threw.
  void parallel_for(size_t count, const std::function<void(size_t)>& fn);

  // Runs chunks of a job that has some left, on the calling thread (one that would otherwise
  // wait for the job's end); returns whether it ran any. A waiter that spins keeps its core
  // busy just when a job wakes the workers, so the scheduler may queue a worker behind another
  // thread on the one core left; taking chunks itself puts that busy core to use.
  bool help();

 private:
  struct Job;
  void work();
  static bool run_chunks(Job& job);  // whether it ran any

  std::shared_ptr<Job> next_job();

  async::SpinLock jobs_lock_;  // guards jobs_: held for a few instructions at a time
  std::deque<std::shared_ptr<Job>> jobs_;
  std::atomic<size_t> pending_jobs_{0};
  async::WaitPoint work_ready_;  // workers wait for pending_jobs_ > 0, or stopping_
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> workers_;
};

}  // namespace hal::cpu
