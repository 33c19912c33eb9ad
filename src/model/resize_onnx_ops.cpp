// ONNX's resizing ops, Resize and Upsample, as separable interpolation: one axis after another,
// the host works out which source positions each output position reads along that axis and
// with what weights (ONNX's coordinate transforms and kernels); take() gathers those slices and
// a weighted sum over them gives the axis, so it runs wherever take, concat, mul and sum run.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string_view>

#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"
#include "tensor/element_codec.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

enum class Mode { nearest, linear, cubic };
enum class Coordinates {
  half_pixel,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize
};
// `simple` is what Resize before opset 11 and Upsample round with: the spec is silent, and
// onnxruntime floors when upsampling and takes the ceiling when downsampling.
enum class Rounding { round_prefer_floor, round_prefer_ceil, floor, ceil, simple };

struct Method {
  Mode mode = Mode::nearest;
  Coordinates coordinates = Coordinates::asymmetric;
  Rounding rounding = Rounding::simple;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
};

// One axis of the resize. `resized` is the output length the coordinate transforms divide by:
// with scales given it is unrounded (input * scale, times the roi's span when cropping), as
// ONNX's reference computes it.
struct Axis {
  int64_t in = 0;
  int64_t out = 0;
  double scale = 1;
  double resized = 0;
  double roi_start = 0;
  double roi_end = 1;
};

// Per output position, `taps` source positions (picks, tap-major) and their weights. Positions
// outside the crop (tf_crop_and_resize) pick a slice of the extrapolation value appended to the
// input along the axis (position `in`): a take, where not every device has `where`.
struct AxisPlan {
  int64_t taps = 1;
  std::vector<int64_t> picks;
  std::vector<double> weights;
  bool extended = false;
};

template <class Enum>
Enum parse(const OpContext& ctx, const std::string& attribute, const std::string& value,
           std::initializer_list<std::pair<std::string_view, Enum>> names) {
  for (const auto& [name, code] : names)
    if (value == name) return code;
  ctx.invalid(attribute + " '" + value + "' is not one ONNX defines at opset " +
              std::to_string(ctx.opset()));
}

Method method_from_attributes(const OpContext& ctx) {
  Method method;
  const std::string mode = ctx.attr_string("mode", "nearest");
  if (ctx.opset() < 11) {  // Upsample and Resize-10: asymmetric, nearest or linear
    method.mode =
        parse<Mode>(ctx, "mode", mode, {{"nearest", Mode::nearest}, {"linear", Mode::linear}});
    return method;
  }
  method.mode =
      parse<Mode>(ctx, "mode", mode,
                  {{"nearest", Mode::nearest}, {"linear", Mode::linear}, {"cubic", Mode::cubic}});
  const std::string coordinates = ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctx.opset() < 13 && coordinates == "tf_half_pixel_for_nn")
    method.coordinates = Coordinates::tf_half_pixel_for_nn;
  else
    method.coordinates =
        parse<Coordinates>(ctx, "coordinate_transformation_mode", coordinates,
                           {{"half_pixel", Coordinates::half_pixel},
                            {"pytorch_half_pixel", Coordinates::pytorch_half_pixel},
                            {"align_corners", Coordinates::align_corners},
                            {"asymmetric", Coordinates::asymmetric},
                            {"tf_crop_and_resize", Coordinates::tf_crop_and_resize}});
  method.rounding =
      parse<Rounding>(ctx, "nearest_mode", ctx.attr_string("nearest_mode", "round_prefer_floor"),
                      {{"round_prefer_floor", Rounding::round_prefer_floor},
                       {"round_prefer_ceil", Rounding::round_prefer_ceil},
                       {"floor", Rounding::floor},
                       {"ceil", Rounding::ceil}});
  method.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  method.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  method.extrapolation = ctx.attr_float("extrapolation_value", 0);
  return method;
}

// Where output position `x` lies in the input, or nothing outside the crop.
std::optional<double> source_coordinate(const Method& method, const Axis& axis, int64_t x) {
  const auto at = static_cast<double>(x);
  const auto last = static_cast<double>(axis.in - 1);
  switch (method.coordinates) {
    case Coordinates::half_pixel:
      return (at + 0.5) / axis.scale - 0.5;
    case Coordinates::pytorch_half_pixel:
      return axis.resized > 1 ? (at + 0.5) / axis.scale - 0.5 : 0;
    case Coordinates::align_corners:
      return axis.resized == 1 ? 0 : at * last / (axis.resized - 1);
    case Coordinates::asymmetric:
      return at / axis.scale;
    case Coordinates::tf_half_pixel_for_nn:
      return (at + 0.5) / axis.scale;
    case Coordinates::tf_crop_and_resize: {
      const double span = axis.roi_end - axis.roi_start;
      const double origin = axis.resized > 1
                                ? axis.roi_start * last + at * span * last / (axis.resized - 1)
                                : 0.5 * (axis.roi_start + axis.roi_end) * last;
      if (origin < 0 || origin > last) return std::nullopt;
      return origin;
    }
  }
  return std::nullopt;
}

