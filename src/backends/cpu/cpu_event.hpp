// Events of the CPU device: each record makes a fence that the stream's worker signals, with the
// failure of the stream's work before it that the stream had not yet reported.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

#include "backends/async/wait_point.hpp"
#include "core/event_record.hpp"
#include "hal/backend.hpp"

namespace hal::cpu {

class CpuFence final : public HostFence, public detail::RecordFence {
 public:
  explicit CpuFence(uint64_t stream) : RecordFence(stream) {}
  // `failure`: the stream's failure not yet reported (WorkQueue::peek_error on the worker).
  void signal(std::exception_ptr failure = nullptr);
  bool ready() const override { return done_.load(); }
  void wait() const override {
    signaled_.wait([this] { return ready(); });
  }
  // Valid once ready().
  std::chrono::steady_clock::time_point signaled_at() const { return signaled_at_; }
  std::exception_ptr failure() const override { return failure_; }

 private:
  std::chrono::steady_clock::time_point signaled_at_;
  std::exception_ptr failure_;
  std::atomic<bool> done_{false};
  async::WaitPoint signaled_;
};

class CpuEvent final : public EventImpl {
 public:
  explicit CpuEvent(std::shared_ptr<DeviceImpl> device) : device_(std::move(device)) {}

  DeviceImpl& device() const override { return *device_; }
  std::shared_ptr<HostFence> fence() const override;
  double elapsed_ms_since(const EventImpl& start) const override;

  // Points the event at a new fence of a record on `stream` and returns it; the stream signals
  // it in order.
  std::shared_ptr<CpuFence> rearm(const StreamImpl& stream);

 private:
  std::shared_ptr<DeviceImpl> device_;
  mutable std::mutex mutex_;
  std::shared_ptr<CpuFence> fence_;
};

}  // namespace hal::cpu
