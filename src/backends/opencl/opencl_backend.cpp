#include "backends/opencl/opencl_backend.hpp"

#include "backends/opencl/opencl_device.hpp"
#include "hal/log.hpp"

namespace hal::opencl {
namespace {

constexpr cl_int kPlatformNotFoundKhr = -1001;  // the ICD loader found no driver

std::shared_ptr<ClPlatform> open_platform(std::shared_ptr<const ClApi> api, cl_platform_id id,
                                          std::vector<cl_device_id>& devices) {
  auto platform = std::make_shared<ClPlatform>(api, id);
  platform->name = info_string(api->clGetPlatformInfo, id, CL_PLATFORM_NAME);
  platform->vendor = info_string(api->clGetPlatformInfo, id, CL_PLATFORM_VENDOR);
  platform->version = info_string(api->clGetPlatformInfo, id, CL_PLATFORM_VERSION);
  cl_uint count = 0;
  if (api->clGetDeviceIDs(id, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS || count == 0)
    return platform;
  devices.resize(count);
  check(api->clGetDeviceIDs(id, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr),
        "OpenCL platform '" + platform->name + "'", "clGetDeviceIDs");
  std::erase_if(devices, [&](cl_device_id device) {
    return !info_value<cl_bool>(api->clGetDeviceInfo, device, CL_DEVICE_AVAILABLE) ||
           !info_value<cl_bool>(api->clGetDeviceInfo, device, CL_DEVICE_COMPILER_AVAILABLE);
  });
  if (devices.empty()) return platform;
  const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                              reinterpret_cast<cl_context_properties>(id), 0};
  cl_int status = CL_SUCCESS;
  platform->context = api->clCreateContext(properties, static_cast<cl_uint>(devices.size()),
                                           devices.data(), nullptr, nullptr, &status);
  check(status, "OpenCL platform '" + platform->name + "'", "clCreateContext");
  return platform;
}

}  // namespace

BackendProbe OpenClBackend::probe() {
  BackendProbe probe;
  std::shared_ptr<const ClApi> api;
  try {
    api = ClApi::load();
  } catch (const Error& error) {
    probe.reason = error.message();
    return probe;
  }
  cl_uint count = 0;
  cl_int status = api->clGetPlatformIDs(0, nullptr, &count);
  if (status == kPlatformNotFoundKhr || (status == CL_SUCCESS && count == 0)) {
    probe.reason =
        "the OpenCL ICD loader found no platform: no driver is installed (/etc/OpenCL/vendors "
        "is empty; Debian: apt-get install pocl-opencl-icd, or your GPU vendor's ICD)";
    return probe;
  }
  check(status, "OpenCL", "clGetPlatformIDs");
  std::vector<cl_platform_id> ids(count);
  check(api->clGetPlatformIDs(count, ids.data(), nullptr), "OpenCL", "clGetPlatformIDs");

  std::string problems;
  for (cl_platform_id id : ids) {
    std::vector<cl_device_id> devices;
    std::shared_ptr<ClPlatform> platform;
    try {
      platform = open_platform(api, id, devices);
    } catch (const Error& error) {  // one broken driver hides none of the others
      problems += std::string(problems.empty() ? "" : "; ") + error.message();
      log(LogLevel::warn, "opencl: " + error.message());
      continue;
    }
    for (uint32_t i = 0; i < devices.size(); ++i) {
      std::string hal_id = "opencl:" + std::to_string(probe.devices.size());
      probe.devices.push_back(std::make_shared<OpenClDevice>(
          platform, devices[i], describe_device(*platform, devices[i], std::move(hal_id), i)));
    }
  }
  probe.available = !probe.devices.empty();
  if (!probe.available)
    probe.reason = "no usable OpenCL device on " + std::to_string(count) + " platform(s)" +
                   (problems.empty() ? "" : ": " + problems);
  return probe;
}

}  // namespace hal::opencl
