// ONNX's reductions, arg-reductions and softmaxes, from hal's reductions. Results keep the
// input's dtype as ONNX says (hal sums integers into i64 and averages them in f32).
#include "hal/ops.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
using Reduction = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);

struct ReduceArgs {
  std::vector<int64_t> axes;
  bool keepdims = true;
  bool identity = false;  // noop_with_empty_axes with no axes: the input unchanged
};

// ReduceSum takes its axes as an input from opset 13, the others from opset 18 (beyond 17).
ReduceArgs reduce_args(const OpContext& ctx, const Inputs& in, int64_t axes_input_since) {
  ReduceArgs args;
  args.keepdims = ctx.attr_int("keepdims", 1) != 0;
  if (ctx.opset() >= axes_input_since) {
    if (given(in, 1)) args.axes = ctx.read_ints(in[1]);
    args.identity = args.axes.empty() && ctx.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    args.axes = ctx.attr_ints("axes");
  }
  return args;
}

// `before` maps the input (abs, square ...), `reduction` reduces it, `after` maps the result.
template <Reduction reduction, int64_t axes_input_since = 18>
Outputs reduce(const OpContext& ctx, const Inputs& in, Tensor (*before)(const Tensor&, Stream&),
               Tensor (*after)(const Tensor&, Stream&)) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const ReduceArgs args = reduce_args(ctx, in, axes_input_since);
  if (args.identity) return {x.contiguous(s)};
  const Tensor mapped = before ? before(x, s) : x;
  Tensor result = reduction(mapped, args.axes, args.keepdims, s);
  if (after) result = after(result, s);
  return {as_dtype(result, x.dtype(), s)};
}

Tensor square(const Tensor& x, Stream& s) { return mul(x, x, s); }

template <Reduction reduction, int64_t since = 18>
Outputs plain(const OpContext& ctx, const Inputs& in) {
  return reduce<reduction, since>(ctx, in, nullptr, nullptr);
}
Outputs reduce_l1(const OpContext& ctx, const Inputs& in) {
  return reduce<sum>(ctx, in, abs, nullptr);
}
Outputs reduce_l2(const OpContext& ctx, const Inputs& in) {
  return reduce<sum>(ctx, in, square, sqrt);
}
Outputs reduce_sum_square(const OpContext& ctx, const Inputs& in) {
  return reduce<sum>(ctx, in, square, nullptr);
}
Outputs reduce_log_sum(const OpContext& ctx, const Inputs& in) {
  return reduce<sum>(ctx, in, nullptr, log);
}

// log(sum(exp(x - max))) + max, stable for large x.
Outputs reduce_log_sum_exp(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const ReduceArgs args = reduce_args(ctx, in, 18);
  const Tensor peak = max(x, args.axes, true, s);
  Tensor result = add(log(sum(exp(sub(x, peak, s), s), args.axes, true, s), s), peak, s);
  if (!args.keepdims) {
    const Tensor dropped = sum(x, args.axes, false, s);  // the shape without the axes
    result = result.reshape(dropped.shape());
  }
  return {as_dtype(result, x.dtype(), s)};
}

// Before opset 13 the input is seen as 2-d, [prod(dims before axis), prod(the rest)], with the
// op over the second; from 13 it is over one axis.
template <Tensor (*op)(const Tensor&, int64_t, Stream&)>
Outputs softmax_family(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  if (ctx.opset() >= 13) return {op(x, ctx.attr_int("axis", -1), s)};
  const Shape flat = as_2d(ctx, x, ctx.attr_int("axis", 1));
  return {op(x.contiguous(s).reshape(flat), 1, s).reshape(x.shape())};
}

// Hardmax: 1 at the first largest element along the axis, 0 elsewhere (opsets before 13 see the
// input as 2-d, as softmax does).
Tensor hardmax_of(const Tensor& x, int64_t axis, Stream& s) {
  if (axis < 0) axis += x.dim();
  const Tensor winner = argmax(x, {axis}, true, s);
  Shape positions(static_cast<size_t>(x.dim()), 1);
  positions[static_cast<size_t>(axis)] = x.size(axis);
  const Tensor index = arange(x.size(axis), DType::i64, s).reshape(positions);
  return cast(eq(index, winner, s), x.dtype(), s);
}

// GatherElements: out[..., i, ...] = data[..., index[..., i, ...], ...] along `axis`, as a
// masked sum: each index compared with every position of the axis picks one element.
Outputs gather_elements(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& data = in.at(0);
  Tensor index = in.at(1);
  if (index.dim() != data.dim())
    ctx.invalid("indices " + to_string(index.shape()) + " and data " + to_string(data.shape()) +
                " differ in rank");
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), data.dim());
  const int64_t extent = data.size(axis);
  if (index.dtype() != DType::i64) index = cast(index, DType::i64, s);
  const Tensor zero = full({}, 0, DType::i64, s);
  index = where(lt(index, zero, s),
                add(index, full({}, static_cast<double>(extent), DType::i64, s), s), index, s);
  // data cut to the indices' extent off the axis, the axis moved last behind a size-1 axis.
  Tensor values = data;
  for (int64_t d = 0; d < data.dim(); ++d)
    if (d != axis) {
      if (index.size(d) > data.size(d))
        ctx.invalid("indices " + to_string(index.shape()) + " exceed data " +
                    to_string(data.shape()));
      values = values.slice(d, 0, index.size(d));
    }
  std::vector<int64_t> order;
  for (int64_t d = 0; d < data.dim(); ++d)
    if (d != axis) order.push_back(d);
  order.push_back(axis);
  values = values.permute(order).unsqueeze(axis);
  Shape positions(static_cast<size_t>(data.dim() + 1), 1);
  positions.back() = extent;
  const Tensor mask =
      eq(index.unsqueeze(data.dim()), arange(extent, DType::i64, s).reshape(positions), s);
  const Tensor picked = where(mask, values, full({}, 0, data.dtype(), s), s);
  return {as_dtype(sum(picked, {data.dim()}, false, s), data.dtype(), s)};
}

}  // namespace

std::vector<OnnxOp> reduce_onnx_ops() {
  return {
      {"ReduceSum", 1, plain<sum, 13>},
      {"ReduceMean", 1, plain<mean>},
      {"ReduceMax", 1, plain<max>},
      {"ReduceMin", 1, plain<min>},
      {"ReduceL1", 1, reduce_l1},
      {"ReduceL2", 1, reduce_l2},
      {"ReduceSumSquare", 1, reduce_sum_square},
      {"ReduceLogSum", 1, reduce_log_sum},
      {"ReduceLogSumExp", 1, reduce_log_sum_exp},
      {"Softmax", 1, softmax_family<softmax>},
      {"LogSoftmax", 1, softmax_family<log_softmax>},
      {"Hardmax", 1, softmax_family<hardmax_of>},
      {"GatherElements", 11, gather_elements},
  };
}

}  // namespace hal::model
