// ONNX's reductions, arg-reductions and softmaxes, from hal's reductions. Results keep the
// input's dtype as ONNX says (hal sums integers into i64; their mean divides that in i64, exact
// for i64 too).
#include <cstdint>
#include <limits>

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

// The mean of i64 values truncated toward zero, exact where their sum leaves i64 (values near
// 2^62 wrapped): A, the sum of the quotients x / n, and B, that of the remainders
// x - n * (x / n), each stay within i64; the mean A + B / n = A + c + d / n, with c = B / n and
// |d| < n, truncates to A + c moved one toward zero where d's sign differs from that of A + c.
Tensor exact_i64_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                      const Tensor& n, Stream& s) {
  const Tensor quotients = div(x, n, s);
  const Tensor remainders = sub(x, mul(quotients, n, s), s);
  const Tensor whole = sum(quotients, axes, keepdims, s);
  const Tensor rest = sum(remainders, axes, keepdims, s);
  const Tensor carried = div(rest, n, s);
  const Tensor left = sub(rest, mul(carried, n, s), s);
  const Tensor base = add(whole, carried, s);
  const Tensor zero = full({}, 0, DType::i64, s), one = full({}, 1, DType::i64, s);
  const Tensor minus_one = full({}, -1, DType::i64, s);
  const Tensor down = where(gt(base, zero, s), minus_one, zero, s);
  const Tensor up = where(lt(base, zero, s), one, zero, s);
  const Tensor step = where(lt(left, zero, s), down, where(gt(left, zero, s), up, zero, s), s);
  return add(base, step, s);
}

// ReduceMean of integers: the exact mean truncated toward zero. ONNX's reference (NumPy's mean
// in the input's dtype) sums in that dtype, wrapping past it, and divides in f64: the same
// wherever the sum stays within the dtype and 2^53. Narrower integers sum exactly in i64 and
// divide there; hal's mean divides in f32, which rounds past 2^24.
Tensor exact_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, Stream& s) {
  if (is_floating(x.dtype())) return mean(x, axes, keepdims, s);
  const Tensor total = sum(x, axes, keepdims, s);
  const int64_t count = total.numel() == 0 ? 1 : x.numel() / total.numel();
  const Tensor n = full({}, count, DType::i64, s);
  if (x.dtype() == DType::i64) return exact_i64_mean(x, axes, keepdims, n, s);
  return div(total, n, s);  // of no elements: 0
}

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

// Which of x's axes `axes` reduces (none given: every one).
std::vector<bool> reduced_axes(const OpContext& ctx, const Tensor& x,
                               const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), axes.empty());
  for (const int64_t axis : axes) reduced[static_cast<size_t>(ctx.axis(axis, x.dim()))] = true;
  return reduced;
}

// Whether each result reduces no elements: a reduced dimension of size 0.
bool reduces_nothing(const OpContext& ctx, const Tensor& x, const std::vector<int64_t>& axes) {
  const std::vector<bool> reduced = reduced_axes(ctx, x, axes);
  for (int64_t d = 0; d < x.dim(); ++d)
    if (reduced[static_cast<size_t>(d)] && x.size(d) == 0) return true;
  return false;
}

// ReduceMax and ReduceMin. Over no elements (hal's max and min refuse them) the result is the
// least and the greatest value of the type, -inf and inf for floats, as ONNX's spec says from
// opset 18 and ONNX's reference at every opset (earlier specs leave it unsaid).
template <Reduction reduction, bool greatest_of_none>
Outputs extremum(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const ReduceArgs args = reduce_args(ctx, in, 18);
  if (args.identity || !reduces_nothing(ctx, x, args.axes)) return plain<reduction>(ctx, in);
  const std::vector<bool> reduced = reduced_axes(ctx, x, args.axes);
  Shape shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!reduced[static_cast<size_t>(d)])
      shape.push_back(x.size(d));
    else if (args.keepdims)
      shape.push_back(1);
  }
  Stream& s = ctx.stream();
  return {bound_of(x.dtype(), greatest_of_none, s).expand(shape).contiguous(s)};
}

