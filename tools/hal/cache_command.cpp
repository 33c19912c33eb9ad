// `hal cache [--clear] [--json]`: hal's on-disk cache (compiled kernels, tuning tables and their
// locks, calibrations): where it is, its size against the cap, and its entries; --clear empties
// it.
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "hal/cache.hpp"
#include "hal/units.hpp"
#include "json_text.hpp"

namespace hal::tool {
namespace {

nlohmann::ordered_json to_json(const CacheContents& c, size_t cleared, bool clear) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const CacheFileInfo& f : c.files)
    files.push_back(
        {{"path", f.path}, {"kind", f.kind}, {"bytes", f.bytes}, {"idle_seconds", f.idle_seconds}});
  nlohmann::ordered_json out{{"schema", "hal.cache/1"},
                             {"root", c.root},
                             {"kernel_cap_bytes", c.kernel_cap_bytes},
                             {"kernel_bytes", c.kernel_bytes},
                             {"tuning_bytes", c.tuning_bytes},
                             {"calibration_bytes", c.calibration_bytes},
                             {"warnings", c.warnings},
                             {"entries", files}};
  if (clear) out["cleared"] = cleared;
  return out;
}

void print_text(const CacheContents& c, size_t cleared, bool clear) {
  for (const std::string& warning : c.warnings) std::cerr << "warning: " << warning << "\n";
  if (clear) std::cout << "removed " << cleared << " files\n";
  if (c.root.empty()) {
    std::cout << "no cache directory (set HAL_CACHE_DIR, XDG_CACHE_HOME or HOME)\n";
    return;
  }
  std::cout << "cache " << c.root << ": kernels " << format_bytes(c.kernel_bytes) << " of "
            << format_bytes(c.kernel_cap_bytes) << " (HAL_KERNEL_CACHE_MAX_BYTES), tuning "
            << format_bytes(c.tuning_bytes) << ", calibration " << format_bytes(c.calibration_bytes)
            << ", " << c.files.size() << " entries\n";
  for (const CacheFileInfo& f : c.files)
    std::cout << "  " << std::left << std::setw(15) << f.kind << std::right << std::setw(10)
              << format_bytes(f.bytes) << "  idle " << format_seconds(f.idle_seconds) << "  "
              << f.path << "\n";
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "cache", "Show hal's on-disk kernel, tuning and calibration cache, or clear it");
  auto clear = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  command->add_flag("--clear", *clear, "Remove every cached kernel, tuning table and calibration");
  command->add_flag("--json", *json, "Print JSON (schema hal.cache/1)");
  set_work(*command, [clear, json] {
    const size_t cleared = *clear ? clear_cache() : 0;
    const CacheContents contents = cache_contents();
    if (*json)
      std::cout << to_json(contents, cleared, *clear).dump(2, ' ', false, kReplaceBadUtf8) << "\n";
    else
      print_text(contents, cleared, *clear);
  });
}

}  // namespace hal::tool
