// ONNX's shape and layout ops, from hal's views: a view costs nothing, and the one copy that
// makes the result contiguous runs on the device (strided copy).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "core/checked_math.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_ops.hpp"
#include "ops/op_table.hpp"
#include "ops/window.hpp"
#include "tensor/element_codec.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

Tensor ints_tensor(const std::vector<int64_t>& values, const OpContext& ctx) {
  return from_host(values.data(), {static_cast<int64_t>(values.size())}, DType::i64, ctx.stream());
}

// Axes from the attribute before `input_since`, from the optional input `index` after.
std::vector<int64_t> axes_of(const OpContext& ctx, const Inputs& in, size_t index,
                             int64_t input_since) {
  if (ctx.opset() < input_since) return ctx.attr_ints("axes");
  if (in.size() > index && in[index].defined()) return ctx.read_ints(in[index]);
  return {};
}

Outputs reshape(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  std::vector<int64_t> shape = ctx.opset() < 5 ? ctx.attr_ints("shape") : ctx.read_ints(in.at(1));
  const bool allow_zero = ctx.attr_int("allowzero", 0) != 0;
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allow_zero) {
      if (static_cast<int64_t>(d) >= x.dim())
        ctx.invalid("shape " + to_string(shape) + " copies dimension " + std::to_string(d) +
                    " of " + to_string(x.shape()) + ", which has none");
      shape[d] = x.size(static_cast<int64_t>(d));
    }
    if (shape[d] == -1) {
      if (infer >= 0) ctx.invalid("shape " + to_string(shape) + " has more than one -1");
      infer = static_cast<int64_t>(d);
    } else if (shape[d] < 0) {
      ctx.invalid("shape " + to_string(shape) + " has a negative size");
    } else {
      known *= shape[d];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      ctx.invalid("cannot infer the -1 of " + to_string(shape) + " for " + to_string(x.shape()));
    shape[static_cast<size_t>(infer)] = x.numel() / known;
  }
  return {x.contiguous(ctx.stream()).reshape(shape)};
}

Outputs flatten(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  return {x.contiguous(ctx.stream()).reshape(as_2d(ctx, x, ctx.attr_int("axis", 1)))};
}

Outputs transpose(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(x.dim()));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return {x.permute(perm).contiguous(ctx.stream())};
}

Outputs squeeze(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  std::vector<int64_t> axes = axes_of(ctx, in, 1, 13);
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  if (axes.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) drop[static_cast<size_t>(d)] = x.size(d) == 1;
  }
  for (int64_t axis : axes) {
    const int64_t d = ctx.axis(axis, x.dim());
    if (x.size(d) != 1)
      ctx.invalid("cannot squeeze dimension " + std::to_string(d) + " of " + to_string(x.shape()) +
                  ": its size is not 1");
    drop[static_cast<size_t>(d)] = true;
  }
  Shape shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!drop[static_cast<size_t>(d)]) shape.push_back(x.size(d));
  return {x.contiguous(ctx.stream()).reshape(shape)};
}

Outputs unsqueeze(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const std::vector<int64_t> axes = axes_of(ctx, in, 1, 13);
  const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    const int64_t d = ctx.axis(axis, rank);
    if (inserted[static_cast<size_t>(d)]) ctx.invalid("axis " + std::to_string(axis) + " repeats");
    inserted[static_cast<size_t>(d)] = true;
  }
  Shape shape;
  int64_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(inserted[static_cast<size_t>(d)] ? 1 : x.size(next++));
  return {x.contiguous(ctx.stream()).reshape(shape)};
}

Outputs expand(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const Shape target = broadcast_shapes(x.shape(), ctx.read_ints(in.at(1)));
  return {x.expand(target).contiguous(ctx.stream())};
}

// Tile: each dimension d repeated r times is [r, d] broadcast and merged, a view and one copy.
Outputs tile(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const std::vector<int64_t> repeats = ctx.read_ints(in.at(1));
  if (static_cast<int64_t>(repeats.size()) != x.dim())
    ctx.invalid("repeats " + to_string(repeats) + " do not match the rank of " +
                to_string(x.shape()));
  Shape split, expanded, merged;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t r = repeats[static_cast<size_t>(d)];
    if (r < 0) ctx.invalid("repeats " + to_string(repeats) + " has a negative count");
    split.insert(split.end(), {1, x.size(d)});
    expanded.insert(expanded.end(), {r, x.size(d)});
    merged.push_back(r * x.size(d));
  }
  Stream& s = ctx.stream();
  return {x.contiguous(s).reshape(split).expand(expanded).contiguous(s).reshape(merged)};
}

