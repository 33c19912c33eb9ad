// The on-disk cache of compiled kernels, shared by the backends that compile at run time.
//
// An entry is one file, <root>/kernels/<backend>/<hash of key>.bin, holding a magic number, the
// whole key, the payload's size and checksum, then the payload (a program binary, a cubin).
// The key names everything that changes the binary: source, options, device, driver version;
// the contents of #include'd files it cannot name, so such kernels are never stored
// (disk_cache_refusal).
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

// HAL_CACHE_DIR, else $XDG_CACHE_HOME/hal (only when absolute, as the XDG spec asks), else
// $HOME/.cache/hal; empty when none is set.
std::filesystem::path cache_root();
// The same as text, without parsing a path (for lookups on hot paths).
std::string cache_root_text();

// HAL_KERNEL_CACHE_MAX_BYTES when set (a size: "536870912", "1G", "512MiB"), else 512 MiB;
// `problem` says why a value that is set was not taken ("" when it was, or none is set).
struct KernelCacheCap {
  uint64_t bytes = 0;
  std::string problem;
};
KernelCacheCap kernel_cache_cap_setting();
// The cap alone; a value that is set but unusable is logged (warn) and gives 512 MiB.
uint64_t kernel_cache_cap();

// Why a kernel built from `code` with the compiler options `flags` must not be kept in the
// disk cache, or "" when it may be. The key holds the source and the options, not the files
// an #include reads, so a changed header would get the old binary: a source with an #include
// directive, or options that name include paths or files (-I, -isystem, -include,
// --include-path, ...), is compiled every time a process first asks for it.
std::string disk_cache_refusal(std::string_view code, std::string_view flags);
// Whether a backend's compile of `code` may use the disk cache: asked for (`wanted`, the
// options' disk_cache) and not refused above; a refusal is logged at debug, naming `where`.
bool may_use_disk_cache(bool wanted, std::string_view code, std::string_view flags,
                        const std::string& where);

// One file of the cache under a root: a kernel binary, a tuning table or its lock, a device's
// calibration.
struct CacheFile {
  std::filesystem::path path;
  // "kernels/opencl", "kernels/cuda", "tuning", "tuning lock" (tuning/<uuid>.json.lock),
  // "calibration", "unfinished" (a died store's temporary)
  std::string kind;
  uint64_t bytes = 0;
  std::filesystem::file_time_type last_used;
};
// Every file of the cache under `root`, least recently used first.
std::vector<CacheFile> cache_files(const std::filesystem::path& root);
// Removes the least recently used kernel entries under `root` until they take at most `cap`
// bytes, and unfinished files abandoned an hour or more; returns how many it removed. Tuning
// tables, their locks and calibrations are never pruned.
size_t prune_kernel_cache(const std::filesystem::path& root, uint64_t cap);
// Removes every file of the cache under `root` (a tuning lock only when no process holds it);
// returns how many it removed.
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
