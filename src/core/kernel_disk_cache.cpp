#include "core/kernel_disk_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/atomic_file.hpp"
#include "core/hash.hpp"
#include "hal/log.hpp"
#include "hal/units.hpp"

namespace hal::detail {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'H', 'A', 'L', 'K', 'C', '0', '0', '1'};

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

void put_u64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

// Reads a little-endian u64 at `at`, advancing it; false when the data ends first.
bool get_u64(const std::string& data, size_t& at, uint64_t& value) {
  if (data.size() - at < 8) return false;
  value = 0;
  for (int i = 0; i < 8; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(data[at + i])) << (8 * i);
  at += 8;
  return true;
}

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

}  // namespace

std::string cache_root_text() {
  if (const char* dir = env("HAL_CACHE_DIR")) return dir;
  // The XDG Base Directory spec: a relative XDG_CACHE_HOME is invalid and is ignored (it would
  // put the cache under whatever the current directory is).
  if (const char* xdg = env("XDG_CACHE_HOME"); xdg && xdg[0] == '/')
    return std::string(xdg) + "/hal";
  if (const char* home = env("HOME")) return std::string(home) + "/.cache/hal";
  return {};
}

fs::path cache_root() { return cache_root_text(); }

KernelCacheCap kernel_cache_cap_setting() {
  constexpr uint64_t kDefault = uint64_t{512} << 20;
  const char* text = env("HAL_KERNEL_CACHE_MAX_BYTES");
  if (!text) return {kDefault, {}};
  const Parsed<uint64_t> parsed = parse_size("HAL_KERNEL_CACHE_MAX_BYTES", text, 0, UINT64_MAX);
  if (!parsed.value) return {kDefault, parsed.error + "; the cap stays 512 MiB"};
  return {*parsed.value, {}};
}

uint64_t kernel_cache_cap() {
  const KernelCacheCap cap = kernel_cache_cap_setting();
  if (!cap.problem.empty()) log(LogLevel::warn, cap.problem);
  return cap.bytes;
}

std::string disk_cache_refusal(std::string_view code, std::string_view flags) {
  // Options that read other files: -I<dir>, -I <dir>, and the compilers' other -i options
  // (clang's -isystem, -iquote, -idirafter, -include, -imacros; NVRTC's --include-path,
  // --pre-include).
  for (size_t at = 0; at < flags.size();) {
    const size_t start = flags.find_first_not_of(" \t\n", at);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(flags.find_first_of(" \t\n", start), flags.size());
    const std::string_view flag = flags.substr(start, end - start);
    if (flag.starts_with("-I") || flag.starts_with("-i") || flag.starts_with("--include-path") ||
        flag.starts_with("--pre-include"))
      return "its options read other files (" + std::string(flag) +
             "), whose contents the cache's key cannot hold";
    at = end;
  }
  // A line "# include ..." (a directive inside a comment counts too: it only costs a compile).
  for (size_t line = 0; line < code.size();) {
    size_t at = code.find_first_not_of(" \t", line);
    if (at != std::string_view::npos && code[at] == '#') {
      at = code.find_first_not_of(" \t", at + 1);
      if (at != std::string_view::npos && code.substr(at).starts_with("include"))
        return "its source has an #include directive, and the cache's key cannot hold the "
               "contents of the files it reads";
    }
    const size_t next = code.find('\n', line);
    if (next == std::string_view::npos) break;
    line = next + 1;
  }
  return {};
}

bool may_use_disk_cache(bool wanted, std::string_view code, std::string_view flags,
                        const std::string& where) {
  if (!wanted) return false;
  const std::string refusal = disk_cache_refusal(code, flags);
  if (refusal.empty()) return true;
  log(LogLevel::debug, where + ": not kept in the disk cache: " + refusal);
  return false;
}

std::vector<CacheFile> cache_files(const fs::path& root) {
  std::vector<CacheFile> out;
  std::error_code error;
  auto collect = [&](const fs::path& directory, const std::string& kind, const char* extension) {
    for (const auto& item : fs::directory_iterator(directory, error)) {
      if (!item.is_regular_file(error)) continue;
      // A store writes "<entry><extension>.tmp..." and renames it: one left by a process that
      // died counts too, as "unfinished".
      const std::string name = item.path().filename().string();
      const bool unfinished = name.find(std::string(extension) + ".tmp") != std::string::npos;
      if (!unfinished && item.path().extension() != extension) continue;
      CacheFile file{item.path(), unfinished ? "unfinished" : kind, item.file_size(error),
                     item.last_write_time(error)};
      if (!error) out.push_back(std::move(file));
    }
  };
  for (const auto& backend : fs::directory_iterator(root / "kernels", error))
    if (backend.is_directory(error))
      collect(backend.path(), "kernels/" + backend.path().filename().string(), ".bin");
  collect(root / "tuning", "tuning", ".json");
  collect(root / "tuning", "tuning lock", ".lock");
  collect(root / "calibration", "calibration", ".json");
  std::sort(out.begin(), out.end(),
            [](const CacheFile& a, const CacheFile& b) { return a.last_used < b.last_used; });
  return out;
}