Outputs slice(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    starts = ctx.read_ints(in.at(1));
    ends = ctx.read_ints(in.at(2));
    if (given(in, 3)) axes = ctx.read_ints(in[3]);
    if (given(in, 4)) steps = ctx.read_ints(in[4]);
  }
  if (ends.size() != starts.size()) ctx.invalid("starts and ends differ in length");
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    ctx.invalid("starts, ends, axes and steps differ in length");
  Tensor view = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = ctx.axis(axes[i], x.dim());
    const int64_t size = x.size(axis);
    if (steps[i] == 0) ctx.invalid("a step of 0");
    if (steps[i] < 0) {
      // Backwards from start to just after end, clamped as ONNX says: start to [0, size - 1],
      // end to [-1, size - 1]. Tensors have no negative strides: the rows are picked in turn.
      std::vector<int64_t> picks;
      if (size > 0) {
        const int64_t start =
            std::clamp<int64_t>(starts[i] < 0 ? starts[i] + size : starts[i], 0, size - 1);
        const int64_t end =
            std::clamp<int64_t>(ends[i] < 0 ? ends[i] + size : ends[i], -1, size - 1);
        for (int64_t at = start; at > end; at += steps[i]) picks.push_back(at);
      }
      view = picks.empty() ? view.slice(axis, 0, 0) : take(ctx, view, axis, picks);
      continue;
    }
    auto clamp = [&](int64_t index) {
      if (index < 0) index += size;
      return std::clamp<int64_t>(index, 0, size);
    };
    const int64_t start = clamp(starts[i]);
    const int64_t end = std::max(start, clamp(ends[i]));
    view = view.slice(axis, start, end, steps[i]);
  }
  return {view.contiguous(ctx.stream())};
}

Outputs shape_of(const OpContext& ctx, const Inputs& in) {
  const Shape& shape = in.at(0).shape();
  const auto rank = static_cast<int64_t>(shape.size());
  auto bound = [&](int64_t index) {
    return std::clamp<int64_t>(index < 0 ? index + rank : index, 0, rank);
  };
  const int64_t start = bound(ctx.attr_int("start", 0));
  const int64_t end = std::max(start, bound(ctx.attr_int("end", rank)));
  return {ints_tensor({shape.begin() + start, shape.begin() + end}, ctx)};
}

Outputs size_of_tensor(const OpContext& ctx, const Inputs& in) {
  const int64_t count = in.at(0).numel();
  return {full({}, count, DType::i64, ctx.stream())};
}

Outputs constant(const OpContext& ctx, const Inputs&) {
  Stream& s = ctx.stream();
  if (const HostTensor* value = ctx.attr_tensor("value")) return {upload(*value, s)};
  if (ctx.has("value_float")) return {full({}, ctx.attr_float("value_float", 0), DType::f32, s)};
  if (ctx.has("value_int")) return {full({}, ctx.attr_int("value_int", 0), DType::i64, s)};
  if (ctx.has("value_ints")) return {ints_tensor(ctx.attr_ints("value_ints"), ctx)};
  if (ctx.has("value_floats")) {
    const std::vector<float> values = ctx.attr_floats("value_floats");
    return {from_host(values.data(), {static_cast<int64_t>(values.size())}, DType::f32, s)};
  }
  ctx.unsupported("a constant that is not a tensor, float(s) or int(s) (strings, sparse)");
}

Outputs constant_of_shape(const OpContext& ctx, const Inputs& in) {
  const Shape shape = ctx.read_ints(in.at(0));
  const HostTensor* value = ctx.attr_tensor("value");
  if (!value) return {full(shape, 0, DType::f32, ctx.stream())};
  if (value->numel() != 1) ctx.invalid("value must hold one element");
  return {upload(*value, ctx.stream()).reshape({}).expand(shape).contiguous(ctx.stream())};
}

// A 0-d i64 tensor of `value`, exactly (full's integer overload).
Tensor exact_i64(int64_t value, Stream& s) { return full({}, value, DType::i64, s); }

