// Convolution on Vulkan devices: one launch of im2col.comp writes the columns of the batch
// entries (of as many at a time as one storage buffer binding reaches), one matmul per group
// multiplies the weights by them (vulkan_gemm, batched over N), and conv_epilogue.comp adds the
// bias and the residual and applies relu in place.
#include <algorithm>
#include <limits>
#include <tuple>

#include "backends/vulkan/vulkan_limits.hpp"
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
  // Registered for conv only: conv_transpose on Vulkan is its phases' convolutions.
  if (conv.transposed)
    throw Error(ErrorCode::Unsupported,
                "Vulkan's convolution shaders on " + device.id() + " do not transpose");
  const size_t spatial = conv.x_shape.size() - 2;
  const int64_t batch = conv.x_shape[0], channels = conv.x_shape[1];
  const int64_t features = conv.w_shape[0];
  int64_t offsets = 1, positions = 1;
  for (size_t d = 0; d < spatial; ++d) {
    offsets *= conv.w_shape[d + 2];
    positions *= conv.y_shape[d + 2];
  }
  const std::string what = "conv of x " + to_string(conv.x_shape) + " with weights " +
                           to_string(conv.w_shape) + " on " + device.info().id;
  const auto index = [&](int64_t value) {
    if (value < 0 || value > std::numeric_limits<uint32_t>::max())
      throw Error(
          ErrorCode::Unsupported,
          what + ": Vulkan shaders index with 32 bits, and this needs " + std::to_string(value));
    return static_cast<uint32_t>(value);
  };
  const size_t element = size_of(conv.dtype);
  // Every operand is checked before anything is enqueued: its end as a 32-bit index, and as
  // bytes of one binding (vulkan_limits.hpp). The matmuls below index within these ends.
  const int64_t outputs = batch * features * positions;
  const std::tuple<const char*, const BufferPtr*, int64_t> ends[] = {
      {"x", &conv.x, static_cast<int64_t>(conv.x_offset) + numel(conv.x_shape)},
      {"the weights", &conv.w, static_cast<int64_t>(conv.w_offset) + numel(conv.w_shape)},
      {"the bias", &conv.bias, static_cast<int64_t>(conv.bias_offset) + features},
      {"the residual", &conv.sum, static_cast<int64_t>(conv.sum_offset) + outputs},
      {"y", &conv.y, static_cast<int64_t>(conv.y_offset) + outputs}};
  const vulkan::VulkanLimits limits = vulkan::vulkan_limits(device);
  for (const auto& [operand, buffer, end] : ends) {
    if (!*buffer) continue;
    index(end);
    const uint64_t bytes = vulkan::vulkan_bound_bytes(Buffer(*buffer), end * element);
    if (bytes > limits.max_storage_buffer_range)
      throw Error(ErrorCode::Unsupported,
                  what + ": the Vulkan shaders would address " + std::to_string(bytes) +
                      " bytes of " + operand + " from where its buffer is bound, past the " +
                      "device's maxStorageBufferRange of " +
                      std::to_string(limits.max_storage_buffer_range) + " bytes");
  }
  for (int64_t extent : conv.x_shape) index(extent);
  // The columns of as many batch entries at a time as one binding reaches wherever the
  // allocation starts (within the alignment); im2col and the matmuls run once per part.
  const int64_t entry_columns = channels * offsets * positions;
  const uint64_t room = limits.max_storage_buffer_range - (limits.storage_offset_alignment - 1);
  const uint64_t entry_bytes = static_cast<uint64_t>(entry_columns) * element;
  if (entry_bytes > room)
    throw Error(ErrorCode::Unsupported,
                what + ": the columns of one batch entry (im2col) take " +
                    std::to_string(entry_bytes) + " bytes, past the device's " +
                    "maxStorageBufferRange of " + std::to_string(limits.max_storage_buffer_range) +
                    " bytes");
  const int64_t part =  // every entry at once where they have no columns (no channels)
      entry_bytes == 0 ? batch : std::min(batch, static_cast<int64_t>(room / entry_bytes));
  index(part * entry_columns);
  Buffer columns = device.allocate(static_cast<size_t>(part * entry_columns) * element);
  const std::string im2col = "im2col" + std::string(suffix(conv.dtype));
  const Kernel im2col_kernel = vulkan_shader_kernel(device, im2col, {});
  const int64_t group_features = features / conv.groups;
  const int64_t group_depth = channels / conv.groups * offsets;
  for (int64_t n0 = 0; n0 < batch; n0 += part) {
    const int64_t entries = std::min(part, batch - n0);
    const int64_t column_elements = entries * entry_columns;
    // Front-padded to 3 spatial dimensions of size 1.
    std::vector<KernelArg> args{
        columns, Buffer(conv.x),
        index(static_cast<int64_t>(conv.x_offset) + n0 * (numel(conv.x_shape) / batch)),
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
    stream.launch(im2col_kernel, LaunchConfig::linear(static_cast<uint64_t>(column_elements)),
                  args);

    // y[n, g] = w[g] (features/groups x channels/groups * offsets) @ cols[n, g].
    const uint64_t y_part = conv.y_offset + static_cast<uint64_t>(n0 * features * positions);
    for (int64_t g = 0; g < conv.groups; ++g) {
      GemmDesc gemm;
      gemm.dtype = conv.dtype;
      gemm.m = group_features;
      gemm.n = positions;
      gemm.k = group_depth;
      gemm.batch = entries;
      gemm.a = {conv.w, conv.w_offset + static_cast<uint64_t>(g * group_features * group_depth),
                group_depth, 0, false};
      gemm.b = {columns.impl(), static_cast<uint64_t>(g * group_depth * positions), positions,
                channels * offsets * positions, false};
      gemm.c = {conv.y, y_part + static_cast<uint64_t>(g * group_features * positions), positions,
                features * positions, false};
      vulkan_gemm(gemm, stream);
    }
  }

  if (!conv.bias && !conv.sum && !conv.relu) return;
  // Absent operands are bound to y, which the shader then never reads.
  const Buffer y(conv.y);
  const std::string epilogue = "conv_epilogue" + std::string(suffix(conv.dtype));
  const Kernel kernel = vulkan_shader_kernel(
      device, epilogue, {conv.bias ? 1u : 0u, conv.sum ? 1u : 0u, conv.relu ? 1u : 0u});
  stream.launch(kernel, LaunchConfig::linear(static_cast<uint64_t>(outputs)),
                {y, conv.bias ? Buffer(conv.bias) : y, conv.sum ? Buffer(conv.sum) : y,
                 index(static_cast<int64_t>(conv.y_offset)),
                 index(conv.bias ? static_cast<int64_t>(conv.bias_offset) : 0),
                 index(conv.sum ? static_cast<int64_t>(conv.sum_offset) : 0), index(outputs),
                 index(positions), index(features)});
}

}  // namespace hal::ops
