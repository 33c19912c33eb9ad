#include "thread_pool.hpp"

#include "spin_wait.hpp"

namespace hal::cpu {

struct ThreadPool::Job {
  const std::function<void(size_t)>* fn;
  size_t count;
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  std::atomic<int> waiters{0};
  std::mutex mutex;
  std::condition_variable done;
  std::exception_ptr error;  // the first, under `mutex`
};

ThreadPool::ThreadPool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::run_chunks(Job& job) {
  for (size_t i = job.next.fetch_add(1); i < job.count; i = job.next.fetch_add(1)) {
    try {
      (*job.fn)(i);
    } catch (...) {
      std::lock_guard lock(job.mutex);
      if (!job.error) job.error = std::current_exception();
    }
    if (job.finished.fetch_add(1) + 1 == job.count && job.waiters.load() > 0) {
      std::lock_guard lock(job.mutex);
      job.done.notify_all();
    }
  }
}

void ThreadPool::work() {
  while (true) {
    spin_until([this] { return pending_jobs_.load(std::memory_order_acquire) > 0; });
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      while (true) {
        // Jobs whose chunks are all handed out leave the list; their owners wait for the rest.
        while (!jobs_.empty() && jobs_.front()->next.load() >= jobs_.front()->count) {
          jobs_.pop_front();
          pending_jobs_.fetch_sub(1);
        }
        if (!jobs_.empty()) break;
        if (stopping_) return;
        wake_.wait(lock);
      }
      job = jobs_.front();
    }
    run_chunks(*job);
  }
}

void ThreadPool::parallel_for(size_t count, const std::function<void(size_t)>& fn) {
  if (count == 0) return;
  if (workers_.empty() || count == 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->count = count;
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(job);
    pending_jobs_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();

  run_chunks(*job);
  {
    // Take the job off the list if no worker has yet; late workers find nothing left in it.
    std::lock_guard lock(mutex_);
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (*it == job) {
        jobs_.erase(it);
        pending_jobs_.fetch_sub(1);
        break;
      }
    }
  }
  auto all_done = [&] { return job->finished.load() == count; };
  if (!spin_until(all_done)) {
    std::unique_lock lock(job->mutex);
    job->waiters.fetch_add(1);
    job->done.wait(lock, all_done);
    job->waiters.fetch_sub(1);
  }
  std::lock_guard lock(job->mutex);
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace hal::cpu
