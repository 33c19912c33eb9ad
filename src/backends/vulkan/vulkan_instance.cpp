#include "backends/vulkan/vulkan_instance.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

#include "hal/log.hpp"

namespace hal::vulkan {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

std::atomic<uint64_t> g_messages{0};
std::mutex g_last_mutex;
std::string g_last;  // under g_last_mutex

VKAPI_ATTR VkBool32 VKAPI_CALL
on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                      const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const std::string text = data && data->pMessage ? data->pMessage : "(no message)";
  ++g_messages;
  {
    std::lock_guard lock(g_last_mutex);
    g_last = text;
  }
  log(LogLevel::error, "vulkan validation: " + text);
  return VK_FALSE;  // the call goes on, as the specification asks of messengers
}

bool validation_requested() {
  const char* value = std::getenv("HAL_VULKAN_VALIDATION");
  return value && std::string_view(value) == "1";
}

bool has_layer(const VkApi& api, const char* name) {
  uint32_t count = 0;
  if (api.vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (api.vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
  for (const VkLayerProperties& layer : layers)
    if (std::strcmp(layer.layerName, name) == 0) return true;
  return false;
}

bool has_instance_extension(const VkApi& api, const char* layer, const char* name) {
  uint32_t count = 0;
  if (api.vkEnumerateInstanceExtensionProperties(layer, &count, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (api.vkEnumerateInstanceExtensionProperties(layer, &count, extensions.data()) != VK_SUCCESS)
    return false;
  for (const VkExtensionProperties& extension : extensions)
    if (std::strcmp(extension.extensionName, name) == 0) return true;
  return false;
}

}  // namespace

std::atomic<bool> g_exiting{false};

bool process_exiting() { return g_exiting.load(std::memory_order_relaxed); }

void note_exit_order() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit([] { g_exiting = true; }); });
}

uint64_t validation_message_count() { return g_messages.load(); }

std::string last_validation_message() {
  std::lock_guard lock(g_last_mutex);
  return g_last;
}

std::shared_ptr<VulkanInstance> VulkanInstance::create() {
  std::shared_ptr<VulkanInstance> self(new VulkanInstance());
  self->api_ = VkApi::load();
  const VkApi& api = *self->api_;
  uint32_t loader_version = VK_API_VERSION_1_0;
  api.vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2)
    throw Error(ErrorCode::BackendUnavailable,
                "the Vulkan loader speaks Vulkan " +
                    std::to_string(VK_API_VERSION_MAJOR(loader_version)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(loader_version)) +
                    "; hal needs 1.2 (timeline semaphores)");
  self->api_version_ = VK_API_VERSION_1_2;

  std::vector<const char*> layers, extensions;
  bool debug_utils = false;
  if (validation_requested()) {
    if (has_layer(api, kValidationLayer)) {
      layers.push_back(kValidationLayer);
      debug_utils =
          has_instance_extension(api, nullptr, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
          has_instance_extension(api, kValidationLayer, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    } else {
      log(LogLevel::warn,
          "vulkan: HAL_VULKAN_VALIDATION=1 but the layer VK_LAYER_KHRONOS_validation is not "
          "installed (Debian: vulkan-validationlayers)");
    }
  }

  auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "hal";
  app.pEngineName = "hal";
  app.apiVersion = self->api_version_;
  auto messenger_info = make<VkDebugUtilsMessengerCreateInfoEXT>(
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = &on_validation_message;
  auto info = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  info.pNext = debug_utils ? &messenger_info : nullptr;  // also covers instance creation
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  check(api.vkCreateInstance(&info, nullptr, &self->instance_), "Vulkan", "vkCreateInstance");
  self->api_->load_instance(self->instance_);
  if (debug_utils && api.vkCreateDebugUtilsMessengerEXT)
    check(api.vkCreateDebugUtilsMessengerEXT(self->instance_, &messenger_info, nullptr,
                                             &self->messenger_),
          "Vulkan", "vkCreateDebugUtilsMessengerEXT");
  return self;
}

VulkanInstance::~VulkanInstance() {
  if (!instance_ || process_exiting()) return;
  if (messenger_) api_->vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (api_->vkDestroyInstance) api_->vkDestroyInstance(instance_, nullptr);
}

}  // namespace hal::vulkan
