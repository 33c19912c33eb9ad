// What an OpenCL device is, read from clGetDeviceInfo into hal's DeviceInfo.
#pragma once

#include <cstdint>
#include <string>

#include "backends/opencl/cl_platform.hpp"
#include "hal/device_info.hpp"

namespace hal::opencl {

// Facts the backend needs beyond DeviceInfo.
struct ClDeviceTraits {
  uint32_t base_address_align_bytes = 128;  // sub-buffer origins must be multiples of this
  bool host_unified_memory = false;         // the device shares the host's memory
  bool amd_free_memory = false;             // cl_amd_device_attribute_query reports free memory
  std::string opencl_c_version;             // "OpenCL C 1.2 PoCL"
};

struct ClDeviceDescription {
  DeviceInfo info;
  ClDeviceTraits traits;
};

// `id` is the hal id ("opencl:0"); `index_in_platform` keeps the fallback UUID of identical
// devices apart.
ClDeviceDescription describe_device(const ClPlatform& platform, cl_device_id device, std::string id,
                                    uint32_t index_in_platform);

// Free device memory where the driver reports it (AMD), else unknown.
MemoryFigure read_free_memory(const ClApi& api, cl_device_id device, const ClDeviceTraits& traits);

}  // namespace hal::opencl
