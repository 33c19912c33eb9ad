// hal's on-disk cache (`hal cache`): compiled kernels per backend, capped in size with the least
// recently used entries removed first (HAL_KERNEL_CACHE_MAX_BYTES), the tuning tables of
// `hal tune` (and their lock files), and the devices' calibrations (`hal calibrate`). It lives
// under HAL_CACHE_DIR, else $XDG_CACHE_HOME/hal (a relative XDG_CACHE_HOME is ignored, as the
// XDG Base Directory spec asks), else $HOME/.cache/hal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hal {

struct CacheFileInfo {
  std::string path;
  // "kernels/opencl", "kernels/cuda", "tuning", "tuning lock" (a tuning table's lock file),
  // "calibration", "unfinished" (a died store's temporary)
  std::string kind;
  uint64_t bytes = 0;
  double idle_seconds = 0;  // since it was last used (kernels) or written (the others)
};

struct CacheContents {
  std::string root;  // empty: no cache directory can be named, nothing is cached
  uint64_t kernel_cap_bytes = 0;
  uint64_t kernel_bytes = 0, tuning_bytes = 0, calibration_bytes = 0;
  std::vector<CacheFileInfo> files;  // least recently used first
  // Settings that were not taken, with the reason (an unreadable HAL_KERNEL_CACHE_MAX_BYTES).
  std::vector<std::string> warnings;
};

CacheContents cache_contents();

// What building kernels has cost this process so far, over every device: kernels compiled from
// source and kernels loaded from the disk cache, and the seconds each took (Device::compile,
// hal's own kernels included; a kernel found in the process's memory costs nothing and is not
// counted).
struct KernelBuildStats {
  uint64_t compiled = 0;
  double compile_seconds = 0;
  uint64_t from_disk = 0;
  double disk_seconds = 0;
};
KernelBuildStats kernel_build_stats();

// Removes every cached kernel, tuning table and calibration, and the tuning tables' lock files
// that no process holds (this process forgets the tables and calibrations it read too);
// returns how many files it removed.
size_t clear_cache();

}  // namespace hal