int64_t clamp_index(double position, int64_t extent) {
  return std::clamp(static_cast<int64_t>(position), int64_t{0}, extent - 1);
}

int64_t nearest_index(const Method& method, const Axis& axis, double origin) {
  const double below = std::floor(origin);
  const double fraction = origin - below;
  double picked = below;
  switch (method.rounding) {
    case Rounding::round_prefer_floor:
      picked = fraction > 0.5 ? below + 1 : below;
      break;
    case Rounding::round_prefer_ceil:
      picked = fraction >= 0.5 ? below + 1 : below;
      break;
    case Rounding::floor:
      break;
    case Rounding::ceil:
      picked = std::ceil(origin);
      break;
    case Rounding::simple:
      picked = axis.scale < 1 ? std::ceil(origin) : below;
      break;
  }
  return clamp_index(picked, axis.in);
}

// The kernel's weights for the taps around a point a `ratio` in (0, 1] past the tap before it.
std::vector<double> kernel_weights(const Method& method, double ratio) {
  if (method.mode == Mode::linear) return {1 - ratio, ratio};
  const double a = method.cubic_a;
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(ratio + 1), near(ratio), near(1 - ratio), far(2 - ratio)};
}

// The taps around `origin` and their weights, as ONNX's reference picks them: the nearest
// positions of the input padded by its edges (taps / 2 each side), the earlier one on ties.
void add_interpolation(const Method& method, const Axis& axis, double origin, int64_t position,
                       AxisPlan& plan) {
  const double before = std::ceil(origin) - 1;  // so that the ratio is in (0, 1]
  std::vector<double> weights = kernel_weights(method, origin - before);
  const int64_t taps = plan.taps, pad = taps / 2;
  const int64_t start =
      std::clamp(static_cast<int64_t>(before) - pad + 1, -pad, axis.in + pad - taps);
  if (method.exclude_outside) {
    double total = 0;
    for (int64_t k = 0; k < taps; ++k) {
      const int64_t source = start + k;
      if (source < 0 || source >= axis.in) weights[static_cast<size_t>(k)] = 0;
      total += weights[static_cast<size_t>(k)];
    }
    for (double& w : weights) w /= total;
  }
  for (int64_t k = 0; k < taps; ++k) {
    const auto slot = static_cast<size_t>(k * axis.out + position);
    plan.picks[slot] = std::clamp(start + k, int64_t{0}, axis.in - 1);
    plan.weights[slot] = weights[static_cast<size_t>(k)];
  }
}

// A plan whose every position reads one source with weight 1 is a plain pick.
void drop_unit_weights(AxisPlan& plan, int64_t out) {
  std::vector<int64_t> picks(static_cast<size_t>(out));
  for (int64_t x = 0; x < out; ++x) {
    int64_t found = -1;
    for (int64_t k = 0; k < plan.taps; ++k) {
      const auto slot = static_cast<size_t>(k * out + x);
      if (plan.weights[slot] == 1 && found < 0)
        found = plan.picks[slot];
      else if (plan.weights[slot] != 0)
        return;
    }
    if (found < 0) return;
    picks[static_cast<size_t>(x)] = found;
  }
  plan = AxisPlan{1, std::move(picks), {}, plan.extended};
}

AxisPlan plan_axis(const Method& method, const Axis& axis) {
  AxisPlan plan;
  plan.taps = method.mode == Mode::nearest ? 1 : method.mode == Mode::linear ? 2 : 4;
  const auto slots = static_cast<size_t>(plan.taps * axis.out);
  plan.picks.assign(slots, 0);
  if (method.mode != Mode::nearest) plan.weights.assign(slots, 0);
  for (int64_t x = 0; x < axis.out; ++x) {
    const std::optional<double> origin = source_coordinate(method, axis, x);
    if (!origin) {
      for (int64_t k = 0; k < plan.taps; ++k)
        plan.picks[static_cast<size_t>(k * axis.out + x)] = axis.in;
      if (method.mode != Mode::nearest) plan.weights[static_cast<size_t>(x)] = 1;  // tap 0 alone
      plan.extended = true;
    } else if (method.mode == Mode::nearest) {
      plan.picks[static_cast<size_t>(x)] = nearest_index(method, axis, *origin);
    } else {
      add_interpolation(method, axis, *origin, x, plan);
    }
  }
  if (method.mode != Mode::nearest) drop_unit_weights(plan, axis.out);
  return plan;
}

