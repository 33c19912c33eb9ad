// Reductions on devices that compile portable kernels (OpenCL, CUDA): kernels/ops/reduce.kernel,
// compiled once per op, dtype, work-group size and layout kind. Few outputs of many elements
// (a full sum) run in two stages, so that every compute unit folds a slice: the parameters
// (work-group size, groups per compute unit) come from the tuning cache (hal tune --op reduce)
// or the defaults.
#include <algorithm>

#include "core/program_kernels.hpp"
#include "hal/error.hpp"
#include "ops/elementwise.hpp"
#include "ops/portable_defines.hpp"
#include "ops/reduce.hpp"
#include "ops/reduce_params.hpp"

namespace hal::ops {
namespace {

// Sizes then strides, padded at the front to kMaxDims with size 1, stride 0.
void append_dims(const LayoutDims& shape, const LayoutDims& strides, std::vector<KernelArg>& args) {
  const size_t pad = kMaxDims - shape.size();
  for (size_t d = 0; d < kMaxDims; ++d)
    args.emplace_back(static_cast<uint64_t>(d < pad ? 1 : shape[d - pad]));
  for (size_t d = 0; d < kMaxDims; ++d)
    args.emplace_back(static_cast<uint64_t>(d < pad ? 0 : strides[d - pad]));
}

size_t accumulator_bytes(Reduce op, DType dtype) {
  const bool sums = op == Reduce::sum || op == Reduce::mean;
  switch (dtype) {
    case DType::f32:
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::u32:
      return 4;
    case DType::i32:
      return sums ? 8 : 4;
    default:
      return 8;
  }
}

}  // namespace

void portable_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                     Stream& stream) {
  portable_reduce(op, x, out, layout, reduce_params_for(x.device().info(), x.dtype(), layout),
                  stream);
}

void portable_reduce(Reduce op, const Tensor& x, const Tensor& out, const ReduceLayout& layout,
                     const ReduceParams& params, Stream& stream) {
  if (layout.kept.size() > kMaxDims || layout.reduced.size() > kMaxDims)
    throw Error(ErrorCode::Unsupported,
                std::string(name(op)) + " of " + x.describe() +
                    ": more than the portable kernels' " + std::to_string(kMaxDims) +
                    " separate kept or reduced dimensions; call contiguous() first");
  const Device& device = x.device();
  const uint32_t group = fitting_group(params.group, device.info());
  std::vector<std::string> defines = reduce_defines(op, x.dtype(), group);
  if (layout.reduced.size() == 1 && layout.reduced_strides[0] == 1) {
    defines.emplace_back("REDUCED_CONTIGUOUS");
    if (params.item_runs) defines.emplace_back("ITEM_RUNS");
  }
  const auto count = static_cast<uint64_t>(layout.count);
  const auto outputs = static_cast<uint64_t>(layout.outputs);
  const uint64_t split = split_of(params, group, outputs, count, device.info());

  if (split <= 1) {
    const Kernel kernel = detail::compile_program(device, "ops/reduce", "reduce", defines);
    std::vector<KernelArg> args{out.storage(), x.storage(), static_cast<uint64_t>(layout.offset),
                                count};
    append_dims(layout.kept, layout.kept_strides, args);
    append_dims(layout.reduced, layout.reduced_strides, args);
    LaunchConfig config = LaunchConfig::linear(outputs * group);
    config.local = {group, 1, 1};
    stream.launch(kernel, config, args);
    return;
  }
  const uint64_t partials = outputs * split;
  const Buffer values = device.allocate(partials * accumulator_bytes(op, x.dtype()));
  const Buffer indices = device.allocate(partials * 8);
  const uint64_t chunk = (count + split - 1) / split;
  const Kernel first = detail::compile_program(device, "ops/reduce", "reduce_partial", defines);
  std::vector<KernelArg> args{values, indices, x.storage(), static_cast<uint64_t>(layout.offset),
                              count,  split,   chunk};
  append_dims(layout.kept, layout.kept_strides, args);
  append_dims(layout.reduced, layout.reduced_strides, args);
  LaunchConfig config = LaunchConfig::linear(partials * group);
  config.local = {group, 1, 1};
  stream.launch(first, config, args);
  const Kernel second = detail::compile_program(device, "ops/reduce", "reduce_final", defines);
  stream.launch(second, LaunchConfig::linear(outputs),
                {out.storage(), values, indices, outputs, count, split});
}

}  // namespace hal::ops
