// The on-disk cache of compiled kernels, shared by the backends that compile at run time.
//
// An entry is one file, <root>/kernels/<backend>/<hash of key>.bin, holding a magic number, the
// whole key, the payload's size and checksum, then the payload (a program binary, a cubin).
// The key names everything that changes the binary: source, options, device, driver version.
// A load checks all of it; an entry that is truncated, corrupt or made for another key is
// reported, removed and treated as a miss, never trusted. Writes go to a temporary file that
// is renamed into place, so readers in other processes never see half an entry.
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

class KernelDiskCache {
 public:
  using Bytes = std::vector<unsigned char>;

  // Entries of `backend` ("opencl", "cuda") under cache_root(), read when constructed.
  explicit KernelDiskCache(std::string backend);
  // Under an explicit root (tests).
  KernelDiskCache(std::string backend, std::filesystem::path root);

  bool enabled() const { return !directory_.empty(); }
  const std::filesystem::path& directory() const { return directory_; }
  std::filesystem::path entry_path(std::string_view key) const;

  // The payload stored for `key`, or nothing (no entry, or one that failed its checks and
  // was removed).
  std::optional<Bytes> load(std::string_view key) const;
  // Best effort: a cache that cannot be written is logged, never an error for the caller.
  void store(std::string_view key, std::span<const unsigned char> payload) const;
  // Drops the entry for `key`: its payload loaded but the driver refused it.
  void remove(std::string_view key) const;

 private:
  std::string backend_;
  std::filesystem::path directory_;
};

}  // namespace hal::detail
