#include "backends/cuda/cuda_device_info.hpp"

#include <algorithm>

#include "core/uuid.hpp"

namespace hal::cuda {
namespace {

int attribute(const CuApi& api, CUdevice device, CUdevice_attribute which) {
  int value = 0;
  return api.cuDeviceGetAttribute(&value, which, device) == CUDA_SUCCESS ? value : 0;
}

// Tensor-core and reduced-precision support by architecture, from NVIDIA's CUDA programming
// guide (arithmetic instructions table): f16 arithmetic from sm_53, tensor cores from sm_70,
// bf16 and tf32 from sm_80, fp8 from sm_89.
void add_arithmetic(DeviceInfo& info, int cc) {
  for (DType dtype : kAllDTypes) info.dtypes.push_back(dtype);  // f16/bf16 stored on every GPU
  info.features.emplace_back(feature::kFp64);
  if (cc >= 53) info.features.emplace_back(feature::kFp16);
  if (cc >= 70) info.features.emplace_back("tensor_cores");
  if (cc >= 80) {
    info.features.emplace_back(feature::kBf16);
    info.features.emplace_back("tf32");
  }
  if (cc >= 89) info.features.emplace_back("fp8");
  if (cc >= 90) info.features.emplace_back("thread_block_clusters");
}

// FP32 lanes per multiprocessor, from the CUDA programming guide's throughput table: 64 on
// sm_60, sm_7x and sm_80; 128 on sm_61/62 and from sm_86 on.
int f32_lanes_per_multiprocessor(int cc) {
  if (cc == 60 || (cc >= 70 && cc <= 80)) return 64;
  return cc >= 50 ? 128 : 192;
}

}  // namespace

std::string architecture_name(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

CuDeviceDescription describe_device(const CuApi& api, CUdevice device, std::string id) {
  CuDeviceDescription out;
  DeviceInfo& info = out.info;
  CuDeviceTraits& traits = out.traits;
  const std::string where = "describing " + id;
  info.id = std::move(id);

  char name[256] = {};
  api.check(api.cuDeviceGetName(name, sizeof name, device), where, "cuDeviceGetName");
  info.name = name;
  info.vendor = "NVIDIA";
  traits.integrated = attribute(api, device, CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0;
  info.kind = DeviceKind::gpu;

  CUuuid uuid{};
  api.check(api.cuDeviceGetUuid(&uuid, device), where, "cuDeviceGetUuid");
  unsigned char bytes[16];
  std::copy(std::begin(uuid.bytes), std::end(uuid.bytes), bytes);
  info.uuid = format_uuid(bytes);

  char bus_id[32] = {};
  if (api.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device) == CUDA_SUCCESS)
    traits.pci_bus_id = bus_id;

  traits.cc_major = attribute(api, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  traits.cc_minor = attribute(api, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  traits.arch = traits.cc_major * 10 + traits.cc_minor;
  info.architecture = architecture_name(traits.cc_major, traits.cc_minor);
  info.driver_version = cuda_version_name(api.driver_version);

  size_t total = 0;
  api.check(api.cuDeviceTotalMem(&total, device), where, "cuDeviceTotalMem");
  info.memory_total = {total, Provenance::measured};
  info.compute_units =
      static_cast<uint32_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  info.clock_mhz =
      static_cast<uint32_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000);

  info.limits.max_allocation_bytes = total;
  info.limits.max_work_group_size =
      static_cast<uint32_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  info.limits.max_work_group_dims = {
      static_cast<uint64_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)),
      static_cast<uint64_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)),
      static_cast<uint64_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z))};
  traits.shared_bytes_per_block = static_cast<uint32_t>(
      attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  traits.shared_bytes_per_block_optin = static_cast<uint32_t>(
      attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  info.limits.max_shared_memory_bytes =
      std::max(traits.shared_bytes_per_block, traits.shared_bytes_per_block_optin);
  traits.max_grid[0] =
      static_cast<uint32_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X));
  traits.max_grid[1] =
      static_cast<uint32_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y));
  traits.max_grid[2] =
      static_cast<uint32_t>(attribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z));

  if (const int l2 = attribute(api, device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE); l2 > 0)
    info.caches.push_back({2, "unified", static_cast<uint64_t>(l2), 128, 1});

  traits.managed_memory = attribute(api, device, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) != 0;
  traits.concurrent_managed_access =
      attribute(api, device, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) != 0;
  traits.memory_pools = attribute(api, device, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
  // Peaks: an FMA per lane and cycle; memory moves twice per memory clock (DDR).
  info.peak.f32_gflops =
      info.compute_units * (info.clock_mhz / 1e3) * 2 * f32_lanes_per_multiprocessor(traits.arch);
  const double memory_clock_khz = attribute(api, device, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  const double bus_bits = attribute(api, device, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  info.peak.bandwidth_gbps = 2 * memory_clock_khz * 1e3 * (bus_bits / 8) / 1e9;
  add_arithmetic(info, traits.arch);
  info.features.emplace_back(feature::kPinnedHostMemory);
  info.features.emplace_back(feature::kPortableKernels);
  info.features.emplace_back(feature::kGraphs);
  if (traits.managed_memory) info.features.emplace_back(feature::kUnifiedMemory);
  if (traits.memory_pools) info.features.emplace_back("memory_pools");
  std::sort(info.features.begin(), info.features.end());
  return out;
}

}  // namespace hal::cuda
