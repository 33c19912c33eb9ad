#include "backends/vulkan/vulkan_event.hpp"

namespace hal::vulkan {

Timeline::Timeline(std::shared_ptr<VulkanDevice> device) : device_(std::move(device)) {
  auto type = make<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  auto info = make<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
  info.pNext = &type;
  check(device_->api().vkCreateSemaphore(device_->native(), &info, nullptr, &semaphore_),
        describe(*device_), "vkCreateSemaphore (timeline)");
}

Timeline::~Timeline() { device_->api().vkDestroySemaphore(device_->native(), semaphore_, nullptr); }

uint64_t Timeline::completed() const {
  uint64_t value = 0;
  check(device_->api().vkGetSemaphoreCounterValue(device_->native(), semaphore_, &value),
        describe(*device_), "vkGetSemaphoreCounterValue");
  return value;
}

void Timeline::wait(uint64_t value) const {
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

}  // namespace hal::vulkan
