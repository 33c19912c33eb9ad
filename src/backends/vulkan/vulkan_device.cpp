#include "backends/vulkan/vulkan_device.hpp"

#include <array>
#include <fstream>
#include <iterator>
#include <vector>

#include "backends/vulkan/vulkan_buffer.hpp"
#include "backends/vulkan/vulkan_event.hpp"
#include "backends/vulkan/vulkan_stream.hpp"
#include "core/atomic_file.hpp"
#include "core/kernel_disk_cache.hpp"
#include "hal/log.hpp"
#include "hal/units.hpp"

namespace hal::vulkan {

VulkanDevice::VulkanDevice(std::shared_ptr<VulkanInstance> instance, VkPhysicalDevice physical,
                           VkDeviceDescription description)
    : instance_(std::move(instance)),
      physical_(physical),
      info_(std::move(description.info)),
      traits_(description.traits) {
  const float priority = 1.0f;
  auto queue = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queue.queueFamilyIndex = traits_.queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  auto features12 =
      make<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  features12.timelineSemaphore = VK_TRUE;
  features12.storageBuffer8BitAccess = traits_.storage_8bit;
  features12.shaderInt8 = traits_.shader_int8;
  features12.shaderFloat16 = traits_.shader_float16;
  auto features11 =
      make<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  features11.storageBuffer16BitAccess = traits_.storage_16bit;
  features12.pNext = &features11;
  auto features = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  features.pNext = &features12;
  features.features.shaderInt64 = traits_.shader_int64;
  features.features.shaderInt16 = traits_.shader_int16;
  features.features.shaderFloat64 = traits_.shader_float64;
  std::vector<const char*> extensions{VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  if (traits_.memory_budget) extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  if (traits_.calibrated_timestamps)
    extensions.push_back(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
  auto info = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  info.pNext = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  check(api().vkCreateDevice(physical_, &info, nullptr, &device_), describe(*this),
        "vkCreateDevice");
  api().vkGetDeviceQueue(device_, traits_.queue_family, 0, &queue_);
  push_descriptor_set_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
      api().vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  if (!push_descriptor_set_) {
    api().vkDestroyDevice(device_, nullptr);
    throw Error(ErrorCode::BackendUnavailable,
                describe(*this) + ": the driver gives no vkCmdPushDescriptorSetKHR");
  }
  if (traits_.calibrated_timestamps)
    calibrated_timestamps_ = reinterpret_cast<PFN_vkGetCalibratedTimestampsEXT>(
        api().vkGetDeviceProcAddr(device_, "vkGetCalibratedTimestampsEXT"));
  try {
    create_layouts();
    load_pipeline_cache();
  } catch (...) {
    release();  // the destructor does not run for a constructor that threw
    throw;
  }
}

VulkanDevice::~VulkanDevice() { release(); }

std::optional<ClockPair> VulkanDevice::read_clocks() const {
  if (!can_read_clocks()) return std::nullopt;
  auto device = make<VkCalibratedTimestampInfoEXT>(VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT);
  device.timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
  auto host = make<VkCalibratedTimestampInfoEXT>(VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT);
  host.timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
  const std::array<VkCalibratedTimestampInfoEXT, 2> infos{device, host};
  std::array<uint64_t, 2> stamps{};
  uint64_t deviation = 0;
  if (calibrated_timestamps_(device_, 2, infos.data(), stamps.data(), &deviation) != VK_SUCCESS)
    return std::nullopt;
  return ClockPair{stamps[0], stamps[1]};
}

void VulkanDevice::release() noexcept {
  if (!device_ || process_exiting()) return;
  api().vkDeviceWaitIdle(device_);
  if (pipeline_cache_) api().vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
  if (pipeline_layout_) api().vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
  if (set_layout_) api().vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  api().vkDestroyDevice(device_, nullptr);
  device_ = VK_NULL_HANDLE;
}

void VulkanDevice::create_layouts() {
  VkDescriptorSetLayoutBinding bindings[kMaxBufferArgs];
  for (uint32_t i = 0; i < kMaxBufferArgs; ++i)
    bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  auto set =
      make<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  set.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  set.bindingCount = kMaxBufferArgs;
  set.pBindings = bindings;
  check(api().vkCreateDescriptorSetLayout(device_, &set, nullptr, &set_layout_), describe(*this),
        "vkCreateDescriptorSetLayout");
  const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  auto layout = make<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &set_layout_;
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &range;
  check(api().vkCreatePipelineLayout(device_, &layout, nullptr, &pipeline_layout_), describe(*this),
        "vkCreatePipelineLayout");
}

void VulkanDevice::load_pipeline_cache() {
  std::vector<char> data;
  const std::filesystem::path root = detail::cache_root();
  if (!root.empty()) {
    pipeline_cache_path_ = root / "kernels" / "vulkan" / ("pipelines-" + info_.uuid + ".bin");
    std::ifstream in(pipeline_cache_path_, std::ios::binary);
    if (in) data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // The driver checks the header (vendor, device, its own UUID) and ignores data it did not
  // write, so a stale or foreign file only costs the compile.
  auto info = make<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  info.initialDataSize = data.size();
  info.pInitialData = data.empty() ? nullptr : data.data();
  VkResult result = api().vkCreatePipelineCache(device_, &info, nullptr, &pipeline_cache_);
  if (result != VK_SUCCESS && !data.empty()) {
    info.initialDataSize = 0;
    info.pInitialData = nullptr;
    result = api().vkCreatePipelineCache(device_, &info, nullptr, &pipeline_cache_);
  }
  check(result, describe(*this), "vkCreatePipelineCache");
}

void VulkanDevice::save_pipeline_cache() {
  if (pipeline_cache_path_.empty()) return;
  std::lock_guard lock(cache_file_mutex_);
  size_t size = 0;
  if (api().vkGetPipelineCacheData(device_, pipeline_cache_, &size, nullptr) != VK_SUCCESS) return;
  std::vector<char> data(size);
  if (api().vkGetPipelineCacheData(device_, pipeline_cache_, &size, data.data()) != VK_SUCCESS)
    return;
  std::error_code error;
  std::filesystem::create_directories(pipeline_cache_path_.parent_path(), error);
  // Written aside and renamed into place: other processes never read half a file.
  if (const std::string failed = detail::write_file_atomically(
          pipeline_cache_path_, {std::string_view(data.data(), size)});
      !failed.empty())
    log(LogLevel::warn,
        "vulkan: the pipeline cache " + pipeline_cache_path_.string() + ": " + failed);
}

VkResult VulkanDevice::submit(const VkSubmitInfo& submit) {
  std::lock_guard lock(queue_mutex_);
  return api().vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE);
}

void VulkanDevice::wait_idle() {
  std::lock_guard lock(queue_mutex_);
  api().vkQueueWaitIdle(queue_);
}

MemoryFigure VulkanDevice::memory_free() const {
  return read_free_memory(*instance_, physical_, traits_, info_.memory_total.bytes);
}

bool VulkanDevice::supports(MemoryKind kind) const {
  return kind != MemoryKind::unified || traits_.device_memory_host_visible;
}

BufferPtr VulkanDevice::allocate(size_t bytes, MemoryKind kind) {
  const std::string what = "allocate " + std::to_string(bytes) + " bytes (" + format_bytes(bytes) +
                           ") of " + std::string(to_string(kind)) + " memory";
  // device: device-local; pinned_host: host-visible coherent; unified: device-local memory the
  // host sees (only where the device has it).
  const uint32_t type =
      kind == MemoryKind::pinned_host ? traits_.host_memory_type : traits_.device_memory_type;
  const bool mapped = kind != MemoryKind::device || traits_.device_memory_host_visible;
  auto buffer_info = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  buffer_info.size = bytes;
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  check(api().vkCreateBuffer(device_, &buffer_info, nullptr, &buffer), describe(*this),
        what + ": vkCreateBuffer");
  VkMemoryRequirements requirements;
  api().vkGetBufferMemoryRequirements(device_, buffer, &requirements);
  auto allocate_info = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  allocate_info.allocationSize = requirements.size;
  allocate_info.memoryTypeIndex = type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkResult result = (requirements.memoryTypeBits & (1u << type))
                        ? api().vkAllocateMemory(device_, &allocate_info, nullptr, &memory)
                        : VK_ERROR_FEATURE_NOT_PRESENT;
  void* host = nullptr;
  if (result == VK_SUCCESS) result = api().vkBindBufferMemory(device_, buffer, memory, 0);
  if (result == VK_SUCCESS && mapped)
    result = api().vkMapMemory(device_, memory, 0, VK_WHOLE_SIZE, 0, &host);
  if (result != VK_SUCCESS) {
    api().vkDestroyBuffer(device_, buffer, nullptr);
    if (memory) api().vkFreeMemory(device_, memory, nullptr);
    check(result, describe(*this), what);
  }
  return std::make_shared<VulkanBuffer>(std::static_pointer_cast<VulkanDevice>(shared_from_this()),
                                        bytes, kind, memory, buffer, host);
}

VulkanBuffer::~VulkanBuffer() {
  if (process_exiting()) return;
  // hal frees a segment only once the work that used it has completed.
  const VkApi& api = device_->api();
  if (mapped_) api.vkUnmapMemory(device_->native(), memory_);
  api.vkDestroyBuffer(device_->native(), buffer_, nullptr);
  api.vkFreeMemory(device_->native(), memory_, nullptr);
}

std::shared_ptr<StreamImpl> VulkanDevice::create_stream() {
  return std::make_shared<VulkanStream>(std::static_pointer_cast<VulkanDevice>(shared_from_this()));
}

std::shared_ptr<EventImpl> VulkanDevice::create_event() {
  return std::make_shared<VulkanEvent>(std::static_pointer_cast<VulkanDevice>(shared_from_this()));
}

}  // namespace hal::vulkan