size_t prune_kernel_cache(const fs::path& root, uint64_t cap) {
  std::vector<CacheFile> files = cache_files(root);
  size_t removed = 0;
  std::error_code error;
  // Unfinished files abandoned (write_file_atomically's rule) belong to no store still writing.
  const auto stale = fs::file_time_type::clock::now() - kAbandonedAfter;
  std::erase_if(files, [&](const CacheFile& f) {
    if (f.kind != "unfinished") return !f.kind.starts_with("kernels/");
    if (f.last_used < stale && fs::remove(f.path, error)) ++removed;
    return true;
  });
  uint64_t total = 0;
  for (const CacheFile& f : files) total += f.bytes;
  for (const CacheFile& f : files) {  // least recently used first
    if (total <= cap) break;
    if (fs::remove(f.path, error)) ++removed;
    total -= f.bytes;
  }
  return removed;
}

namespace {

// Whether no process holds the tuning lock at `path` now. Removing a held lock would let the
// next tune lock a new file while the holder still merges under the old one.
bool lock_is_free(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return true;  // gone already, or unreadable: removing it is all that is left
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);  // drops the lock taken
  return free;
}

}  // namespace

size_t clear_cache(const fs::path& root) {
  size_t removed = 0;
  std::error_code error;
  for (const CacheFile& f : cache_files(root)) {
    if (f.kind == "tuning lock" && !lock_is_free(f.path)) continue;
    if (fs::remove(f.path, error)) ++removed;
  }
  return removed;
}

KernelDiskCache::KernelDiskCache(std::string backend)
    : KernelDiskCache(std::move(backend), cache_root()) {}

KernelDiskCache::KernelDiskCache(std::string backend, fs::path root, uint64_t cap)
    : backend_(std::move(backend)), root_(std::move(root)), cap_(cap) {
  if (!root_.empty()) directory_ = root_ / "kernels" / backend_;
}

fs::path KernelDiskCache::entry_path(std::string_view key) const {
  return directory_ / (hex64(fnv1a_64(key)) + ".bin");
}

std::optional<KernelDiskCache::Bytes> KernelDiskCache::load(std::string_view key) const {
  if (!enabled()) return std::nullopt;
  const fs::path path = entry_path(key);
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;  // a plain miss
  const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());

  auto reject = [&](const char* why) -> std::optional<Bytes> {
    log(LogLevel::warn, "kernel cache (" + backend_ + "): " + path.string() + " " + why +
                            "; removed, the kernel is rebuilt");
    std::error_code ignored;
    fs::remove(path, ignored);
    return std::nullopt;
  };
  size_t at = sizeof kMagic;
  uint64_t key_size = 0, payload_size = 0, checksum = 0;
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    return reject("is not a hal kernel cache entry");
  if (!get_u64(data, at, key_size) || data.size() - at < key_size) return reject("is truncated");
  if (std::string_view(data).substr(at, key_size) != key)
    return reject("was made for another key");  // a hash collision, or a rewritten file
  at += key_size;
  if (!get_u64(data, at, payload_size) || !get_u64(data, at, checksum) ||
      data.size() - at != payload_size)
    return reject("is truncated or has trailing bytes");
  Bytes payload(data.begin() + static_cast<std::ptrdiff_t>(at), data.end());
  if (fnv1a_64(payload) != checksum) return reject("fails its checksum");
  std::error_code ignored;  // used now: the last to be pruned
  fs::last_write_time(path, fs::file_time_type::clock::now(), ignored);
  return payload;
}

void KernelDiskCache::store(std::string_view key, std::span<const unsigned char> payload) const {
  if (!enabled()) return;
  const fs::path path = entry_path(key);
  std::string header(kMagic, sizeof kMagic);
  put_u64(header, key.size());
  header += key;
  put_u64(header, payload.size());
  put_u64(header, fnv1a_64(payload));

  std::error_code error;
  fs::create_directories(directory_, error);
  // The pruner below sweeps every unfinished file of the cache, this entry's among them.
  if (const std::string failed = write_file_atomically(
          path,
          {header, std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size())},
          Abandoned::left_to_pruner);
      !failed.empty()) {
    log(LogLevel::warn, "kernel cache (" + backend_ + "): " + failed);
    return;
  }
  if (const size_t removed = prune_kernel_cache(root_, cap_); removed > 0)
    log(LogLevel::info, "kernel cache: removed " + std::to_string(removed) +
                            " least recently used entries to stay under " + std::to_string(cap_) +
                            " bytes");
}

void KernelDiskCache::remove(std::string_view key) const {
  if (!enabled()) return;
  std::error_code ignored;
  fs::remove(entry_path(key), ignored);
}

}  // namespace hal::detail
