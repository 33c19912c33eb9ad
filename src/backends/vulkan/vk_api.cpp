#include "backends/vulkan/vk_api.hpp"

#include <dlfcn.h>

namespace hal::vulkan {

std::unique_ptr<VkApi> VkApi::load() {
  // Never unloaded: the loader and its drivers keep threads and exit handlers of their own.
  constexpr int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
  void* library = ::dlopen("libvulkan.so.1", flags);
  if (!library) library = ::dlopen("libvulkan.so", flags);
  if (!library) {
    const char* why = ::dlerror();
    throw Error(ErrorCode::BackendUnavailable,
                std::string("the Vulkan loader libvulkan.so.1 cannot be opened: ") +
                    (why ? why : "unknown reason") +
                    " (Debian: apt-get install libvulkan1 and a driver such as "
                    "mesa-vulkan-drivers)");
  }
  auto api = std::make_unique<VkApi>();
  api->vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(library, "vkGetInstanceProcAddr"));
  if (!api->vkGetInstanceProcAddr)
    throw Error(ErrorCode::BackendUnavailable,
                "the Vulkan loader lacks vkGetInstanceProcAddr: it is not a Vulkan loader");
  std::string missing;
#define HAL_VK_LOAD(name)                                                                      \
  api->name = reinterpret_cast<PFN_##name>(api->vkGetInstanceProcAddr(VK_NULL_HANDLE, #name)); \
  if (!api->name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  HAL_VK_GLOBAL_FUNCTIONS(HAL_VK_LOAD)
#undef HAL_VK_LOAD
  if (!missing.empty())
    throw Error(ErrorCode::BackendUnavailable,
                "the Vulkan loader lacks Vulkan 1.1 functions: " + missing);
  return api;
}

void VkApi::load_instance(VkInstance instance) {
  std::string missing;
#define HAL_VK_LOAD(name)                                                      \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name)); \
  if (!name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  HAL_VK_INSTANCE_FUNCTIONS(HAL_VK_LOAD)
#undef HAL_VK_LOAD
#define HAL_VK_LOAD_OPTIONAL(name) \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));
  HAL_VK_OPTIONAL_FUNCTIONS(HAL_VK_LOAD_OPTIONAL)
#undef HAL_VK_LOAD_OPTIONAL
  if (!missing.empty())
    throw Error(ErrorCode::BackendUnavailable,
                "the Vulkan instance lacks Vulkan 1.2 functions: " + missing);
}

std::string result_name(VkResult result) {
  switch (result) {
#define HAL_VK_RESULT(name) \
  case name:                \
    return #name;
    HAL_VK_RESULT(VK_SUCCESS)
    HAL_VK_RESULT(VK_NOT_READY)
    HAL_VK_RESULT(VK_TIMEOUT)
    HAL_VK_RESULT(VK_INCOMPLETE)
    HAL_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    HAL_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    HAL_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    HAL_VK_RESULT(VK_ERROR_DEVICE_LOST)
    HAL_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    HAL_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    HAL_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    HAL_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    HAL_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    HAL_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    HAL_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    HAL_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    HAL_VK_RESULT(VK_ERROR_UNKNOWN)
    HAL_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    HAL_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    HAL_VK_RESULT(VK_ERROR_FRAGMENTATION)
#undef HAL_VK_RESULT
    default:
      return "VK_" + std::to_string(static_cast<int>(result));
  }
}

ErrorCode error_code(VkResult result) {
  switch (result) {
    case VK_SUCCESS:
      return ErrorCode::Ok;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS:
      return ErrorCode::OutOfMemory;
    case VK_ERROR_DEVICE_LOST:
      return ErrorCode::DeviceLost;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return ErrorCode::Unsupported;
    case VK_ERROR_INITIALIZATION_FAILED:
      return ErrorCode::BackendUnavailable;
    default:
      return ErrorCode::Internal;
  }
}

void throw_result(VkResult result, std::string_view where, std::string_view what) {
  throw Error(error_code(result),
              std::string(where) + ": " + std::string(what) + " failed: " + result_name(result) +
                  " (" + std::to_string(static_cast<int>(result)) + ")",
              static_cast<int>(result));
}

}  // namespace hal::vulkan
