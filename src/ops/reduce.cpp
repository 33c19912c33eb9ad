// The reductions' one definition: axes, result shape, dtype rules (f16 and bf16 in f32), and the
// layout of the kept and reduced dimensions.
#include "reduce.hpp"

#include "builtin_ops.hpp"
#include "elementwise.hpp"
#include "fallback.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "op_checks.hpp"

namespace hal {
namespace ops {
namespace {

// Appends dimension (size, stride) to a merged list: joined with the last one when stepping
// the last one by one equals stepping this one across its whole size.
void append_merged(Shape& shape, Shape& strides, int64_t size, int64_t stride) {
  if (size == 1) return;
  if (!shape.empty() && strides.back() == stride * size) {
    shape.back() *= size;
    strides.back() = stride;
    return;
  }
  shape.push_back(size);
  strides.push_back(stride);
}

}  // namespace

std::string_view name(Reduce op) {
  constexpr std::string_view kNames[] = {"sum", "mean", "max", "min", "argmax"};
  return kNames[static_cast<size_t>(op)];
}

ReduceLayout reduce_layout(const Tensor& x, const std::vector<bool>& reduced_axes) {
  ReduceLayout layout;
  layout.offset = x.offset();
  layout.outputs = 1;
  layout.count = 1;
  for (size_t d = 0; d < x.shape().size(); ++d) {
    const int64_t size = x.shape()[d], stride = x.strides()[d];
    if (reduced_axes[d]) {
      append_merged(layout.reduced, layout.reduced_strides, size, stride);
      layout.count *= size;
    } else {
      append_merged(layout.kept, layout.kept_strides, size, stride);
      layout.outputs *= size;
    }
  }
  return layout;
}

Tensor reduce(Reduce op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim,
              Stream& stream) {
  const std::string_view op_name = name(op);
  check_defined(op_name, x);
  check_stream(op_name, x, stream);
  std::vector<bool> reduced(x.shape().size(), axes.empty());
  for (int64_t axis : axes) {
    const auto d = static_cast<size_t>(wrap_axis(op_name, x, axis));
    if (reduced[d])
      throw Error(ErrorCode::InvalidArgument, std::string(op_name) + " of " + x.describe() +
                                                  ": axis " + std::to_string(axis) +
                                                  " is given twice");
    reduced[d] = true;
  }
  if (is_half(x.dtype())) {
    const Tensor result = reduce(op, cast(x, DType::f32, stream), axes, keepdim, stream);
    return op == Reduce::argmax ? result : cast(result, x.dtype(), stream);
  }
  const bool floating_only = op == Reduce::mean;
  if (!is_float(x.dtype()) && !(is_integer(x.dtype()) && !floating_only))
    unsupported(op_name, x.dtype(), x.device(),
                floating_only ? "f32, f64, f16 and bf16" : "f32, f64, i32, i64, f16 and bf16");
  Shape shape;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d])
      shape.push_back(x.shape()[d]);
    else if (keepdim)
      shape.push_back(1);
  }
  const ReduceLayout layout = reduce_layout(x, reduced);
  if (layout.count == 0 && op != Reduce::sum && op != Reduce::mean && layout.outputs > 0)
    throw Error(ErrorCode::InvalidArgument, std::string(op_name) + " of " + x.describe() +
                                                ": the reduced dimensions hold no elements");
  const Table table = table_for(op_name, x.dtype(), x.device(), feature::kBuiltinReduce);
  Tensor out = empty(shape, op == Reduce::argmax ? DType::i64 : x.dtype(), x.device());
  if (out.numel() == 0) return out;
  if (table == Table::builtin) {
    builtin_reduce(op, x, reduced, out, stream);
    return out;
  }
  if (table == Table::host)
    host_reduce(op, x, out, layout, stream);
  else
    portable_reduce(op, x, out, layout, stream);
  return out;
}

}  // namespace ops

#define HAL_REDUCE(op)                                                                         \
  Tensor op(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Stream& stream) { \
    return ops::run_op(#op, {x}, stream,                                                       \
                       [&axes, keepdim](const std::vector<Tensor>& in, Stream& s) {            \
                         return ops::reduce(ops::Reduce::op, in[0], axes, keepdim, s);         \
                       });                                                                     \
  }
HAL_REDUCE(sum)
HAL_REDUCE(mean)
HAL_REDUCE(max)
HAL_REDUCE(min)
HAL_REDUCE(argmax)
#undef HAL_REDUCE

}  // namespace hal
