// Sliding windows over the spatial dimensions of [N, C, D1, ...] tensors: the arithmetic of
// convolution and pooling, and both built from strided views of the padded input (each kernel
// offset one strided slice), for devices without kernels of their own. hal_model's ONNX Conv,
// MaxPool and AveragePool use the same pieces, and ConvTranspose's phases.
#pragma once

#include <string_view>
#include <vector>

#include "hal/ops.hpp"

namespace hal::ops {

// Per spatial dimension: the window, its placement and the output's size.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_before, pad_after, out;
  int64_t offsets() const;    // kernel positions per window
  int64_t positions() const;  // windows per [N, C] plane
};

// The window of `kernel` over x's spatial dimensions: empty strides, dilations and pads are 1,
// 1 and 0 (strides default to `default_stride` when given, else 1). ceil_mode rounds the output
// up, dropping a last window that would start in the end padding. InvalidArgument naming `op`
// for a rank or count that does not match, values out of range, or a window larger than the
// padded input.
Window window_of(std::string_view op, const Tensor& x, const std::vector<int64_t>& kernel,
                 std::vector<int64_t> strides, std::vector<int64_t> dilations,
                 std::vector<int64_t> pads_before, std::vector<int64_t> pads_after, bool ceil_mode,
                 bool strides_default_to_kernel = false);

// The window of max_pool (max) or avg_pool over x: strides default to the kernel.
Window pool_window(bool max, const Tensor& x, const PoolOptions& options);

// x with `before[d]` and `after[d]` elements of `value` around each dimension d (negative ones
// crop), by concatenation: any device that runs concat pads.
Tensor pad_constant(Tensor x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                    double value, Stream& stream);
// x padded with `value` so that every window fits, ceil_mode's extra end included.
Tensor padded(const Tensor& x, const Window& w, double value, Stream& stream);

// Calls fn(view) for each kernel offset, row-major: the padded input seen at that offset of every
// window, [N, C, out...].
template <class Fn>
void for_each_offset(const Tensor& input, const Window& w, Fn fn) {
  const size_t spatial = w.kernel.size();
  std::vector<int64_t> offset(spatial, 0);
  for (int64_t n = 0; n < w.offsets(); ++n) {
    Tensor view = input;
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t start = offset[i] * w.dilations[i];
      const auto d = static_cast<int64_t>(i) + 2;
      view = view.slice(d, start, start + (w.out[i] - 1) * w.strides[i] + 1, w.strides[i]);
    }
    fn(view);
    for (size_t i = spatial; i-- > 0;) {
      if (++offset[i] < w.kernel[i]) break;
      offset[i] = 0;
    }
  }
}

// im2col: x padded, each kernel offset's strided view a column, [N, C * offsets, positions]
// (the weights' own order per feature).
Tensor patches_of(const Tensor& x, const Window& w, Stream& stream);

// The convolution from views: im2col from the padded input's strided views, concatenated, then
// one matrix product per group, the bias added. Differentiable through its parts.
Tensor conv_from_matmul(const Tensor& x, const Tensor& weight, const Tensor& bias, const Window& w,
                        int64_t groups, Stream& stream);

// The transposed convolution: the gradient, with respect to x ([N, C, x_shape's spatial sizes]),
// of the convolution of x by `weight` ([M, C/g, K...]) at window `w` (its strides, dilations,
// pad_before and kernel), given the result's gradient dz ([N, M, out...]), plus `bias` ([C], or
// undefined) per channel: conv_transpose, ONNX's ConvTranspose and conv's input gradient. The
// device's transposed convolution where the op table lists one (oneDNN's deconvolution on the
// CPU) and the window suits it (conv_transpose.cpp's exact_pads_after), else by phases. Operands
// are checked by the caller; runs on dz's device in the promoted dtype.
Tensor transposed_conv(const Tensor& dz, const Tensor& weight, const Tensor& bias,
                       const Shape& x_shape, const Window& w, int64_t groups, Stream& stream);
// By phases: per phase of the strides one convolution of dz at stride 1 (the device's own conv
// where it has one), interleaved: the forward's work, where a convolution of dz dilated by zeros
// would do stride^spatial times it.
Tensor transposed_conv_by_phases(const Tensor& dz, const Tensor& weight, const Tensor& bias,
                                 const Shape& x_shape, const Window& w, int64_t groups,
                                 Stream& stream);

// A kernel [P, Q, K...] of `groups` groups with its two channel dimensions swapped within each
// group: [P/g, Q] blocks -> [g Q, P/g, K...], the kernel of the transposed convolution.
Tensor swap_kernel_channels(const Tensor& weight, int64_t groups, Stream& stream);

// Pooling from views: the maximum (of any numeric dtype), or the mean by avg_pool's rule, over
// each window's offsets. Differentiable through their parts.
Tensor max_pool_from_views(const Tensor& x, const Window& w, Stream& stream);
// The same maxima by a chain whose derivative sends each window's gradient to one element, as
// PyTorch's max_pool does: its first maximum, or its last NaN (a chain of `maximum` splits ties
// between them, in shares halved at each step).
Tensor max_pool_picking_from_views(const Tensor& x, const Window& w, Stream& stream);
Tensor avg_pool_from_views(const Tensor& x, const Window& w, bool count_include_pad,
                           Stream& stream);

}  // namespace hal::ops
