#include "backends/opencl/opencl_device_info.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/uuid.hpp"

namespace hal::opencl {
namespace {

// Extension enums, from the Khronos registry (cl_ext.h), spelled here so that an older header
// still builds.
constexpr cl_device_info kDeviceUuidKhr = 0x106A;             // cl_khr_device_uuid
constexpr cl_device_info kComputeCapabilityMajorNv = 0x4000;  // cl_nv_device_attribute_query
constexpr cl_device_info kComputeCapabilityMinorNv = 0x4001;
constexpr cl_device_info kGlobalFreeMemoryAmd = 0x4039;  // cl_amd_device_attribute_query

std::string canonical_vendor(cl_uint vendor_id, const std::string& reported) {
  switch (vendor_id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
    case 0x1022:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x1010:
      return "Imagination";
    case 0x106B:
      return "Apple";
    default:
      return reported;
  }
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// "sm_90" on NVIDIA, the gfx name on AMD, the LLVM CPU of PoCL's host string
// ("HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512" -> "skylake-avx512"), else the name.
std::string architecture(const ClApi& api, cl_device_id device, const std::string& vendor,
                         const std::string& name, const std::string& version,
                         const std::vector<std::string>& extensions) {
  auto has = [&](std::string_view ext) {
    return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
  };
  if (vendor == "NVIDIA" && has("cl_nv_device_attribute_query")) {
    auto major = info_value<cl_uint>(api.clGetDeviceInfo, device, kComputeCapabilityMajorNv);
    auto minor = info_value<cl_uint>(api.clGetDeviceInfo, device, kComputeCapabilityMinorNv);
    if (major) return "sm_" + std::to_string(major) + std::to_string(minor);
  }
  if (vendor == "AMD" && name.rfind("gfx", 0) == 0) return name;
  if (auto at = version.find("HSTR: "); at != std::string::npos) {
    std::string triple = version.substr(at + 6);
    triple = triple.substr(0, triple.find(' '));
    // pthread-x86_64-pc-linux-gnu-skylake-avx512: the CPU follows the OS part of the triple.
    for (std::string_view os : {"-linux-gnu-", "-linux-"})
      if (auto os_at = triple.find(os); os_at != std::string::npos)
        return triple.substr(os_at + os.size());
    return triple;
  }
  return name;
}

// f32 FMA lanes per compute unit: the SIMT width of a GPU's multiprocessor (NVIDIA 128 from
// Pascal on, AMD's 64-wide CUs, Intel's 8-lane EUs), or a CPU device's native vector width.
// 0 where hal does not know the device's make-up.
double f32_lanes_per_compute_unit(const ClApi& api, cl_device_id device, const DeviceInfo& info) {
  if (info.kind == DeviceKind::cpu)
    return info_value<cl_uint>(api.clGetDeviceInfo, device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
  if (info.kind != DeviceKind::gpu) return 0;
  if (info.vendor == "NVIDIA") return 128;
  if (info.vendor == "AMD") return 64;
  if (info.vendor == "Intel") return 8;
  return 0;
}

}  // namespace

ClDeviceDescription describe_device(const ClPlatform& platform, cl_device_id device, std::string id,
                                    uint32_t index_in_platform) {
  const ClApi& api = *platform.api;
  auto get = api.clGetDeviceInfo;
  ClDeviceDescription out;
  DeviceInfo& info = out.info;
  info.id = std::move(id);
  info.name = info_string(get, device, CL_DEVICE_NAME);
  const cl_uint vendor_id = info_value<cl_uint>(get, device, CL_DEVICE_VENDOR_ID);
  info.vendor = canonical_vendor(vendor_id, info_string(get, device, CL_DEVICE_VENDOR));
  const auto type = info_value<cl_device_type>(get, device, CL_DEVICE_TYPE);
  info.kind = (type & CL_DEVICE_TYPE_GPU)   ? DeviceKind::gpu
              : (type & CL_DEVICE_TYPE_CPU) ? DeviceKind::cpu
                                            : DeviceKind::accelerator;
  info.driver_version = info_string(get, device, CL_DRIVER_VERSION);
  const std::string version = info_string(get, device, CL_DEVICE_VERSION);
  std::vector<std::string> extensions = split_words(info_string(get, device, CL_DEVICE_EXTENSIONS));
  info.architecture = architecture(api, device, info.vendor, info.name, version, extensions);

  info.memory_total = {info_value<cl_ulong>(get, device, CL_DEVICE_GLOBAL_MEM_SIZE),
                       Provenance::measured};
  info.compute_units = info_value<cl_uint>(get, device, CL_DEVICE_MAX_COMPUTE_UNITS);
  info.clock_mhz = info_value<cl_uint>(get, device, CL_DEVICE_MAX_CLOCK_FREQUENCY);

  DeviceLimits& limits = info.limits;
  limits.max_allocation_bytes = info_value<cl_ulong>(get, device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  limits.max_work_group_size =
      static_cast<uint32_t>(info_value<size_t>(get, device, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  const auto dims = info_array<size_t>(get, device, CL_DEVICE_MAX_WORK_ITEM_SIZES);
  for (size_t d = 0; d < std::min<size_t>(3, dims.size()); ++d)
    limits.max_work_group_dims[d] = dims[d];
  limits.max_shared_memory_bytes = info_value<cl_ulong>(get, device, CL_DEVICE_LOCAL_MEM_SIZE);

  if (info_value<cl_device_mem_cache_type>(get, device, CL_DEVICE_GLOBAL_MEM_CACHE_TYPE) !=
      CL_NONE) {
    CacheInfo cache;
    cache.type = "global_memory";
    cache.size_bytes = info_value<cl_ulong>(get, device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
    cache.line_bytes = info_value<cl_uint>(get, device, CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE);
    cache.count = 1;
    if (cache.size_bytes) info.caches.push_back(cache);
  }

  auto has = [&](std::string_view ext) {
    return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
  };
  const bool fp64 = has("cl_khr_fp64") ||
                    info_value<cl_device_fp_config>(get, device, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  const bool fp16 = has("cl_khr_fp16");
  ClDeviceTraits& traits = out.traits;
  traits.base_address_align_bytes =
      std::max<cl_uint>(8, info_value<cl_uint>(get, device, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
  traits.host_unified_memory = info_value<cl_bool>(get, device, CL_DEVICE_HOST_UNIFIED_MEMORY);
  traits.amd_free_memory = has("cl_amd_device_attribute_query");
  traits.opencl_c_version = info_string(get, device, CL_DEVICE_OPENCL_C_VERSION);

  // f16 and bf16 are stored and converted by every OpenCL device (vload_half, bit shifts) and
  // computed in f32 where cl_khr_fp16 is absent; f64 needs the device's support.
  for (DType dtype : kAllDTypes)
    if (dtype != DType::f64 || fp64) info.dtypes.push_back(dtype);
  info.features = extensions;
  if (fp16) info.features.emplace_back(feature::kFp16);
  if (fp64) info.features.emplace_back(feature::kFp64);
  if (has("cl_khr_subgroups") || has("cl_intel_subgroups")) info.features.emplace_back("subgroups");
  if (traits.host_unified_memory) info.features.emplace_back(feature::kUnifiedMemory);
  info.features.emplace_back(feature::kPinnedHostMemory);
  info.features.emplace_back(feature::kPortableKernels);
  std::sort(info.features.begin(), info.features.end());
  info.features.erase(std::unique(info.features.begin(), info.features.end()), info.features.end());

  unsigned char uuid[16] = {};
  if (has("cl_khr_device_uuid") &&
      get(device, kDeviceUuidKhr, sizeof uuid, uuid, nullptr) == CL_SUCCESS && !is_nil_uuid(uuid))
    info.uuid = format_uuid(uuid);
  else
    info.uuid = name_based_uuid("opencl|" + platform.name + "|" + info.vendor + "|" + info.name +
                                "|" + version + "|" + std::to_string(index_in_platform));
  info.memory_free = read_free_memory(api, device, traits);
  // Two operations per lane and cycle (a fused multiply-add).
  info.peak.f32_gflops = info.compute_units * (info.clock_mhz / 1e3) * 2 *
                         f32_lanes_per_compute_unit(api, device, info);
  return out;
}

MemoryFigure read_free_memory(const ClApi& api, cl_device_id device, const ClDeviceTraits& traits) {
  if (!traits.amd_free_memory) return {};
  size_t free_kib[2] = {};
  if (api.clGetDeviceInfo(device, kGlobalFreeMemoryAmd, sizeof free_kib, free_kib, nullptr) !=
      CL_SUCCESS)
    return {};
  return {static_cast<uint64_t>(free_kib[0]) * 1024, Provenance::measured};
}

}  // namespace hal::opencl
