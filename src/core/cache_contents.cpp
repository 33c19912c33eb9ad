// hal/cache.hpp: the on-disk cache as `hal cache` shows and clears it.
#include "hal/cache.hpp"

#include <chrono>

#include "core/kernel_disk_cache.hpp"
#include "hal/calibration.hpp"
#include "ops/tuning_store.hpp"

namespace hal {

CacheContents cache_contents() {
  CacheContents out;
  const detail::KernelCacheCap cap = detail::kernel_cache_cap_setting();
  out.kernel_cap_bytes = cap.bytes;
  if (!cap.problem.empty()) out.warnings.push_back(cap.problem);
  const std::filesystem::path root = detail::cache_root();
  out.root = root.string();
  if (root.empty()) return out;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (const detail::CacheFile& file : detail::cache_files(root)) {
    // A died store's leftovers count against none (pruning leaves them out of the cap too).
    if (file.kind.starts_with("kernels/"))
      out.kernel_bytes += file.bytes;
    else if (file.kind == "tuning" || file.kind == "tuning lock")
      out.tuning_bytes += file.bytes;
    else if (file.kind == "calibration")
      out.calibration_bytes += file.bytes;
    out.files.push_back({file.path.string(), file.kind, file.bytes,
                         std::chrono::duration<double>(now - file.last_used).count()});
  }
  return out;
}

size_t clear_cache() {
  ops::forget_tunings();
  reload_calibrations();
  const std::filesystem::path root = detail::cache_root();
  return root.empty() ? 0 : detail::clear_cache(root);
}

}  // namespace hal
