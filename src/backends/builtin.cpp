// The backends hal knows by name, in the order they are listed.
#include "backends/cpu/cpu_backend.hpp"
#include "backends/plugin/plugin_backend.hpp"
#include "core/builtin_backends.hpp"
#include "hal/registry.hpp"
#ifdef HAL_HAVE_OPENCL
#include "backends/opencl/opencl_backend.hpp"
#endif
#ifdef HAL_HAVE_CUDA
#include "backends/cuda/cuda_backend.hpp"
#endif
#ifdef HAL_HAVE_VULKAN
#include "backends/vulkan/vulkan_backend.hpp"
#endif

namespace hal::detail {

std::vector<BuiltinBackend> builtin_backends() {
  return {
      {"cpu", [] { return std::make_shared<cpu::CpuBackend>(); }, ""},
#ifdef HAL_HAVE_OPENCL
      {"opencl", [] { return std::make_shared<opencl::OpenClBackend>(); }, ""},
#else
      {"opencl", nullptr, "built without the OpenCL headers (Debian: opencl-headers)"},
#endif
#ifdef HAL_HAVE_CUDA
      {"cuda", [] { return std::make_shared<cuda::CudaBackend>(); }, ""},
#else
      {"cuda", nullptr, "built without the CUDA toolkit's headers (cuda.h, nvrtc.h)"},
#endif
#ifdef HAL_HAVE_VULKAN
      {"vulkan", [] { return std::make_shared<vulkan::VulkanBackend>(); }, ""},
#else
      {"vulkan", nullptr, "built without the Vulkan headers (Debian: libvulkan-dev)"},
#endif
      {"hip", nullptr, "the HIP backend is not written yet"},
  };
}

std::vector<std::shared_ptr<Backend>> plugin_backends(const std::vector<std::string>& taken) {
  return plugin::discover_plugins(taken).backends;
}

}  // namespace hal::detail

namespace hal {

std::vector<PluginInfo> plugins() {
  Registry::instance();  // discovers the plugins, knowing the other backends' names
  return plugin::discover_plugins({}).candidates;
}

}  // namespace hal
