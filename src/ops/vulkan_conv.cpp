// Convolution on Vulkan devices: one launch of im2col.comp writes the columns of every batch
// entry, one matmul per group multiplies the weights by them (vulkan_gemm, batched over N), and
// conv_epilogue.comp adds the bias and the residual and applies relu in place.
#include <limits>

#include "hal/error.hpp"
#include "ops/vulkan_kernels.hpp"

namespace hal::ops {
namespace {

constexpr size_t kSpatial = 3;  // im2col.comp's dimensions

std::string_view suffix(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return "_f16";
    case DType::f64:
      return "_f64";
    default:
      return "";
  }
}

}  // namespace

void vulkan_conv(const ConvDesc& conv, Stream& stream) {
  const Device device = stream.device();
  const size_t spatial = conv.x_shape.size() - 2;
  const int64_t batch = conv.x_shape[0], channels = conv.x_shape[1];
  const int64_t features = conv.w_shape[0];
  int64_t offsets = 1, positions = 1;
  for (size_t d = 0; d < spatial; ++d) {
    offsets *= conv.w_shape[d + 2];
    positions *= conv.y_shape[d + 2];
  }
  const int64_t column_elements = batch * channels * offsets * positions;
  const auto index = [&](int64_t value) {
    if (value < 0 || value > std::numeric_limits<uint32_t>::max())
      throw Error(ErrorCode::Unsupported,
                  "conv of x " + to_string(conv.x_shape) + " with weights " +
                      to_string(conv.w_shape) + " on " + device.info().id +
                      ": Vulkan shaders index with 32 bits, and this needs " +
                      std::to_string(value));
    return static_cast<uint32_t>(value);
  };
  index(column_elements);
  index(batch * features * positions);
  for (int64_t extent : conv.x_shape) index(extent);
  const size_t element = size_of(conv.dtype);
  Buffer columns = device.allocate(static_cast<size_t>(column_elements) * element);

  // Front-padded to 3 spatial dimensions of size 1.
  std::vector<KernelArg> args{columns, Buffer(conv.x), index(static_cast<int64_t>(conv.x_offset)),
                              index(column_elements), index(channels)};
  const size_t pad = kSpatial - spatial;
  const auto append = [&](const std::vector<int64_t>& values, size_t first, uint32_t fill) {
    for (size_t d = 0; d < kSpatial; ++d)
      args.emplace_back(d < pad ? fill : index(values[first + d - pad]));
  };
  append(conv.x_shape, 2, 1);
  append(conv.y_shape, 2, 1);
  append(conv.w_shape, 2, 1);
  append(conv.strides, 0, 1);
  append(conv.dilations, 0, 1);
  append(conv.pads_before, 0, 0);
  const std::string im2col = "im2col" + std::string(suffix(conv.dtype));
  stream.launch(vulkan_shader_kernel(device, im2col, {}),
                LaunchConfig::linear(static_cast<uint64_t>(column_elements)), args);

  // y[n, g] = w[g] (features/groups x channels/groups * offsets) @ cols[n, g].
  const int64_t group_features = features / conv.groups;
  const int64_t group_depth = channels / conv.groups * offsets;
  for (int64_t g = 0; g < conv.groups; ++g) {
    GemmDesc gemm;
    gemm.dtype = conv.dtype;
    gemm.m = group_features;
    gemm.n = positions;
    gemm.k = group_depth;
    gemm.batch = batch;
    gemm.a = {conv.w, conv.w_offset + static_cast<uint64_t>(g * group_features * group_depth),
              group_depth, 0, false};
    gemm.b = {columns.impl(), static_cast<uint64_t>(g * group_depth * positions), positions,
              channels * offsets * positions, false};
    gemm.c = {conv.y, conv.y_offset + static_cast<uint64_t>(g * group_features * positions),
              positions, features * positions, false};
    vulkan_gemm(gemm, stream);
  }

  if (!conv.bias && !conv.sum && !conv.relu) return;
  // Absent operands are bound to y, which the shader then never reads.
  const Buffer y(conv.y);
  const std::string epilogue = "conv_epilogue" + std::string(suffix(conv.dtype));
  const Kernel kernel = vulkan_shader_kernel(
      device, epilogue, {conv.bias ? 1u : 0u, conv.sum ? 1u : 0u, conv.relu ? 1u : 0u});
  const int64_t outputs = batch * features * positions;
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(outputs)),
                {y, conv.bias ? Buffer(conv.bias) : y, conv.sum ? Buffer(conv.sum) : y,
                 index(static_cast<int64_t>(conv.y_offset)),
                 index(conv.bias ? static_cast<int64_t>(conv.bias_offset) : 0),
                 index(conv.sum ? static_cast<int64_t>(conv.sum_offset) : 0), index(outputs),
                 index(positions), index(features)});
}

}  // namespace hal::ops
