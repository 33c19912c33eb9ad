// Backward rules of matmul, conv and conv_transpose. conv's gradients are convolutions and
// products (conv_gradients.hpp) on the tensors' device, whichever way the forward ran (oneDNN on
// the CPU); conv_transpose's are conv's with the roles of x and the result exchanged.
#include "autograd/conv_gradients.hpp"
#include "autograd/gradient_math.hpp"
#include "autograd/record.hpp"
#include "autograd/through_parts.hpp"  // wanted_inputs
#include "ops/window.hpp"

namespace hal::autograd {

Tensor record_matmul(const Tensor& a, const Tensor& b, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = matmul(a, b, s);
  }
  const bool want_a = a.requires_grad(), want_b = b.requires_grad();
  // da reads b and db reads a: a weight saved for x's gradient is what an optimizer step writes.
  std::vector<SavedSlot> saves;
  if (want_b) saves.push_back({0, "a"});
  if (want_a) saves.push_back({1, "b"});
  return attach("matmul", {&a, &b}, y, saves,
                [a = saved(a), b = saved(b), want_a, want_b](const Tensor& dy, Stream& stream) {
                  MatmulGrads g = matmul_backward(a, b, dy, want_a, want_b, stream);
                  return std::vector<Tensor>{std::move(g.a), std::move(g.b)};
                });
}

Tensor record_conv(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const ConvOptions& options, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = conv(x, weight, bias, options, s);
  }
  const Shape kernel(weight.shape().begin() + 2, weight.shape().end());
  const ops::Window window = ops::window_of("conv", x, kernel, options.strides, options.dilations,
                                            options.pads_before, options.pads_after, false);
  const Tensor& residual = options.residual;
  const std::vector<bool> wanted = wanted_inputs({&x, &weight, &bias, &residual});
  const bool relu_after = options.relu;
  // x and weight give each other's gradient; relu's mask is read from the result.
  std::vector<SavedSlot> saves;
  if (wanted[1]) saves.push_back({0, "x"});
  if (wanted[0]) saves.push_back({1, "weight"});
  if (relu_after) saves.push_back({kOutput, "y"});
  return attach("conv", {&x, &weight, &bias, &residual}, y, saves,
                [x = saved(x), weight = saved(weight), y = relu_after ? saved(y) : Tensor(), window,
                 groups = options.groups, wanted](const Tensor& dy, Stream& stream) {
                  Tensor dz = dy.dtype() == x.dtype() ? dy : cast(dy, x.dtype(), stream);
                  if (y.defined())
                    dz = where(gt(y, zeros({}, y.dtype(), stream), stream), dz,
                               zeros({}, dz.dtype(), stream), stream);
                  std::vector<Tensor> grads(4);
                  if (wanted[0])
                    grads[0] = conv_input_gradient(dz, weight, x.shape(), window, groups, stream);
                  if (wanted[1])
                    grads[1] = conv_weight_gradient(dz, x, weight.shape(), window, groups, stream);
                  if (wanted[2]) grads[2] = conv_bias_gradient(dz, stream);
                  if (wanted[3]) grads[3] = dz;
                  return grads;
                });
}

// y = conv_transpose(x, w) is the input gradient of the convolution c from y's sizes back to x's
// by w: dx = c(dy) (cut to x's sizes: an output_padding of a stride or more reaches past them),
// dw = c's weight gradient for input dy and result gradient x, dbias the sum of dy per channel.
Tensor record_conv_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                             const ConvTransposeOptions& options, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = conv_transpose(x, weight, bias, options, s);
  }
  const auto spatial = static_cast<size_t>(x.dim() - 2);
  const auto given = [spatial](std::vector<int64_t> values, int64_t fallback) {
    if (values.empty()) values.assign(spatial, fallback);
    return values;
  };
  ops::Window window;
  window.kernel = Shape(weight.shape().begin() + 2, weight.shape().end());
  window.strides = given(options.strides, 1);
  window.dilations = given(options.dilations, 1);
  window.pad_before = given(options.pads_before, 0);
  window.pad_after = given(options.pads_after, 0);
  window.out = Shape(x.shape().begin() + 2, x.shape().end());
  const std::vector<bool> wanted = wanted_inputs({&x, &weight, &bias});
  std::vector<SavedSlot> saves;
  if (wanted[1]) saves.push_back({0, "x"});
  if (wanted[0]) saves.push_back({1, "weight"});
  return attach("conv_transpose", {&x, &weight, &bias}, y, saves,
                [x = saved(x), weight = saved(weight), window, groups = options.groups, wanted](
                    const Tensor& dy_in, Stream& stream) {
                  const Tensor dy =
                      dy_in.dtype() == x.dtype() ? dy_in : cast(dy_in, x.dtype(), stream);
                  std::vector<Tensor> grads(3);
                  if (wanted[0] && x.numel() == 0) {
                    grads[0] = zeros(x.shape(), x.dtype(), stream);
                  } else if (wanted[0]) {
                    ConvOptions c;
                    c.strides = window.strides;
                    c.dilations = window.dilations;
                    c.pads_before = window.pad_before;
                    c.pads_after = window.pad_after;
                    c.groups = groups;
                    Tensor dx = conv(dy, weight, Tensor(), c, stream);
                    for (size_t i = 0; i < window.out.size(); ++i)
                      dx = dx.slice(static_cast<int64_t>(i) + 2, 0, window.out[i]);
                    grads[0] = dx.contiguous(stream);
                  }
                  if (wanted[1])
                    grads[1] = conv_weight_gradient(x, dy, weight.shape(), window, groups, stream);
                  if (wanted[2]) grads[2] = conv_bias_gradient(dy, stream);
                  return grads;
                });
}

}  // namespace hal::autograd
