// The elementwise ops' one definition: argument checks, shape and dtype rules, f16 and bf16
// computed in f32, and the choice of kernel table by what the device runs.
#include "elementwise.hpp"

#include "builtin_ops.hpp"
#include "fallback.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "op_checks.hpp"

namespace hal {
namespace ops {
namespace {

bool integer_ok(Unary op) { return op == Unary::neg || op == Unary::abs || op == Unary::relu; }
bool integer_ok(Binary op) { return op != Binary::pow; }

}  // namespace

std::string_view name(Binary op) {
  constexpr std::string_view kNames[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow",
                                         "eq",  "ne",  "lt",  "le",  "gt",      "ge"};
  return kNames[static_cast<size_t>(op)];
}

std::string_view name(Unary op) {
  constexpr std::string_view kNames[] = {"neg",   "abs",  "relu",    "exp",  "log", "sqrt",
                                         "rsqrt", "tanh", "sigmoid", "gelu", "silu"};
  return kNames[static_cast<size_t>(op)];
}

Tensor binary(Binary op, const Tensor& a, const Tensor& b, Stream& stream) {
  const std::string_view op_name = name(op);
  check_defined(op_name, a);
  check_defined(op_name, b);
  check_same_device(op_name, a, b);
  check_same_dtype(op_name, a, b);
  check_stream(op_name, a, stream);
  if (is_half(a.dtype())) {
    const Tensor result =
        binary(op, cast(a, DType::f32, stream), cast(b, DType::f32, stream), stream);
    return is_comparison(op) ? result : cast(result, a.dtype(), stream);
  }
  if (!is_float(a.dtype()) && !(is_integer(a.dtype()) && integer_ok(op)))
    unsupported(op_name, a.dtype(), a.device(),
                integer_ok(op) ? "f32, f64, i32, i64, f16 and bf16" : "f32, f64, f16 and bf16");
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  const Table table = table_for(op_name, a.dtype(), a.device(),
                                has_builtin(op) ? feature::kBuiltinBinary : std::string_view());
  Tensor out = empty(shape, is_comparison(op) ? DType::boolean : a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (table == Table::builtin) {
    builtin_binary(op, a, b, out, stream);
    return out;
  }
  const ElementwiseLayout<2> layout = layout_of(a, b, shape);
  if (table == Table::host)
    host_binary(op, a, b, out, layout, stream);
  else
    portable_binary(op, a, b, out, layout, stream);
  return out;
}

Tensor unary(Unary op, const Tensor& x, Stream& stream) {
  const std::string_view op_name = name(op);
  check_defined(op_name, x);
  check_stream(op_name, x, stream);
  if (is_half(x.dtype()))
    return cast(unary(op, cast(x, DType::f32, stream), stream), x.dtype(), stream);
  if (!is_float(x.dtype()) && !(is_integer(x.dtype()) && integer_ok(op)))
    unsupported(op_name, x.dtype(), x.device(),
                integer_ok(op) ? "f32, f64, i32, i64, f16 and bf16" : "f32, f64, f16 and bf16");
  const Table table = table_for(op_name, x.dtype(), x.device(), feature::kBuiltinUnary);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  if (table == Table::builtin) {
    builtin_unary(op, x, out, stream);
    return out;
  }
  const ElementwiseLayout<1> layout = layout_of(x);
  if (table == Table::host)
    host_unary(op, x, out, layout, stream);
  else
    portable_unary(op, x, out, layout, stream);
  return out;
}

Tensor where_of(const Tensor& cond, const Tensor& a, const Tensor& b, Stream& stream) {
  constexpr std::string_view op = "where";
  check_defined(op, cond);
  check_defined(op, a);
  check_defined(op, b);
  check_same_device(op, cond, a);
  check_same_device(op, a, b);
  check_same_dtype(op, a, b);
  check_stream(op, a, stream);
  if (cond.dtype() != DType::boolean)
    throw Error(ErrorCode::InvalidArgument, "where: the condition " + cond.describe() +
                                                " must be bool (compare, or cast it first)");
  const Shape shape = broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape()));
  const Table table = table_for(op, a.dtype(), a.device());
  Tensor out = empty(shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  const ElementwiseLayout<3> layout = layout_of(cond, a, b, shape);
  if (table == Table::host)
    host_where(cond, a, b, out, layout, stream);
  else
    portable_where(cond, a, b, out, layout, stream);
  return out;
}

Tensor cast_of(const Tensor& x, DType dtype, Stream& stream) {
  constexpr std::string_view op = "cast";
  check_defined(op, x);
  check_stream(op, x, stream);
  if (x.dtype() == dtype) return x.contiguous(stream);
  if (x.device().info().has_feature(feature::kPortableKernels) &&
      !x.device().info().has_feature(feature::kFp64) &&
      (x.dtype() == DType::f64 || dtype == DType::f64))
    unsupported(op, DType::f64, x.device(), "f64 only on devices with the fp64 feature");
  const Table table = table_for(op, x.dtype(), x.device());
  Tensor out = empty(x.shape(), dtype, x.device());
  if (out.numel() == 0) return out;
  const ElementwiseLayout<1> layout = layout_of(x);
  if (table == Table::host)
    host_cast(x, out, layout, stream);
  else
    portable_cast(x, out, layout, stream);
  return out;
}

}  // namespace ops

#define HAL_BINARY(op)                                                                     \
  Tensor op(const Tensor& a, const Tensor& b, Stream& stream) {                            \
    return ops::run_op(#op, {a, b}, stream, [](const std::vector<Tensor>& in, Stream& s) { \
      return ops::binary(ops::Binary::op, in[0], in[1], s);                                \
    });                                                                                    \
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

#define HAL_UNARY(op)                                                                   \
  Tensor op(const Tensor& x, Stream& stream) {                                          \
    return ops::run_op(#op, {x}, stream, [](const std::vector<Tensor>& in, Stream& s) { \
      return ops::unary(ops::Unary::op, in[0], s);                                      \
    });                                                                                 \
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
#undef HAL_UNARY

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Stream& stream) {
  return ops::run_op("where", {cond, a, b}, stream, [](const std::vector<Tensor>& in, Stream& s) {
    return ops::where_of(in[0], in[1], in[2], s);
  });
}

Tensor cast(const Tensor& x, DType dtype, Stream& stream) {
  return ops::run_op("cast", {x}, stream, [dtype](const std::vector<Tensor>& in, Stream& s) {
    return ops::cast_of(in[0], dtype, s);
  });
}

}  // namespace hal
