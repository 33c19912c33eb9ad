#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>

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

// Writes `parts` to a new file at `temporary` and flushes it to the disk (fsync), so that the
// rename never publishes a name whose data a crash could still lose. Returns "" or the reason.
std::string write_and_sync(const fs::path& temporary,
                           std::initializer_list<std::string_view> parts) {
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return std::strerror(errno);
  std::string failed;
  for (std::string_view part : parts) {
    while (!part.empty() && failed.empty()) {
      const ssize_t written = ::write(fd, part.data(), part.size());
      if (written < 0 && errno == EINTR) continue;
      if (written < 0)
        failed = std::strerror(errno);
      else
        part.remove_prefix(static_cast<size_t>(written));
    }
  }
  if (failed.empty() && ::fsync(fd) != 0) failed = std::string("fsync: ") + std::strerror(errno);
  if (::close(fd) != 0 && failed.empty()) failed = std::strerror(errno);
  return failed;
}

// Makes the rename itself durable. Best-effort: the file is whole under one name or the other
// whatever happens, and some file systems refuse fsync on a directory.
void sync_folder(const fs::path& path) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string write_file_atomically(const fs::path& path,
                                  std::initializer_list<std::string_view> parts,
                                  Abandoned abandoned) {
  static std::atomic<uint64_t> counter{0};
  const fs::path temporary = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                             std::to_string(counter.fetch_add(1));
  std::error_code error;
  if (const std::string failed = write_and_sync(temporary, parts); !failed.empty()) {
    fs::remove(temporary, error);
    return "cannot write " + temporary.string() + ": " + failed;
  }
  fs::rename(temporary, path, error);
  if (error) {
    const std::string reason = error.message();
    fs::remove(temporary, error);
    return "cannot rename " + temporary.string() + " to " + path.string() + ": " + reason;
  }
  sync_folder(path);
  if (abandoned == Abandoned::removed) remove_abandoned_temporaries(path);
  return "";
}

}  // namespace hal::detail
