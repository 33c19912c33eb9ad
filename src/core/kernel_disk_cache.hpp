// The on-disk cache of compiled kernels, shared by the backends that compile at run time.
//
// An entry is one file, <root>/kernels/<backend>/<hash of key>.bin, holding a magic number, the
// whole key, the payload's size and checksum, then the payload (a program binary, a cubin).
// The key names everything that changes the binary: source, options, device, driver version.
// A load checks all of it; an entry that is truncated, corrupt or made for another key is
// reported, removed and treated as a miss, never trusted. Writes go to a temporary file that
// is renamed into place, so readers in other processes never see half an entry.
//
// The entries of all backends together are capped (HAL_KERNEL_CACHE_MAX_BYTES, default 512 MiB):
// a load marks its entry used (its modification time), and a store that takes the total over
// the cap removes the least recently used entries until it fits again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hal::detail {

// HAL_CACHE_DIR, else $XDG_CACHE_HOME/hal, else $HOME/.cache/hal; empty when none is set.
std::filesystem::path cache_root();
// The same as text, without parsing a path (for lookups on hot paths).
std::string cache_root_text();

// HAL_KERNEL_CACHE_MAX_BYTES when set (a whole number of bytes), else 512 MiB.
uint64_t kernel_cache_cap();

// One file of the cache under a root: a kernel binary or a tuning table.
struct CacheFile {
  std::filesystem::path path;
  std::string kind;  // "kernels/opencl", "kernels/cuda", "tuning", "unfinished" (a died store's)
  uint64_t bytes = 0;
  std::filesystem::file_time_type last_used;
};
// Every kernel entry and tuning table under `root`, least recently used first.
std::vector<CacheFile> cache_files(const std::filesystem::path& root);
// Removes the least recently used kernel entries under `root` until they take at most `cap`
// bytes; returns how many it removed.
size_t prune_kernel_cache(const std::filesystem::path& root, uint64_t cap);
// Removes every kernel entry and tuning table under `root`; returns how many files it removed.
size_t clear_cache(const std::filesystem::path& root);

class KernelDiskCache {
 public:
  using Bytes = std::vector<unsigned char>;

  // Entries of `backend` ("opencl", "cuda") under cache_root(), read when constructed.
  explicit KernelDiskCache(std::string backend);
  // Under an explicit root and cap (tests).
  KernelDiskCache(std::string backend, std::filesystem::path root,
                  uint64_t cap = kernel_cache_cap());

  bool enabled() const { return !directory_.empty(); }
  const std::filesystem::path& directory() const { return directory_; }
  std::filesystem::path entry_path(std::string_view key) const;

  // The payload stored for `key`, or nothing (no entry, or one that failed its checks and
  // was removed). A hit marks the entry used now.
  std::optional<Bytes> load(std::string_view key) const;
  // Best effort: a cache that cannot be written is logged, never an error for the caller.
  // Prunes the cache to its cap after writing.
  void store(std::string_view key, std::span<const unsigned char> payload) const;
  // Drops the entry for `key`: its payload loaded but the driver refused it.
  void remove(std::string_view key) const;

 private:
  std::string backend_;
  std::filesystem::path root_, directory_;
  uint64_t cap_ = 0;
};

}  // namespace hal::detail
