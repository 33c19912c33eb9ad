// conv: the definition (shapes, groups, window arithmetic) and the convolution the op table
// plans (the stream's backend's DNN library: oneDNN on the CPU; f16 and bf16 in f32).
#include "autograd/record.hpp"
#include "hal/backend.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/conv_checks.hpp"
#include "ops/elementwise.hpp"
#include "ops/fallback.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"
#include "ops/window.hpp"

namespace hal {
namespace {

constexpr std::string_view kOp = "conv";

Tensor conv_of(const Tensor& x_in, const Tensor& w_in, const Tensor& bias_in,
               const ConvOptions& options, Stream& stream) {
  ops::check_conv_operands(kOp, x_in, w_in, bias_in, stream);
  ops::check_conv_bias(kOp, x_in, w_in, bias_in, w_in.size(0));
  DType dtype = promote_types(x_in.dtype(), w_in.dtype());
  if (bias_in.defined()) dtype = promote_types(dtype, bias_in.dtype());
  const ops::OpPlan plan = ops::plan_or_throw(ops::conv_descriptor(), dtype, {&x_in, &w_in});
  const auto spatial = static_cast<size_t>(x_in.dim() - 2);
  const int64_t batch = x_in.size(0), channels = x_in.size(1), features = w_in.size(0);
  const int64_t groups = options.groups;
  if (groups <= 0 || channels % groups != 0 || features % groups != 0 ||
      w_in.size(1) != channels / groups)
    ops::invalid_conv(kOp, x_in, w_in,
                      "groups " + std::to_string(groups) + " does not fit the channels");
  ConvDesc desc;
  desc.dtype = plan.compute;
  desc.groups = groups;
  desc.strides = ops::conv_attribute(kOp, x_in, w_in, options.strides, spatial, 1, 1, "strides");
  desc.dilations =
      ops::conv_attribute(kOp, x_in, w_in, options.dilations, spatial, 1, 1, "dilations");
  desc.pads_before =
      ops::conv_attribute(kOp, x_in, w_in, options.pads_before, spatial, 0, 0, "pads_before");
  desc.pads_after =
      ops::conv_attribute(kOp, x_in, w_in, options.pads_after, spatial, 0, 0, "pads_after");
  Shape out_shape{batch, features};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t size = x_in.size(static_cast<int64_t>(i) + 2);
    const int64_t kernel = w_in.size(static_cast<int64_t>(i) + 2);
    const int64_t room =
        size + desc.pads_before[i] + desc.pads_after[i] - desc.dilations[i] * (kernel - 1) - 1;
    if (kernel <= 0 || room < 0)
      ops::invalid_conv(kOp, x_in, w_in, "the window is larger than the padded input");
    out_shape.push_back(room / desc.strides[i] + 1);
  }
  const Tensor& r = options.residual;
  if (r.defined() && (!(r.device() == x_in.device()) || r.shape() != out_shape))
    ops::invalid_conv(kOp, x_in, w_in,
                      "the residual " + r.describe() + " is not the result's " +
                          to_string(out_shape) + " on " + x_in.device().id());
  const auto prepared = [&](const Tensor& t) {
    std::optional<Tensor> cast;
    return ops::in_compute_dtype(t, plan, stream, cast).contiguous(stream);
  };
  if (numel(out_shape) == 0) return ops::empty_beside(x_in, out_shape, plan.result);
  if (!plan.implementation) {
    // No convolution of the device's own in this dtype: im2col and matmul.
    ops::Window window{Shape(w_in.shape().begin() + 2, w_in.shape().end()),
                       desc.strides,
                       desc.dilations,
                       desc.pads_before,
                       desc.pads_after,
                       Shape(out_shape.begin() + 2, out_shape.end())};
    Tensor y = ops::conv_from_matmul(prepared(x_in), prepared(w_in),
                                     bias_in.defined() ? prepared(bias_in) : Tensor(), window,
                                     groups, stream);
    if (r.defined()) y = add(y, prepared(r), stream);
    if (options.relu) y = relu(y, stream);
    return ops::as_result(std::move(y), plan, stream);
  }
  Tensor out = ops::empty_beside(x_in, out_shape, plan.compute);
  if (out.numel() == 0) return ops::as_result(std::move(out), plan, stream);
  const Tensor x = prepared(x_in), w = prepared(w_in);
  const Tensor bias = bias_in.defined() ? prepared(bias_in) : Tensor();
  ops::bind_conv_operands(desc, x, w, bias, out);
  // A converted or copied w is this call's own: nothing to keep.
  desc.constant_weights = options.constant_weights && w.storage().impl() == w_in.storage().impl();
  desc.relu = options.relu;
  if (r.defined()) {
    const Tensor sum = prepared(r);
    desc.sum = sum.storage().impl();
    desc.sum_offset = static_cast<uint64_t>(sum.offset());
  }
  std::get<ops::ConvKernel>(plan.implementation->kernel)(desc, stream);
  return ops::as_result(std::move(out), plan, stream);
}

}  // namespace

Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvOptions& options,
            Stream& stream) {
  if (autograd::recording({&x, &weight, &bias, &options.residual}))
    return autograd::record_conv(x, weight, bias, options, stream);
  // The residual travels with the operands, so that CPU fallback moves it too.
  std::vector<const Tensor*> inputs{&x, &weight};
  if (bias.defined()) inputs.push_back(&bias);
  if (options.residual.defined()) inputs.push_back(&options.residual);
  const bool has_bias = bias.defined();
  return ops::run_op(
      "conv", inputs, stream, [&options, has_bias](ops::OpInputs operands, Stream& s) {
        ConvOptions moved = options;
        if (moved.residual.defined()) moved.residual = *operands.back();
        return conv_of(*operands[0], *operands[1], has_bias ? *operands[2] : Tensor(), moved, s);
      });
}

}  // namespace hal