// log(sum(exp(x - max))) + max, stable for large x. An infinite max (a row of -inf, or one
// holding inf) would make x - max NaN: there the shift is 0, which gives log(0) = -inf and
// log(inf) = inf as they should be. Over no elements there is no max (hal's max refuses them):
// the shift is 0 and the result log(0) = -inf, ONNX's value for an empty set.
Outputs reduce_log_sum_exp(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  Stream& s = ctx.stream();
  const ReduceArgs args = reduce_args(ctx, in, 18);
  Tensor shift = full({}, 0, x.dtype(), s);
  if (!reduces_nothing(ctx, x, args.axes)) {
    const Tensor peak = max(x, args.axes, true, s);
    const Tensor zero = full({}, 0, peak.dtype(), s);
    const Tensor finite = eq(sub(peak, peak, s), zero, s);  // inf - inf and NaN - NaN are NaN
    shift = where(finite, peak, zero, s);
  }
  Tensor result = add(log(sum(exp(sub(x, shift, s), s), args.axes, true, s), s), shift, s);
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

// GatherElements by a masked sum: each index compared with every position of the axis picks
// one element. Device ops only, and fast where the axis is short; indices x axis elements.
Tensor masked_gather_elements(const Tensor& data, Tensor index, int64_t axis, Stream& s) {
  const int64_t extent = data.size(axis);
  if (index.dtype() != DType::i64) index = cast(index, DType::i64, s);
  const Tensor zero = full({}, 0, DType::i64, s);
  index = where(lt(index, zero, s), add(index, full({}, extent, DType::i64, s), s), index, s);
  // data cut to the indices' extent off the axis, the axis moved last behind a size-1 axis.
  Tensor values = data;
  for (int64_t d = 0; d < data.dim(); ++d)
    if (d != axis) values = values.slice(d, 0, index.size(d));
  std::vector<int64_t> order;
  for (int64_t d = 0; d < data.dim(); ++d)
    if (d != axis) order.push_back(d);
  order.push_back(axis);
  values = values.permute(order).unsqueeze(axis);
  Shape positions(static_cast<size_t>(data.dim() + 1), 1);
  positions.back() = extent;
  const Tensor mask =
      eq(index.unsqueeze(data.dim()), arange(extent, DType::i64, s).reshape(positions), s);
  // Floats by max over -inf elsewhere, which keeps -0 (a sum from +0 would make it +0).
  if (is_floating(data.dtype())) {
    const Tensor low = full({}, -std::numeric_limits<double>::infinity(), data.dtype(), s);
    return max(where(mask, values, low, s), {data.dim()}, false, s);
  }
  const Tensor picked = where(mask, values, full({}, 0, data.dtype(), s), s);
  return as_dtype(sum(picked, {data.dim()}, false, s), data.dtype(), s);
}

// GatherElements by copies: each output element's position in data found on the host, the
// elements moved by device copies (runs of consecutive positions in one). Memory for the output
// only, one copy per run.
Tensor copied_gather_elements(const Tensor& data, const Tensor& indices, int64_t axis,
                              const std::vector<int64_t>& picks, Stream& s) {
  const int64_t extent = data.size(axis);
  const Shape& shape = indices.shape();
  const Shape strides = contiguous_strides(data.shape());
  std::vector<int64_t> sources(picks.size());
  Shape at(shape.size(), 0);  // the coordinates of output element p
  for (size_t p = 0; p < picks.size(); ++p) {
    const int64_t pick = picks[p] < 0 ? picks[p] + extent : picks[p];
    for (size_t d = 0; d < shape.size(); ++d)
      sources[p] += (static_cast<int64_t>(d) == axis ? pick : at[d]) * strides[d];
    for (size_t d = shape.size(); d-- > 0 && ++at[d] == shape[d];) at[d] = 0;  // the next p's
  }
  const Tensor source = data.contiguous(s);
  const Tensor out = empty(shape, data.dtype(), s.device());
  const size_t element = data.element_size();
  const size_t base = static_cast<size_t>(source.offset()) * element;
  for (size_t p = 0; p < sources.size();) {
    size_t run = 1;
    while (p + run < sources.size() && sources[p + run] == sources[p] + static_cast<int64_t>(run))
      ++run;
    s.copy(out.storage(), source.storage(), run * element, p * element,
           base + static_cast<size_t>(sources[p]) * element);
    p += run;
  }
  return out;
}

// GatherElements: out[..., i, ...] = data[..., index[..., i, ...], ...] along `axis`. The
// indices are read to the host and checked as Gather's are (ONNX: within [-s, s-1]); then a
// masked sum where indices x axis stays small, else copies (a 50 000-element permutation would
// take a 9 GiB mask).
Outputs gather_elements(const OpContext& ctx, const Inputs& in) {
  constexpr int64_t kMaskedElements = int64_t{1} << 24;
  Stream& s = ctx.stream();
  const Tensor& data = in.at(0);
  const Tensor& indices = in.at(1);
  if (indices.dim() != data.dim())
    ctx.invalid("indices " + to_string(indices.shape()) + " and data " + to_string(data.shape()) +
                " differ in rank");
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), data.dim());
  const int64_t extent = data.size(axis);
  for (int64_t d = 0; d < data.dim(); ++d)
    if (d != axis && indices.size(d) > data.size(d))
      ctx.invalid("indices " + to_string(indices.shape()) + " exceed data " +
                  to_string(data.shape()));
  const std::vector<int64_t> picks = ctx.read_ints(indices);
  for (const int64_t pick : picks)
    if (pick < -extent || pick >= extent)
      ctx.invalid("index " + std::to_string(pick) + " is out of range for dimension " +
                  std::to_string(axis) + " of " + to_string(data.shape()));
  if (extent > 0 && indices.numel() <= kMaskedElements / extent)
    return {masked_gather_elements(data, indices, axis, s)};
  return {copied_gather_elements(data, indices, axis, picks, s)};
}

}  // namespace

std::vector<OnnxOp> reduce_onnx_ops() {
  return {
      {"ReduceSum", 1, plain<sum, 13>},
      {"ReduceMean", 1, plain<exact_mean>},
      {"ReduceMax", 1, extremum<max, false>},
      {"ReduceMin", 1, extremum<min, true>},
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
