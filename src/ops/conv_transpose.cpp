// conv_transpose: the definition (operands, attributes, the output's sizes) and the plan every
// transposed convolution takes (conv_transpose, ONNX's ConvTranspose, conv's input gradient): the
// device's own where the op table lists one (oneDNN's deconvolution on the CPU, f32) and the
// window suits it (exact_pads_after), else one stride-1 conv per phase of the strides
// (transposed_conv.cpp).
#include <algorithm>
#include <optional>

#include "autograd/record.hpp"
#include "core/error_context.hpp"
#include "hal/backend.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/conv_checks.hpp"
#include "ops/fallback.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"
#include "ops/window.hpp"

namespace hal {
namespace ops {
namespace {

constexpr std::string_view kOp = "conv_transpose";

// The padding after each spatial dimension of the convolution from x_shape back to dz that
// makes its arithmetic exact, as a DNN library's deconvolution takes it: pads_after minus
// output_padding, negative where output_padding exceeds the padding (oneDNN takes down to one
// more than minus the stride, as PyTorch's oneDNN path passes it). nullopt past that, or for a
// negative padding before (ONNX's output_shape can ask for an output larger than the strides
// give): the phases take those.
std::optional<std::vector<int64_t>> exact_pads_after(const Tensor& dz, const Shape& x_shape,
                                                     const Window& w) {
  std::vector<int64_t> after;
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    const int64_t reach = (dz.size(static_cast<int64_t>(i) + 2) - 1) * w.strides[i] +
                          w.dilations[i] * (w.kernel[i] - 1) + 1;
    after.push_back(reach - w.pad_before[i] - x_shape[i + 2]);
    if (w.pad_before[i] < 0 || after.back() + w.strides[i] <= 0) return std::nullopt;
  }
  return after;
}

// On the device's own transposed convolution; false where its library refuses the window
// (having written nothing to `out`: the primitive is made before the launch; only the operands'
// conversions, if any, were enqueued).
bool by_device(const OpPlan& plan, const Tensor& dz_in, const Tensor& weight_in,
               const Tensor& bias_in, const Window& w, const std::vector<int64_t>& pads_after,
               int64_t groups, const Tensor& out, Stream& s) {
  const auto prepared = [&](const Tensor& t) {
    std::optional<Tensor> cast;
    return in_compute_dtype(t, plan, s, cast).contiguous(s);
  };
  const Tensor dz = prepared(dz_in), weight = prepared(weight_in);
  const Tensor bias = bias_in.defined() ? prepared(bias_in) : Tensor();
  ConvDesc desc;
  desc.dtype = plan.compute;
  desc.transposed = true;
  desc.groups = groups;
  desc.strides = w.strides;
  desc.dilations = w.dilations;
  desc.pads_before = w.pad_before;
  desc.pads_after = pads_after;
  bind_conv_operands(desc, dz, weight, bias, out);
  try {
    // A refusal is handled here (the phases take the window); any other error is the caller's.
    const detail::ErrorReportsMuted handled;
    std::get<ConvKernel>(plan.implementation->kernel)(desc, s);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Unsupported) {
      detail::report(error);
      throw;
    }
    return false;
  }
  return true;
}

}  // namespace

Tensor transposed_conv(const Tensor& dz, const Tensor& weight, const Tensor& bias,
                       const Shape& x_shape, const Window& w, int64_t groups, Stream& s) {
  DType dtype = promote_types(dz.dtype(), weight.dtype());
  if (bias.defined()) dtype = promote_types(dtype, bias.dtype());
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != x_shape[1]))
    invalid_conv(kOp, dz, weight,
                 "bias " + bias.describe() + " is not [" + std::to_string(x_shape[1]) +
                     "], one per output channel");
  const OpPlan plan = ops::plan(conv_transpose_descriptor(), dtype, device_of(dz).info());
  // DNN libraries take 1 to 3 spatial dimensions (ONNX's ConvTranspose may have more).
  if (plan.implementation && dz.dim() <= 5 && dz.numel() > 0 && weight.numel() > 0 &&
      numel(x_shape) > 0) {
    if (const auto pads_after = exact_pads_after(dz, x_shape, w)) {
      Tensor out = empty_beside(dz, x_shape, plan.compute);
      if (by_device(plan, dz, weight, bias, w, *pads_after, groups, out, s))
        return as_result(std::move(out), plan, s);
    }
  }
  return transposed_conv_by_phases(dz, weight, bias, x_shape, w, groups, s);
}

