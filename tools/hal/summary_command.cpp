// `hal summary [--json]`: what this machine has, across backends and vendors.
#include <iostream>

#include "choice_json.hpp"
#include "commands.hpp"
#include "hal/units.hpp"
#include "json_text.hpp"

namespace hal::tool {
namespace {

std::string counts(const std::map<std::string, uint32_t>& by) {
  std::string text;
  for (const auto& [name, count] : by)
    text += (text.empty() ? "" : ", ") + name + " " + std::to_string(count);
  return text.empty() ? "none" : text;
}

std::string joined(const std::vector<std::string>& words, size_t most) {
  std::string text;
  for (size_t i = 0; i < words.size() && i < most; ++i) text += (i ? " " : "") + words[i];
  if (words.size() > most) text += " (+" + std::to_string(words.size() - most) + ")";
  return text;
}

void print(const Summary& s) {
  std::cout << s.devices.size() << " device" << (s.devices.size() == 1 ? "" : "s")
            << " · backends: " << counts(s.by_backend) << " · vendors: " << counts(s.by_vendor)
            << " · kinds: " << counts(s.by_kind) << "\n";
  std::vector<std::string> cannot_tell;
  for (size_t i = 0; i < s.devices.size(); ++i)
    if (s.memory_free[i].provenance == Provenance::unknown)
      cannot_tell.push_back(s.devices[i].id());
  std::cout << "memory: " << format_bytes(s.memory_total_bytes) << " in all, ";
  if (cannot_tell.size() == s.devices.size())
    std::cout << "free unknown\n";
  else if (cannot_tell.empty())
    std::cout << format_bytes(s.memory_free_bytes) << " free\n";
  else  // the sum leaves out what these devices have free
    std::cout << format_bytes(s.memory_free_bytes) << " free (free unknown on "
              << joined(cannot_tell, 4) << ")\n";
  for (size_t i = 0; i < s.devices.size(); ++i) {
    const DeviceInfo& info = s.devices[i].info();
    std::vector<std::string> dtypes;
    for (DType dtype : info.dtypes) dtypes.emplace_back(to_string(dtype));
    const MemoryFigure& free = s.memory_free[i];
    std::cout << "[" << info.id << "] " << info.name << " · " << info.vendor << " · "
              << to_string(info.kind) << " · "
              << (free.provenance == Provenance::unknown
                      ? format_bytes(info.memory_total.bytes) + ", free unknown"
                      : format_memory(free) + " free of " + format_bytes(info.memory_total.bytes))
              << "\n";
    std::cout << "    dtypes: " << joined(dtypes, 16) << "\n";
    std::cout << "    features: " << joined(info.features, 12) << "\n";
  }
  for (const BackendStatus& backend : s.backends)
    if (!backend.available)
      std::cout << "(" << backend.name << ": unavailable, " << backend.reason << ")\n";
}

}  // namespace

void add_summary_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "summary", "Summarise every device: counts by backend, vendor and kind; memory; dtypes");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print JSON (schema hal.summary/1)");
  set_work(*command, [json] {
    const Summary s = summary();
    if (!*json) return print(s);
    nlohmann::ordered_json out{{"schema", "hal.summary/1"}};
    out.update(to_json(s));
    std::cout << out.dump(2, ' ', false, kReplaceBadUtf8) << "\n";
  });
}

}  // namespace hal::tool
