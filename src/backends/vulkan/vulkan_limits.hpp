// What the ops' shaders (src/ops/vulkan_*.cpp) must know of a Vulkan device to split or refuse
// their work before they enqueue any of it: a launch (vulkan_launch.cpp) binds each buffer from
// its offset rounded down to the device's alignment, for at most maxStorageBufferRange bytes
// (a shader's reads past that give 0 and its writes are lost), and dispatches at most
// maxComputeWorkGroupCount groups in each dimension.
#pragma once

#include <array>
#include <cstdint>

#include "hal/buffer.hpp"
#include "hal/device.hpp"

namespace hal::vulkan {

struct VulkanLimits {
  uint64_t max_storage_buffer_range = 0;      // bytes, from where a buffer is bound
  uint64_t storage_offset_alignment = 1;      // bindings start at multiples of it
  std::array<uint32_t, 3> max_group_count{};  // work groups per dispatch, x, y and z
};

// The limits of `device`, a Vulkan device (Internal otherwise: a bug in hal).
VulkanLimits vulkan_limits(const Device& device);

// The bytes of one binding a shader spans to reach byte `end` (exclusive) of `buffer`, a buffer
// of a Vulkan device passed as a launch argument at offset 0: from the aligned start the
// launch binds it at.
uint64_t vulkan_bound_bytes(const Buffer& buffer, uint64_t end);

}  // namespace hal::vulkan
