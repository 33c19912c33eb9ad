// Events of a Vulkan device. Each stream counts its commands on a timeline semaphore (command
// N signals value N when done); recording an event remembers (semaphore, last value), so a
// record enqueues nothing, and waiting is vkWaitSemaphores.
#pragma once

#include <memory>
#include <mutex>

#include "backends/vulkan/vulkan_device.hpp"
#include "core/event_record.hpp"

namespace hal::vulkan {

// A stream's timeline semaphore, shared by the stream and the fences recorded on it.
class Timeline {
 public:
  explicit Timeline(std::shared_ptr<VulkanDevice> device);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  VkSemaphore native() const { return semaphore_; }
  const VulkanDevice& device() const { return *device_; }
  uint64_t completed() const;  // the counter's value; throws DeviceLost
  void wait(uint64_t value) const;
  void signal(uint64_t value) const;  // from the host

 private:
  std::shared_ptr<VulkanDevice> device_;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
};

// A one-query pool that a record's command writes the device's clock into.
class Timestamp {
 public:
  explicit Timestamp(std::shared_ptr<VulkanDevice> device);
  ~Timestamp();
  Timestamp(const Timestamp&) = delete;
  Timestamp& operator=(const Timestamp&) = delete;
  VkQueryPool native() const { return pool_; }
  // Nanoseconds on the device's clock when it was written (waits for it).
  double nanoseconds() const;

 private:
  std::shared_ptr<VulkanDevice> device_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
};

// One record of an event on the stream `stream` (its serial): the stream's value at the record,
// the failures of the commands up to it (`work`) and, where the queue has timestamps, the clock
// the record's command wrote.
class TimelineFence final : public HostFence, public detail::RecordFence {
 public:
  TimelineFence(std::shared_ptr<const Timeline> timeline, uint64_t value, uint64_t stream,
                detail::StreamFailures::Mark work,
                std::shared_ptr<const Timestamp> timestamp = nullptr)
      : RecordFence(stream),
        timeline_(std::move(timeline)),
        value_(value),
        work_(std::move(work)),
        timestamp_(std::move(timestamp)) {}
  bool ready() const override { return value_ == 0 || timeline_->completed() >= value_; }
  void wait() const override {
    if (value_ != 0) timeline_->wait(value_);
  }
  // A failed command completes its value from the host only once its failure is kept.
  std::exception_ptr failure() const override { return work_.failure(); }
  const Timestamp* timestamp() const { return timestamp_.get(); }

 private:
  std::shared_ptr<const Timeline> timeline_;
  uint64_t value_;
  detail::StreamFailures::Mark work_;
  std::shared_ptr<const Timestamp> timestamp_;
};

class VulkanEvent final : public EventImpl {
 public:
  explicit VulkanEvent(std::shared_ptr<VulkanDevice> device) : device_(std::move(device)) {}
  DeviceImpl& device() const override { return *device_; }
  std::shared_ptr<HostFence> fence() const override {
    std::lock_guard lock(mutex_);
    return fence_;
  }
  double elapsed_ms_since(const EventImpl& start) const override;
  void set_fence(std::shared_ptr<HostFence> fence) {
    std::lock_guard lock(mutex_);
    fence_ = std::move(fence);
  }

 private:
  std::shared_ptr<VulkanDevice> device_;
  mutable std::mutex mutex_;
  std::shared_ptr<HostFence> fence_;
};

}  // namespace hal::vulkan
