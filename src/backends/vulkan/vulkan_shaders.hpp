// The Vulkan backend's kernels: kernels/vulkan/<name>.comp compiled to SPIR-V at build time
// (cmake/vulkan_shaders.cmake) and embedded in the library.
#pragma once

#include <string_view>

namespace hal::vulkan {

// The device feature that says the reductions' subgroup shaders (reduce_*_subgroup) run there:
// basic, vote and arithmetic subgroup operations in compute shaders.
inline constexpr std::string_view kSubgroupReductions = "subgroup_reductions";

// The SPIR-V module of kernels/vulkan/<name>.comp. Throws Internal for a name that is not
// there: a bug in hal.
std::string_view vulkan_shader(std::string_view name);

}  // namespace hal::vulkan
