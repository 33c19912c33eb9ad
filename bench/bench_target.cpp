#include "bench_target.hpp"

namespace hal::bench {

BenchTarget open_target(const std::string& id, const std::string& suite) {
  BenchTarget target{hal::device(id), nullptr};
  const std::string_view backend = target.device.info().backend();
  // The index of the device `id` resolved to ("opencl:0"), not of the text given: a UUID
  // prefix has none (stoul of "43992d68" was 43992, the baseline of another device or none).
  const std::string& resolved = target.device.info().id;
  const size_t index = std::stoul(resolved.substr(resolved.find(':') + 1));
  if (backend == "opencl") target.raw = make_opencl_baseline(index);
  if (backend == "cuda") target.raw = make_cuda_baseline(index);
  if (backend == "vulkan") target.raw = make_vulkan_baseline(target.device.info().uuid);
  if (!target.raw)
    throw Error(
        ErrorCode::Unsupported,
        "the " + suite +
            " suite measures OpenCL, CUDA and Vulkan devices against their raw driver API, and "
            "this build has no baseline for " +
            id);
  return target;
}

}  // namespace hal::bench
