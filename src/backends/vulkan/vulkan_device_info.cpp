#include "backends/vulkan/vulkan_device_info.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

#include "backends/vulkan/vulkan_shaders.hpp"
#include "core/uuid.hpp"

namespace hal::vulkan {
namespace {

std::string vendor_name(uint32_t vendor_id) {
  switch (vendor_id) {  // PCI vendor ids, and Khronos' ids for vendors without one
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x106B:
      return "Apple";
    case 0x1010:
      return "Imagination";
    case 0x10005:
      return "Mesa";
    default: {
      char text[16];
      std::snprintf(text, sizeof text, "0x%04x", vendor_id);
      return text;
    }
  }
}

DeviceKind kind_of(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return DeviceKind::cpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return DeviceKind::gpu;
    default:
      return DeviceKind::accelerator;
  }
}

// Whether the device can read its own clock together with CLOCK_MONOTONIC, which is
// std::chrono::steady_clock's on Linux and the clock hal's traces map device time onto.
bool calibrates_against_steady_clock(const VkApi& api, VkPhysicalDevice device) {
  if (!api.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT) return false;
  uint32_t count = 0;
  if (api.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(device, &count, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkTimeDomainEXT> domains(count);
  if (api.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(device, &count, domains.data()) !=
      VK_SUCCESS)
    return false;
  const auto has = [&](VkTimeDomainEXT domain) {
    return std::find(domains.begin(), domains.begin() + count, domain) != domains.begin() + count;
  };
  return has(VK_TIME_DOMAIN_DEVICE_EXT) && has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
}

bool has_extension(const VkApi& api, VkPhysicalDevice device, const char* name) {
  uint32_t count = 0;
  if (api.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (api.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data()) !=
      VK_SUCCESS)
    return false;
  for (const VkExtensionProperties& extension : extensions)
    if (std::strcmp(extension.extensionName, name) == 0) return true;
  return false;
}

// The first memory type with all of `wanted`, preferring one that also has `preferred`.
int find_memory_type(const VkPhysicalDeviceMemoryProperties& memory, VkMemoryPropertyFlags wanted,
                     VkMemoryPropertyFlags preferred) {
  int found = -1;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
    if ((flags & wanted) != wanted) continue;
    if ((flags & preferred) == preferred) return static_cast<int>(i);
    if (found < 0) found = static_cast<int>(i);
  }
  return found;
}

std::string version_text(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
         std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

}  // namespace

VkDeviceDescription describe_device(const VulkanInstance& instance, VkPhysicalDevice device,
                                    std::string hal_id) {
  const VkApi& api = instance.api();
  VkDeviceDescription description;
  DeviceInfo& info = description.info;
  VkDeviceTraits& traits = description.traits;

  auto ids = make<VkPhysicalDeviceIDProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES);
  auto driver =
      make<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  auto subgroup = make<VkPhysicalDeviceSubgroupProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto maintenance3 = make<VkPhysicalDeviceMaintenance3Properties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
  ids.pNext = &driver;
  driver.pNext = &subgroup;
  subgroup.pNext = &maintenance3;
  auto properties =
      make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  properties.pNext = &ids;
  api.vkGetPhysicalDeviceProperties2(device, &properties);
  const VkPhysicalDeviceProperties& p = properties.properties;

  auto f16_int8 = make<VkPhysicalDeviceShaderFloat16Int8Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  auto timeline = make<VkPhysicalDeviceTimelineSemaphoreFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES);
  auto storage8 = make<VkPhysicalDevice8BitStorageFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  auto storage16 = make<VkPhysicalDevice16BitStorageFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  f16_int8.pNext = &timeline;
  timeline.pNext = &storage8;
  storage8.pNext = &storage16;
  auto features = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  features.pNext = &f16_int8;
  api.vkGetPhysicalDeviceFeatures2(device, &features);