bool is_identity(const AxisPlan& plan, const Axis& axis) {
  if (plan.taps != 1 || plan.extended || axis.in != axis.out) return false;
  for (int64_t x = 0; x < axis.out; ++x)
    if (plan.picks[static_cast<size_t>(x)] != x) return false;
  return true;
}

// Shape of `rank` ones but for `count` at dimension `axis`: values along that axis alone.
Shape along(int64_t axis, int64_t count, int64_t rank) {
  Shape shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(axis)] = count;
  return shape;
}

Tensor resize_axis(const OpContext& ctx, const Tensor& x, int64_t d, const AxisPlan& plan,
                   const Method& method) {
  Stream& s = ctx.stream();
  const int64_t out = static_cast<int64_t>(plan.picks.size()) / plan.taps;
  Tensor source = x;
  if (plan.extended) {
    Shape slice = x.shape();
    slice[static_cast<size_t>(d)] = 1;
    source = concat(ctx, {x, full(slice, method.extrapolation, x.dtype(), s)}, d);
  }
  Tensor result = take(ctx, source, d, plan.picks);
  if (plan.taps > 1) {
    Shape split = x.shape();  // the taps as a dimension of their own before the axis
    split[static_cast<size_t>(d)] = out;
    split.insert(split.begin() + d, plan.taps);
    Shape weights_shape = along(d, plan.taps, x.dim() + 1);
    weights_shape[static_cast<size_t>(d) + 1] = out;
    const size_t element = size_of(x.dtype());
    std::vector<std::byte> weights(plan.weights.size() * element);
    for (size_t i = 0; i < plan.weights.size(); ++i)
      tensor::encode(plan.weights[i], x.dtype(), weights.data() + i * element, "Resize");
    const Tensor w = from_host(weights.data(), weights_shape, x.dtype(), s);
    result = sum(mul(result.reshape(split), w, s), {d}, false, s);
  }
  return result;
}

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// The resize itself, innermost axis first as ONNX's reference interpolates. Half types are
// interpolated in f32 and rounded once at the end.
Tensor resize(const OpContext& ctx, const Tensor& x, const Method& method,
              const std::vector<Axis>& axes) {
  Stream& s = ctx.stream();
  if (method.mode != Mode::nearest && !is_floating(x.dtype()))
    ctx.unsupported(std::string(method.mode == Mode::linear ? "linear" : "cubic") +
                    " interpolation of " + std::string(to_string(x.dtype())) + " input");
  Shape out_shape;
  // Past this many elements the result (and an axis's plan, up to 4 taps of 16 bytes per
  // output position) is refused by name before anything is allocated: a size near 2^62 wrapped
  // the plan's length to 0 and cubic weights were written past it.
  constexpr double kMaxResized = 0x1p34;
  double elements = 1;  // in double: a product of int64 sizes could wrap
  for (const Axis& axis : axes) {
    if (axis.in == 0 && axis.out > 0)
      ctx.invalid("cannot resize an empty dimension of " + to_string(x.shape()) + " to " +
                  std::to_string(axis.out));
    out_shape.push_back(axis.out);
    elements *= static_cast<double>(std::max<int64_t>(axis.out, 1));
  }
  if (elements > kMaxResized)
    ctx.invalid("the result " + to_string(out_shape) + " has more than 2^34 elements");
  if (numel(out_shape) == 0) return empty(out_shape, x.dtype(), s.device());
  const bool widen = x.dtype() == DType::f16 || x.dtype() == DType::bf16;
  Tensor result = widen && method.mode != Mode::nearest ? cast(x, DType::f32, s) : x;
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    const Axis& axis = axes[static_cast<size_t>(d)];
    const AxisPlan plan = plan_axis(method, axis);
    if (!is_identity(plan, axis)) result = resize_axis(ctx, result, d, plan, method);
  }
  return result.dtype() == x.dtype() ? result.contiguous(s) : cast(result, x.dtype(), s);
}

