// `hal version [--json]`: the library's version and the backends built into it.
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "hal/version.hpp"
#include "json_text.hpp"

namespace hal::tool {

void print_version(bool json) {
  if (json) {
    std::cout << nlohmann::ordered_json{{"schema", "hal.version/1"},
                                        {"version", std::string(version())},
                                        {"backends", compiled_backends()}}
                     .dump(2, ' ', false, kReplaceBadUtf8)
              << "\n";
    return;
  }
  std::cout << "hal " << version() << "\nbackends:";
  for (const std::string& name : compiled_backends()) std::cout << " " << name;
  std::cout << "\n";
}

void add_version_command(CLI::App& app) {
  auto* command = app.add_subcommand("version", "Print hal's version and compiled-in backends");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print JSON (schema hal.version/1)");
  set_work(*command, [json] { print_version(*json); });
}

}  // namespace hal::tool
