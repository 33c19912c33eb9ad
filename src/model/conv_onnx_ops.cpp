// Convolution and pooling from views: each kernel offset is one strided slice of the padded
// input. Conv stacks the slices (im2col) and multiplies by the weights through the device's BLAS,
// unless the device has a convolution of its own (hal::conv: oneDNN on the CPU); MaxPool and
// AveragePool reduce over the slices elementwise. Any number of spatial dimensions.
#include <limits>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

// Per spatial dimension: the window, its placement and the output's size.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pad_before, pad_after, out;
  int64_t offsets() const {
    int64_t count = 1;
    for (int64_t k : kernel) count *= k;
    return count;
  }
};

std::vector<int64_t> or_ones(std::vector<int64_t> values, size_t count) {
  if (values.empty()) values.assign(count, 1);
  return values;
}

// ONNX's rules for auto_pad, explicit pads and ceil_mode; `kernel` from the weights or the
// attribute.
Window window_of(const OpContext& ctx, const Tensor& x, std::vector<int64_t> kernel, bool pooling) {
  if (x.dim() < 3) ctx.invalid("expects [N, C, D1, ...], got " + to_string(x.shape()));
  const auto spatial = static_cast<size_t>(x.dim() - 2);
  if (kernel.size() != spatial)
    ctx.invalid("kernel_shape " + to_string(kernel) + " does not match input " +
                to_string(x.shape()));
  Window w;
  w.kernel = std::move(kernel);
  w.strides = or_ones(ctx.attr_ints("strides"), spatial);
  w.dilations = or_ones(ctx.attr_ints("dilations"), spatial);
  std::vector<int64_t> pads = ctx.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (w.strides.size() != spatial || w.dilations.size() != spatial || pads.size() != 2 * spatial)
    ctx.invalid("strides, dilations or pads do not match " + std::to_string(spatial) +
                " spatial dimensions");
  // Sizes a window can have: positive, and small enough that no product of them overflows.
  constexpr int64_t kLimit = int64_t{1} << 24;
  auto check = [&](const std::vector<int64_t>& values, const char* name, int64_t low) {
    for (int64_t v : values)
      if (v < low || v > kLimit)
        ctx.invalid(std::string(name) + " " + to_string(values) + " must lie in [" +
                    std::to_string(low) + ", " + std::to_string(kLimit) + "]");
  };
  check(w.kernel, "kernel_shape", 1);
  check(w.strides, "strides", 1);
  check(w.dilations, "dilations", 1);
  check(pads, "pads", 0);
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  const bool ceil_mode = pooling && ctx.attr_int("ceil_mode", 0) != 0;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t size = x.size(static_cast<int64_t>(i) + 2);
    const int64_t span = w.dilations[i] * (w.kernel[i] - 1) + 1;
    int64_t before = pads[i], after = pads[i + spatial];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (size + w.strides[i] - 1) / w.strides[i];
      const int64_t total = std::max<int64_t>((out - 1) * w.strides[i] + span - size, 0);
      before = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      after = total - before;
    } else if (auto_pad == "VALID") {
      before = after = 0;
    } else if (auto_pad != "NOTSET") {
      ctx.invalid("auto_pad '" + auto_pad + "'");
    }
    const int64_t room = size + before + after - span;
    if (room < 0) ctx.invalid("the window is larger than the padded input " + to_string(x.shape()));
    int64_t out = (ceil_mode ? (room + w.strides[i] - 1) / w.strides[i] : room / w.strides[i]) + 1;
    // A last window that would start in the end padding is dropped (PyTorch and ONNX agree).
    if (ceil_mode && (out - 1) * w.strides[i] >= size + before) --out;
    w.pad_before.push_back(before);
    w.pad_after.push_back(after);
    w.out.push_back(out);
  }
  return w;
}

// The input padded so that every window fits, ceil_mode's extra end included, with `value`.
Tensor padded(const OpContext& ctx, const Tensor& x, const Window& w, double value) {
  std::vector<int64_t> before{0, 0}, after{0, 0};
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    const int64_t size = x.size(static_cast<int64_t>(i) + 2);
    const int64_t needed = (w.out[i] - 1) * w.strides[i] + w.dilations[i] * (w.kernel[i] - 1) + 1;
    before.push_back(w.pad_before[i]);
    after.push_back(std::max(w.pad_after[i], needed - size - w.pad_before[i]));
  }
  return pad_constant(ctx, x, before, after, value);
}

