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

// A figure that may differ per device: "100", or "100:100:200:400" with entry i for device i
// (named "gflops[i]" in messages). `first` takes the first entry, `each` the list when it has
// more than one.
template <class T, class Parse>
bool set_each(const std::string& key, const std::string& text, Parse parse, T& first,
              std::vector<T>& each, std::string& error) {
  std::vector<T> values;
  const bool list = text.find(':') != std::string::npos;
  for (size_t start = 0;;) {
    const size_t colon = text.find(':', start);
    const std::string entry =
        text.substr(start, colon == std::string::npos ? colon : colon - start);
    const auto parsed = parse(list ? key + "[" + std::to_string(values.size()) + "]" : key, entry);
    if (!parsed.value) {
      error = "HAL_SIM_CONFIG: " + parsed.error;
      return false;
    }
    values.push_back(static_cast<T>(*parsed.value));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  first = values.front();
  each = list ? values : std::vector<T>{};
  return true;
}

bool apply(const std::string& key, const std::string& text, Config& c, std::string& error) {
  using hal::parse_count, hal::parse_real, hal::parse_size;
  if (key == "devices") return set(parse_count(key, text, 0, kMaxDevices), c.devices, error);
  auto size = [](const std::string& what, const std::string& entry) {
    return parse_size(what, entry, 0, kMaxMemory);
  };
  auto rate = [](const std::string& what, const std::string& entry) {
    return parse_real(what, entry, kMinRate, kMaxRate);
  };
  auto launch = [](const std::string& what, const std::string& entry) {
    return parse_real(what, entry, 0, kMaxLaunchUs);
  };
  if (key == "memory") return set_each(key, text, size, c.memory_bytes, c.memory_each, error);
  if (key == "bandwidth_gbps")
    return set_each(key, text, rate, c.bandwidth_gbps, c.bandwidth_each, error);
  if (key == "gflops") return set_each(key, text, rate, c.gflops, c.gflops_each, error);
  if (key == "launch_us") return set_each(key, text, launch, c.launch_us, c.launch_each, error);
  if (key == "fail_alloc_at")
    return set(parse_count(key, text, 0, UINT64_MAX), c.fail_alloc_at, error);
  if (key == "fail_op_at") return set(parse_count(key, text, 0, UINT64_MAX), c.fail_op_at, error);
  if (key == "fail_event_at")
    return set(parse_count(key, text, 0, UINT64_MAX), c.fail_event_at, error);
  if (key == "fail_query_at")
    return set(parse_count(key, text, 0, UINT64_MAX), c.fail_query_at, error);
  if (key == "lose_device_at")
    return set(parse_count(key, text, 0, UINT64_MAX), c.lose_device_at, error);
  if (key == "fault_device")
    return set(parse_count(key, text, 0, kMaxDevices - 1), c.fault_device, error);
  if (key == "mixed") return set(parse_count(key, text, 0, 1), c.mixed, error);
  if (key == "pace") return set(parse_count(key, text, 0, 1), c.pace, error);
  if (key == "zero_uuid") return set(parse_count(key, text, 0, 1), c.zero_uuid, error);
  error = "HAL_SIM_CONFIG: unknown key '" + key +
          "' (devices, memory, bandwidth_gbps, gflops, launch_us, fail_alloc_at, fail_op_at, "
          "fail_event_at, fail_query_at, lose_device_at, fault_device, mixed, pace, zero_uuid)";
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
  // A list longer than the fleet names devices that do not exist: a mistake, not a spare.
  auto too_long = [&](const char* key, size_t count) {
    if (config.devices == 0 || count <= config.devices) return false;
    error = "HAL_SIM_CONFIG: " + std::string(key) + " gives " + std::to_string(count) +
            " figures for " + std::to_string(config.devices) + " devices";
    return true;
  };
  return !too_long("memory", config.memory_each.size()) &&
         !too_long("bandwidth_gbps", config.bandwidth_each.size()) &&
         !too_long("gflops", config.gflops_each.size()) &&
         !too_long("launch_us", config.launch_each.size());
}

Config config_of_device(const Config& config, uint32_t index) {
  Config device = config;
  auto pick = [index](auto& figure, auto& each) {
    if (!each.empty()) figure = each[index % each.size()];
    each.clear();
  };
  pick(device.memory_bytes, device.memory_each);
  pick(device.bandwidth_gbps, device.bandwidth_each);
  pick(device.gflops, device.gflops_each);
  pick(device.launch_us, device.launch_each);
  if (!config.mixed) return device;
  device.memory_bytes = device.memory_bytes / 8 * ((index % 8) + 1);
  device.gflops = device.gflops * ((5 * index % 16) + 1) / 16;
  device.bandwidth_gbps = device.bandwidth_gbps * ((3 * index % 8) + 1) / 8;
  return device;
}

}  // namespace sim
