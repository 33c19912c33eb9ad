// The Vulkan baseline: the same work as hal's Vulkan backend does, written against Vulkan
// directly: a command buffer recorded per dispatch or copy and submitted to a compute queue,
// signalling a timeline semaphore that finish() waits for. Memory is host-visible and mapped
// where the device has such device-local memory (as hal maps it), else staged.
#include <vulkan/vulkan.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_shaders.hpp"
#include "raw_baseline.hpp"

namespace hal::bench {
namespace {

void ok(VkResult result, const char* what) {
  if (result != VK_SUCCESS)
    throw std::runtime_error(std::string("raw Vulkan baseline: ") + what +
                             " failed: " + std::to_string(static_cast<int>(result)));
}

std::string uuid_text(const uint8_t (&bytes)[VK_UUID_SIZE]) {
  char text[40];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

class RawVulkan final : public RawBaseline {
 public:
  // The device whose UUID hal gives vulkan:<index>.
  explicit RawVulkan(const std::string& uuid) {
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo instance_info{};
    instance_info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    instance_info.pApplicationInfo = &app;
    ok(vkCreateInstance(&instance_info, nullptr, &instance_), "vkCreateInstance");
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance_, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance_, &count, devices.data());
    for (VkPhysicalDevice device : devices) {
      VkPhysicalDeviceIDProperties ids{};
      ids.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
      VkPhysicalDeviceProperties2 properties{};
      properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
      properties.pNext = &ids;
      vkGetPhysicalDeviceProperties2(device, &properties);
      if (uuid_text(ids.deviceUUID) == uuid) physical_ = device;
    }
    if (!physical_) throw std::runtime_error("raw Vulkan baseline: no device with UUID " + uuid);
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &families, nullptr);
    std::vector<VkQueueFamilyProperties> family(families);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_, &families, family.data());
    while (family_ < families && !(family[family_].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family_;
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{};
    queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    queue.queueFamilyIndex = family_;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkPhysicalDeviceVulkan12Features features12{};
    features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    features12.timelineSemaphore = VK_TRUE;
    VkDeviceCreateInfo device_info{};
    device_info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    device_info.pNext = &features12;
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue;
    ok(vkCreateDevice(physical_, &device_info, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, family_, 0, &queue_);

    VkSemaphoreTypeCreateInfo type{};
    type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo semaphore{};
    semaphore.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
    semaphore.pNext = &type;
    ok(vkCreateSemaphore(device_, &semaphore, nullptr, &timeline_), "vkCreateSemaphore");
    VkCommandPoolCreateInfo pool{};
    pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = family_;
    ok(vkCreateCommandPool(device_, &pool, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    allocate.commandPool = pool_;
    allocate.commandBufferCount = kRing;
    ok(vkAllocateCommandBuffers(device_, &allocate, ring_), "vkAllocateCommandBuffers");

    const std::string_view spirv = hal::vulkan::vulkan_shader("empty");
    std::vector<uint32_t> words(spirv.size() / 4);
    std::memcpy(words.data(), spirv.data(), spirv.size());
    VkShaderModuleCreateInfo module{};
    module.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    module.codeSize = spirv.size();
    module.pCode = words.data();
    ok(vkCreateShaderModule(device_, &module, nullptr, &module_), "vkCreateShaderModule");
    VkPipelineLayoutCreateInfo layout{};
    layout.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    ok(vkCreatePipelineLayout(device_, &layout, nullptr, &layout_), "vkCreatePipelineLayout");
    const uint32_t local[3] = {1, 1, 1};
    const VkSpecializationMapEntry entries[3] = {{100, 0, 4}, {101, 4, 4}, {102, 8, 4}};
    VkSpecializationInfo specialization{3, entries, sizeof local, local};
    VkComputePipelineCreateInfo pipeline{};
    pipeline.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    pipeline.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pipeline.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline.stage.module = module_;
    pipeline.stage.pName = "main";
    pipeline.stage.pSpecializationInfo = &specialization;
    pipeline.layout = layout_;
    ok(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &pipeline, nullptr, &pipeline_),
       "vkCreateComputePipelines");
  }

  ~RawVulkan() override {
    vkDeviceWaitIdle(device_);
    for (Memory* memory : {&first_, &second_, &host_}) release(*memory);
    vkDestroyPipeline(device_, pipeline_, nullptr);
    vkDestroyPipelineLayout(device_, layout_, nullptr);
    vkDestroyShaderModule(device_, module_, nullptr);
    vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroySemaphore(device_, timeline_, nullptr);
    vkDestroyDevice(device_, nullptr);
    vkDestroyInstance(instance_, nullptr);
  }

  void enqueue_empty() override {
    submit([this](VkCommandBuffer commands) {
      vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
      vkCmdDispatch(commands, 1, 1, 1);
    });
  }

  void finish() override {
    VkSemaphoreWaitInfo wait{};
    wait.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    wait.semaphoreCount = 1;
    wait.pSemaphores = &timeline_;
    wait.pValues = &value_;
    ok(vkWaitSemaphores(device_, &wait, UINT64_MAX), "vkWaitSemaphores");
  }

  void write(const void* src, size_t bytes) override {
    grow(bytes);
    std::memcpy(host_.mapped, src, bytes);
    copy(host_, first_, bytes);
  }
  void read(void* dst, size_t bytes) override {
    grow(bytes);
    copy(first_, host_, bytes);
    std::memcpy(dst, host_.mapped, bytes);
  }
  void copy_on_device(size_t bytes) override {
    grow(bytes);
    copy(first_, second_, bytes);
  }

 private:
  static constexpr uint32_t kRing = 64;
  struct Memory {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;
    size_t size = 0;
  };

  // Records into the next command buffer of a ring (waiting for the one that used it last) and
  // submits it after the previous submission, as hal's stream orders its commands.
  template <class Record>
  void submit(Record&& record) {
    if (value_ >= kRing) {  // the ring's slot was used kRing submissions ago
      const uint64_t reuse = value_ - kRing + 1;
      VkSemaphoreWaitInfo wait{};
      wait.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
      wait.semaphoreCount = 1;
      wait.pSemaphores = &timeline_;
      wait.pValues = &reuse;
      ok(vkWaitSemaphores(device_, &wait, UINT64_MAX), "vkWaitSemaphores");
    }
    VkCommandBuffer commands = ring_[value_ % kRing];
    vkResetCommandBuffer(commands, 0);
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    ok(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
    record(commands);
    ok(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
    const uint64_t wait_value = value_, signal_value = value_ + 1;
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo values{};
    values.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    values.waitSemaphoreValueCount = 1;
    values.pWaitSemaphoreValues = &wait_value;
    values.signalSemaphoreValueCount = 1;
    values.pSignalSemaphoreValues = &signal_value;
    VkSubmitInfo submit{};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.pNext = &values;
    submit.waitSemaphoreCount = 1;
    submit.pWaitSemaphores = &timeline_;
    submit.pWaitDstStageMask = &stage;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &timeline_;
    ok(vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit");
    value_ = signal_value;
  }

  void copy(const Memory& from, const Memory& to, size_t bytes) {
    submit([&](VkCommandBuffer commands) {
      const VkBufferCopy region{0, 0, bytes};
      vkCmdCopyBuffer(commands, from.buffer, to.buffer, 1, &region);
    });
    finish();
  }

  void grow(size_t bytes) {
    if (first_.size >= bytes) return;
    finish();
    for (Memory* memory : {&first_, &second_, &host_}) release(*memory);
    first_ = allocate(bytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    second_ = allocate(bytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    host_ =
        allocate(bytes, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  }

  Memory allocate(size_t bytes, VkMemoryPropertyFlags wanted) {
    Memory memory;
    memory.size = bytes;
    VkBufferCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    info.size = bytes;
    info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    ok(vkCreateBuffer(device_, &info, nullptr, &memory.buffer), "vkCreateBuffer");
    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(device_, memory.buffer, &requirements);
    VkPhysicalDeviceMemoryProperties properties;
    vkGetPhysicalDeviceMemoryProperties(physical_, &properties);
    uint32_t type = 0;
    while (type < properties.memoryTypeCount &&
           (!(requirements.memoryTypeBits & (1u << type)) ||
            (properties.memoryTypes[type].propertyFlags & wanted) != wanted))
      ++type;
    VkMemoryAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = type;
    ok(vkAllocateMemory(device_, &allocate, nullptr, &memory.memory), "vkAllocateMemory");
    ok(vkBindBufferMemory(device_, memory.buffer, memory.memory, 0), "vkBindBufferMemory");
    if (wanted & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
      ok(vkMapMemory(device_, memory.memory, 0, VK_WHOLE_SIZE, 0, &memory.mapped), "vkMapMemory");
    return memory;
  }

  void release(Memory& memory) {
    if (memory.buffer) vkDestroyBuffer(device_, memory.buffer, nullptr);
    if (memory.memory) vkFreeMemory(device_, memory.memory, nullptr);
    memory = Memory{};
  }

  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t value_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer ring_[kRing] = {};
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  Memory first_, second_, host_;
};

}  // namespace

std::string_view vulkan_empty_kernel() { return hal::vulkan::vulkan_shader("empty"); }

std::unique_ptr<RawBaseline> make_vulkan_baseline(const std::string& uuid) {
  return std::make_unique<RawVulkan>(uuid);
}

}  // namespace hal::bench
