// The elementwise ops' one definition: argument checks, shapes, type promotion, and the kernel
// the op table plans for the device (converting to the dtype it computes in where it must).
#include "ops/elementwise.hpp"

#include "autograd/record.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/fallback.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"

namespace hal {
namespace ops {
namespace {

// The shape a and b broadcast to: a's own when they have the same (most calls), else one made
// in `broadcast`.
const Shape& result_shape(std::string_view op, const Tensor& a, const Tensor& b, Shape& broadcast) {
  if (a.shape() == b.shape()) return a.shape();
  broadcast = broadcast_operands(op, a, b);
  return broadcast;
}

}  // namespace

const Tensor& in_compute_dtype(const Tensor& x, const OpPlan& plan, Stream& stream,
                               std::optional<Tensor>& cast) {
  if (x.dtype() == plan.compute) return x;
  return cast.emplace(cast_of(x, plan.compute, stream));
}

Tensor as_result(Tensor out, const OpPlan& plan, Stream& stream) {
  if (out.dtype() == plan.result) return out;
  return cast_of(out, plan.result, stream);
}

std::string_view name(Binary op) { return descriptor(op).name; }
std::string_view name(Unary op) { return descriptor(op).name; }

namespace {

// The op on operands already in the plan's compute dtype.
Tensor run_binary(Binary op, const OpDescriptor& desc, const OpPlan& plan, const Tensor& a,
                  const Tensor& b, const Shape& shape, Stream& stream) {
  Tensor out = empty_beside(a, shape, result_dtype(desc, plan.compute));
  if (out.numel() > 0)
    std::get<BinaryKernel>(plan.implementation->kernel)(op, a, b, out, layout_of(a, b, shape),
                                                        stream);
  return as_result(std::move(out), plan, stream);
}

// Apart, so that the common case (no cast) does not build the casts' empty tensors.
[[gnu::noinline]] Tensor binary_with_casts(Binary op, const OpDescriptor& desc, const OpPlan& plan,
                                           const Tensor& a_in, const Tensor& b_in,
                                           const Shape& shape, Stream& stream) {
  std::optional<Tensor> a_cast, b_cast;
  // a's cast is enqueued (and fails) first, as named statements keep it.
  const Tensor& a = in_compute_dtype(a_in, plan, stream, a_cast);
  const Tensor& b = in_compute_dtype(b_in, plan, stream, b_cast);
  return run_binary(op, desc, plan, a, b, shape, stream);
}

}  // namespace

Tensor binary(Binary op, const Tensor& a_in, const Tensor& b_in, Stream& stream) {
  const OpDescriptor& desc = descriptor(op);
  check_defined(desc.name, a_in);
  check_defined(desc.name, b_in);
  check_same_device(desc.name, a_in, b_in);
  check_stream(desc.name, a_in, stream);
  Shape broadcast;
  const Shape& shape = result_shape(desc.name, a_in, b_in, broadcast);
  const OpPlan plan =
      plan_or_throw(desc, promote_types(a_in.dtype(), b_in.dtype()), {&a_in, &b_in});
  if (a_in.dtype() == plan.compute && b_in.dtype() == plan.compute) [[likely]]
    return run_binary(op, desc, plan, a_in, b_in, shape, stream);
  return binary_with_casts(op, desc, plan, a_in, b_in, shape, stream);
}

namespace {

Tensor run_unary(Unary op, const OpDescriptor& desc, const OpPlan& plan, const Tensor& x,
                 Stream& stream) {
  Tensor out = empty_beside(x, x.shape(), result_dtype(desc, plan.compute));
  if (out.numel() > 0)
    std::get<UnaryKernel>(plan.implementation->kernel)(op, x, out, layout_of(x), stream);
  return as_result(std::move(out), plan, stream);
}

[[gnu::noinline]] Tensor unary_with_cast(Unary op, const OpDescriptor& desc, const OpPlan& plan,
                                         const Tensor& x_in, Stream& stream) {
  std::optional<Tensor> x_cast;
  return run_unary(op, desc, plan, in_compute_dtype(x_in, plan, stream, x_cast), stream);
}

}  // namespace

Tensor unary(Unary op, const Tensor& x_in, Stream& stream) {
  const OpDescriptor& desc = descriptor(op);
  check_defined(desc.name, x_in);
  check_stream(desc.name, x_in, stream);
  const OpPlan plan = plan_or_throw(desc, x_in.dtype(), {&x_in});
  if (x_in.dtype() == plan.compute) [[likely]]
    return run_unary(op, desc, plan, x_in, stream);
  return unary_with_cast(op, desc, plan, x_in, stream);
}

Tensor where_of(const Tensor& cond, const Tensor& a_in, const Tensor& b_in, Stream& stream) {
  const OpDescriptor& desc = where_descriptor();
  check_defined(desc.name, cond);
  check_defined(desc.name, a_in);
  check_defined(desc.name, b_in);
  check_same_device(desc.name, cond, a_in);
  check_same_device(desc.name, a_in, b_in);
  check_stream(desc.name, a_in, stream);
  if (cond.dtype() != DType::boolean)
    throw Error(ErrorCode::InvalidArgument, "where: the condition " + cond.describe() +
                                                " must be bool (compare, or cast it first)");
  Shape broadcast;
  const Shape shape =
      broadcast_named(cond.shape(), result_shape(desc.name, a_in, b_in, broadcast), [&] {
        return "where of condition " + cond.describe() + ", " + a_in.describe() + " and " +
               b_in.describe();
      });
  const OpPlan plan =
      plan_or_throw(desc, promote_types(a_in.dtype(), b_in.dtype()), {&cond, &a_in, &b_in});
  std::optional<Tensor> a_cast, b_cast;
  const Tensor& a = in_compute_dtype(a_in, plan, stream, a_cast);
  const Tensor& b = in_compute_dtype(b_in, plan, stream, b_cast);
  Tensor out = empty_beside(a, shape, plan.compute);
  if (out.numel() > 0)
    std::get<WhereKernel>(plan.implementation->kernel)(cond, a, b, out,
                                                       layout_of(cond, a, b, shape), stream);
  return out;
}

Tensor cast_of(const Tensor& x, DType dtype, Stream& stream) {
  const OpDescriptor& desc = cast_descriptor();
  check_defined(desc.name, x);
  check_stream(desc.name, x, stream);
  check_dtype(desc.name, x, dtype);
  if (x.dtype() == dtype) return x.contiguous(stream);
  // One kernel converts both ways: it must take the source and the target dtype.
  const OpPlan from = plan_or_throw(desc, x.dtype(), {&x});
  const OpImplementation& kernel = *from.implementation;
  if (!kernel.dtypes.has(dtype) || (kernel.takes && !kernel.takes(dtype, x.device().info())))
    throw Error(ErrorCode::Unsupported,
                "cast of " + x.describe() + " to " + std::string(to_string(dtype)) +
                    ": no kernel for " + std::string(to_string(dtype)) + " on " + x.device().id() +
                    " (its " + std::string(kernel.provider) + " convert between " +
                    kernel.dtypes.describe() + ")");
  Tensor out = empty_beside(x, x.shape(), dtype);
  if (out.numel() > 0) std::get<CastKernel>(kernel.kernel)(x, out, layout_of(x), stream);
  return out;
}

}  // namespace ops

#define HAL_BINARY(op)                                                          \
  Tensor op(const Tensor& a, const Tensor& b, Stream& stream) {                 \
    if (autograd::recording({&a, &b}))                                          \
      return autograd::record_binary(ops::Binary::op, &hal::op, a, b, stream);  \
    const Tensor* operands[] = {&a, &b};                                        \
    return ops::run_op(#op, operands, stream, [](ops::OpInputs in, Stream& s) { \
      return ops::binary(ops::Binary::op, *in[0], *in[1], s);                   \
    });                                                                         \
  }
