// What a Vulkan physical device is, read from vkGetPhysicalDeviceProperties2 and friends, as
// hal's DeviceInfo plus the facts the backend itself needs.
#pragma once

#include <cstdint>
#include <string>

#include "backends/vulkan/vulkan_instance.hpp"
#include "hal/device_info.hpp"

namespace hal::vulkan {

struct VkDeviceTraits {
  uint32_t queue_family = 0;        // the first with compute
  uint32_t device_memory_type = 0;  // device-local, for MemoryKind::device
  uint32_t host_memory_type = 0;    // host-visible and coherent, for staging and pinned_host
  bool device_memory_host_visible = false;  // lavapipe, integrated GPUs, resizable BAR
  bool memory_budget = false;               // VK_EXT_memory_budget
  bool push_descriptor = false;             // VK_KHR_push_descriptor
  uint32_t subgroup_size = 0;
  uint32_t max_group_count[3] = {0, 0, 0};
  uint64_t max_storage_buffer_range = 0;
  uint32_t max_push_constants = 0;
  uint64_t storage_offset_alignment = 1;  // minStorageBufferOffsetAlignment
  uint32_t timestamp_valid_bits = 0;      // of the queue family; 0: no timestamps
  float timestamp_period = 0;             // nanoseconds per tick
  // VK_EXT_calibrated_timestamps with the device's clock and CLOCK_MONOTONIC (steady_clock's):
  // the device's timestamps then map onto the host's time, for device tracks in traces.
  bool calibrated_timestamps = false;
  bool force_staging = false;  // HAL_VULKAN_STAGING=1: copies never map (tests)
  uint32_t vendor_id = 0, device_id = 0;
  bool shader_int64 = false, shader_float64 = false;
  // 8-bit storage and arithmetic (bool, u8, i8 elements), and 16-bit storage (f16, bf16).
  bool storage_8bit = false, shader_int8 = false, storage_16bit = false, shader_int16 = false;
  bool shader_float16 = false;
};

struct VkDeviceDescription {
  DeviceInfo info;
  VkDeviceTraits traits;
  std::string unusable;  // why hal cannot drive it, empty when it can
};

VkDeviceDescription describe_device(const VulkanInstance& instance, VkPhysicalDevice device,
                                    std::string hal_id);
// Free device-local memory: the budget where VK_EXT_memory_budget is present, else an estimate.
MemoryFigure read_free_memory(const VulkanInstance& instance, VkPhysicalDevice device,
                              const VkDeviceTraits& traits, uint64_t total);

}  // namespace hal::vulkan
