// softmax, log-softmax, layer norm and RMS norm, built from the reductions and elementwise ops,
// so they run wherever those do, with their checks; a device with a fused kernel of its own for
// one (the CPU: host_rowwise.cpp; OpenCL and CUDA: portable_rowwise.cpp; Vulkan: rowwise.comp)
// runs that instead when the op's axes are x's last. Each
// subtracts the maximum or the mean first, for stability.
#include <algorithm>
#include <cmath>

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

// The op table's plan for x: the dtype to compute in (f32 for f16 and bf16 where the device's
// parts lack them) and a fused kernel where the device has one; Unsupported naming the op.
OpPlan plan_for(std::string_view op, const Tensor& x) {
  return plan_or_throw(descriptor(op), x.dtype(), {&x});
}

// The fused kernel the plan names, if it has one that computes in x's own dtype.
RowwiseKernel fused_kernel(const OpPlan& plan) {
  if (!plan.implementation || plan.compute != plan.input) return nullptr;
  const auto* kernel = std::get_if<RowwiseKernel>(&plan.implementation->kernel);
  return kernel ? *kernel : nullptr;
}

// Runs `kernel` over the rows of x's last `cols` elements.
Tensor run_rows(RowwiseKernel kernel, std::string_view op, const Tensor& x, int64_t cols,
                const Tensor& weight, const Tensor& bias, double eps, Stream& stream) {
  const Tensor input = x.contiguous(stream);
  const Tensor w = weight.defined() ? weight.contiguous(stream) : weight;
  const Tensor b = bias.defined() ? bias.contiguous(stream) : bias;
  const Tensor out = empty_beside(x, x.shape(), x.dtype());
  kernel(descriptor(op), {input, w, b, out, x.numel() / cols, cols, eps}, stream);
  return out;
}

Tensor softmax_of(const Tensor& x, int64_t axis, bool logarithm, Stream& stream) {
  const std::string_view op = logarithm ? "log_softmax" : "softmax";
  check_defined(op, x);
  check_stream(op, x, stream);
  const int64_t dim = wrap_axis(op, x, axis);
  const OpPlan plan = plan_for(op, x);
  const DType compute = plan.compute;
  if (compute != x.dtype())
    return cast(softmax_of(cast(x, compute, stream), dim, logarithm, stream), x.dtype(), stream);
  if (x.numel() == 0) return empty_beside(x, x.shape(), x.dtype());
  if (const RowwiseKernel kernel = fused_kernel(plan); kernel && dim == x.dim() - 1)
    return run_rows(kernel, op, x, x.size(dim), Tensor(), Tensor(), 0, stream);
  const Tensor shifted = sub(x, max(x, {dim}, true, stream), stream);
  const Tensor exps = exp(shifted, stream);
  const Tensor total = sum(exps, {dim}, true, stream);
  return logarithm ? sub(shifted, log(total, stream), stream) : div(exps, total, stream);
}

Tensor scale_and_shift(Tensor y, const Tensor& weight, const Tensor& bias, Stream& stream) {
  if (weight.defined()) y = mul(y, weight, stream);
  if (bias.defined()) y = add(y, bias, stream);
  return y;
}

Tensor layer_norm_of(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                     const Tensor& bias, double eps, Stream& stream) {
  const auto axes = normalized_axes("layer_norm", x, normalized_shape, weight, bias, eps, stream);
  const OpPlan plan = plan_for("layer_norm", x);
  const DType compute = plan.compute;
  if (compute != x.dtype())
    return cast(layer_norm_of(as_f32(x, stream), normalized_shape, as_f32(weight, stream),
                              as_f32(bias, stream), eps, stream),
                x.dtype(), stream);
  if (x.numel() == 0) return empty_beside(x, x.shape(), x.dtype());
  if (const RowwiseKernel kernel = fused_kernel(plan))
    return run_rows(kernel, "layer_norm", x, numel(normalized_shape), weight, bias, eps, stream);
  const Tensor centred = sub(x, mean(x, axes, true, stream), stream);
  const Tensor variance = mean(mul(centred, centred, stream), axes, true, stream);
  const Tensor scale = rsqrt(add(variance, full({}, eps, x.dtype(), stream), stream), stream);
  return scale_and_shift(mul(centred, scale, stream), weight, bias, stream);
}

