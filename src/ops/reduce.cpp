// The reductions' one definition: axes, result shape, the dtype the op table plans (integer sums
// in i64, f16 and bf16 in f32 where the device has no kernel for them), and the layout of the
// kept and reduced dimensions.
#include "ops/reduce.hpp"

#include "autograd/record.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/elementwise.hpp"
#include "ops/fallback.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"

namespace hal {
namespace ops {
namespace {

// Appends dimension (size, stride) to a merged list: joined with the last one when stepping
// the last one by one equals stepping this one across its whole size.
void append_merged(LayoutDims& shape, LayoutDims& strides, int64_t size, int64_t stride) {
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

std::string_view name(Reduce op) { return descriptor(op).name; }

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

Tensor reduce(Reduce op, const Tensor& x_in, const std::vector<int64_t>& axes, bool keepdim,
              Stream& stream) {
  const OpDescriptor& desc = descriptor(op);
  const std::string_view op_name = desc.name;
  check_defined(op_name, x_in);
  check_stream(op_name, x_in, stream);
  std::vector<bool> reduced(x_in.shape().size(), axes.empty());
  for (int64_t axis : axes) {
    const auto d = static_cast<size_t>(wrap_axis(op_name, x_in, axis));
    if (reduced[d])
      throw Error(ErrorCode::InvalidArgument, std::string(op_name) + " of " + x_in.describe() +
                                                  ": axis " + std::to_string(axis) +
                                                  " is given twice");
    reduced[d] = true;
  }
  const OpPlan plan = plan_or_throw(desc, x_in.dtype(), {&x_in});
  if (op == Reduce::mean && plan.compute == DType::i64) {
    // An exact integer sum, then one division in f32.
    int64_t count = 1;
    for (size_t d = 0; d < reduced.size(); ++d)
      if (reduced[d]) count *= x_in.shape()[d];
    const Tensor total =
        cast_of(reduce(Reduce::sum, x_in, axes, keepdim, stream), DType::f32, stream);
    return binary(Binary::div, total, full({}, static_cast<double>(count), DType::f32, stream),
                  stream);
  }
  std::optional<Tensor> x_cast;
  const Tensor& x = in_compute_dtype(x_in, plan, stream, x_cast);
  Shape shape;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d])
      shape.push_back(x.shape()[d]);
    else if (keepdim)
      shape.push_back(1);
  }
  const ReduceLayout layout = reduce_layout(x, reduced);
  if (layout.count == 0 && op != Reduce::sum && op != Reduce::mean && layout.outputs > 0)
    throw Error(ErrorCode::InvalidArgument, std::string(op_name) + " of " + x_in.describe() +
                                                ": the reduced dimensions hold no elements");
  Tensor out = empty_beside(x, shape, result_dtype(desc, plan.compute));
  if (out.numel() > 0)
    std::get<ReduceKernel>(plan.implementation->kernel)(op, x, out, layout, reduced, stream);
  return as_result(std::move(out), plan, stream);
}

}  // namespace ops

#define HAL_REDUCE(op)                                                                         \
  Tensor op(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Stream& stream) { \
    if (autograd::recording({&x}))                                                             \
      return autograd::record_reduce(ops::Reduce::op, x, axes, keepdim, stream);               \
    const Tensor* operands[] = {&x};                                                           \
    return ops::run_op(#op, operands, stream, [&axes, keepdim](ops::OpInputs in, Stream& s) {  \
      return ops::reduce(ops::Reduce::op, *in[0], axes, keepdim, s);                           \
    });                                                                                        \
  }
HAL_REDUCE(sum)
HAL_REDUCE(mean)
HAL_REDUCE(max)
HAL_REDUCE(min)
HAL_REDUCE(argmax)
#undef HAL_REDUCE

}  // namespace hal
