#include "backends/cuda/cuda_backend.hpp"

#include <cstdlib>

#include "backends/cuda/cuda_device.hpp"

namespace hal::cuda {

BackendProbe CudaBackend::probe() {
  BackendProbe probe;
  std::shared_ptr<const CuApi> api;
  try {
    api = CuApi::load();
  } catch (const Error& error) {
    probe.reason = error.message();
    return probe;
  }
  int count = 0;
  api->check(api->cuDeviceGetCount(&count), "CUDA", "cuDeviceGetCount");
  for (int i = 0; i < count; ++i) {
    CUdevice device = 0;
    api->check(api->cuDeviceGet(&device, i), "CUDA", "cuDeviceGet");
    probe.devices.push_back(std::make_shared<CudaDevice>(
        api, device, describe_device(*api, device, "cuda:" + std::to_string(i))));
  }
  probe.available = !probe.devices.empty();
  if (!probe.available) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    probe.reason =
        "the NVIDIA driver shows no GPU" +
        (visible ? " (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")" : std::string());
  }
  return probe;
}

}  // namespace hal::cuda
