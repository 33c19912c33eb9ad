#include "backends/vulkan/vulkan_backend.hpp"

#include <vector>

#include "backends/vulkan/vulkan_device.hpp"
#include "hal/log.hpp"

namespace hal::vulkan {

BackendProbe VulkanBackend::probe() {
  BackendProbe probe;
  std::shared_ptr<VulkanInstance> instance;
  try {
    instance = VulkanInstance::create();
  } catch (const Error& error) {
    probe.reason = error.message();
    return probe;
  }
  const VkApi& api = instance->api();
  uint32_t count = 0;
  check(api.vkEnumeratePhysicalDevices(instance->native(), &count, nullptr), "Vulkan",
        "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> physical(count);
  check(api.vkEnumeratePhysicalDevices(instance->native(), &count, physical.data()), "Vulkan",
        "vkEnumeratePhysicalDevices");
  if (count == 0) {
    probe.reason =
        "the Vulkan loader found no device: no driver is installed (Debian: apt-get install "
        "mesa-vulkan-drivers, or your GPU vendor's driver)";
    return probe;
  }
  std::string problems;
  for (VkPhysicalDevice device : physical) {
    const std::string hal_id = "vulkan:" + std::to_string(probe.devices.size());
    VkDeviceDescription description = describe_device(*instance, device, hal_id);
    std::string problem = description.unusable;
    if (problem.empty()) {
      try {  // one broken driver hides none of the others
        probe.devices.push_back(
            std::make_shared<VulkanDevice>(instance, device, std::move(description)));
        continue;
      } catch (const Error& error) {
        problem = error.message();
      }
    }
    problem = "'" + description.info.name + "': " + problem;
    problems += (problems.empty() ? "" : "; ") + problem;
    log(LogLevel::warn, "vulkan: skipping " + problem);
  }
  note_exit_order();  // after the drivers loaded, so that its handler runs before theirs
  probe.available = !probe.devices.empty();
  if (!probe.available)
    probe.reason = "no usable Vulkan device among " + std::to_string(count) + ": " + problems;
  return probe;
}

}  // namespace hal::vulkan
