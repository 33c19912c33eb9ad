// conv's gradients as convolutions and products, written with hal's ops so that they run on
// the tensors' device: x's as the transposed convolution (the device's own where it has one,
// oneDNN's deconvolution on the CPU; else per phase of the strides, a convolution of the
// gradient by a subsampled kernel, flipped and its channels swapped per group); the weight's as the
// convolution of x by the gradient with batch and channels swapped (with groups, per kernel offset:
// the gradient times x's view at that offset; where the device has no convolution of its own,
// im2col's patches times the gradient).
#pragma once

#include "hal/ops.hpp"
#include "ops/window.hpp"

namespace hal::autograd {

// dz: the gradient of conv's result before its bias, residual and relu ([N, M, out...]); `w` the
// window conv ran with (ops::window_of), `groups` its groups.
Tensor conv_input_gradient(const Tensor& dz, const Tensor& weight, const Shape& x_shape,
                           const ops::Window& w, int64_t groups, Stream& stream);
Tensor conv_weight_gradient(const Tensor& dz, const Tensor& x, const Shape& weight_shape,
                            const ops::Window& w, int64_t groups, Stream& stream);
// The bias's: dz summed over all but the channels ([M]).
Tensor conv_bias_gradient(const Tensor& dz, Stream& stream);

}  // namespace hal::autograd
