// layer_norm_backward and rms_norm_backward: x's gradient through a norm. Where the device has
// a kernel for it (the CPU: host_norm_backward.cpp, a row at a time) that runs; elsewhere the
// closed form from the reductions and elementwise ops, about seventeen passes over memory.
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

Tensor from_parts(bool centred, const Tensor& x, const Tensor& grad,
                  const std::vector<int64_t>& axes, const Tensor& weight, double eps, Stream& s) {
  const Tensor eps_t = full({}, eps, x.dtype(), s);
  const Tensor xc = centred ? sub(x, mean(x, axes, true, s), s) : x;
  const Tensor rstd = rsqrt(add(mean(mul(xc, xc, s), axes, true, s), eps_t, s), s);
  const Tensor xhat = mul(xc, rstd, s);
  const Tensor g = weight.defined() ? mul(grad, weight, s) : grad;
  Tensor inner = sub(g, mul(xhat, mean(mul(g, xhat, s), axes, true, s), s), s);
  if (centred) inner = sub(inner, mean(g, axes, true, s), s);
  return mul(rstd, inner, s);
}

Tensor norm_backward_of(bool centred, const Tensor& x, const Tensor& grad,
                        const Shape& normalized_shape, const Tensor& weight, double eps,
                        Stream& s) {
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
  if (plan.compute != x.dtype())
    return cast(norm_backward_of(centred, as_f32(x, s), as_f32(grad, s), normalized_shape,
                                 as_f32(weight, s), eps, s),
                x.dtype(), s);
  if (x.numel() == 0) return empty_beside(x, x.shape(), x.dtype());
  const auto* kernel =
      plan.implementation ? std::get_if<NormBackwardKernel>(&plan.implementation->kernel) : nullptr;
  // The parts in f32 for half types, as the autograd rule computed them: the sums of g and
  // g * xhat in f16 were off by several units in its last place over rows of 37.
  if (!kernel && is_half(x.dtype()))
    return cast(from_parts(centred, as_f32(x, s), as_f32(grad, s), axes, as_f32(weight, s), eps, s),
                x.dtype(), s);
  if (!kernel) return from_parts(centred, x, grad, axes, weight, eps, s);
  const Tensor x_in = x.contiguous(s), grad_in = grad.contiguous(s);
  const Tensor w = weight.defined() ? weight.contiguous(s) : weight;
  const Tensor dx = empty_beside(x, x.shape(), x.dtype());
  const int64_t cols = numel(normalized_shape);
  (*kernel)(descriptor(op), {x_in, grad_in, w, dx, x.numel() / cols, cols, eps}, s);
  return dx;
}

Tensor norm_backward(bool centred, const Tensor& x, const Tensor& grad,
                     const Shape& normalized_shape, const Tensor& weight, double eps,
                     Stream& stream) {
  const std::string_view op = op_name(centred);
  const auto run = [&] {
    const Tensor* operands[] = {&x, &grad, &weight};
    return run_op(op, operands, stream, [&, centred](OpInputs in, Stream& s) {
      return norm_backward_of(centred, *in[0], *in[1], normalized_shape, *in[2], eps, s);
    });
  };
  return autograd::run_refusing_backward(op, {&x, &grad, &weight},
                                         "hal has no rule for a gradient of a gradient", run);
}

}  // namespace
}  // namespace ops

Tensor layer_norm_backward(const Tensor& x, const Tensor& grad, const Shape& normalized_shape,
                           const Tensor& weight, double eps, Stream& stream) {
  return ops::norm_backward(true, x, grad, normalized_shape, weight, eps, stream);
}

Tensor rms_norm_backward(const Tensor& x, const Tensor& grad, const Shape& normalized_shape,
                         const Tensor& weight, double eps, Stream& stream) {
  return ops::norm_backward(false, x, grad, normalized_shape, weight, eps, stream);
}

}  // namespace hal
