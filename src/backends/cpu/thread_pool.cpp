#include "backends/cpu/thread_pool.hpp"

#include <utility>

namespace hal::cpu {

struct ThreadPool::Job {
  const std::function<void(size_t)>* fn;
  size_t count;
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  async::WaitPoint done;  // the owner waits for finished == count
  std::mutex error_mutex;
  std::exception_ptr error;  // the first, under error_mutex
};

ThreadPool::ThreadPool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  work_ready_.notify();
  for (auto& worker : workers_) worker.join();
}

bool ThreadPool::run_chunks(Job& job) {
  bool ran = false;
  for (size_t i = job.next.fetch_add(1); i < job.count; i = job.next.fetch_add(1)) {
    ran = true;
    try {
      (*job.fn)(i);
    } catch (...) {
      std::lock_guard lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
    }
    if (job.finished.fetch_add(1) + 1 == job.count) job.done.notify();
  }
  return ran;
}

bool ThreadPool::help() {
  if (pending_jobs_.load() == 0) return false;
  const auto job = next_job();
  return job && run_chunks(*job);
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
    work_ready_.wait([this] { return pending_jobs_.load() > 0 || stopping_.load(); });
    if (stopping_.load() && pending_jobs_.load() == 0) return;
    help();
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
  work_ready_.notify();
  // Workers drop the job from the list once its chunks are all handed out.
  run_chunks(*job);
  job->done.wait([&] { return job->finished.load() == count; });
  // The caller takes the only reference to the error: a worker may drop the job last, and the
  // exception must not die there while the caller still reads it (an exception_ptr's count lives
  // in the uninstrumented C++ runtime, so ThreadSanitizer could not see that release order).
  std::exception_ptr error;
  {
    std::lock_guard lock(job->error_mutex);
    error = std::exchange(job->error, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace hal::cpu