HAL_BINARY(add)
HAL_BINARY(sub)
HAL_BINARY(mul)
HAL_BINARY(div)
HAL_BINARY(maximum)
HAL_BINARY(minimum)
HAL_BINARY(pow)
HAL_BINARY(eq)
HAL_BINARY(ne)
HAL_BINARY(lt)
HAL_BINARY(le)
HAL_BINARY(gt)
HAL_BINARY(ge)
#undef HAL_BINARY

#define HAL_UNARY(op)                                                           \
  Tensor op(const Tensor& x, Stream& stream) {                                  \
    if (autograd::recording({&x}))                                              \
      return autograd::record_unary(ops::Unary::op, &hal::op, x, stream);       \
    const Tensor* operands[] = {&x};                                            \
    return ops::run_op(#op, operands, stream, [](ops::OpInputs in, Stream& s) { \
      return ops::unary(ops::Unary::op, *in[0], s);                             \
    });                                                                         \
  }
HAL_UNARY(neg)
HAL_UNARY(abs)
HAL_UNARY(relu)
HAL_UNARY(exp)
HAL_UNARY(log)
HAL_UNARY(sqrt)
HAL_UNARY(rsqrt)
HAL_UNARY(tanh)
HAL_UNARY(sigmoid)
HAL_UNARY(gelu)
HAL_UNARY(silu)
HAL_UNARY(erf)
HAL_UNARY(floor)
HAL_UNARY(ceil)
HAL_UNARY(round)
HAL_UNARY(sin)
HAL_UNARY(cos)
HAL_UNARY(tan)
HAL_UNARY(asin)
HAL_UNARY(acos)
HAL_UNARY(atan)
HAL_UNARY(sinh)
HAL_UNARY(cosh)
HAL_UNARY(asinh)
HAL_UNARY(acosh)
HAL_UNARY(atanh)
#undef HAL_UNARY

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Stream& stream) {
  if (autograd::recording({&a, &b})) return autograd::record_where(cond, a, b, stream);
  const Tensor* operands[] = {&cond, &a, &b};
  return ops::run_op("where", operands, stream, [](ops::OpInputs in, Stream& s) {
    return ops::where_of(*in[0], *in[1], *in[2], s);
  });
}

Tensor cast(const Tensor& x, DType dtype, Stream& stream) {
  if (autograd::recording({&x})) return autograd::record_cast(x, dtype, stream);
  const Tensor* operands[] = {&x};
  return ops::run_op("cast", operands, stream, [dtype](ops::OpInputs in, Stream& s) {
    return ops::cast_of(*in[0], dtype, s);
  });
}

}  // namespace hal
