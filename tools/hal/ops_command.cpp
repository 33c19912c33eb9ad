// `hal ops [--device ID] [--json]`: the op table as each device runs it — every op of ops.hpp
// with the input dtypes the device takes and who computes each (host kernels, portable kernels,
// a vendor library, a plugin's built-in ops; "in f32" where it converts first).
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "json_text.hpp"

namespace hal::tool {
namespace {

nlohmann::ordered_json device_ops_json(const Device& device) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const OpSupport& op : supported_ops(device)) {
    nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
    nlohmann::ordered_json kernels = nlohmann::ordered_json::object();
    for (size_t i = 0; i < op.dtypes.size(); ++i) {
      dtypes.push_back(to_string(op.dtypes[i]));
      kernels[std::string(to_string(op.dtypes[i]))] = op.kernels[i];
    }
    ops.push_back({{"name", op.name}, {"dtypes", dtypes}, {"kernels", kernels}});
  }
  return {{"id", device.id()}, {"name", device.info().name}, {"ops", ops}};
}

void print_device_ops(const Device& device) {
  std::cout << device.id() << " (" << device.info().name << ")\n";
  for (const OpSupport& op : supported_ops(device)) {
    std::cout << "  " << std::left << std::setw(12) << op.name;
    if (op.dtypes.empty()) std::cout << " -";
    for (size_t i = 0; i < op.dtypes.size(); ++i) {
      const bool converted = op.kernels[i].find(" in ") != std::string::npos;
      std::cout << " " << to_string(op.dtypes[i]) << (converted ? "*" : "");
    }
    if (!op.kernels.empty()) std::cout << "   (" << op.kernels.front() << ")";
    std::cout << "\n";
  }
}

}  // namespace

void add_ops_command(CLI::App& app) {
  auto* command =
      app.add_subcommand("ops", "List the ops each device runs, in which dtypes and by whom");
  auto id = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  command->add_option("--device", *id, "Only this device (e.g. cpu:0)");
  command->add_flag("--json", *json, "Print JSON (schema hal.ops/1)");
  set_work(*command, [id, json] {
    const std::vector<Device> chosen = id->empty() ? devices() : std::vector<Device>{device(*id)};
    if (*json) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const Device& device : chosen) list.push_back(device_ops_json(device));
      std::cout << nlohmann::ordered_json{{"schema", "hal.ops/1"}, {"devices", list}}.dump(
                       2, ' ', false, kReplaceBadUtf8)
                << "\n";
      return;
    }
    for (const Device& device : chosen) {
      print_device_ops(device);
      std::cout << "\n";
    }
    std::cout << "* computed in another dtype first (f16 and bf16 in f32, integer sums in i64); "
                 "--json names every kernel\n";
  });
}

}  // namespace hal::tool