// Integer Range in integers: start + i delta for i < ceil((limit - start) / delta), exact for
// any int64 values (as doubles, 2^60 + 1 would be 2^60).
Tensor integer_range(const OpContext& ctx, const Inputs& in) {
  const int64_t start = ctx.read_int(in.at(0)), limit = ctx.read_int(in.at(1)),
                delta = ctx.read_int(in.at(2));
  if (delta == 0) ctx.invalid("delta is 0");
  __extension__ typedef __int128 Wide;  // limit - start may not fit int64
  const Wide span = static_cast<Wide>(limit) - start;
  const Wide count =
      span == 0 || (span > 0) != (delta > 0) ? 0 : (span + delta + (delta > 0 ? -1 : 1)) / delta;
  if (count > (int64_t{1} << 53))
    ctx.invalid("the range has " + std::to_string(static_cast<int64_t>(count)) + " elements");
  Stream& s = ctx.stream();
  const Wide reach = (count - 1) * (delta < 0 ? -static_cast<Wide>(delta) : delta);
  if (count > 0 && reach > INT64_MAX) {
    // i delta passes int64 midway though every value fits (a span past 2^63, so few steps):
    // made on the host in wrapping unsigned arithmetic, which gives the int64 values exactly.
    std::vector<int64_t> values(static_cast<size_t>(count));
    uint64_t value = static_cast<uint64_t>(start);
    for (int64_t& v : values) {
      v = static_cast<int64_t>(value);
      value += static_cast<uint64_t>(delta);
    }
    const Tensor made = from_vector(values, {static_cast<int64_t>(count)}, s);
    return in[0].dtype() == DType::i64 ? made : cast(made, in[0].dtype(), s);
  }
  const Tensor steps = arange(0.0, static_cast<double>(count), 1.0, DType::i64, s);
  const Tensor values = add(mul(steps, exact_i64(delta, s), s), exact_i64(start, s), s);
  return in[0].dtype() == DType::i64 ? values : cast(values, in[0].dtype(), s);
}

Outputs range(const OpContext& ctx, const Inputs& in) {
  if (in.at(0).dtype() == DType::i64 || in[0].dtype() == DType::i32)
    return {integer_range(ctx, in)};
  const double start = ctx.read_scalar(in.at(0));
  const double limit = ctx.read_scalar(in.at(1));
  const double delta = ctx.read_scalar(in.at(2));
  if (delta == 0) ctx.invalid("delta is 0");
  const DType dtype = in[0].dtype();
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    return {arange(start, limit, delta, dtype, ctx.stream())};
  // ONNX counts ceil((limit - start) / delta) in T: Range(0.7, 1.0, 0.1) of float has 3
  // elements, where in double it has 4, and Range(0.1, 1.0, 0.1) of f16 has 9, not 10 (its
  // last one 1.0, the limit). arange counts in double, so it is given a limit half a step past
  // the last element, which makes its count this one. f16 and bf16 work as NumPy's float16
  // does: in float, each result rounded to the type (exact, float having over twice their bits).
  const auto in_t = [dtype](float value) {
    if (dtype == DType::f16) return tensor::f16_to_f32(tensor::f32_to_f16(value));
    if (dtype == DType::bf16) return tensor::bf16_to_f32(tensor::f32_to_bf16(value));
    return value;
  };
  const auto f = [](double value) { return static_cast<float>(value); };
  const float span = in_t(f(limit) - f(start));
  const double count = std::max(static_cast<double>(std::ceil(in_t(span / f(delta)))), 0.0);
  // Past 2^53 (or infinite: limit - start or the quotient overflowed T) no tensor holds it.
  if (std::isfinite(start) && std::isfinite(limit) && std::isfinite(delta) && !(count <= 0x1p53))
    ctx.invalid("the range has " + std::to_string(count) + " elements");
  return {arange(start, start + (count - 0.5) * delta, delta, dtype, ctx.stream())};
}

// DepthToSpace and SpaceToDepth: a reshape, a permutation and a reshape.
Outputs depth_to_space(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  if (x.dim() != 4) ctx.invalid("expects a 4-d input, got " + to_string(x.shape()));
  const int64_t bs = ctx.attr_int("blocksize", 0);
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (bs <= 0 || c % (bs * bs) != 0)
    ctx.invalid("blocksize " + std::to_string(bs) + " does not divide the channels of " +
                to_string(x.shape()));
  const bool crd = ctx.attr_string("mode", "DCR") == "CRD";
  Stream& s = ctx.stream();
  const Tensor split = crd ? x.contiguous(s).reshape({b, c / (bs * bs), bs, bs, h, w})
                           : x.contiguous(s).reshape({b, bs, bs, c / (bs * bs), h, w});
  const Tensor moved = crd ? split.permute({0, 1, 4, 2, 5, 3}) : split.permute({0, 3, 4, 1, 5, 2});
  return {moved.contiguous(s).reshape({b, c / (bs * bs), h * bs, w * bs})};
}

