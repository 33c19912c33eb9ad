// What the norms and their backward ops share: the checks of their operands.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hal/stream.hpp"
#include "hal/tensor.hpp"

namespace hal::ops {

// InvalidArgument naming `op` and x where eps is negative, NaN or infinite.
void check_eps(std::string_view op, const Tensor& x, double eps);
// The trailing axes that `normalized_shape` names, after checking x, the stream, eps, and
// weight and bias (each may be undefined) against it; InvalidArgument naming what is wrong.
std::vector<int64_t> normalized_axes(std::string_view op, const Tensor& x,
                                     const Shape& normalized_shape, const Tensor& weight,
                                     const Tensor& bias, double eps, Stream& stream);
// t in f32 (undefined stays undefined).
Tensor as_f32(const Tensor& t, Stream& stream);

// The gradients of layer_norm (centred) or rms_norm: x's, and where asked the weight's (the sum
// over the leading axes of grad * xhat) and the bias's (of grad), in normalized_shape; those not
// asked for are undefined. The op layer_norm_backward (rms_norm_backward) with the parameters'
// gradients beside, as PyTorch's native_layer_norm_backward with its output mask: on the CPU
// one pass over x and grad for all three.
struct NormGradients {
  Tensor x, weight, bias;
};
NormGradients norm_gradients(bool centred, const Tensor& x, const Tensor& grad,
                             const Shape& normalized_shape, const Tensor& weight, double eps,
                             bool want_weight, bool want_bias, Stream& stream);

// How the devices' norm_backward kernels (OpenCL and CUDA, Vulkan) sum the parameters'
// gradients down the columns: in `parts` runs of `chunk` rows each, so that a few columns still
// give the device about 16 Ki items, each part at least 16 rows; the parts of each column are
// then added in order by a second kernel.
struct ColumnParts {
  int64_t parts, chunk;
};
ColumnParts norm_column_parts(int64_t rows, int64_t cols);

}  // namespace hal::ops
