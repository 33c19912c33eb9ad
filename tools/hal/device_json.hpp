// Devices and backends as JSON, for the tool's machine-readable output.
#pragma once

#include <nlohmann/json.hpp>

#include "hal/hal.hpp"

namespace hal::tool {

nlohmann::ordered_json to_json(const DeviceInfo& info, const MemoryFigure& memory_free);
nlohmann::ordered_json to_json(const BackendStatus& backend, const std::vector<Device>& devices);

}  // namespace hal::tool