Outputs space_to_depth(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  if (x.dim() != 4) ctx.invalid("expects a 4-d input, got " + to_string(x.shape()));
  const int64_t bs = ctx.attr_int("blocksize", 0);
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  if (bs <= 0 || h % bs != 0 || w % bs != 0)
    ctx.invalid("blocksize " + std::to_string(bs) + " does not divide the spatial size of " +
                to_string(x.shape()));
  Stream& s = ctx.stream();
  const Tensor split = x.contiguous(s).reshape({b, c, h / bs, bs, w / bs, bs});
  return {
      split.permute({0, 3, 5, 1, 2, 4}).contiguous(s).reshape({b, c * bs * bs, h / bs, w / bs})};
}

// The inverse of a permutation.
std::vector<int64_t> inverse(const std::vector<int64_t>& order) {
  std::vector<int64_t> back(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    back[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return back;
}

Outputs concat_op(const OpContext& ctx, const Inputs& in) {
  std::vector<Tensor> parts;
  for (const Tensor& t : in)
    if (t.defined()) parts.push_back(t);
  return {concat(ctx, parts, ctx.attr_int("axis", ctx.opset() < 4 ? 1 : 0))};
}

// Split-1's optional input `split`: of T (a float type) by its schema, int64 as models also
// write it; whole, non-negative sizes either way (split() checks the sign).
std::vector<int64_t> split_sizes(const OpContext& ctx, const Tensor& split) {
  if (split.dtype() == DType::i64 || split.dtype() == DType::i32) return ctx.read_ints(split);
  std::vector<int64_t> sizes;
  for (const double size : ctx.read_values(split)) {
    if (size != std::trunc(size) || !(std::abs(size) < 0x1p62))
      ctx.invalid("split holds " + std::to_string(size) + ", which is no size");
    sizes.push_back(static_cast<int64_t>(size));
  }
  return sizes;
}

Outputs split(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), x.dim());
  std::vector<int64_t> sizes;
  if (ctx.opset() >= 13) {
    if (given(in, 1)) sizes = ctx.read_ints(in[1]);
  } else if (ctx.opset() < 2 && given(in, 1)) {
    sizes = split_sizes(ctx, in[1]);  // Split-1 takes it as an input too, which goes first
  } else {
    sizes = ctx.attr_ints("split");
  }
  const auto outputs = static_cast<int64_t>(ctx.node().outputs.size());
  if (sizes.empty()) {
    if (outputs == 0 || x.size(axis) % outputs != 0)
      ctx.invalid("cannot split " + std::to_string(x.size(axis)) + " into " +
                  std::to_string(outputs) + " equal parts");
    sizes.assign(static_cast<size_t>(outputs), x.size(axis) / outputs);
  }
  // Sizes non-negative, as SplitToSequence's, and summed with a check: a negative size, or huge
  // ones wrapping, could otherwise add up to the axis' size. An overflowing sum stays nullopt.
  std::optional<int64_t> total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      ctx.invalid("split " + to_string(sizes) + " has a negative size " + std::to_string(size));
    if (total) total = detail::checked_add(*total, size);
  }
  if (total != x.size(axis) || static_cast<int64_t>(sizes.size()) != outputs)
    ctx.invalid("split " + to_string(sizes) + " does not divide dimension " + std::to_string(axis) +
                " of " + to_string(x.shape()) + " into " + std::to_string(outputs) + " outputs");
  Outputs out;
  int64_t start = 0;
  for (int64_t size : sizes) {
    out.push_back(x.slice(axis, start, start + size).contiguous(ctx.stream()));
    start += size;
  }
  return out;
}

}  // namespace

// hal's concat (a host kernel on the CPU, device copies elsewhere), the axis as ONNX gives it.
Tensor concat(const OpContext& ctx, const std::vector<Tensor>& parts, int64_t axis_attribute) {
  if (parts.empty()) ctx.invalid("needs at least one input");
  return hal::concat(parts, ctx.axis(axis_attribute, parts[0].dim()), ctx.stream());
}

