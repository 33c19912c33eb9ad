// Launch geometry for the CPU's host kernels whose work items are rows of many elements.
#pragma once

#include <algorithm>
#include <cstdint>

#include "hal/kernel.hpp"

namespace hal::ops {

// `rows` work items of about `work` elements each, as a grid whose total counts elements: the
// pool splits it once there is enough work (past 32 768 elements), not once there are that many
// rows (launched as linear(rows), 2048 planes of a max pool or 8192 rows of a cross_entropy ran
// on one thread), into chunks that are ranges of rows (dimension 1). One row is a launch of one:
// the pool would split a grid of one row along its elements, and each chunk would run the row.
inline LaunchConfig host_rows_config(int64_t work, int64_t rows) {
  if (rows == 1) return LaunchConfig::linear(1);
  return LaunchConfig::grid(static_cast<uint64_t>(std::max<int64_t>(work, 1)),
                            static_cast<uint64_t>(rows));
}

}  // namespace hal::ops