  info.id = std::move(hal_id);
  info.uuid = format_uuid(ids.deviceUUID);
  info.name = p.deviceName;
  info.vendor = vendor_name(p.vendorID);
  info.kind = kind_of(p.deviceType);
  // Vulkan names a device by its vendor and device ids (PCI ids where the device has them).
  char ids_text[32];
  std::snprintf(ids_text, sizeof ids_text, "%04x:%04x", p.vendorID, p.deviceID);
  info.architecture = ids_text;
  if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)  // a CPU driver runs on the host's threads
    info.compute_units = std::max(1u, std::thread::hardware_concurrency());
  info.driver_version = std::string(driver.driverName) +
                        (driver.driverInfo[0] ? std::string(" ") + driver.driverInfo : "") + " (" +
                        version_text(p.driverVersion) + ")";
  traits.vendor_id = p.vendorID;
  traits.device_id = p.deviceID;
  traits.subgroup_size = subgroup.subgroupSize;
  std::copy(std::begin(p.limits.maxComputeWorkGroupCount),
            std::end(p.limits.maxComputeWorkGroupCount), traits.max_group_count);
  traits.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  traits.max_push_constants = p.limits.maxPushConstantsSize;
  traits.timestamp_period = p.limits.timestampPeriod;
  traits.storage_offset_alignment = std::max<uint64_t>(p.limits.minStorageBufferOffsetAlignment, 1);
  const char* staging = std::getenv("HAL_VULKAN_STAGING");
  traits.force_staging = staging && std::string_view(staging) == "1";
  traits.shader_int64 = features.features.shaderInt64;
  traits.shader_float64 = features.features.shaderFloat64;
  traits.storage_8bit = storage8.storageBuffer8BitAccess;
  traits.shader_int8 = f16_int8.shaderInt8;
  traits.storage_16bit = storage16.storageBuffer16BitAccess;
  traits.shader_int16 = features.features.shaderInt16;
  traits.shader_float16 = f16_int8.shaderFloat16;
  // HAL_VULKAN_NO_FP16=1 and HAL_VULKAN_NO_FP64=1 treat the device as one without shaderFloat16
  // or shaderFloat64 (tests of what such a device refuses).
  const auto env_is_1 = [](const char* name) {
    const char* value = std::getenv(name);
    return value && std::string_view(value) == "1";
  };
  if (env_is_1("HAL_VULKAN_NO_FP16")) traits.shader_float16 = false;
  if (env_is_1("HAL_VULKAN_NO_FP64")) traits.shader_float64 = false;
  traits.memory_budget = has_extension(api, device, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  traits.push_descriptor = has_extension(api, device, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  traits.calibrated_timestamps =
      has_extension(api, device, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) &&
      calibrates_against_steady_clock(api, device);

  info.limits.max_allocation_bytes = maintenance3.maxMemoryAllocationSize;
  info.limits.max_work_group_size = p.limits.maxComputeWorkGroupInvocations;
  for (int d = 0; d < 3; ++d)
    info.limits.max_work_group_dims[d] = p.limits.maxComputeWorkGroupSize[d];
  info.limits.max_shared_memory_bytes = p.limits.maxComputeSharedMemorySize;

  // Queue family: the first that computes.
  uint32_t families = 0;
  api.vkGetPhysicalDeviceQueueFamilyProperties(device, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family(families);
  api.vkGetPhysicalDeviceQueueFamilyProperties(device, &families, family.data());
  bool compute = false;
  for (uint32_t i = 0; i < families && !compute; ++i)
    if (family[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      traits.queue_family = i;
      traits.timestamp_valid_bits = family[i].timestampValidBits;
      compute = true;
    }

  VkPhysicalDeviceMemoryProperties memory;
  api.vkGetPhysicalDeviceMemoryProperties(device, &memory);
  const int device_type = find_memory_type(memory, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  const int host_type = find_memory_type(
      memory, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
      VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h)
    if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.memory_total.bytes += memory.memoryHeaps[h].size;
  info.memory_total.provenance = Provenance::measured;
  if (device_type >= 0) {
    traits.device_memory_type = static_cast<uint32_t>(device_type);
    traits.device_memory_host_visible =
        memory.memoryTypes[device_type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  }
  if (host_type >= 0) traits.host_memory_type = static_cast<uint32_t>(host_type);

  if (p.apiVersion < VK_API_VERSION_1_2 || !timeline.timelineSemaphore)
    description.unusable = "it lacks Vulkan 1.2 timeline semaphores";
  else if (!compute)
    description.unusable = "it has no compute queue";
  else if (device_type < 0 || host_type < 0)
    description.unusable = "it has no device-local or no host-visible coherent memory type";
  else if (!traits.push_descriptor)
    description.unusable = "it lacks VK_KHR_push_descriptor";

  // The dtypes the shaders can hold: bool, u8 and i8 need 8-bit storage, i16 and u16 16-bit
  // storage and arithmetic.
  info.dtypes = {DType::f32, DType::i32, DType::u32};
  if (traits.storage_8bit && traits.shader_int8)
    info.dtypes.insert(info.dtypes.end(), {DType::i8, DType::u8, DType::boolean});
  if (traits.storage_16bit && traits.shader_int16)
    info.dtypes.insert(info.dtypes.end(), {DType::i16, DType::u16});
  if (traits.shader_int64) info.dtypes.insert(info.dtypes.end(), {DType::i64, DType::u64});
  if (traits.shader_float64) info.dtypes.push_back(DType::f64);
  if (traits.shader_float16 && traits.storage_16bit) info.dtypes.push_back(DType::f16);
  info.features = {"compute_queue",
                   "push_descriptors",
                   "spirv",
                   "timeline_semaphores",
                   "vulkan_" + std::to_string(VK_API_VERSION_MAJOR(p.apiVersion)) + "_" +
                       std::to_string(VK_API_VERSION_MINOR(p.apiVersion)),
                   "subgroup_size_" + std::to_string(subgroup.subgroupSize)};
  if (traits.shader_float16) info.features.emplace_back(feature::kFp16);
  if (traits.shader_float64) info.features.emplace_back(feature::kFp64);
  if (f16_int8.shaderInt8) info.features.emplace_back("int8");
  if (traits.memory_budget) info.features.emplace_back("memory_budget");
  if (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT)
    info.features.emplace_back("subgroup_arithmetic");
  // What the reductions' subgroup shaders use, in compute shaders; HAL_VULKAN_SUBGROUPS=0 keeps
  // them to shared memory alone (tests run both).
  constexpr VkSubgroupFeatureFlags kReductionOps = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                                   VK_SUBGROUP_FEATURE_VOTE_BIT |
                                                   VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  const char* subgroups = std::getenv("HAL_VULKAN_SUBGROUPS");
  if ((subgroup.supportedOperations & kReductionOps) == kReductionOps &&
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
      !(subgroups && std::string_view(subgroups) == "0"))
    info.features.emplace_back(kSubgroupReductions);
  if (traits.device_memory_host_visible) info.features.emplace_back(feature::kUnifiedMemory);
  info.features.emplace_back(feature::kPinnedHostMemory);
  std::sort(info.features.begin(), info.features.end());
  info.memory_free = read_free_memory(instance, device, traits, info.memory_total.bytes);
  return description;
}

MemoryFigure read_free_memory(const VulkanInstance& instance, VkPhysicalDevice device,
                              const VkDeviceTraits& traits, uint64_t total) {
  if (!traits.memory_budget) return {total, Provenance::estimated};
  auto budget = make<VkPhysicalDeviceMemoryBudgetPropertiesEXT>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT);
  auto memory = make<VkPhysicalDeviceMemoryProperties2>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2);
  memory.pNext = &budget;
  instance.api().vkGetPhysicalDeviceMemoryProperties2(device, &memory);
  uint64_t free = 0;
  for (uint32_t h = 0; h < memory.memoryProperties.memoryHeapCount; ++h)
    if (memory.memoryProperties.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      free += budget.heapBudget[h] > budget.heapUsage[h]
                  ? budget.heapBudget[h] - budget.heapUsage[h]
                  : 0;
  return {free, Provenance::measured};
}

}  // namespace hal::vulkan
