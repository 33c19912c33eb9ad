// hal/cache.hpp: the on-disk cache as `hal cache` shows and clears it.
#include "hal/cache.hpp"

#include <chrono>

#include "core/kernel_disk_cache.hpp"
#include "ops/tuning_store.hpp"

namespace hal {

CacheContents cache_contents() {
  CacheContents out;
  out.kernel_cap_bytes = detail::kernel_cache_cap();
  const std::filesystem::path root = detail::cache_root();
  out.root = root.string();
  if (root.empty()) return out;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (const detail::CacheFile& file : detail::cache_files(root)) {
    // A died store's leftovers count against neither (pruning leaves them out of the cap too).
    if (file.kind == "tuning")
      out.tuning_bytes += file.bytes;
    else if (file.kind != "unfinished")
      out.kernel_bytes += file.bytes;
    out.files.push_back({file.path.string(), file.kind, file.bytes,
                         std::chrono::duration<double>(now - file.last_used).count()});
  }
  return out;
}

size_t clear_cache() {
  ops::forget_tunings();
  const std::filesystem::path root = detail::cache_root();
  return root.empty() ? 0 : detail::clear_cache(root);
}

}  // namespace hal
