#include "backends/cpu/cpu_event.hpp"

namespace hal::cpu {

void CpuFence::signal(std::exception_ptr failure) {
  signaled_at_ = std::chrono::steady_clock::now();
  failure_ = std::move(failure);
  done_.store(true);
  signaled_.notify();
}

std::shared_ptr<HostFence> CpuEvent::fence() const {
  std::lock_guard lock(mutex_);
  return fence_;
}

std::shared_ptr<CpuFence> CpuEvent::rearm(const StreamImpl& stream) {
  auto fence = std::make_shared<CpuFence>(stream.serial());
  std::lock_guard lock(mutex_);
  fence_ = fence;
  return fence;
}

double CpuEvent::elapsed_ms_since(const EventImpl& start) const {
  auto begin = std::static_pointer_cast<CpuFence>(start.fence());
  auto end = std::static_pointer_cast<CpuFence>(fence());
  // Event::elapsed_ms found both complete, but either may have been recorded again since: its
  // new fence has no time yet.
  if (!begin->ready() || !end->ready())
    throw Error(ErrorCode::InvalidState,
                "elapsed_ms on an event of " + device().info().id +
                    " recorded again while its time was read, whose new work has not completed; "
                    "synchronize it first");
  return std::chrono::duration<double, std::milli>(end->signaled_at() - begin->signaled_at())
      .count();
}

}  // namespace hal::cpu
