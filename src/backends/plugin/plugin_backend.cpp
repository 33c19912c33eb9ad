#include "backends/plugin/plugin_backend.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "backends/plugin/plugin_device.hpp"
#include "hal/log.hpp"

namespace hal::plugin {
namespace {

namespace fs = std::filesystem;

// "1", "1.2.3": numbers joined by single dots, as a library's version follows its ".so".
bool is_version(std::string_view text) {
  if (text.empty() || text.front() == '.' || text.back() == '.') return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '.' ? text[i - 1] == '.' : !std::isdigit(static_cast<unsigned char>(text[i])))
      return false;
  return true;
}

// A shared library's file name split after its ".so": "libx.so.1.10" is libx.so and {1, 10}.
struct LibraryName {
  std::string base;
  std::vector<std::string> version;
};

// The parts of a library's name, `*.so` or `*.so.` and a version; none for any other name, so
// that a copy put aside (libx.so.bak, libx.so.disabled) is not loaded.
std::optional<LibraryName> library_name(const std::string& name) {
  for (size_t at = name.find(".so", 1); at != std::string::npos; at = name.find(".so", at + 1)) {
    const size_t end = at + 3;
    if (end == name.size()) return LibraryName{name, {}};
    if (name[end] != '.' || !is_version(std::string_view(name).substr(end + 1))) continue;
    LibraryName parts{name.substr(0, end), {}};
    std::stringstream numbers(name.substr(end + 1));
    for (std::string number; std::getline(numbers, number, '.');) parts.version.push_back(number);
    return parts;
  }
  return std::nullopt;
}

bool looks_like_library(const fs::path& path) {
  return library_name(path.filename().string()).has_value();
}

// Decimal numbers by value (leading zeros aside), however many digits they have.
bool number_less(std::string_view a, std::string_view b) {
  a.remove_prefix(std::min(a.find_first_not_of('0'), a.size()));
  b.remove_prefix(std::min(b.find_first_not_of('0'), b.size()));
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// Libraries by name, a version's numbers by value (libx.so.1.9 before libx.so.1.10): the first
// of two that name the same backend is the one loaded.
bool library_before(const fs::path& a, const fs::path& b) {
  const std::string a_name = a.filename().string(), b_name = b.filename().string();
  const LibraryName x = library_name(a_name).value(), y = library_name(b_name).value();
  if (x.base != y.base) return x.base < y.base;
  const auto version_less = [](const LibraryName& p, const LibraryName& q) {
    return std::lexicographical_compare(p.version.begin(), p.version.end(), q.version.begin(),
                                        q.version.end(), number_less);
  };
  if (version_less(x, y) || version_less(y, x)) return version_less(x, y);
  return a_name < b_name;  // libx.so.01 and libx.so.1: still one order
}

// Why `path` is no candidate for dlopen, empty when it is one: only regular files (links
// followed) are, since dlopen of a FIFO, say, blocks for ever, and only whole ELF libraries for
// this machine, since dlopen of one cut short kills the process with SIGBUS.
std::string why_skipped(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error == std::errc::too_many_symbolic_link_levels) return "a symbolic link loop";
  switch (status.type()) {
    case fs::file_type::regular:
      return elf_defect(path);
    case fs::file_type::not_found:
      return fs::is_symlink(fs::symlink_status(path, error))
                 ? "a link to nothing (a broken symbolic link)"
                 : "no such file";
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
    std::vector<fs::path> found;
    for (const auto& file : fs::directory_iterator(entry, error))
      if (looks_like_library(file.path())) found.push_back(file.path());
    std::sort(found.begin(), found.end(), library_before);
    for (const fs::path& file : found) out.push_back(file.string());
  } else if (!entry.has_parent_path()) {
    // dlopen would search the library path for a bare name; the file checked is this one.
    out.push_back((fs::path(".") / entry).string());
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

// One file to examine, and the candidate before it that is the same file by another name.
struct Candidate {
  std::string path;
  std::string same_as;  // empty unless this is a duplicate
};

// A file as the system knows it: hard links (and bind mounts) share the device and inode.
struct FileId {
  dev_t device;
  ino_t inode;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> file_id(const std::string& path) {
  struct stat file {};
  if (::stat(path.c_str(), &file) != 0) return std::nullopt;
  return FileId{file.st_dev, file.st_ino};
}

// `path` with its links resolved; one that cannot be (a link loop) is kept as written, made
// absolute, so that each such path stays a candidate of its own.
fs::path resolved(const std::string& path) {
  std::error_code error;
  const fs::path canonical = fs::weakly_canonical(path, error);
  if (!error) return canonical;
  const fs::path absolute = fs::absolute(path, error);
  return (error ? fs::path(path) : absolute).lexically_normal();
}

// Each file once. A path that resolves to one seen (named twice, or through a link) is dropped;
// another name of a file seen (a hard link) is kept as a duplicate, not loaded, since dlopen
// would return the library already loaded and hal_plugin_init would run on it twice.
std::vector<Candidate> without_repeats(const std::vector<std::string>& paths) {
  std::vector<Candidate> out;
  std::vector<fs::path> seen_paths;
  std::vector<std::pair<FileId, std::string>> seen_files;
  for (const std::string& path : paths) {
    const fs::path canonical = resolved(path);
    if (std::find(seen_paths.begin(), seen_paths.end(), canonical) != seen_paths.end()) continue;
    seen_paths.push_back(canonical);
    Candidate candidate{path, ""};
    if (const std::optional<FileId> id = file_id(path)) {
      const auto first = std::find_if(seen_files.begin(), seen_files.end(),
                                      [&](const auto& seen) { return seen.first == *id; });
      if (first != seen_files.end())
        candidate.same_as = first->second;
      else
        seen_files.emplace_back(*id, path);
    }
    out.push_back(std::move(candidate));
  }
  return out;
}

std::vector<Candidate> candidate_paths() {
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
  return without_repeats(out);
}

std::string why_skipped(const Candidate& candidate) {
  if (!candidate.same_as.empty())
    return "a duplicate of " + candidate.same_as +
           ": the same file (device and inode) by another name, examined once";
  return why_skipped(candidate.path);
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
    for (const Candidate& candidate : candidate_paths()) {
      const std::string& path = candidate.path;
      PluginInfo info;
      info.path = path;
      if (std::string why = why_skipped(candidate); !why.empty()) {
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
        // hal's own names stay reserved even where that backend is not compiled in: code
        // outside the backends reads them (a "cuda" tensor's memory is CUDA's).
        if (std::find(taken.begin(), taken.end(), info.name) != taken.end())
          throw Error(ErrorCode::InvalidState, "plugin " + path + " names its backend '" +
                                                   info.name +
                                                   "', a name hal keeps for a backend of its own");
        if (std::find(names.begin(), names.end(), info.name) != names.end())
          throw Error(ErrorCode::InvalidState,
                      "plugin " + path + " names its backend '" + info.name +
                          "', which an earlier plugin in the search order took");
        names.push_back(info.name);
        discovery.backends.push_back(std::make_shared<PluginBackend>(std::move(library)));
        info.loaded = true;
      } catch (const Error& error) {
        info.reason = error.what();
        log(LogLevel::warn, std::string("plugin not loaded: ") + error.what());
      } catch (const std::exception& error) {
        // A C++ plugin's exception through the C table: its bug, never hal's end.
        info.reason = "plugin " + path + " threw while loading: " + error.what();
        log(LogLevel::warn, "plugin not loaded: " + info.reason);
      } catch (...) {
        info.reason = "plugin " + path + " threw something not a std::exception while loading";
        log(LogLevel::warn, "plugin not loaded: " + info.reason);
      }
      discovery.candidates.push_back(std::move(info));
    }
  });
  return discovery;
}

}  // namespace hal::plugin
