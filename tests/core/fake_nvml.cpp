// A stand-in for NVML (libnvidia-ml.so.1) for energy_test, loaded through HAL_NVML_LIBRARY: two
// GPUs by UUID, one of which counts energy (it has used 250 mJ more at each reading, from
// 1 000 J), the other counting none (as GPUs before Volta); every other UUID is not found.
// Initialisations and shutdowns are counted, so that a test can see each one balanced.
#include <cstring>

namespace {

constexpr int kSuccess = 0, kUninitialized = 1, kNotSupported = 3, kNotFound = 6;
int initialised = 0;
unsigned long long counted_mj = 1'000'000;
int gpus[2];

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int nvmlInit_v2() {
  ++initialised;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlShutdown() {
  if (initialised == 0) return kUninitialized;
  --initialised;
  return kSuccess;
}

__attribute__((visibility("default"))) int fake_nvml_initialised() { return initialised; }

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByUUID(const char* uuid,
                                                                     void** device) {
  if (initialised == 0) return kUninitialized;
  if (std::strcmp(uuid, "GPU-11111111-2222-3333-4444-555555555555") == 0) {
    *device = &gpus[0];
    return kSuccess;
  }
  if (std::strcmp(uuid, "GPU-11111111-2222-3333-4444-666666666666") == 0) {
    *device = &gpus[1];
    return kSuccess;
  }
  return kNotFound;
}

__attribute__((visibility("default"))) int nvmlDeviceGetTotalEnergyConsumption(
    void* device, unsigned long long* millijoules) {
  if (initialised == 0) return kUninitialized;
  if (device != &gpus[0]) return kNotSupported;
  counted_mj += 250;
  *millijoules = counted_mj;
  return kSuccess;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(int status) {
  switch (status) {
    case kSuccess:
      return "Success";
    case kUninitialized:
      return "Uninitialized";
    case kNotSupported:
      return "Not Supported";
    case kNotFound:
      return "Not Found";
    default:
      return "Unknown Error";
  }
}
}
