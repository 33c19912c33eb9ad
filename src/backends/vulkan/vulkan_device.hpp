// One Vulkan physical device as a hal device: vulkan:N. It owns the VkDevice, its compute
// queue (shared by the device's streams, one submitter at a time), the pipeline layout every
// hal kernel uses, and the pipeline cache kept on disk next to hal's kernel cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "backends/vulkan/vulkan_device_info.hpp"
#include "hal/backend.hpp"

namespace hal::vulkan {

// Every hal kernel's interface (docs/vulkan.md): storage buffers at bindings 0 .. 7 of set 0,
// pushed per dispatch, and push constants whose first 8 words hold each buffer argument's byte
// offset, the scalar arguments following from byte 32.
inline constexpr uint32_t kMaxBufferArgs = 8;
inline constexpr uint32_t kPushConstantBytes = 128;
inline constexpr uint32_t kScalarBase = kMaxBufferArgs * 4;

// One reading of the device's timestamp counter (ticks) and of the host's steady clock (ns).
struct ClockPair {
  uint64_t device_ticks = 0;
  uint64_t steady_ns = 0;
};

class VulkanDevice final : public DeviceImpl {
 public:
  // Creates the VkDevice. Throws with the driver's reason.
  VulkanDevice(std::shared_ptr<VulkanInstance> instance, VkPhysicalDevice physical,
               VkDeviceDescription description);
  ~VulkanDevice() override;

  const DeviceInfo& info() const override { return info_; }
  MemoryFigure memory_free() const override;
  BufferPtr allocate(size_t bytes, MemoryKind kind) override;
  bool supports(MemoryKind kind) const override;
  std::shared_ptr<StreamImpl> create_stream() override;
  std::shared_ptr<EventImpl> create_event() override;
  CompiledKernel compile(const KernelSource& source, const CompileOptions& options) override;

  const VkApi& api() const { return instance_->api(); }
  VkDevice native() const { return device_; }
  const VkDeviceTraits& traits() const { return traits_; }
  VkPipelineLayout pipeline_layout() const { return pipeline_layout_; }
  VkPipelineCache pipeline_cache() const { return pipeline_cache_; }
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set() const { return push_descriptor_set_; }
  // The device's clock and the host's steady clock read together, where the device can
  // (traits().calibrated_timestamps and timestamps on its queue); nullopt elsewhere.
  std::optional<ClockPair> read_clocks() const;
  bool can_read_clocks() const {
    return calibrated_timestamps_ != nullptr && traits_.timestamp_valid_bits != 0;
  }
  // Submits under the queue's lock (vkQueueSubmit wants the queue externally synchronised).
  VkResult submit(const VkSubmitInfo& submit);
  // Waits until the queue has finished everything submitted to it (all streams' work).
  void wait_idle();
  // Writes the pipeline cache to disk (best effort): after a pipeline was created.
  void save_pipeline_cache();

 private:
  void create_layouts();
  void release() noexcept;
  void load_pipeline_cache();

  std::shared_ptr<VulkanInstance> instance_;
  VkPhysicalDevice physical_;
  DeviceInfo info_;
  VkDeviceTraits traits_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::mutex queue_mutex_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set_ = nullptr;
  PFN_vkGetCalibratedTimestampsEXT calibrated_timestamps_ = nullptr;
  std::filesystem::path pipeline_cache_path_;  // empty without a cache directory
  std::mutex cache_file_mutex_;
};

// "vulkan:0 (llvmpipe (LLVM 15.0.6, 256 bits))": how errors name a device.
inline std::string describe(const VulkanDevice& device) {
  return device.info().id + " (" + device.info().name + ")";
}

}  // namespace hal::vulkan
