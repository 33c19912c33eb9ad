#include "core/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>

namespace hal::detail {
namespace {

namespace fs = std::filesystem;

// Temporaries of `path` left by writers that died before their rename.
void remove_abandoned_temporaries(const fs::path& path) {
  const std::string prefix = path.filename().string() + ".tmp.";
  const auto stale = fs::file_time_type::clock::now() - kAbandonedAfter;
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().rfind(prefix, 0) != 0) continue;
    std::error_code ignored;
    const auto written = fs::last_write_time(it->path(), ignored);
    if (!ignored && written < stale) fs::remove(it->path(), ignored);
  }
}

}  // namespace

std::string write_file_atomically(const fs::path& path,
                                  std::initializer_list<std::string_view> parts,
                                  Abandoned abandoned) {
  static std::atomic<uint64_t> counter{0};
  const fs::path temporary = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                             std::to_string(counter.fetch_add(1));
  std::error_code error;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    for (std::string_view part : parts)
      out.write(part.data(), static_cast<std::streamsize>(part.size()));
    out.close();
    if (!out) {
      fs::remove(temporary, error);
      return "cannot write " + temporary.string();
    }
  }
  fs::rename(temporary, path, error);
  if (error) {
    const std::string reason = error.message();
    fs::remove(temporary, error);
    return "cannot rename " + temporary.string() + " to " + path.string() + ": " + reason;
  }
  if (abandoned == Abandoned::removed) remove_abandoned_temporaries(path);
  return "";
}

}  // namespace hal::detail