// With the axis moved to the front each pick is one contiguous block, placed by a device copy.
Tensor take(const OpContext& ctx, const Tensor& data, int64_t axis,
            const std::vector<int64_t>& picks) {
  Stream& s = ctx.stream();
  const int64_t extent = data.size(axis);
  for (const int64_t pick : picks)
    if (pick < 0 || pick >= extent)
      throw Error(ErrorCode::Internal, ctx.node().describe() + ": take() given index " +
                                           std::to_string(pick) + " of " + std::to_string(extent));
  const std::vector<int64_t> order = axis_first(axis, data.dim());
  const Tensor moved = data.permute(order).contiguous(s);
  Shape gathered_shape{static_cast<int64_t>(picks.size())};
  for (size_t d = 1; d < order.size(); ++d)
    gathered_shape.push_back(moved.size(static_cast<int64_t>(d)));
  const int64_t row = extent == 0 ? 0 : moved.numel() / extent;
  // Floating rows by the device's own gather (embedding's kernel: one launch, bits moved as
  // they are) where it has one; else one device copy per pick.
  const ops::OpImplementation* gather =
      ops::find_implementation(ops::descriptor("embedding"), data.dtype(), s.device().info());
  if (gather && row > 0 && !picks.empty())
    return embedding(moved.reshape({extent, row}),
                     from_vector(picks, {static_cast<int64_t>(picks.size())}, s), s)
        .reshape(gathered_shape)
        .permute(inverse(order))
        .contiguous(s);
  const Tensor gathered = empty(gathered_shape, data.dtype(), s.device());
  const size_t block = static_cast<size_t>(row) * data.element_size();
  const size_t base = static_cast<size_t>(moved.offset()) * data.element_size();
  for (size_t i = 0; i < picks.size() && block > 0; ++i)
    s.copy(gathered.storage(), moved.storage(), block, i * block,
           base + static_cast<size_t>(picks[i]) * block);
  return gathered.permute(inverse(order)).contiguous(s);
}

Tensor pad_constant(const OpContext& ctx, Tensor x, const std::vector<int64_t>& before,
                    const std::vector<int64_t>& after, double value) {
  return ops::pad_constant(std::move(x), before, after, value, ctx.stream());
}

namespace {

// Constant padding with `fill`, a one-element tensor of x's dtype, copied as itself: exact
// where a double (pad_constant's value) is not, an int64 past 2^53. Negative pads crop first.
Tensor pad_with(const OpContext& ctx, const Tensor& x, const std::vector<int64_t>& before,
                const std::vector<int64_t>& after, const Tensor& fill) {
  Stream& s = ctx.stream();
  std::vector<int64_t> crop_before, crop_after;
  for (size_t d = 0; d < before.size(); ++d) {
    crop_before.push_back(std::min<int64_t>(before[d], 0));
    crop_after.push_back(std::min<int64_t>(after[d], 0));
  }
  Tensor result = pad_constant(ctx, x, crop_before, crop_after, 0.0);
  const Tensor one = fill.contiguous(s).reshape(Shape(before.size(), 1));
  for (int64_t d = 0; d < result.dim(); ++d) {
    const int64_t head = std::max<int64_t>(before[static_cast<size_t>(d)], 0),
                  tail = std::max<int64_t>(after[static_cast<size_t>(d)], 0);
    if (head == 0 && tail == 0) continue;
    std::vector<Tensor> parts;
    const auto block = [&](int64_t count) {
      Shape shape = result.shape();
      shape[static_cast<size_t>(d)] = count;
      parts.push_back(one.expand(shape).contiguous(s));
    };
    if (head > 0) block(head);
    parts.push_back(result);
    if (tail > 0) block(tail);
    result = hal::concat(parts, d, s);
  }
  return result;
}

// Constant padding as concatenation with blocks of the value; negative pads crop.
Outputs pad(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const std::string mode = ctx.attr_string("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    ctx.invalid("mode '" + mode + "' (constant, edge or reflect)");
  std::vector<int64_t> pads;
  double value = 0;
  std::optional<Tensor> fill;  // an int64 constant_value, used as itself (no double holds it)
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads");
    value = ctx.attr_float("value", 0.0f);
  } else {
    pads = ctx.read_ints(in.at(1));
    if (given(in, 2) && x.dtype() == DType::i64 && in[2].dtype() == DType::i64 &&
        in[2].numel() == 1)
      fill = in[2];
    else if (given(in, 2))
      value = ctx.read_scalar(in[2]);
    if (given(in, 3)) ctx.unsupported("the axes input");
  }
  if (static_cast<int64_t>(pads.size()) != 2 * x.dim())
    ctx.invalid("pads " + to_string(pads) + " need two numbers per dimension of " +
                to_string(x.shape()));
  const std::vector<int64_t> before(pads.begin(), pads.begin() + x.dim());
  const std::vector<int64_t> after(pads.begin() + x.dim(), pads.end());
  if (mode == "constant")
    return {fill ? pad_with(ctx, x, before, after, *fill)
                 : pad_constant(ctx, x, before, after, value)};
  // edge repeats the border element, reflect mirrors around it: both pick rows of x itself.
  Tensor result = x;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t size = x.size(d), head = before[static_cast<size_t>(d)],
                  tail = after[static_cast<size_t>(d)];
    if (head < 0 || tail < 0) ctx.unsupported("negative pads with mode '" + mode + "'");
    if (head == 0 && tail == 0) continue;
    if (size == 0 || (mode == "reflect" && (head >= size || tail >= size)))
      ctx.invalid("cannot " + mode + "-pad dimension " + std::to_string(d) + " of size " +
                  std::to_string(size) + " by " + std::to_string(std::max(head, tail)));
    std::vector<int64_t> picks;
    for (int64_t i = head; i > 0; --i) picks.push_back(mode == "edge" ? 0 : i);
    for (int64_t i = 0; i < size; ++i) picks.push_back(i);
    for (int64_t i = 1; i <= tail; ++i) picks.push_back(mode == "edge" ? size - 1 : size - 1 - i);
    result = take(ctx, result, d, picks);
  }
  return {result};
}

