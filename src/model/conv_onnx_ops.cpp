// Convolution and pooling from views: each kernel offset is one strided slice of the padded
// input. Conv stacks the slices (im2col) and multiplies by the weights through the device's BLAS,
// unless the device has a convolution of its own (hal::conv: oneDNN on the CPU); MaxPool and
// AveragePool reduce over the slices elementwise. Any number of spatial dimensions.
#include <algorithm>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"
#include "ops/window.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

using ops::Window;

std::vector<int64_t> or_ones(std::vector<int64_t> values, size_t count) {
  if (values.empty()) values.assign(count, 1);
  return values;
}

// ONNX's rules for auto_pad and explicit pads, then hal's window (ops/window.hpp) with
// ceil_mode; `kernel` from the weights or the attribute.
Window window_of(const OpContext& ctx, const Tensor& x, std::vector<int64_t> kernel, bool pooling) {
  if (x.dim() < 3) ctx.invalid("expects [N, C, D1, ...], got " + to_string(x.shape()));
  const auto spatial = static_cast<size_t>(x.dim() - 2);
  if (kernel.size() != spatial)
    ctx.invalid("kernel_shape " + to_string(kernel) + " does not match input " +
                to_string(x.shape()));
  const std::vector<int64_t> strides = or_ones(ctx.attr_ints("strides"), spatial);
  const std::vector<int64_t> dilations = or_ones(ctx.attr_ints("dilations"), spatial);
  std::vector<int64_t> pads = ctx.attr_ints("pads");
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial)
    ctx.invalid("strides, dilations or pads do not match " + std::to_string(spatial) +
                " spatial dimensions");
  std::vector<int64_t> before(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(spatial));
  std::vector<int64_t> after(pads.begin() + static_cast<std::ptrdiff_t>(spatial), pads.end());
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i) {
      if (strides[i] < 1 || dilations[i] < 1) ctx.invalid("strides and dilations must be >= 1");
      const int64_t size = x.size(static_cast<int64_t>(i) + 2);
      const int64_t span = dilations[i] * (kernel[i] - 1) + 1;
      const int64_t out = (size + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>((out - 1) * strides[i] + span - size, 0);
      before[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      after[i] = total - before[i];
    }
  } else if (auto_pad == "VALID") {
    std::fill(before.begin(), before.end(), 0);
    std::fill(after.begin(), after.end(), 0);
  } else if (auto_pad != "NOTSET") {
    ctx.invalid("auto_pad '" + auto_pad + "'");
  }
  const bool ceil_mode = pooling && ctx.attr_int("ceil_mode", 0) != 0;
  return ops::window_of(ctx.node().op_type, x, kernel, strides, dilations, before, after,
                        ceil_mode);
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
  return {finish(ops::conv_from_matmul(x, weight, bias, w, groups, s))};
}

// ConvTranspose: the input gradient of the convolution it is the transpose of
// (ops::transposed_conv: the device's own where it has one, else a convolution per phase of the
// strides).
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
  // ONNX lets output_shape name the spatial sizes alone or lead them with N and C: its last
  // `spatial` values are used.
  if (!output_shape.empty() && output_shape.size() < spatial)
    ctx.invalid("output_shape " + to_string(output_shape) + " has fewer values than the input's " +
                std::to_string(spatial) + " spatial dimensions");
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
  } else {
    // The pads as given: ONNX's are >= 0 (a negative one cropped the output, and near INT64_MIN
    // overflowed the padding worked out below). Those worked out above may be negative: an
    // output_shape larger than the strides give.
    for (const int64_t pad : pads)
      if (pad < 0 || pad > kLimit)
        ctx.invalid("pads " + to_string(pads) + " must lie in [0, " + std::to_string(kLimit) + "]");
  }
  // The convolution whose input gradient this is: of an input of the output's size, the
  // pads in front as given, producing x's sizes.
  Window w;
  w.kernel = kernel;
  w.strides = strides;
  w.dilations = dilations;
  Shape y_shape{x.size(0), weight.size(1) * groups};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t size = strides[i] * (x.size(static_cast<int64_t>(i) + 2) - 1) +
                         output_padding[i] + dilations[i] * (kernel[i] - 1) + 1 - pads[i] -
                         pads[i + spatial];
    if (size <= 0)
      ctx.invalid("the output would have no elements along spatial dimension " + std::to_string(i));
    y_shape.push_back(size);
    w.pad_before.push_back(pads[i]);
    w.out.push_back(x.size(static_cast<int64_t>(i) + 2));
  }
  const Tensor bias = given(in, 2) ? in[2] : Tensor();
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != y_shape[1]))
    ctx.invalid("bias " + to_string(bias.shape()) + " is not [" + std::to_string(y_shape[1]) +
                "], one per output channel");
  return {ops::transposed_conv(x, weight, bias, y_shape, w, groups, s)};
}

