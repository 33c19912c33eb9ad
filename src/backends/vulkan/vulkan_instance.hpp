// The process's Vulkan instance: the loader's functions, the instance itself, and the
// validation layer's messenger when HAL_VULKAN_VALIDATION=1 asks for it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backends/vulkan/vk_api.hpp"

namespace hal::vulkan {

class VulkanInstance {
 public:
  // Opens the loader and creates the instance. Throws BackendUnavailable naming why not.
  static std::shared_ptr<VulkanInstance> create();
  ~VulkanInstance();
  VulkanInstance(const VulkanInstance&) = delete;
  VulkanInstance& operator=(const VulkanInstance&) = delete;

  const VkApi& api() const { return *api_; }
  VkInstance native() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  bool validation() const { return messenger_ != VK_NULL_HANDLE; }

 private:
  VulkanInstance() = default;
  std::unique_ptr<VkApi> api_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  uint32_t api_version_ = 0;
};

// Whether the process is exiting: the Vulkan objects hal still holds (the registry's devices,
// streams in static storage) are then left to the process's end, not destroyed, since the
// driver's own exit handlers may already have run. Call note_exit_order() once the drivers are
// loaded: its exit handler runs before theirs.
bool process_exiting();
void note_exit_order();

// Validation: the warnings and errors the layer reported in this process (every one is also
// logged at error level). Tests fail on any.
uint64_t validation_message_count();
std::string last_validation_message();

}  // namespace hal::vulkan
