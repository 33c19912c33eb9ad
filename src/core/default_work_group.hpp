// The work-group shape hal picks when a launch of a portable kernel leaves `local` at zero.
//
// One fixed shape per dimensionality, rounded up to whole groups, rather than the driver's
// choice: PoCL (and other CPU OpenCL drivers) compile a work-group function per local size and
// choose local = global for small grids, so every new tensor size would compile the kernel again
// (about 0.2 s each on PoCL). Portable kernels check their bounds, so the extra items are free.
#pragma once

#include <array>
#include <cstdint>

namespace hal::detail {

// 256 (1-D), 16x16 (2-D), 8x8x4 (3-D), halved from the last used dimension down until a group
// has at most `max_items` work items (a kernel's own limit, which can be below the device's).
inline std::array<uint32_t, 3> default_work_group(int dims, uint64_t max_items) {
  if (max_items == 0) max_items = 1;
  std::array<uint32_t, 3> local = dims == 1   ? std::array<uint32_t, 3>{256, 1, 1}
                                  : dims == 2 ? std::array<uint32_t, 3>{16, 16, 1}
                                              : std::array<uint32_t, 3>{8, 8, 4};
  for (int d = dims - 1; uint64_t{local[0]} * local[1] * local[2] > max_items;
       d = d == 0 ? dims - 1 : d - 1)
    if (local[d] > 1) local[d] /= 2;
  return local;
}

}  // namespace hal::detail