// hal's pooling where it takes the dtype and rank (floating, 1 to 3 spatial dimensions), else
// the same from views (integers, more dimensions).
PoolOptions pool_options(const Window& w, bool count_include_pad) {
  PoolOptions options;
  options.kernel = w.kernel;
  options.strides = w.strides;
  options.dilations = w.dilations;
  options.pads_before = w.pad_before;
  options.pads_after = w.pad_after;
  // The window's output sizes already include ceil_mode; hal works them out again from it.
  options.count_include_pad = count_include_pad;
  return options;
}

bool pooled_by_hal(const Tensor& x) {
  return x.dim() <= 5 && (x.dtype() == DType::f32 || x.dtype() == DType::f64 ||
                          x.dtype() == DType::f16 || x.dtype() == DType::bf16);
}

// MaxPool's Indices: per window, the flat position in X (row-major; with storage_order 1 the
// spatial axes column-major, as onnxruntime numbers them) of the first element in the window's
// scan order that holds its maximum (`values`): onnxruntime keeps the first of equal maxima.
// Where hal's maximum is NaN, the first NaN. Padding is never picked: a window wholly in the
// padding (dilations allow one) gives -1, not a position of another plane.
Tensor max_pool_indices(const OpContext& ctx, const Tensor& x, const Tensor& values,
                        const Window& w) {
  Stream& s = ctx.stream();
  const bool column_major = ctx.attr_int("storage_order", 0) != 0;
  Shape plane_shape{1, 1};
  int64_t plane = 1;
  for (int64_t d = 2; d < x.dim(); ++d) {
    plane_shape.push_back(x.size(d));
    plane *= x.size(d);
  }
  // Each position's index in its [N, C] plane, the positions walked row-major.
  std::vector<int64_t> positions(static_cast<size_t>(plane));
  std::vector<int64_t> coordinate(static_cast<size_t>(x.dim() - 2), 0);
  for (int64_t p = 0; p < plane; ++p) {
    int64_t index = 0, stride = 1;
    for (size_t d = 0; d < coordinate.size(); ++d) {
      const size_t axis = column_major ? d : coordinate.size() - 1 - d;
      index += coordinate[axis] * stride;
      stride *= x.size(static_cast<int64_t>(axis) + 2);
    }
    positions[static_cast<size_t>(p)] = index;
    for (size_t d = coordinate.size(); d-- > 0;) {
      if (++coordinate[d] < x.size(static_cast<int64_t>(d) + 2)) break;
      coordinate[d] = 0;
    }
  }
  std::vector<Tensor> elements, places;
  ops::for_each_offset(ops::padded(x, w, 0.0, s), w,
                       [&](const Tensor& view) { elements.push_back(view); });
  ops::for_each_offset(ops::padded(from_vector(positions, plane_shape, s), w, -1.0, s), w,
                       [&](const Tensor& view) { places.push_back(view); });
  const Tensor none = full({}, -1, DType::i64, s);
  const Tensor nan_max = is_floating(x.dtype()) ? ne(values, values, s) : Tensor();
  Tensor found, index = full(values.shape(), -1, DType::i64, s);
  for (size_t k = 0; k < elements.size(); ++k) {
    Tensor hit = eq(elements[k], values, s);
    if (nan_max.defined())
      hit = logical_or_of(hit, logical_and_of(ne(elements[k], elements[k], s), nan_max, s), s);
    hit = logical_and_of(hit, ne(places[k], none, s), s);
    const Tensor first = found.defined()
                             ? logical_and_of(hit, eq(found, full({}, 0, DType::boolean, s), s), s)
                             : hit;
    index = where(first, places[k], index, s);
    found = found.defined() ? logical_or_of(found, hit, s) : hit;
  }
  // Then the planes before: (n * C + c) * plane.
  Shape planes_shape{x.size(0), x.size(1)};
  planes_shape.resize(static_cast<size_t>(x.dim()), 1);
  const Tensor planes = mul(
      arange(0, static_cast<double>(x.size(0) * x.size(1)), 1, DType::i64, s).reshape(planes_shape),
      full({}, plane, DType::i64, s), s);
  return where(found, add(index, planes, s), index, s);
}

Outputs max_pool(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const Window w = window_of(ctx, x, ctx.attr_ints("kernel_shape"), true);
  Tensor values;
  if (pooled_by_hal(x)) {
    PoolOptions options = pool_options(w, false);
    options.ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
    values = hal::max_pool(x, options, s);
  } else {
    values = ops::max_pool_from_views(x, w, s);
  }
  if (ctx.node().outputs.size() < 2 || ctx.node().outputs[1].empty()) return {values};
  return {values, max_pool_indices(ctx, x, values, w)};
}

// The mean of each window: with count_include_pad the pads count, explicit ones and those
// auto_pad SAME_UPPER/SAME_LOWER chose alike (as ONNX's reference and onnxruntime count them),
// never ceil_mode's extra end.
Outputs average_pool(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const Window w = window_of(ctx, x, ctx.attr_ints("kernel_shape"), true);
  const bool include = ctx.attr_int("count_include_pad", 0) != 0;
  if (!pooled_by_hal(x)) return {ops::avg_pool_from_views(x, w, include, s)};
  PoolOptions options = pool_options(w, include);
  options.ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  return {hal::avg_pool(x, options, s)};
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
