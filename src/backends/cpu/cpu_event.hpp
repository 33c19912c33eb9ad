// Events of the CPU device: each record makes a fence that the stream's worker signals.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

#include "backends/async/wait_point.hpp"
#include "hal/backend.hpp"

namespace hal::cpu {

class CpuFence final : public HostFence {
 public:
  void signal();
  bool ready() const override { return done_.load(); }
  void wait() const override {
    signaled_.wait([this] { return ready(); });
  }
  // Valid once ready().
  std::chrono::steady_clock::time_point signaled_at() const { return signaled_at_; }

 private:
  std::chrono::steady_clock::time_point signaled_at_;
  std::atomic<bool> done_{false};
  async::WaitPoint signaled_;
};

class CpuEvent final : public EventImpl {
 public:
  explicit CpuEvent(std::shared_ptr<DeviceImpl> device) : device_(std::move(device)) {}

  DeviceImpl& device() const override { return *device_; }
  std::shared_ptr<HostFence> fence() const override;
  double elapsed_ms_since(const EventImpl& start) const override;

  // Points the event at a new fence and returns it; the stream signals it in order.
  std::shared_ptr<CpuFence> rearm();

 private:
  std::shared_ptr<DeviceImpl> device_;
  mutable std::mutex mutex_;
  std::shared_ptr<CpuFence> fence_;
};

}  // namespace hal::cpu