// The values of a small float tensor (scales, roi), read back to the host.
std::vector<double> read_floats(const OpContext& ctx, const Tensor& t) {
  if (!is_floating(t.dtype())) ctx.invalid("expects a float tensor, got " + t.describe());
  std::vector<std::byte> bytes(t.nbytes());
  t.copy_to_host(bytes.data(), ctx.stream());
  ctx.stream().synchronize();
  std::vector<double> values(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = tensor::decode(t.dtype(), bytes.data() + i * t.element_size());
  return values;
}

void expect_one_per_dimension(const OpContext& ctx, const std::string& what, size_t count,
                              const Tensor& x) {
  if (static_cast<int64_t>(count) != x.dim())
    ctx.invalid(what + " has " + std::to_string(count) + " values for the rank-" +
                std::to_string(x.dim()) + " input " + to_string(x.shape()));
}

std::vector<Axis> axes_from_scales(const OpContext& ctx, const Tensor& x,
                                   const std::vector<double>& scales,
                                   const std::vector<double>& roi, bool crop) {
  expect_one_per_dimension(ctx, "scales", scales.size(), x);
  std::vector<Axis> axes(scales.size());
  for (size_t d = 0; d < scales.size(); ++d) {
    Axis& axis = axes[d];
    axis.in = x.size(static_cast<int64_t>(d));
    axis.scale = scales[d];
    if (!(axis.scale > 0) || !std::isfinite(axis.scale))
      ctx.invalid("scale " + number(axis.scale) + " is not a positive finite number");
    if (crop) axis.roi_start = roi[d], axis.roi_end = roi[d + scales.size()];
    const double span = crop ? axis.roi_end - axis.roi_start : 1;
    axis.resized = static_cast<double>(axis.in) * span * axis.scale;
    if (axis.resized < 0)
      ctx.invalid("the roi of dimension " + std::to_string(d) + " ends before it starts");
    // Checked before the conversion, which is undefined past int64's range.
    if (!(axis.resized < 0x1p62))
      ctx.invalid("scale " + number(axis.scale) + " of dimension " + std::to_string(d) +
                  " makes its length " + number(axis.resized) + " (" + std::to_string(axis.in) +
                  " x scale), past what a tensor can hold");
    axis.out = static_cast<int64_t>(std::floor(axis.resized));
  }
  return axes;
}

std::vector<Axis> axes_from_sizes(const OpContext& ctx, const Tensor& x,
                                  const std::vector<int64_t>& sizes, const std::vector<double>& roi,
                                  bool crop) {
  expect_one_per_dimension(ctx, "sizes", sizes.size(), x);
  std::vector<Axis> axes(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    Axis& axis = axes[d];
    axis.in = x.size(static_cast<int64_t>(d));
    axis.out = sizes[d];
    if (axis.out < 0) ctx.invalid("size " + std::to_string(axis.out) + " is negative");
    axis.resized = static_cast<double>(axis.out);
    axis.scale = axis.in == 0 ? 1 : axis.resized / static_cast<double>(axis.in);
    if (crop) axis.roi_start = roi[d], axis.roi_end = roi[d + sizes.size()];
  }
  return axes;
}

// Resize from opset 11: X, roi, scales, sizes; an empty tensor stands for one not given.
Outputs resize_11(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const Method method = method_from_attributes(ctx);
  auto present = [&](size_t i) { return given(in, i) && in[i].numel() > 0; };
  const bool crop = method.coordinates == Coordinates::tf_crop_and_resize;
  std::vector<double> roi;
  if (crop) {
    if (!present(1)) ctx.invalid("tf_crop_and_resize needs a roi");
    roi = read_floats(ctx, in[1]);
    for (double bound : roi)
      if (!std::isfinite(bound)) ctx.invalid("roi holds " + number(bound));
    if (static_cast<int64_t>(roi.size()) != 2 * x.dim())
      ctx.invalid("roi has " + std::to_string(roi.size()) + " values for the rank-" +
                  std::to_string(x.dim()) + " input, not twice the rank");
  }
  if (present(2) == present(3)) ctx.invalid("needs exactly one of scales and sizes");
  const std::vector<Axis> axes = present(2)
                                     ? axes_from_scales(ctx, x, read_floats(ctx, in[2]), roi, crop)
                                     : axes_from_sizes(ctx, x, ctx.read_ints(in[3]), roi, crop);
  return {resize(ctx, x, method, axes)};
}

std::vector<Axis> upsample_axes(const OpContext& ctx, const Tensor& x,
                                const std::vector<double>& scales) {
  for (double scale : scales)
    if (scale < 1) ctx.invalid("scale " + number(scale) + " is below 1");
  return axes_from_scales(ctx, x, scales, {}, false);
}

// Resize-10: X and scales.
Outputs resize_10(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  return {resize(ctx, x, method_from_attributes(ctx),
                 axes_from_scales(ctx, x, read_floats(ctx, in.at(1)), {}, false))};
}

// Upsample-9: X and scales, which only enlarge.
Outputs upsample_9(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  return {resize(ctx, x, method_from_attributes(ctx),
                 upsample_axes(ctx, x, read_floats(ctx, in.at(1))))};
}

// Upsample-7: the scales an attribute.
Outputs upsample_7(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const std::vector<float> scales = ctx.attr_floats("scales");
  return {resize(ctx, x, method_from_attributes(ctx),
                 upsample_axes(ctx, x, {scales.begin(), scales.end()}))};
}

}  // namespace

std::vector<OnnxOp> resize_onnx_ops() {
  return {
      {"Resize", 10, resize_10},
      {"Resize", 11, resize_11},
      {"Upsample", 7, upsample_7},
      {"Upsample", 9, upsample_9},
  };
}

}  // namespace hal::model
