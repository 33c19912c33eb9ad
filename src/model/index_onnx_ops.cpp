// ONNX's index and selection ops: positions, masks and picks built from arange, comparisons
// and take(); ops whose result's size depends on the values (NonZero, Compress) read those to
// the host first.
#include <cmath>
#include <cstdio>
#include <limits>

#include "hal/ops.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

std::vector<int64_t> reversed(int64_t extent) {
  std::vector<int64_t> picks;
  for (int64_t i = extent - 1; i >= 0; --i) picks.push_back(i);
  return picks;
}

// ArgMax/ArgMin with select_last_index: over the axis reversed, the first of equal extremes is
// the last of the original's. ArgMin is the ArgMax of an order-reversing map: -x for floating
// types, -1 - x (~x) for signed integers, where -x would wrap the type's minimum onto itself,
// and MAX - x for unsigned ones.
Tensor arg_extreme(const OpContext& ctx, const Tensor& x, bool smallest) {
  Stream& s = ctx.stream();
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), x.dim());
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.attr_int("select_last_index", 0) != 0;
  Tensor values = x;
  if (smallest) {
    if (x.dtype() == DType::boolean) ctx.unsupported("bool inputs");
    if (is_signed_integer(x.dtype()))
      values = sub(full({}, -1, x.dtype(), s), x, s);
    else if (is_integer(x.dtype()))  // MAX - x, which never wraps
      values = sub(bound_of(x.dtype(), true, s), x, s);
    else
      values = neg(x, s);
  }
  if (!last) return argmax(values, {axis}, keepdims, s);
  const int64_t extent = x.size(axis);
  const Tensor found = argmax(take(ctx, values, axis, reversed(extent)), {axis}, keepdims, s);
  return sub(full({}, extent - 1, DType::i64, s), found, s);
}

Outputs arg_max(const OpContext& ctx, const Inputs& in) {
  return {arg_extreme(ctx, in.at(0), false)};
}
Outputs arg_min(const OpContext& ctx, const Inputs& in) {
  return {arg_extreme(ctx, in.at(0), true)};
}

// ReduceProd: the slices along each reduced axis multiplied in turn.
Outputs reduce_prod(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  if (axes.empty())
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), false);
  for (int64_t axis : axes) reduced[static_cast<size_t>(ctx.axis(axis, x.dim()))] = true;
  Tensor product = x;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!reduced[static_cast<size_t>(d)]) continue;
    Tensor folded;
    for (int64_t i = 0; i < product.size(d); ++i) {
      const Tensor slice = product.slice(d, i, i + 1);
      folded = folded.defined() ? mul(folded, slice, s) : slice.contiguous(s);
    }
    if (!folded.defined()) {  // the product of no elements
      Shape shape = product.shape();
      shape[static_cast<size_t>(d)] = 1;
      folded = full(shape, 1, x.dtype(), s);
    }
    product = folded;
  }
  if (keepdims) return {product};
  Shape shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!reduced[static_cast<size_t>(d)]) shape.push_back(x.size(d));
  return {product.reshape(shape)};
}

// CumSum: running sums along the axis, slice by slice (exclusive shifts by one, reverse runs
// from the end).
Outputs cum_sum(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  Tensor x = in.at(0);
  const int64_t axis = ctx.axis(static_cast<int64_t>(ctx.read_scalar(in.at(1))), x.dim());
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.attr_int("reverse", 0) != 0;
  const int64_t extent = x.size(axis);
  if (reverse) x = take(ctx, x, axis, reversed(extent));
  std::vector<Tensor> running;
  Tensor total;
  for (int64_t i = 0; i < extent; ++i) {
    const Tensor slice = x.slice(axis, i, i + 1);
    if (exclusive) {
      Shape shape = slice.shape();
      running.push_back(total.defined() ? total : full(shape, 0, x.dtype(), s));
    }
    total = total.defined() ? add(total, slice, s) : slice.contiguous(s);
    if (!exclusive) running.push_back(total);
  }
  if (running.empty()) return {x.contiguous(s)};
  Tensor result = concat(ctx, running, axis);
  if (reverse) result = take(ctx, result, axis, reversed(extent));
  return {result};
}

Outputs is_nan(const OpContext& ctx, const Inputs& in) {
  return {ne(in.at(0), in.at(0), ctx.stream())};
}

Outputs is_inf(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  const Tensor inf = full({}, std::numeric_limits<double>::infinity(), x.dtype(), s);
  const bool positive = ctx.attr_int("detect_positive", 1) != 0;
  const bool negative = ctx.attr_int("detect_negative", 1) != 0;
  if (positive && negative) return {eq(abs(x, s), inf, s)};
  if (positive) return {eq(x, inf, s)};
  if (negative) return {eq(x, neg(inf, s), s)};
  return {full(x.shape(), 0, DType::boolean, s)};
}

