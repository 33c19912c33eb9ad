// What a CUDA device is, read from the driver's attributes into hal's DeviceInfo.
#pragma once

#include <cstdint>
#include <string>

#include "backends/cuda/cuda_api.hpp"
#include "hal/device_info.hpp"

namespace hal::cuda {

// Facts the backend needs beyond DeviceInfo.
struct CuDeviceTraits {
  int cc_major = 0, cc_minor = 0;  // compute capability
  int arch = 0;                    // 90 for sm_90
  std::string pci_bus_id;          // "0000:17:00.0"
  bool managed_memory = false;
  bool concurrent_managed_access = false;
  bool memory_pools = false;            // cuMemAllocAsync: stream-ordered allocation from a pool
  bool integrated = false;              // shares the host's memory (Jetson, GH200 ...)
  uint32_t max_grid[3] = {0, 0, 0};     // blocks per launch, per dimension
  uint32_t shared_bytes_per_block = 0;  // without opting in
  uint32_t shared_bytes_per_block_optin = 0;  // with cuFuncSetAttribute
};

struct CuDeviceDescription {
  DeviceInfo info;
  CuDeviceTraits traits;
};

// "sm_90" for compute capability 9.0.
std::string architecture_name(int major, int minor);

// `id` is the hal id ("cuda:0").
CuDeviceDescription describe_device(const CuApi& api, CUdevice device, std::string id);

}  // namespace hal::cuda
