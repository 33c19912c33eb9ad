// Backward rules of matmul and conv. conv's gradient is its im2col form's (ops/window.hpp),
// differentiated through its parts at the saved inputs: one rule for every device, whichever
// way the forward ran (oneDNN on the CPU).
#include "autograd/gradient_math.hpp"
#include "autograd/record.hpp"
#include "autograd/through_parts.hpp"
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
  const bool has_bias = bias.defined(), has_residual = options.residual.defined();
  const bool relu_after = options.relu;
  const int64_t groups = options.groups;
  const Tensor& residual = options.residual;
  // x and weight give each other's gradient; bias and residual matter only through relu's mask.
  std::vector<SavedSlot> saves{{0, "x"}, {1, "weight"}};
  if (relu_after) saves.insert(saves.end(), {{2, "bias"}, {3, "residual"}});
  return attach(
      "conv", {&x, &weight, &bias, &residual}, y, saves,
      [inputs = std::vector<Tensor>{saved(x), saved(weight), saved(bias), saved(residual)},
       wanted = wanted_inputs({&x, &weight, &bias, &residual}), window, groups, has_bias,
       has_residual, relu_after](const Tensor& dy, Stream& stream) {
        return through_parts(
            [&](const std::vector<Tensor>& in, Stream& st) {
              Tensor out = ops::conv_from_matmul(in[0], in[1], has_bias ? in[2] : Tensor(), window,
                                                 groups, st);
              if (has_residual) out = add(out, in[3], st);
              return relu_after ? relu(out, st) : out;
            },
            inputs, wanted, dy, stream);
      });
}

}  // namespace hal::autograd
