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
    std::lock_guard lock(sleep_mutex_);
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

// The first job with chunks left, dropping exhausted ones; null if none.
std::shared_ptr<ThreadPool::Job> ThreadPool::next_job() {
  std::lock_guard lock(jobs_lock_);
  while (!jobs_.empty() && jobs_.front()->next.load() >= jobs_.front()->count) {
    jobs_.pop_front();
    pending_jobs_.fetch_sub(1);
  }
  return jobs_.empty() ? nullptr : jobs_.front();
}

void ThreadPool::work() {
  while (true) {
    if (!spin_until([this] { return pending_jobs_.load(std::memory_order_acquire) > 0; })) {
      std::unique_lock lock(sleep_mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [this] { return stopping_ || pending_jobs_.load() > 0; });
      sleepers_.fetch_sub(1);
      if (stopping_ && pending_jobs_.load() == 0) return;
    }
    if (auto job = next_job()) run_chunks(*job);
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
    std::lock_guard lock(jobs_lock_);
    jobs_.push_back(job);
    pending_jobs_.fetch_add(1);
  }
  if (sleepers_.load() > 0) {
    std::lock_guard lock(sleep_mutex_);
    wake_.notify_all();
  }
  // Workers drop the job from the list once its chunks are all handed out.
  run_chunks(*job);
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