// Calls fn(slice) for each kernel offset, row-major: the padded input seen at that offset of
// every window, [N, C, out...].
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

// The convolution itself, for a window already worked out: im2col from the padded input's
// strided views, then one matrix product per group.
Tensor convolve(const OpContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
                const Window& w, int64_t groups) {
  Stream& s = ctx.stream();
  const int64_t batch = x.size(0), channels = x.size(1), features = weight.size(0);
  const Tensor input = padded(ctx, x, w, 0.0);
  std::vector<Tensor> columns;
  for_each_offset(input, w, [&](const Tensor& view) { columns.push_back(view.unsqueeze(2)); });
  int64_t positions = 1;
  for (int64_t out : w.out) positions *= out;
  // [N, C, offsets, out...] -> [N, C * offsets, positions]: the weights' own order per feature.
  const Tensor patches =
      concat(ctx, columns, 2).reshape({batch, channels * w.offsets(), positions});
  const int64_t per_group = channels / groups * w.offsets();
  const int64_t features_per_group = features / groups;
  const Tensor flat_weight = weight.contiguous(s).reshape({features, per_group});
  std::vector<Tensor> results;
  for (int64_t g = 0; g < groups; ++g) {
    const Tensor w_g = flat_weight.slice(0, g * features_per_group, (g + 1) * features_per_group);
    const Tensor p_g = patches.slice(1, g * per_group, (g + 1) * per_group);
    results.push_back(matmul(w_g, p_g, s));  // [N, M/g, positions]
  }
  Tensor y = groups == 1 ? results[0] : concat(ctx, results, 1);
  if (bias.defined()) y = add(y, bias.reshape({features, 1}), s);
  Shape shape{batch, features};
  shape.insert(shape.end(), w.out.begin(), w.out.end());
  return y.reshape(shape);
}

Outputs conv(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const Tensor& weight = in.at(1);
  if (x.dim() < 3) ctx.invalid("expects [N, C, D1, ...], got " + to_string(x.shape()));
  if (weight.dim() != x.dim())
    ctx.invalid("weights " + to_string(weight.shape()) + " do not match input " +
                to_string(x.shape()));
  const Shape kernel(weight.shape().begin() + 2, weight.shape().end());
  const std::vector<int64_t> declared = ctx.attr_ints("kernel_shape");
  if (!declared.empty() && declared != kernel)
    ctx.invalid("kernel_shape " + to_string(declared) + " differs from the weights' " +
                to_string(kernel));
  const Window w = window_of(ctx, x, kernel, false);
  const int64_t groups = ctx.attr_int("group", 1);
  const int64_t channels = x.size(1), features = weight.size(0);
  if (groups <= 0 || channels % groups != 0 || features % groups != 0 ||
      weight.size(1) != channels / groups)
    ctx.invalid("group " + std::to_string(groups) + " does not fit input " + to_string(x.shape()) +
                " and weights " + to_string(weight.shape()));
  const Tensor bias = given(in, 2) ? in[2] : Tensor();
  // Nodes fused in at load (fusion.hpp): a residual Add (input 3) and a Relu after it.
  const std::string& fused = ctx.node().fused;
  const bool relu = fused == "Relu" || fused == "Add+Relu";
  const Tensor residual = given(in, 3) ? in[3] : Tensor();
  Stream& s = ctx.stream();
  const auto finish = [&](Tensor y) {  // what the device's convolution did not apply
    if (residual.defined()) y = add(y, residual, s);
    return relu ? hal::relu(y, s) : y;
  };
  if (x.dim() <= 5 && supports_op(x.device(), "conv", promote_types(x.dtype(), weight.dtype()))) {
    // The device's own convolution (oneDNN on the CPU) where it has one.
    ConvOptions options;
    options.strides = w.strides;
    options.dilations = w.dilations;
    options.pads_before = w.pad_before;
    options.pads_after = w.pad_after;
    options.groups = groups;
    options.constant_weights = ctx.constant_input(1);
    Shape shape{x.size(0), features};
    shape.insert(shape.end(), w.out.begin(), w.out.end());
    // An Add that broadcasts the result to another shape runs as its own op.
    if (!residual.defined() || (residual.shape() == shape && residual.dtype() == x.dtype())) {
      options.relu = relu;
      options.residual = residual;
      return {hal::conv(x, weight, bias, options, s)};
    }
    return {finish(hal::conv(x, weight, bias, options, s))};
  }
  return {finish(convolve(ctx, x, weight, bias, w, groups))};
}

