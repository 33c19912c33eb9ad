#include "device_json.hpp"

namespace hal::tool {

nlohmann::ordered_json to_json(const DeviceInfo& info, const MemoryFigure& memory_free) {
  nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
  for (DType dtype : info.dtypes) dtypes.push_back(to_string(dtype));
  nlohmann::ordered_json caches = nlohmann::ordered_json::array();
  for (const CacheInfo& cache : info.caches)
    caches.push_back({{"level", cache.level},
                      {"type", cache.type},
                      {"size_bytes", cache.size_bytes},
                      {"line_bytes", cache.line_bytes},
                      {"count", cache.count}});
  return {
      {"id", info.id},
      {"uuid", info.uuid},
      {"name", info.name},
      {"vendor", info.vendor},
      {"kind", to_string(info.kind)},
      {"arch", info.architecture},
      {"driver_version", info.driver_version},
      {"memory_total", info.memory_total.bytes},
      {"memory_free", memory_free.provenance == Provenance::unknown  // not 0: "full"
                          ? nlohmann::ordered_json(nullptr)
                          : nlohmann::ordered_json(memory_free.bytes)},
      {"memory_provenance",
       {{"total", to_string(info.memory_total.provenance)},
        {"free", to_string(memory_free.provenance)}}},
      {"compute_units", info.compute_units},
      {"clock_mhz", info.clock_mhz},
      {"numa_nodes", info.numa_nodes},
      {"dtypes", dtypes},
      {"features", info.features},
      {"caches", caches},
      {"limits",
       {{"max_allocation_bytes", info.limits.max_allocation_bytes},
        {"max_work_group_size", info.limits.max_work_group_size},
        {"max_work_group_dims", info.limits.max_work_group_dims},
        {"max_shared_memory_bytes", info.limits.max_shared_memory_bytes}}},
      {"peak",
       {{"f32_gflops", info.peak.f32_gflops},
        {"bandwidth_gbps", info.peak.bandwidth_gbps},
        {"launch_latency_us", info.peak.launch_latency_us}}},
  };
}

nlohmann::ordered_json to_json(const BackendStatus& backend, const std::vector<Device>& devices) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Device& device : devices)
    if (device.info().backend() == backend.name)
      list.push_back(to_json(device.info(), device.memory_free()));
  return {{"name", backend.name},
          {"compiled_in", backend.compiled_in},
          {"available", backend.available},
          {"reason", backend.reason},
          {"devices", list}};
}

}  // namespace hal::tool
