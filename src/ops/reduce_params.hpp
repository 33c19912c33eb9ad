// The parameters of the portable reductions (kernels/ops/reduce.kernel) and where they come
// from: the tuning cache's nearest class for the shape, else the defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hal/device_info.hpp"
#include "ops/reduce.hpp"

namespace hal::ops {

struct ReduceParams {
  uint32_t group = 256;          // work-group size (a power of two; capped by the device)
  uint32_t groups_per_unit = 4;  // two-stage reductions: work-groups per compute unit
  bool item_runs = false;        // each item folds adjacent elements (CPUs), not every GROUP-th
  std::string text() const;      // "group 256 x4", "group 64 x2 runs"
  static std::optional<ReduceParams> parse(const std::string& text);
  bool operator==(const ReduceParams&) const = default;
};

// The largest power of two up to `want` that the device's work-groups hold.
uint32_t fitting_group(uint32_t want, const DeviceInfo& device);

// Work-groups per output: 1 (one pass) unless the outputs are fewer than the device's compute
// units can take (groups_per_unit each) and each output has enough elements to share out.
uint64_t split_of(const ReduceParams& params, uint32_t group, uint64_t outputs, uint64_t count,
                  const DeviceInfo& device);

// "outputs1 count67108864", powers of two at or above the sizes: the class the tuner keys on.
std::string reduce_shape_class(uint64_t outputs, uint64_t count);

// The defaults for the kind of device: runs of adjacent elements per item on CPUs.
ReduceParams default_reduce_params(const DeviceInfo& device);

// The tuned parameters of the nearest class, else the defaults.
ReduceParams reduce_params_for(const DeviceInfo& device, DType dtype, const ReduceLayout& layout);

void portable_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                     const ReduceParams& params, Stream& stream);

}  // namespace hal::ops
