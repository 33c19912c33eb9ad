// `hal devices [--all] [--json]`: one line per device, like sycl-ls.
#include <iostream>

#include "commands.hpp"
#include "device_json.hpp"
#include "hal/units.hpp"
#include "json_text.hpp"

namespace hal::tool {
namespace {

// The most telling capability for the one-line summary.
std::string headline_feature(const DeviceInfo& info) {
  if (info.kind == DeviceKind::cpu) {
    for (const char* isa : {"avx512f", "avx2", "avx", "sse4.2"})
      if (info.has_feature(isa)) return std::string(isa) == "avx512f" ? "avx512" : isa;
    return info.architecture;
  }
  std::string dtypes;
  for (const char* name : {"fp64", "fp16", "bf16"})
    if (info.has_feature(name)) dtypes += (dtypes.empty() ? "" : ",") + std::string(name);
  return dtypes;
}

std::string line(const Device& device) {
  const DeviceInfo& info = device.info();
  std::string text = "[" + info.id + "] " + info.name;
  text += " · " + std::to_string(info.compute_units) +
          (info.kind == DeviceKind::cpu ? " cores" : " compute units");
  text += " · " + format_bytes(info.memory_total.bytes);
  if (std::string feature = headline_feature(info); !feature.empty()) text += " · " + feature;
  return text;
}

void run(bool all, bool json) {
  Registry& registry = Registry::instance();
  const std::vector<Device> devices = registry.devices();
  const std::vector<BackendStatus> backends = registry.backends();
  if (json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const BackendStatus& backend : backends) list.push_back(to_json(backend, devices));
    std::cout << nlohmann::ordered_json{{"schema", "hal.devices/1"}, {"backends", list}}.dump(
                     2, ' ', false, kReplaceBadUtf8)
              << "\n";
    return;
  }
  for (const Device& device : devices) std::cout << line(device) << "\n";
  if (devices.empty()) std::cerr << "hal: no devices are visible (check HAL_DEVICES)\n";
  if (!all) return;
  for (const BackendStatus& backend : backends)
    if (!backend.available)
      std::cout << "(" << backend.name << ": unavailable, " << backend.reason << ")\n";
}

}  // namespace

void add_devices_command(CLI::App& app) {
  auto* command = app.add_subcommand("devices", "List the compute devices hal can see");
  auto all = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  command->add_flag("--all", *all, "Also list backends that are not available, with the reason");
  command->add_flag("--json", *json, "Print JSON (schema hal.devices/1)");
  set_work(*command, [all, json] { run(*all, *json); });
}

}  // namespace hal::tool