// Trilu: the elements on and above (upper) or below (lower) diagonal k of the last two
// dimensions, from a mask of column - row.
Outputs trilu(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  if (x.dim() < 2) ctx.invalid("expects at least 2 dimensions, got " + to_string(x.shape()));
  const int64_t k = given(in, 1) ? ctx.read_int(in[1]) : 0;
  const int64_t rows = x.size(x.dim() - 2), cols = x.size(x.dim() - 1);
  const Tensor row = arange(rows, DType::i64, s).reshape({rows, 1});
  const Tensor col = arange(cols, DType::i64, s).reshape({1, cols});
  const Tensor diagonal = sub(col, row, s);
  const Tensor bound = exact_i64(k, s);
  const Tensor keep = ctx.attr_int("upper", 1) ? ge(diagonal, bound, s) : le(diagonal, bound, s);
  return {where(keep, x, full({}, 0, x.dtype(), s), s)};
}

// Gather along `axis`: the indices read to the host (they are small: token ids, positions),
// then take().
Outputs gather(const OpContext& ctx, const Inputs& in) {
  const Tensor& data = in.at(0);
  const Tensor& indices = in.at(1);
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), data.dim());
  std::vector<int64_t> picks = ctx.read_ints(indices);
  const int64_t extent = data.size(axis);
  for (int64_t& pick : picks) {
    if (pick < -extent || pick >= extent)
      ctx.invalid("index " + std::to_string(pick) + " is out of range for dimension " +
                  std::to_string(axis) + " of " + to_string(data.shape()));
    if (pick < 0) pick += extent;
  }
  const Tensor taken = take(ctx, data, axis, picks);  // [before, picks, after]
  // The picks' dimension becomes the indices' shape.
  Shape shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  return {taken.reshape(shape)};
}

}  // namespace

std::vector<OnnxOp> shape_onnx_ops() {
  return {
      {"Reshape", 1, reshape},
      {"Flatten", 1, flatten},
      {"Transpose", 1, transpose},
      {"Squeeze", 1, squeeze},
      {"Unsqueeze", 1, unsqueeze},
      {"Expand", 8, expand},
      {"Tile", 6, tile},
      {"Slice", 1, slice},
      {"Shape", 1, shape_of},
      {"Size", 1, size_of_tensor},
      {"Constant", 1, constant},
      {"ConstantOfShape", 9, constant_of_shape},
      {"Range", 11, range},
      {"DepthToSpace", 1, depth_to_space},
      {"SpaceToDepth", 1, space_to_depth},
      {"Concat", 1, concat_op},
      {"Split", 1, split},
      {"Pad", 1, pad},
      {"Trilu", 14, trilu},
      {"Gather", 1, gather},
  };
}

}  // namespace hal::model
