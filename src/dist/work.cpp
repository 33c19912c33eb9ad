#include "dist/work_state.hpp"
#include "hal/error.hpp"

namespace hal::dist {
namespace {

detail::WorkState& checked(const std::shared_ptr<detail::WorkState>& state) {
  if (!state) throw Error(ErrorCode::InvalidArgument, "use of an empty (default-constructed) Work");
  return *state;
}

}  // namespace

Collective Work::collective() const { return checked(state_).kind(); }
uint64_t Work::sequence() const { return checked(state_).sequence(); }
bool Work::completed() const {
  detail::WorkState& state = checked(state_);
  if (!state.completed()) state.poll();
  return state.completed();
}
void Work::wait() const { checked(state_).wait(); }

namespace detail {

void WorkState::wait() {
  while (!completed()) drive();
  if (std::exception_ptr failure = error()) std::rethrow_exception(failure);
}

void WorkState::finish(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    if (done_.load(std::memory_order_relaxed)) return;
    error_ = std::move(error);
    done_.store(true, std::memory_order_release);
  }
  finished_.notify_all();
}

std::exception_ptr WorkState::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void WorkState::drive() {
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return done_.load(std::memory_order_relaxed); });
}

void WorkState::wait_for_finish(std::chrono::microseconds slice) {
  std::unique_lock lock(mutex_);
  finished_.wait_for(lock, slice, [&] { return done_.load(std::memory_order_relaxed); });
}

}  // namespace detail
}  // namespace hal::dist
