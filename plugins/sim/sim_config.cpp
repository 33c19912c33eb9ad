// HAL_SIM_CONFIG: comma- or semicolon-separated key=value pairs.
#include <cstdlib>
#include <sstream>

#include "sim.hpp"

namespace sim {
namespace {

bool parse_number(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return false;
  switch (*end) {  // memory sizes may carry a binary suffix
    case 'K':
    case 'k':
      out *= 1024.0;
      ++end;
      break;
    case 'M':
    case 'm':
      out *= 1024.0 * 1024.0;
      ++end;
      break;
    case 'G':
    case 'g':
      out *= 1024.0 * 1024.0 * 1024.0;
      ++end;
      break;
    default:
      break;
  }
  return *end == '\0' && out >= 0;
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
    double value = 0;
    if (equals == std::string::npos || !parse_number(entry.substr(equals + 1), value)) {
      error = "HAL_SIM_CONFIG: '" + entry + "' is not key=number";
      return false;
    }
    const std::string key = entry.substr(0, equals);
    if (key == "devices")
      config.devices = static_cast<uint32_t>(value);
    else if (key == "memory")
      config.memory_bytes = static_cast<uint64_t>(value);
    else if (key == "bandwidth_gbps")
      config.bandwidth_gbps = value;
    else if (key == "gflops")
      config.gflops = value;
    else if (key == "launch_us")
      config.launch_us = value;
    else if (key == "fail_alloc_at")
      config.fail_alloc_at = static_cast<uint64_t>(value);
    else if (key == "fail_op_at")
      config.fail_op_at = static_cast<uint64_t>(value);
    else if (key == "lose_device_at")
      config.lose_device_at = static_cast<uint64_t>(value);
    else if (key == "fault_device")
      config.fault_device = static_cast<uint32_t>(value);
    else if (key == "mixed")
      config.mixed = value != 0;
    else {
      error = "HAL_SIM_CONFIG: unknown key '" + key +
              "' (devices, memory, bandwidth_gbps, gflops, launch_us, fail_alloc_at, "
              "fail_op_at, lose_device_at, fault_device, mixed)";
      return false;
    }
  }
  if (config.devices > 65536 || config.bandwidth_gbps <= 0 || config.gflops <= 0) {
    error = "HAL_SIM_CONFIG: devices must be at most 65536, bandwidth and gflops positive";
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
