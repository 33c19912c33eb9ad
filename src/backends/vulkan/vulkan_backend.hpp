// The Vulkan backend: the devices of the process's Vulkan instance, vulkan:0, vulkan:1, ...
#pragma once

#include "hal/backend.hpp"

namespace hal::vulkan {

class VulkanBackend final : public Backend {
 public:
  std::string name() const override { return "vulkan"; }
  BackendProbe probe() override;
};

}  // namespace hal::vulkan
