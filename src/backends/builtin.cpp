// The backends hal knows by name, in the order they are listed.
#include "builtin_backends.hpp"
#include "cpu/cpu_backend.hpp"

namespace hal::detail {

std::vector<BuiltinBackend> builtin_backends() {
  return {
      {"cpu", [] { return std::make_shared<cpu::CpuBackend>(); }, ""},
      {"opencl", nullptr, "the OpenCL backend is not written yet (issue #4)"},
      {"cuda", nullptr, "the CUDA backend is not written yet (issue #5)"},
      {"vulkan", nullptr, "the Vulkan backend is not written yet"},
      {"hip", nullptr, "the HIP backend is not written yet"},
  };
}

}  // namespace hal::detail
