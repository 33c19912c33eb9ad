// Memory of a Vulkan device: one VkDeviceMemory block with one VkBuffer over all of it. hal's
// caching allocator asks for these whole segments and hands out pieces of them.
#pragma once

#include "backends/vulkan/vulkan_device.hpp"

namespace hal::vulkan {

class VulkanBuffer final : public BufferImpl {
 public:
  VulkanBuffer(std::shared_ptr<VulkanDevice> device, size_t size, MemoryKind kind,
               VkDeviceMemory memory, VkBuffer buffer, void* mapped)
      : BufferImpl(device, size, kind),
        device_(std::move(device)),
        memory_(memory),
        buffer_(buffer),
        mapped_(mapped) {}
  ~VulkanBuffer() override;

  // Host-visible device memory is mapped too, but only for hal's own copies: the host sees
  // pinned_host and unified buffers only.
  void* host_pointer() const noexcept override {
    return kind() == MemoryKind::device ? nullptr : mapped_;
  }
  void* native_handle() const noexcept override { return reinterpret_cast<void*>(buffer_); }
  VkBuffer native() const { return buffer_; }
  void* mapped() const { return mapped_; }

 private:
  std::shared_ptr<VulkanDevice> device_;
  VkDeviceMemory memory_;
  VkBuffer buffer_;
  void* mapped_;
};

// A piece of a buffer as the backend addresses it: the VkBuffer and the byte offset into it.
struct VkRegion {
  const VulkanBuffer* root;
  VkDeviceSize offset;
};
inline VkRegion region_of(const BufferImpl& buffer, size_t offset) {
  return {static_cast<const VulkanBuffer*>(&buffer.storage()), buffer.storage_offset() + offset};
}

}  // namespace hal::vulkan
