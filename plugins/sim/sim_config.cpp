// HAL_SIM_CONFIG: comma- or semicolon-separated key=value pairs, read with hal's strict number
// parser (hal/units.hpp, compiled into the plugin): a value that is malformed, not finite or
// out of range is an error that names the key, never a number wrapped to fit.
#include <sstream>

#include "hal/units.hpp"
#include "sim.hpp"

namespace sim {
namespace {

constexpr uint32_t kMaxDevices = 65536;
// 64 TiB a device, so that the memory of 65536 devices still sums within 64 bits.
constexpr uint64_t kMaxMemory = uint64_t{1} << 46;
// Speeds (GB/s, GFLOP/s) from a byte a millisecond to far past any device; launches up to a day.
constexpr double kMinRate = 1e-6, kMaxRate = 1e12, kMaxLaunchUs = 86400e6;

// Each reads `text` into `field`; false with `error` set when the text is refused.
template <class Field>
bool set(const hal::Parsed<uint64_t>& parsed, Field& field, std::string& error) {
  if (!parsed.value) error = "HAL_SIM_CONFIG: " + parsed.error;
  if (parsed.value) field = static_cast<Field>(*parsed.value);
  return parsed.value.has_value();
}

bool set(const hal::Parsed<double>& parsed, double& field, std::string& error) {
  if (!parsed.value) error = "HAL_SIM_CONFIG: " + parsed.error;
  if (parsed.value) field = *parsed.value;
  return parsed.value.has_value();
}

bool apply(const std::string& key, const std::string& text, Config& c, std::string& error) {
  using hal::parse_count, hal::parse_real, hal::parse_size;
  if (key == "devices") return set(parse_count(key, text, 0, kMaxDevices), c.devices, error);
  if (key == "memory") return set(parse_size(key, text, 0, kMaxMemory), c.memory_bytes, error);
  if (key == "bandwidth_gbps")
    return set(parse_real(key, text, kMinRate, kMaxRate), c.bandwidth_gbps, error);
  if (key == "gflops") return set(parse_real(key, text, kMinRate, kMaxRate), c.gflops, error);
  if (key == "launch_us") return set(parse_real(key, text, 0, kMaxLaunchUs), c.launch_us, error);
  if (key == "fail_alloc_at")
    return set(parse_count(key, text, 0, UINT64_MAX), c.fail_alloc_at, error);
  if (key == "fail_op_at") return set(parse_count(key, text, 0, UINT64_MAX), c.fail_op_at, error);
  if (key == "lose_device_at")
    return set(parse_count(key, text, 0, UINT64_MAX), c.lose_device_at, error);
  if (key == "fault_device")
    return set(parse_count(key, text, 0, kMaxDevices - 1), c.fault_device, error);
  if (key == "mixed") return set(parse_count(key, text, 0, 1), c.mixed, error);
  error = "HAL_SIM_CONFIG: unknown key '" + key +
          "' (devices, memory, bandwidth_gbps, gflops, launch_us, fail_alloc_at, fail_op_at, "
          "lose_device_at, fault_device, mixed)";
  return false;
}

}  // namespace

bool parse_config(const char* text, Config& config, std::string& error) {
  if (text == nullptr) return true;
  std::string entries(text);
  for (char& c : entries)
    if (c == ';') c = ',';
  std::istringstream stream(entries);
  std::string entry;
  while (std::getline(stream, entry, ',')) {
    if (entry.empty()) continue;
    const size_t equals = entry.find('=');
    if (equals == std::string::npos) {
      error = "HAL_SIM_CONFIG: '" + entry + "' is not key=value";
      return false;
    }
    if (!apply(entry.substr(0, equals), entry.substr(equals + 1), config, error)) return false;
  }
  // A fault aimed at a device that does not exist would silently never fire.
  if (config.devices > 0 && config.fault_device >= config.devices) {
    error = "HAL_SIM_CONFIG: fault_device=" + std::to_string(config.fault_device) +
            " names no device (devices=" + std::to_string(config.devices) + ": 0 to " +
            std::to_string(config.devices - 1) + ")";
    return false;
  }
  return true;
}

Config config_of_device(const Config& config, uint32_t index) {
  Config device = config;
  if (!config.mixed) return device;
  device.memory_bytes = config.memory_bytes / 8 * ((index % 8) + 1);
  device.gflops = config.gflops * ((5 * index % 16) + 1) / 16;
  device.bandwidth_gbps = config.bandwidth_gbps * ((3 * index % 8) + 1) / 8;
  return device;
}

}  // namespace sim