Tensor rms_norm_of(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, double eps,
                   Stream& stream) {
  const auto axes = normalized_axes("rms_norm", x, normalized_shape, weight, Tensor(), eps, stream);
  const OpPlan plan = plan_for("rms_norm", x);
  if (plan.compute != x.dtype())
    return cast(
        rms_norm_of(as_f32(x, stream), normalized_shape, as_f32(weight, stream), eps, stream),
        x.dtype(), stream);
  if (x.numel() == 0) return empty_beside(x, x.shape(), x.dtype());
  if (const RowwiseKernel kernel = fused_kernel(plan))
    return run_rows(kernel, "rms_norm", x, numel(normalized_shape), weight, Tensor(), eps, stream);
  const Tensor square_mean = mean(mul(x, x, stream), axes, true, stream);
  const Tensor scale = rsqrt(add(square_mean, full({}, eps, x.dtype(), stream), stream), stream);
  return scale_and_shift(mul(x, scale, stream), weight, Tensor(), stream);
}

}  // namespace

// eps keeps the square root's argument above 0: a negative, NaN or infinite one turns finite
// input into NaN or zeros.
void check_eps(std::string_view op, const Tensor& x, double eps) {
  if (!(eps >= 0 && std::isfinite(eps)))
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of " + x.describe() + ": eps " +
                                                std::to_string(eps) + " is not finite and >= 0");
}

// The trailing axes that `normalized_shape` names, after checking x, weight and bias against it.
std::vector<int64_t> normalized_axes(std::string_view op, const Tensor& x,
                                     const Shape& normalized_shape, const Tensor& weight,
                                     const Tensor& bias, double eps, Stream& stream) {
  check_defined(op, x);
  check_stream(op, x, stream);
  check_eps(op, x, eps);
  const size_t n = normalized_shape.size(), rank = x.shape().size();
  if (n == 0 || n > rank ||
      !std::equal(normalized_shape.begin(), normalized_shape.end(),
                  x.shape().end() - static_cast<std::ptrdiff_t>(n)))
    throw Error(ErrorCode::InvalidArgument,
                std::string(op) + " of " + x.describe() + " over " + to_string(normalized_shape) +
                    ": the normalised shape must be one or more trailing dimensions of x");
  for (const Tensor* parameter : {&weight, &bias}) {
    if (!parameter->defined()) continue;
    check_same_device(op, x, *parameter);
    check_same_dtype(op, x, *parameter);
    if (parameter->shape() != normalized_shape)
      throw Error(ErrorCode::InvalidArgument,
                  std::string(op) + ": " + (parameter == &weight ? "weight " : "bias ") +
                      parameter->describe() + " must have the normalised shape " +
                      to_string(normalized_shape));
  }
  std::vector<int64_t> axes;
  for (size_t d = rank - n; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  return axes;
}

Tensor as_f32(const Tensor& t, Stream& stream) {
  return t.defined() ? cast(t, DType::f32, stream) : t;
}

}  // namespace ops

Tensor softmax(const Tensor& x, int64_t axis, Stream& stream) {
  if (autograd::recording({&x})) return autograd::record_softmax(x, axis, false, stream);
  const Tensor* operands[] = {&x};
  return ops::run_op("softmax", operands, stream, [axis](ops::OpInputs in, Stream& s) {
    return ops::softmax_of(*in[0], axis, false, s);
  });
}

Tensor log_softmax(const Tensor& x, int64_t axis, Stream& stream) {
  if (autograd::recording({&x})) return autograd::record_softmax(x, axis, true, stream);
  const Tensor* operands[] = {&x};
  return ops::run_op("log_softmax", operands, stream, [axis](ops::OpInputs in, Stream& s) {
    return ops::softmax_of(*in[0], axis, true, s);
  });
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, Stream& stream) {
  if (autograd::recording({&x, &weight, &bias}))
    return autograd::record_layer_norm(x, normalized_shape, weight, bias, eps, stream);
  const Tensor* operands[] = {&x, &weight, &bias};
  return ops::run_op("layer_norm", operands, stream,
                     [&normalized_shape, eps](ops::OpInputs in, Stream& s) {
                       return ops::layer_norm_of(*in[0], normalized_shape, *in[1], *in[2], eps, s);
                     });
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, double eps,
                Stream& stream) {
  if (autograd::recording({&x, &weight}))
    return autograd::record_rms_norm(x, normalized_shape, weight, eps, stream);
  const Tensor* operands[] = {&x, &weight};
  return ops::run_op("rms_norm", operands, stream,
                     [&normalized_shape, eps](ops::OpInputs in, Stream& s) {
                       return ops::rms_norm_of(*in[0], normalized_shape, *in[1], eps, s);
                     });
}

}  // namespace hal
