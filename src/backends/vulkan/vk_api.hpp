// The Vulkan entry points hal uses, read from the loader (libvulkan.so.1) at run time, and the
// translation of VkResult codes into hal::Error.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <memory>
#include <string>
#include <string_view>

#include "hal/error.hpp"

namespace hal::vulkan {

// Loader entry points, callable before an instance exists.
// clang-format off
#define HAL_VK_GLOBAL_FUNCTIONS(X) \
  X(vkCreateInstance) X(vkEnumerateInstanceLayerProperties) \
  X(vkEnumerateInstanceExtensionProperties) X(vkEnumerateInstanceVersion)

// Instance and device functions, all Vulkan 1.2 core (timeline semaphores are 1.2): read
// through vkGetInstanceProcAddr once the instance exists.
#define HAL_VK_INSTANCE_FUNCTIONS(X) \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties) \
  X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) \
  X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceMemoryProperties2) \
  X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkEnumerateDeviceExtensionProperties) \
  X(vkCreateDevice) X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) \
  X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory) X(vkUnmapMemory) \
  X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkBindBufferMemory) \
  X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkResetCommandPool) \
  X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers) X(vkBeginCommandBuffer) \
  X(vkEndCommandBuffer) X(vkResetCommandBuffer) X(vkCmdCopyBuffer) X(vkCmdFillBuffer) X(vkCmdPipelineBarrier) \
  X(vkCmdBindPipeline) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdBindDescriptorSets) \
  X(vkQueueSubmit) X(vkQueueWaitIdle) \
  X(vkCreateSemaphore) X(vkDestroySemaphore) X(vkGetSemaphoreCounterValue) \
  X(vkWaitSemaphores) X(vkSignalSemaphore) \
  X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateComputePipelines) \
  X(vkDestroyPipeline) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) \
  X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) \
  X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkResetDescriptorPool) \
  X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) \
  X(vkCreatePipelineCache) X(vkDestroyPipelineCache) X(vkGetPipelineCacheData) \
  X(vkGetDeviceProcAddr) X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkCmdResetQueryPool) \
  X(vkCmdWriteTimestamp) X(vkGetQueryPoolResults)

// Extension functions: null where the instance lacks the extension.
#define HAL_VK_OPTIONAL_FUNCTIONS(X) \
  X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT) \
  X(vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)
// clang-format on

struct VkApi {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define HAL_VK_MEMBER(name) PFN_##name name = nullptr;
  HAL_VK_GLOBAL_FUNCTIONS(HAL_VK_MEMBER)
  HAL_VK_INSTANCE_FUNCTIONS(HAL_VK_MEMBER)
  HAL_VK_OPTIONAL_FUNCTIONS(HAL_VK_MEMBER)
#undef HAL_VK_MEMBER

  // Opens the loader and reads the global functions. Throws BackendUnavailable naming what is
  // missing.
  static std::unique_ptr<VkApi> load();
  // Reads the instance's functions; throws BackendUnavailable when a core one is missing.
  void load_instance(VkInstance instance);
};

// A Vulkan structure with its sType set and every other member zero.
template <class T>
T make(VkStructureType type) {
  T value{};
  value.sType = type;
  return value;
}

// "VK_ERROR_OUT_OF_DEVICE_MEMORY", or "VK_<code>" for codes this table lacks.
std::string result_name(VkResult result);
ErrorCode error_code(VkResult result);
// Throws hal::Error "<where>: <what> failed: VK_NAME (code)".
[[noreturn]] void throw_result(VkResult result, std::string_view where, std::string_view what);
inline void check(VkResult result, std::string_view where, std::string_view what) {
  if (result != VK_SUCCESS) [[unlikely]]
    throw_result(result, where, what);
}

}  // namespace hal::vulkan
