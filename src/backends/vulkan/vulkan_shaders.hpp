// The Vulkan backend's kernels: kernels/vulkan/<name>.comp compiled to SPIR-V at build time
// (cmake/vulkan_shaders.cmake) and embedded in the library.
#pragma once

#include <string_view>

namespace hal::vulkan {

// The SPIR-V module of kernels/vulkan/<name>.comp. Throws Internal for a name that is not
// there: a bug in hal.
std::string_view vulkan_shader(std::string_view name);

}  // namespace hal::vulkan
