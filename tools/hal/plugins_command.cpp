// `hal plugins [--json]`: every plugin candidate that hal examined, with its path, ABI version
// and whether it loaded or why not.
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "hal/plugin_discovery.hpp"
#include "json_text.hpp"

namespace hal::tool {

void add_plugins_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "plugins",
      "List the plugins found (HAL_PLUGIN_PATH, then hal's plugin folder) and their status");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print JSON (schema hal.plugins/1)");
  set_work(*command, [json] {
    const std::vector<PluginInfo> found = plugins();
    if (*json) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const PluginInfo& plugin : found)
        list.push_back({{"path", plugin.path},
                        {"loaded", plugin.loaded},
                        {"name", plugin.name},
                        {"abi_version", plugin.abi_version},
                        {"version", plugin.version},
                        {"reason", plugin.reason}});
      std::cout << nlohmann::ordered_json{{"schema", "hal.plugins/1"}, {"plugins", list}}.dump(
                       2, ' ', false, kReplaceBadUtf8)
                << "\n";
      return;
    }
    if (found.empty()) std::cout << "no plugins found (HAL_PLUGIN_PATH is unset or empty)\n";
    for (const PluginInfo& plugin : found) {
      if (plugin.loaded)
        std::cout << "[" << plugin.name << "] " << plugin.path << " · ABI " << plugin.abi_version
                  << " · version " << plugin.version << "\n";
      else
        std::cout << "(not loaded) " << plugin.path << ": " << plugin.reason << "\n";
    }
  });
}

}  // namespace hal::tool
