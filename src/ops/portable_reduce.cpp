// Reductions on devices that compile portable kernels (OpenCL, CUDA): kernels/ops/reduce.kernel,
// compiled once per op, dtype and work-group size.
#include <algorithm>

#include "core/program_kernels.hpp"
#include "hal/error.hpp"
#include "ops/elementwise.hpp"
#include "ops/portable_defines.hpp"
#include "ops/reduce.hpp"

namespace hal::ops {
namespace {

// The largest power of two up to 256 that the device's work-groups hold.
uint32_t group_size(const Device& device) {
  const uint32_t limit = std::max<uint32_t>(device.info().limits.max_work_group_size, 1);
  uint32_t size = 256;
  while (size > limit) size /= 2;
  return size;
}

// Sizes then strides, padded at the front to kMaxDims with size 1, stride 0.
void append_dims(const Shape& shape, const Shape& strides, std::vector<KernelArg>& args) {
  const size_t pad = kMaxDims - shape.size();
  for (size_t d = 0; d < kMaxDims; ++d)
    args.emplace_back(static_cast<uint64_t>(d < pad ? 1 : shape[d - pad]));
  for (size_t d = 0; d < kMaxDims; ++d)
    args.emplace_back(static_cast<uint64_t>(d < pad ? 0 : strides[d - pad]));
}

}  // namespace

void portable_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                     Stream& stream) {
  if (layout.kept.size() > kMaxDims || layout.reduced.size() > kMaxDims)
    throw Error(ErrorCode::Unsupported,
                std::string(name(op)) + " of " + x.describe() +
                    ": more than the portable kernels' " + std::to_string(kMaxDims) +
                    " separate kept or reduced dimensions; call contiguous() first");
  const uint32_t group = group_size(x.device());
  const Kernel kernel = detail::compile_program(x.device(), "ops/reduce", "reduce",
                                                reduce_defines(op, x.dtype(), group));
  std::vector<KernelArg> args{out.storage(), x.storage(), static_cast<uint64_t>(layout.offset),
                              static_cast<uint64_t>(layout.count)};
  append_dims(layout.kept, layout.kept_strides, args);
  append_dims(layout.reduced, layout.reduced_strides, args);
  LaunchConfig config = LaunchConfig::linear(static_cast<uint64_t>(layout.outputs) * group);
  config.local = {group, 1, 1};
  stream.launch(kernel, config, args);
}

}  // namespace hal::ops
