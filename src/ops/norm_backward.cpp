// layer_norm_backward and rms_norm_backward: x's gradient through a norm, and for the autograd
// rule the weight's and bias's with it. Where the device has a kernel for it (the CPU:
// host_norm_backward.cpp, a row at a time, the parameters' sums in the same pass; OpenCL and
// CUDA: portable_rowwise.cpp; Vulkan: vulkan_kernels.cpp) that runs; elsewhere the closed form from
// the reductions and elementwise ops, about seventeen passes over memory, the parameters' sharing
// its xhat.
#include <algorithm>

#include "autograd/record.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/fallback.hpp"
#include "ops/normalization.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"

namespace hal {
namespace ops {
namespace {

std::string_view op_name(bool centred) {
  return centred ? "layer_norm_backward" : "rms_norm_backward";
}

// x's gradient and, where asked, the parameters' from the reductions and elementwise ops, with
// xhat and rstd worked out once for both.
NormGradients from_parts(bool centred, const Tensor& x, const Tensor& grad,
                         const std::vector<int64_t>& axes, const Shape& normalized_shape,
                         const Tensor& weight, double eps, bool want_weight, bool want_bias,
                         Stream& s) {
  const Tensor eps_t = full({}, eps, x.dtype(), s);
  const Tensor xc = centred ? sub(x, mean(x, axes, true, s), s) : x;
  const Tensor rstd = rsqrt(add(mean(mul(xc, xc, s), axes, true, s), eps_t, s), s);
  const Tensor xhat = mul(xc, rstd, s);
  const Tensor g = weight.defined() ? mul(grad, weight, s) : grad;
  Tensor inner = sub(g, mul(xhat, mean(mul(g, xhat, s), axes, true, s), s), s);
  if (centred) inner = sub(inner, mean(g, axes, true, s), s);
  NormGradients out{mul(rstd, inner, s), Tensor(), Tensor()};
  // The parameters': sums over the leading axes of grad * xhat and of grad.
  std::vector<int64_t> leading(x.dim() - static_cast<int64_t>(normalized_shape.size()));
  for (size_t d = 0; d < leading.size(); ++d) leading[d] = static_cast<int64_t>(d);
  const auto sum_leading = [&](const Tensor& t) {
    return (leading.empty() ? t : sum(t, leading, false, s)).reshape(normalized_shape);
  };
  if (want_weight) out.weight = sum_leading(mul(grad, xhat, s));
  if (want_bias) out.bias = sum_leading(grad);
  return out;
}

NormGradients norm_gradients_of(bool centred, const Tensor& x, const Tensor& grad,
                                const Shape& normalized_shape, const Tensor& weight, double eps,
                                bool want_weight, bool want_bias, Stream& s) {
  const std::string_view op = op_name(centred);
  const std::vector<int64_t> axes =
      normalized_axes(op, x, normalized_shape, weight, Tensor(), eps, s);
  check_defined(op, grad);
  check_same_device(op, x, grad);
  check_same_dtype(op, x, grad);
  if (grad.shape() != x.shape())
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of " + x.describe() +
                                                ": the gradient " + grad.describe() +
                                                " must have x's shape");
  const OpPlan plan = plan_or_throw(descriptor(op), x.dtype(), {&x, &grad});
  // Computed in f32, each gradient rounded back to x's type.
  const auto in_f32 = [&] {
    const NormGradients wide =
        norm_gradients_of(centred, as_f32(x, s), as_f32(grad, s), normalized_shape,
                          as_f32(weight, s), eps, want_weight, want_bias, s);
    const auto narrowed = [&](const Tensor& t) { return t.defined() ? cast(t, x.dtype(), s) : t; };
    return NormGradients{narrowed(wide.x), narrowed(wide.weight), narrowed(wide.bias)};
  };
  if (plan.compute != x.dtype()) return in_f32();
  NormGradients out;
  const int64_t cols = numel(normalized_shape);
  if (x.numel() == 0) {
    out.x = empty_beside(x, x.shape(), x.dtype());
    if (want_weight) out.weight = zeros(normalized_shape, x.dtype(), s);
    if (want_bias) out.bias = zeros(normalized_shape, x.dtype(), s);
    return out;
  }
  const auto* kernel =
      plan.implementation ? std::get_if<NormBackwardKernel>(&plan.implementation->kernel) : nullptr;
  if (!kernel) {
    // The parts in f32 for half types, as the autograd rule computed them: the sums of g and
    // g * xhat in f16 were off by several units in its last place over rows of 37.
    if (is_half(x.dtype())) return in_f32();
    return from_parts(centred, x, grad, axes, normalized_shape, weight, eps, want_weight, want_bias,
                      s);
  }
  const Tensor x_in = x.contiguous(s), grad_in = grad.contiguous(s);
  const Tensor w = weight.defined() ? weight.contiguous(s) : weight;
  out.x = empty_beside(x, x.shape(), x.dtype());
  NormBackwardArgs args{x_in, grad_in, w, out.x, x.numel() / cols, cols, eps};
  if (want_weight) args.weight_grad = empty_beside(x, {cols}, x.dtype());
  if (want_bias) args.bias_grad = empty_beside(x, {cols}, x.dtype());
  (*kernel)(descriptor(op), args, s);
  if (want_weight) out.weight = args.weight_grad.reshape(normalized_shape);
  if (want_bias) out.bias = args.bias_grad.reshape(normalized_shape);
  return out;
}

}  // namespace

ColumnParts norm_column_parts(int64_t rows, int64_t cols) {
  const int64_t parts =
      std::clamp<int64_t>((16384 + cols - 1) / cols, 1, std::max<int64_t>(1, rows / 16));
  return {parts, (rows + parts - 1) / parts};
}

NormGradients norm_gradients(bool centred, const Tensor& x, const Tensor& grad,
                             const Shape& normalized_shape, const Tensor& weight, double eps,
                             bool want_weight, bool want_bias, Stream& stream) {
  const std::string_view op = op_name(centred);
  NormGradients out;
  const auto run = [&] {
    const Tensor* operands[] = {&x, &grad, &weight};
    return run_op(op, operands, stream, [&](OpInputs in, Stream& s) {
      out = norm_gradients_of(centred, *in[0], *in[1], normalized_shape, *in[2], eps, want_weight,
                              want_bias, s);
      return out.x;
    });
  };
  out.x = autograd::run_refusing_backward(op, {&x, &grad, &weight},
                                          "hal has no rule for a gradient of a gradient", run);
  // Where the op ran on cpu:0 in place of x's device (HAL_OPS_FALLBACK), run_op brought x's
  // gradient back; the parameters' come back here.
  for (Tensor* t : {&out.weight, &out.bias})
    if (t->defined() && t->device() != x.device()) *t = t->to(x.device(), stream);
  return out;
}

}  // namespace ops

Tensor layer_norm_backward(const Tensor& x, const Tensor& grad, const Shape& normalized_shape,
                           const Tensor& weight, double eps, Stream& stream) {
  return ops::norm_gradients(true, x, grad, normalized_shape, weight, eps, false, false, stream).x;
}

Tensor rms_norm_backward(const Tensor& x, const Tensor& grad, const Shape& normalized_shape,
                         const Tensor& weight, double eps, Stream& stream) {
  return ops::norm_gradients(false, x, grad, normalized_shape, weight, eps, false, false, stream).x;
}

}  // namespace hal