// EyeLike: ones where column - row == k.
Outputs eye_like(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  const Tensor& x = in.at(0);
  if (x.dim() != 2) ctx.invalid("expects a 2-d input, got " + to_string(x.shape()));
  DType dtype = x.dtype();
  if (ctx.has("dtype")) {
    const auto given = dtype_from_onnx(static_cast<int32_t>(ctx.attr_int("dtype", 1)));
    if (!given) ctx.unsupported("dtype " + std::to_string(ctx.attr_int("dtype", 1)));
    dtype = *given;
  }
  const Tensor rows = arange(x.size(0), DType::i64, s).reshape({x.size(0), 1});
  const Tensor cols = arange(x.size(1), DType::i64, s).reshape({1, x.size(1)});
  const Tensor k = full({}, ctx.attr_int("k", 0), DType::i64, s);
  return {cast(eq(sub(cols, rows, s), k, s), dtype, s)};
}

// OneHot: indices (negative ones counted from the end) compared with every position of a new
// axis; on and off values from `values`.
Outputs one_hot(const OpContext& ctx, const Inputs& in) {
  Stream& s = ctx.stream();
  Tensor indices = in.at(0);
  // Checked as a double first: converting NaN or 1e30 to int64 is undefined (it said
  // "depth -9223372036854775808 is not positive").
  const double given_depth = ctx.read_scalar(in.at(1));
  if (!(given_depth >= 1 && given_depth <= static_cast<double>(int64_t{1} << 40))) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", given_depth);
    ctx.invalid("depth " + std::string(text) + " is not a positive count (1 to 2^40)");
  }
  const auto depth = static_cast<int64_t>(given_depth);
  const Tensor& values = in.at(2);
  if (values.numel() != 2) ctx.invalid("values must hold [off, on]");
  const int64_t rank = indices.dim() + 1;
  const int64_t axis = ctx.axis(ctx.attr_int("axis", -1), rank);
  indices = cast(indices, DType::i64, s);
  const Tensor d = full({}, depth, DType::i64, s);
  indices = where(lt(indices, full({}, 0, DType::i64, s), s), add(indices, d, s), indices, s);
  Shape positions(static_cast<size_t>(rank), 1);
  positions[static_cast<size_t>(axis)] = depth;
  const Tensor mask =
      eq(indices.unsqueeze(axis), arange(depth, DType::i64, s).reshape(positions), s);
  const Tensor flat = values.contiguous(s).reshape({2});
  return {where(mask, flat.slice(0, 1, 2).reshape({}), flat.slice(0, 0, 1).reshape({}), s)};
}

// NonZero: [rank, count] positions of the non-zero elements, row-major, from the host.
Outputs non_zero(const OpContext& ctx, const Inputs& in) {
  const Tensor& x = in.at(0);
  const std::vector<double> values = ctx.read_values(x);
  const Shape& shape = x.shape();
  std::vector<int64_t> found;  // flat indices
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] != 0) found.push_back(static_cast<int64_t>(i));
  const auto rank = static_cast<int64_t>(shape.size());
  const auto count = static_cast<int64_t>(found.size());
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(rank, 1) * count));
  for (int64_t n = 0; n < count; ++n) {
    int64_t flat = found[static_cast<size_t>(n)];
    for (int64_t d = rank - 1; d >= 0; --d) {
      out[static_cast<size_t>(d * count + n)] = flat % shape[static_cast<size_t>(d)];
      flat /= shape[static_cast<size_t>(d)];
    }
  }
  if (rank == 0) return {from_host(out.data(), {1, count}, DType::i64, ctx.stream())};
  return {from_host(out.data(), {rank, count}, DType::i64, ctx.stream())};
}

// Compress: the slices along the axis (of the flattened input without one) where the condition
// holds.
Outputs compress(const OpContext& ctx, const Inputs& in) {
  Tensor x = in.at(0);
  const std::vector<double> condition = ctx.read_values(in.at(1));
  if (!ctx.has("axis")) x = x.contiguous(ctx.stream()).reshape({x.numel()});
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), x.dim());
  if (static_cast<int64_t>(condition.size()) > x.size(axis))
    ctx.invalid("the condition is longer than dimension " + std::to_string(axis));
  std::vector<int64_t> picks;
  for (size_t i = 0; i < condition.size(); ++i)
    if (condition[i] != 0) picks.push_back(static_cast<int64_t>(i));
  return {take(ctx, x, axis, picks)};
}

}  // namespace

std::vector<OnnxOp> index_onnx_ops() {
  return {
      {"ArgMax", 1, arg_max},    {"ArgMin", 1, arg_min}, {"ReduceProd", 1, reduce_prod},
      {"CumSum", 11, cum_sum},   {"IsNaN", 9, is_nan},   {"IsInf", 10, is_inf},
      {"EyeLike", 9, eye_like},  {"OneHot", 9, one_hot}, {"NonZero", 9, non_zero},
      {"Compress", 9, compress},
  };
}

}  // namespace hal::model
