#include "backends/plugin/plugin_backend.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "backends/plugin/plugin_device.hpp"
#include "hal/log.hpp"

namespace hal::plugin {
namespace {

namespace fs = std::filesystem;

bool looks_like_library(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.size() > 3 && (name.ends_with(".so") || name.find(".so.") != std::string::npos);
}

// Why `path` is no candidate for dlopen, empty when it is one: only regular files (links
// followed) are, since dlopen of a FIFO, say, blocks for ever.
std::string why_skipped(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  switch (status.type()) {
    case fs::file_type::regular:
      return "";
    case fs::file_type::not_found:
      return fs::is_symlink(fs::symlink_status(path, error)) ? "a link to nothing" : "no such file";
    case fs::file_type::directory:
      return "a directory, not a file";
    case fs::file_type::fifo:
      return "a FIFO, not a regular file";
    case fs::file_type::socket:
      return "a socket, not a regular file";
    case fs::file_type::block:
    case fs::file_type::character:
      return "a device file, not a regular file";
    default:
      return "not a regular file" + (error ? " (" + error.message() + ")" : std::string());
  }
}

// The shared libraries in `entry`: the file itself, or a directory's, sorted by name.
void add_candidates(const fs::path& entry, std::vector<std::string>& out) {
  std::error_code error;
  if (fs::is_directory(entry, error)) {
    std::vector<std::string> found;
    for (const auto& file : fs::directory_iterator(entry, error))
      if (looks_like_library(file.path())) found.push_back(file.path().string());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  } else {
    out.push_back(entry.string());  // a file, or a path that is none: plugins() says so
  }
}

// hal/plugins next to the libhal this code is in (the build tree's lib/ or the install's).
fs::path bundled_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&bundled_folder), &info) == 0 || !info.dli_fname) return {};
  return fs::path(info.dli_fname).parent_path() / "hal" / "plugins";
}

std::vector<std::string> candidate_paths() {
  std::vector<std::string> out;
  if (const char* path = std::getenv("HAL_PLUGIN_PATH")) {
    std::stringstream entries(path);
    std::string entry;
    while (std::getline(entries, entry, ':'))
      if (!entry.empty()) add_candidates(entry, out);
  }
  const fs::path bundled = bundled_folder();
  std::error_code error;
  if (!bundled.empty() && fs::is_directory(bundled, error)) add_candidates(bundled, out);
  // The same file twice (named by both) is examined once.
  std::vector<std::string> unique;
  std::vector<fs::path> seen;
  for (const std::string& candidate : out) {
    const fs::path canonical = fs::weakly_canonical(candidate, error);
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
    seen.push_back(canonical);
    unique.push_back(candidate);
  }
  return unique;
}

}  // namespace

BackendProbe PluginBackend::probe() {
  BackendProbe probe;
  uint32_t count = 0;
  library_->check(library_->api->device_count(&count), name() + ": device count");
  // A count past any machine's (a plugin's garbage) would be probed a device at a time for
  // hours under the registry's lock.
  constexpr uint32_t kMostDevices = uint32_t{1} << 20;
  if (count > kMostDevices)
    throw Error(ErrorCode::BackendUnavailable,
                "plugin " + library_->path + " (" + name() + ") reports " + std::to_string(count) +
                    " devices, more than hal takes (" + std::to_string(kMostDevices) + ")");
  for (uint32_t i = 0; i < count; ++i) {
    // A device lost while hal reads its facts fails alone: it is listed as lost, under its own
    // id, and the others stay usable.
    try {
      hal_plugin_device handle = nullptr;
      library_->check(library_->api->device_get(i, &handle),
                      name() + ":" + std::to_string(i) + ": get the device");
      if (!handle)
        throw Error(ErrorCode::BackendUnavailable,
                    "plugin " + library_->path + ": " + name() + ":" + std::to_string(i) +
                        ": device_get returned success and no device");
      probe.devices.push_back(std::make_shared<PluginDevice>(library_, i, handle));
    } catch (const Error& error) {
      if (error.code() != ErrorCode::DeviceLost) throw;
      log(LogLevel::warn, error.what());
      probe.devices.push_back(std::make_shared<PluginDevice>(library_, i, error));
    }
  }
  probe.available = true;
  return probe;
}

const Discovery& discover_plugins(const std::vector<std::string>& taken) {
  static Discovery discovery;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::vector<std::string> names = taken;
    for (const std::string& path : candidate_paths()) {
      PluginInfo info;
      info.path = path;
      if (std::string why = why_skipped(path); !why.empty()) {
        info.reason = "skipped: " + why;
        log(LogLevel::warn, "plugin " + path + " " + info.reason);
        discovery.candidates.push_back(std::move(info));
        continue;
      }
      try {
        auto library = std::make_shared<PluginLibrary>(load_plugin(path));
        info.name = library->name();
        info.abi_version = library->abi_version();
        info.version = library->api->version ? library->api->version : "";
        if (std::find(names.begin(), names.end(), info.name) != names.end())
          throw Error(ErrorCode::InvalidState, "plugin " + path + " names its backend '" +
                                                   info.name + "', which is already taken");
        names.push_back(info.name);
        discovery.backends.push_back(std::make_shared<PluginBackend>(std::move(library)));
        info.loaded = true;
      } catch (const Error& error) {
        info.reason = error.what();
        log(LogLevel::warn, std::string("plugin not loaded: ") + error.what());
      }
      discovery.candidates.push_back(std::move(info));
    }
  });
  return discovery;
}

}  // namespace hal::plugin
