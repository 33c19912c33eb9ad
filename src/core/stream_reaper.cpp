#include "core/stream_reaper.hpp"

#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <thread>

#include "core/callback_thread.hpp"
#include "hal/backend.hpp"

namespace hal::detail {
namespace {

// One thread, made on first use, destroying the streams handed to it one after another; at
// exit it finishes them all and is joined (before the registry goes: it was made after it).
class StreamReaper {
 public:
  static StreamReaper& instance() {
    static StreamReaper reaper;
    return reaper;
  }
  void destroy_later(std::shared_ptr<StreamImpl> stream) {
    {
      std::lock_guard lock(mutex_);
      forget_a_parents_thread();
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
      streams_.push_back(std::move(stream));
    }
    wake_.notify_one();
  }
  ~StreamReaper() {
    {
      std::lock_guard lock(mutex_);
      forget_a_parents_thread();
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stopping_ || !streams_.empty(); });
      if (streams_.empty()) return;  // stopping, and every stream destroyed
      std::shared_ptr<StreamImpl> stream = std::move(streams_.front());
      streams_.pop_front();
      lock.unlock();
      stream.reset();  // waits for its work
      lock.lock();
    }
  }
  // After fork() the child holds the handle of a thread it does not have (joining it would
  // fail): it starts its own when it needs one.
  void forget_a_parents_thread() {
    if (owner_ == ::getpid()) return;
    if (thread_.joinable()) new (&thread_) std::thread();  // no destructor: it would terminate
    owner_ = ::getpid();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<StreamImpl>> streams_;
  bool stopping_ = false;
  std::thread thread_;
  pid_t owner_ = ::getpid();
};

struct ReapAtHome {
  std::shared_ptr<StreamImpl> made;
  void operator()(StreamImpl* stream) {
    if (RunningCallback::of(stream) || ReleasingCallback::of(stream))
      StreamReaper::instance().destroy_later(std::move(made));
    else
      made.reset();
  }
};

}  // namespace

std::shared_ptr<StreamImpl> reaped_when_dropped_at_home(std::shared_ptr<StreamImpl> made) {
  StreamImpl* stream = made.get();
  return std::shared_ptr<StreamImpl>(stream, ReapAtHome{std::move(made)});
}

}  // namespace hal::detail
