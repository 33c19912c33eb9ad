// Kernels of a Vulkan device: SPIR-V compute shaders (KernelLanguage::native). A kernel holds
// its shader module and specialization constants; its pipelines, one per work-group size, are
// made on first launch through the device's pipeline cache.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/vulkan/vulkan_device.hpp"

namespace hal::vulkan {

// Specialization constant ids the backend sets itself: the work-group size.
inline constexpr uint32_t kLocalSizeXId = 100;

// The names of a SPIR-V module's compute entry points (OpEntryPoint GLCompute), in module order;
// nullopt where the words end inside an instruction.
std::optional<std::vector<std::string>> compute_entry_points(std::span<const uint32_t> words);

class VulkanKernel final : public KernelImpl {
 public:
  // `name` is what launches and traces call the kernel; `entry` the module's entry point it
  // runs (the same, or the module's only one: glslc names every shader's "main").
  VulkanKernel(std::string name, std::string entry, std::shared_ptr<VulkanDevice> device,
               VkShaderModule module, std::vector<std::pair<uint32_t, uint32_t>> constants);
  ~VulkanKernel() override;

  // The pipeline for work groups of `local` items; compiled and cached on first use.
  VkPipeline pipeline(const std::array<uint32_t, 3>& local);

 private:
  std::string entry_;
  std::shared_ptr<VulkanDevice> device_;
  VkShaderModule module_;
  std::vector<std::pair<uint32_t, uint32_t>> constants_;  // (constant_id, value)
  std::mutex mutex_;
  std::map<std::array<uint32_t, 3>, VkPipeline> pipelines_;  // under mutex_
};

}  // namespace hal::vulkan
