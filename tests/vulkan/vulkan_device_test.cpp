// Device facts against the driver's own answers (read here through the loader directly), and
// how hal reports the backend.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "backends/vulkan/vulkan_shaders.hpp"
#include "vulkan_fixture.hpp"

namespace hal::test {
namespace {

// The driver's properties of the device with `uuid`, through an instance of the test's own.
struct DriverFacts {
  bool found = false;
  VkPhysicalDeviceProperties properties{};
  uint32_t subgroup_size = 0;
  VkSubgroupFeatureFlags subgroup_operations = 0;
  VkShaderStageFlags subgroup_stages = 0;
  uint64_t device_local_bytes = 0;
};

std::string uuid_text(const uint8_t (&bytes)[VK_UUID_SIZE]) {
  char text[40];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

DriverFacts driver_facts(const std::string& uuid) {
  DriverFacts facts;
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) return facts;
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceSubgroupProperties subgroup{};
    subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceIDProperties ids{};
    ids.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    ids.pNext = &subgroup;
    VkPhysicalDeviceProperties2 properties{};
    properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    properties.pNext = &ids;
    vkGetPhysicalDeviceProperties2(device, &properties);
    if (uuid_text(ids.deviceUUID) != uuid) continue;
    facts.found = true;
    facts.properties = properties.properties;
    facts.subgroup_size = subgroup.subgroupSize;
    facts.subgroup_operations = subgroup.supportedOperations;
    facts.subgroup_stages = subgroup.supportedStages;
    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(device, &memory);
    for (uint32_t h = 0; h < memory.memoryHeapCount; ++h)
      if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
        facts.device_local_bytes += memory.memoryHeaps[h].size;
  }
  vkDestroyInstance(instance, nullptr);
  return facts;
}

using VulkanDeviceTest = VulkanTest;

TEST_F(VulkanDeviceTest, FactsAreTheDriversOwn) {
  const DeviceInfo& info = device.info();
  const DriverFacts facts = driver_facts(info.uuid);
  ASSERT_TRUE(facts.found) << "no Vulkan device has hal's UUID " << info.uuid;
  EXPECT_EQ(info.id, "vulkan:0");
  EXPECT_EQ(info.name, facts.properties.deviceName);
  char ids[32];
  std::snprintf(ids, sizeof ids, "%04x:%04x", facts.properties.vendorID, facts.properties.deviceID);
  EXPECT_EQ(info.architecture, ids);
  EXPECT_TRUE(info.has_feature("subgroup_size_" + std::to_string(facts.subgroup_size)));
  // The reductions' subgroup shaders: basic, vote and arithmetic operations in compute shaders,
  // unless HAL_VULKAN_SUBGROUPS=0 (a CTest run of its own) turns them off.
  const VkSubgroupFeatureFlags needed = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                        VK_SUBGROUP_FEATURE_VOTE_BIT |
                                        VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  const char* subgroups = std::getenv("HAL_VULKAN_SUBGROUPS");
  EXPECT_EQ(info.has_feature(vulkan::kSubgroupReductions),
            (facts.subgroup_operations & needed) == needed &&
                (facts.subgroup_stages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                !(subgroups && std::string_view(subgroups) == "0"));
  EXPECT_EQ(info.memory_total.bytes, facts.device_local_bytes);
  EXPECT_EQ(info.limits.max_work_group_size,
            facts.properties.limits.maxComputeWorkGroupInvocations);
  EXPECT_EQ(info.limits.max_shared_memory_bytes,
            facts.properties.limits.maxComputeSharedMemorySize);
  EXPECT_EQ(info.kind, facts.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                           ? DeviceKind::cpu
                           : DeviceKind::gpu);
  EXPECT_TRUE(info.supports(DType::f32));
  EXPECT_TRUE(std::is_sorted(info.features.begin(), info.features.end()));
  EXPECT_GT(device.memory_free().bytes, 0u);
  EXPECT_LE(device.memory_free().bytes, info.memory_total.bytes);
}

TEST_F(VulkanDeviceTest, ListedWithTheOtherBackends) {
  bool listed = false;
  for (const Device& each : Registry::instance().devices())
    listed |= each.info().id == device.info().id;
  EXPECT_TRUE(listed);
  EXPECT_EQ(hal::device(device.info().uuid).info().id, "vulkan:0");
}

}  // namespace
}  // namespace hal::test
