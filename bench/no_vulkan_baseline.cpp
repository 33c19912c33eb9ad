// Built without the Vulkan headers: no Vulkan baseline.
#include "raw_baseline.hpp"

namespace hal::bench {

std::string_view vulkan_empty_kernel() { return {}; }

std::unique_ptr<RawBaseline> make_vulkan_baseline(const std::string&) { return nullptr; }

}  // namespace hal::bench