namespace {

// conv_transpose's window (that of the convolution from the result back to x) and result shape,
// after checking the operands and attributes; InvalidArgument naming what is wrong.
struct Geometry {
  Window window;
  Shape y_shape;
};
Geometry geometry_of(const Tensor& x, const Tensor& w, const Tensor& bias,
                     const ConvTransposeOptions& options, Stream& stream) {
  check_conv_operands(kOp, x, w, bias, stream);
  const auto spatial = static_cast<size_t>(x.dim() - 2);
  const int64_t channels = x.size(1), groups = options.groups;
  if (w.size(0) != channels)
    invalid_conv(kOp, x, w,
                 "the weights are [C, M/groups, K...] with C = x's " + std::to_string(channels) +
                     " channels");
  if (groups <= 0 || channels % groups != 0)
    invalid_conv(kOp, x, w, "groups " + std::to_string(groups) + " does not fit the channels");
  const int64_t features = w.size(1) * groups;
  check_conv_bias(kOp, x, w, bias, features);
  Geometry g;
  Window& win = g.window;
  win.strides = conv_attribute(kOp, x, w, options.strides, spatial, 1, 1, "strides");
  win.dilations = conv_attribute(kOp, x, w, options.dilations, spatial, 1, 1, "dilations");
  win.pad_before = conv_attribute(kOp, x, w, options.pads_before, spatial, 0, 0, "pads_before");
  win.pad_after = conv_attribute(kOp, x, w, options.pads_after, spatial, 0, 0, "pads_after");
  const std::vector<int64_t> output_padding =
      conv_attribute(kOp, x, w, options.output_padding, spatial, 0, 0, "output_padding");
  g.y_shape = {x.size(0), features};
  for (size_t i = 0; i < spatial; ++i) {
    const auto d = static_cast<int64_t>(i) + 2;
    const int64_t size = x.size(d), kernel = w.size(d);
    if (kernel <= 0) invalid_conv(kOp, x, w, "the weights' window is empty");
    if (output_padding[i] >= std::max(win.strides[i], win.dilations[i]))
      invalid_conv(kOp, x, w,
                   "output_padding " + to_string(output_padding) + ": " +
                       std::to_string(output_padding[i]) + " in spatial dimension " +
                       std::to_string(i) + " must lie below the stride " +
                       std::to_string(win.strides[i]) + " or the dilation " +
                       std::to_string(win.dilations[i]) + " of its dimension");
    // An expanded view's sizes can be near 2^63: the products are bounded first.
    const double reach = static_cast<double>(size - 1) * static_cast<double>(win.strides[i]) +
                         static_cast<double>(win.dilations[i]) * static_cast<double>(kernel - 1);
    if (reach > 0x1p62)
      invalid_conv(kOp, x, w,
                   "the output would have more than 2^62 elements along spatial dimension " +
                       std::to_string(i));
    const int64_t out = (size - 1) * win.strides[i] - win.pad_before[i] - win.pad_after[i] +
                        win.dilations[i] * (kernel - 1) + output_padding[i] + 1;
    if (out <= 0)
      invalid_conv(kOp, x, w,
                   "the output would have no elements along spatial dimension " +
                       std::to_string(i) + " (the padding exceeds what the window spans)");
    g.y_shape.push_back(out);
    win.kernel.push_back(kernel);
    win.out.push_back(size);
  }
  return g;
}

Tensor conv_transpose_of(const Tensor& x, const Tensor& w, const Tensor& bias,
                         const ConvTransposeOptions& options, Stream& s) {
  const Geometry g = geometry_of(x, w, bias, options, s);
  DType dtype = promote_types(x.dtype(), w.dtype());
  if (bias.defined()) dtype = promote_types(dtype, bias.dtype());
  const OpPlan plan = plan_or_throw(conv_transpose_descriptor(), dtype, {&x, &w});
  if (numel(g.y_shape) == 0) return empty_beside(x, g.y_shape, plan.result);
  return transposed_conv(x, w, bias, g.y_shape, g.window, options.groups, s);
}

}  // namespace
}  // namespace ops

Tensor conv_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const ConvTransposeOptions& options, Stream& stream) {
  if (autograd::recording({&x, &weight, &bias}))
    return autograd::record_conv_transpose(x, weight, bias, options, stream);
  std::vector<const Tensor*> inputs{&x, &weight};
  if (bias.defined()) inputs.push_back(&bias);
  const bool has_bias = bias.defined();
  return ops::run_op(
      ops::kOp, inputs, stream, [&options, has_bias](ops::OpInputs operands, Stream& s) {
        return ops::conv_transpose_of(*operands[0], *operands[1],
                                      has_bias ? *operands[2] : Tensor(), options, s);
      });
}

}  // namespace hal
