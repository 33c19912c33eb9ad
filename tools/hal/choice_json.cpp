#include "choice_json.hpp"

#include <cmath>

namespace hal::tool {

nlohmann::ordered_json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json to_json(const Summary& summary) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (size_t i = 0; i < summary.devices.size(); ++i) {
    const Device& device = summary.devices[i];
    const DeviceInfo& info = device.info();
    nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
    for (DType dtype : info.dtypes) dtypes.push_back(to_string(dtype));
    const MemoryFigure& free = summary.memory_free[i];
    devices.push_back({{"id", info.id},
                       {"name", info.name},
                       {"vendor", info.vendor},
                       {"kind", to_string(info.kind)},
                       {"memory_total", info.memory_total.bytes},
                       {"memory_free", free.provenance == Provenance::unknown
                                           ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json(free.bytes)},
                       {"dtypes", dtypes},
                       {"features", info.features},
                       {"peak_f32_gflops", info.peak.f32_gflops},
                       {"calibrated", cached_calibration(device).has_value()}});
  }
  nlohmann::ordered_json backends = nlohmann::ordered_json::array();
  for (const BackendStatus& backend : summary.backends)
    backends.push_back(
        {{"name", backend.name}, {"available", backend.available}, {"reason", backend.reason}});
  return {{"device_count", summary.devices.size()},
          {"by_backend", summary.by_backend},
          {"by_vendor", summary.by_vendor},
          {"by_kind", summary.by_kind},
          {"memory_total", summary.memory_total_bytes},
          {"memory_free", summary.memory_free_bytes},
          {"devices", devices},
          {"backends", backends}};
}

nlohmann::ordered_json calibration_json(const Calibration& figures) {
  nlohmann::ordered_json json = nlohmann::ordered_json::parse(hal::to_json(figures));
  json["from_cache"] = figures.from_cache;
  return json;
}

nlohmann::ordered_json candidates_json(const Selection& selection) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Candidate& c : selection.candidates)
    list.push_back({{"id", c.device.id()},
                    {"eligible", c.eligible},
                    {"reason", c.reason},
                    {"predicted_s", number_or_null(c.predicted_seconds)},
                    {"figures", to_string(c.figures)}});
  return list;
}

}  // namespace hal::tool