// x with s - 1 zeros between its elements along dimension d: each element and its zeros side
// by side in a new dimension, merged, the trailing zeros cut.
Tensor dilate(const OpContext& ctx, const Tensor& x, int64_t d, int64_t stride) {
  if (stride == 1 || x.size(d) == 0) return x;
  Shape zeros_shape = x.shape();
  zeros_shape.insert(zeros_shape.begin() + d + 1, stride - 1);
  const Tensor spread =
      concat(ctx, {x.unsqueeze(d + 1), full(zeros_shape, 0, x.dtype(), ctx.stream())}, d + 1);
  Shape merged = x.shape();
  merged[static_cast<size_t>(d)] *= stride;
  return spread.reshape(merged).slice(d, 0, (x.size(d) - 1) * stride + 1);
}

// ConvTranspose as the convolution it is the transpose of: the input dilated by the strides, the
// kernel flipped and its in/out channels swapped per group, padded by the span less the pads.
Outputs conv_transpose(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  const Tensor& weight = in.at(1);
  if (x.dim() < 3) ctx.invalid("expects [N, C, D1, ...], got " + to_string(x.shape()));
  if (weight.dim() != x.dim() || weight.size(0) != x.size(1))
    ctx.invalid("weights " + to_string(weight.shape()) + " do not match input " +
                to_string(x.shape()));
  const auto spatial = static_cast<size_t>(x.dim() - 2);
  const int64_t groups = ctx.attr_int("group", 1);
  if (groups <= 0 || x.size(1) % groups != 0)
    ctx.invalid("group " + std::to_string(groups) + " does not divide " +
                std::to_string(x.size(1)) + " channels");
  constexpr int64_t kLimit = int64_t{1} << 24;
  auto attr = [&](const char* name, int64_t fallback, int64_t low) {
    std::vector<int64_t> values = ctx.attr_ints(name);
    if (values.empty()) values.assign(spatial, fallback);
    if (values.size() != spatial)
      ctx.invalid(std::string(name) + " does not match the input's rank");
    for (int64_t v : values)
      if (v < low || v > kLimit)
        ctx.invalid(std::string(name) + " " + to_string(values) + " is out of range");
    return values;
  };
  const auto strides = attr("strides", 1, 1), dilations = attr("dilations", 1, 1);
  const auto output_padding = attr("output_padding", 0, 0);
  const Shape kernel(weight.shape().begin() + 2, weight.shape().end());
  std::vector<int64_t> pads = ctx.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (pads.size() != 2 * spatial) ctx.invalid("pads do not match the input's rank");
  const std::vector<int64_t> output_shape = ctx.attr_ints("output_shape");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t size = x.size(static_cast<int64_t>(i) + 2);
      const int64_t wanted = output_shape.empty() ? size * strides[i]
                                                  : output_shape[output_shape.size() - spatial + i];
      const int64_t total =
          strides[i] * (size - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1 - wanted;
      // ONNX's rule in Python's floor division: a negative total (an output larger than the
      // strides give) extends the end, or the start under SAME_UPPER.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      const bool upper = auto_pad == "SAME_UPPER";
      pads[i] = upper ? half : total - half;
      pads[i + spatial] = total - pads[i];
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  Tensor input = x;
  for (size_t i = 0; i < spatial; ++i)
    input = dilate(ctx, input, static_cast<int64_t>(i) + 2, strides[i]);
  // [C_in, C_out/g, K...] flipped -> [g, C_in/g, C_out/g, K...] -> [C_out, C_in/g, K...]
  Tensor flipped = weight;
  for (size_t i = 0; i < spatial; ++i) {
    std::vector<int64_t> reversed;
    for (int64_t k = kernel[i] - 1; k >= 0; --k) reversed.push_back(k);
    flipped = take(ctx, flipped, static_cast<int64_t>(i) + 2, reversed);
  }
  const int64_t in_per_group = x.size(1) / groups, out_per_group = weight.size(1);
  Shape grouped{groups, in_per_group, out_per_group};
  grouped.insert(grouped.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> swap{0, 2, 1};
  for (size_t i = 0; i < spatial; ++i) swap.push_back(static_cast<int64_t>(i) + 3);
  Shape conv_shape{groups * out_per_group, in_per_group};
  conv_shape.insert(conv_shape.end(), kernel.begin(), kernel.end());
  const Tensor conv_weight =
      flipped.contiguous(s).reshape(grouped).permute(swap).contiguous(s).reshape(conv_shape);
  Window w;
  w.kernel = kernel;
  w.strides.assign(spatial, 1);
  w.dilations = dilations;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t span = dilations[i] * (kernel[i] - 1);
    w.pad_before.push_back(span - pads[i]);
    w.pad_after.push_back(span - pads[i + spatial] + output_padding[i]);
    const int64_t out =
        input.size(static_cast<int64_t>(i) + 2) + w.pad_before[i] + w.pad_after[i] - span;
    if (out <= 0)
      ctx.invalid("the output would have no elements along spatial dimension " + std::to_string(i));
    w.out.push_back(out);
  }
  const Tensor bias = given(in, 2) ? in[2] : Tensor();
  return {convolve(ctx, input, conv_weight, bias, w, groups)};
}

Outputs max_pool(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  if (ctx.node().outputs.size() > 1 && !ctx.node().outputs[1].empty())
    ctx.unsupported("the Indices output");
  const Window w = window_of(ctx, x, ctx.attr_ints("kernel_shape"), true);
  double lowest = -std::numeric_limits<double>::infinity();
  if (x.dtype() == DType::u8) lowest = 0;
  if (x.dtype() == DType::i8) lowest = std::numeric_limits<int8_t>::lowest();
  if (x.dtype() == DType::i32) lowest = std::numeric_limits<int32_t>::lowest();
  if (x.dtype() == DType::i64) lowest = static_cast<double>(std::numeric_limits<int64_t>::lowest());
  Tensor result;
  for_each_offset(padded(ctx, x, w, lowest), w, [&](const Tensor& view) {
    result = result.defined() ? maximum(result, view, s) : view.contiguous(s);
  });
  return {result};
}

// The mean of each window: its sum over the count of elements it covers, the padding counted
// or not (count_include_pad); a ones tensor pooled the same way gives the counts.
Outputs average_pool(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const Window w = window_of(ctx, x, ctx.attr_ints("kernel_shape"), true);
  Tensor total;
  for_each_offset(padded(ctx, x, w, 0.0), w, [&](const Tensor& view) {
    total = total.defined() ? add(total, view, s) : view.contiguous(s);
  });
  Shape ones_shape{1, 1};
  for (int64_t d = 2; d < x.dim(); ++d) ones_shape.push_back(x.size(d));
  Tensor ones = full(ones_shape, 1.0, x.dtype(), s);
  if (ctx.attr_int("count_include_pad", 0) != 0 &&
      ctx.attr_string("auto_pad", "NOTSET") == "NOTSET") {
    // Explicit pads count; ceil_mode's extra end does not.
    std::vector<int64_t> before{0, 0}, after{0, 0};
    before.insert(before.end(), w.pad_before.begin(), w.pad_before.end());
    after.insert(after.end(), w.pad_after.begin(), w.pad_after.end());
    ones = pad_constant(ctx, ones, before, after, 1.0);
    Window inner = w;
    std::fill(inner.pad_before.begin(), inner.pad_before.end(), 0);
    std::fill(inner.pad_after.begin(), inner.pad_after.end(), 0);
    ones = padded(ctx, ones, inner, 0.0);
  } else {
    ones = padded(ctx, ones, w, 0.0);
  }
  Tensor count;
  for_each_offset(ones, w, [&](const Tensor& view) {
    count = count.defined() ? add(count, view, s) : view.contiguous(s);
  });
  return {div(total, count, s)};
}

}  // namespace

std::vector<OnnxOp> conv_onnx_ops() {
  return {
      {"Conv", 1, conv},
      {"ConvTranspose", 1, conv_transpose},
      {"MaxPool", 1, max_pool},
      {"AveragePool", 1, average_pool},
  };
}

}  // namespace hal::model
