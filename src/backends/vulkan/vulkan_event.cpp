#include "backends/vulkan/vulkan_event.hpp"

#include <chrono>

#include "backends/async/spin_wait.hpp"

namespace hal::vulkan {

namespace {
// About one launch-and-wait on lavapipe (45-90 us); a longer wait blocks.
constexpr std::chrono::microseconds kPollBudget{100};
}  // namespace

Timeline::Timeline(std::shared_ptr<VulkanDevice> device) : device_(std::move(device)) {
  auto type = make<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  auto info = make<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
  info.pNext = &type;
  check(device_->api().vkCreateSemaphore(device_->native(), &info, nullptr, &semaphore_),
        describe(*device_), "vkCreateSemaphore (timeline)");
}

Timeline::~Timeline() {
  if (!process_exiting()) device_->api().vkDestroySemaphore(device_->native(), semaphore_, nullptr);
}

uint64_t Timeline::completed() const {
  uint64_t value = 0;
  check(device_->api().vkGetSemaphoreCounterValue(device_->native(), semaphore_, &value),
        describe(*device_), "vkGetSemaphoreCounterValue");
  return value;
}

void Timeline::wait(uint64_t value) const {
  // Poll first: a blocking wait costs the driver's wake-up of this thread (tens of
  // microseconds on lavapipe), while the spin's yields still give the driver's threads the core
  // when it is theirs to use.
  if (async::spin_until([&] { return completed() >= value; }, kPollBudget)) return;
  auto info = make<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
  info.semaphoreCount = 1;
  info.pSemaphores = &semaphore_;
  info.pValues = &value;
  check(device_->api().vkWaitSemaphores(device_->native(), &info, UINT64_MAX), describe(*device_),
        "vkWaitSemaphores");
}

void Timeline::signal(uint64_t value) const {
  auto info = make<VkSemaphoreSignalInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO);
  info.semaphore = semaphore_;
  info.value = value;
  check(device_->api().vkSignalSemaphore(device_->native(), &info), describe(*device_),
        "vkSignalSemaphore");
}

Timestamp::Timestamp(std::shared_ptr<VulkanDevice> device) : device_(std::move(device)) {
  auto info = make<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = 1;
  check(device_->api().vkCreateQueryPool(device_->native(), &info, nullptr, &pool_),
        describe(*device_), "vkCreateQueryPool");
}

Timestamp::~Timestamp() {
  if (!process_exiting()) device_->api().vkDestroyQueryPool(device_->native(), pool_, nullptr);
}

double Timestamp::nanoseconds() const {
  uint64_t ticks = 0;
  const VkResult result = device_->api().vkGetQueryPoolResults(
      device_->native(), pool_, 0, 1, sizeof ticks, &ticks, sizeof ticks,
      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  // lavapipe answers so, despite the wait bit, for a clock its queue has not written yet (an
  // event recorded again by another thread while it was timed).
  if (result == VK_NOT_READY)
    throw Error(ErrorCode::InvalidState,
                describe(*device_) +
                    ": an event's time is not written yet (recorded again while it was timed?); "
                    "synchronize it first");
  check(result, describe(*device_), "vkGetQueryPoolResults");
  return static_cast<double>(ticks) * device_->traits().timestamp_period;
}

double VulkanEvent::elapsed_ms_since(const EventImpl& start) const {
  // Held here: recorded again by another thread, the event lets go of the fence it had.
  const std::shared_ptr<HostFence> begin_fence = start.fence(), end_fence = fence();
  const auto* begin = dynamic_cast<const TimelineFence*>(begin_fence.get());
  const auto* end = dynamic_cast<const TimelineFence*>(end_fence.get());
  // Event::elapsed_ms found both complete, but either may have been recorded again since: its
  // new fence's clock is not written yet.
  if (begin && end && (!begin->ready() || !end->ready()))
    throw Error(ErrorCode::InvalidState,
                "elapsed_ms on an event of " + device_->info().id +
                    " recorded again while its time was read, whose new work has not completed; "
                    "synchronize it first");
  if (!begin || !end || !begin->timestamp() || !end->timestamp())
    throw Error(ErrorCode::Unsupported, describe(*device_) +
                                            ": event timing needs timestamps on the compute queue, "
                                            "which the driver does not give");
  return (end->timestamp()->nanoseconds() - begin->timestamp()->nanoseconds()) / 1e6;
}

}  // namespace hal::vulkan
