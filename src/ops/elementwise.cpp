// The elementwise ops' one definition: argument checks, shape and dtype rules, and the choice of
// kernel table by what the device runs.
#include "elementwise.hpp"

#include "hal/error.hpp"
#include "hal/ops.hpp"

namespace hal {
namespace ops {
namespace {

bool is_integer(DType dtype) { return dtype == DType::i32 || dtype == DType::i64; }
bool is_float(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }
bool integer_ok(Unary op) { return op == Unary::neg || op == Unary::abs || op == Unary::relu; }

void check_stream(std::string_view op, const Tensor& x, const Stream& stream) {
  if (!(stream.device() == x.device()))
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of " + x.describe() +
                                                " on a stream of " + stream.device().id() +
                                                ": use a stream of " + x.device().id());
}

[[noreturn]] void unsupported(std::string_view op, DType dtype, const Device& device,
                              std::string_view takes) {
  throw Error(ErrorCode::Unsupported, std::string(op) + " has no kernel for " +
                                          std::string(to_string(dtype)) + " on " + device.id() +
                                          " (it takes " + std::string(takes) + ")");
}

// Devices with host kernels run the host table, devices with portable kernels the portable
// one (f64 only where the device has it); others have no elementwise kernels yet.
enum class Table { host, portable };
Table table_for(std::string_view op, DType dtype, const Device& device) {
  const DeviceInfo& info = device.info();
  if (info.has_feature(feature::kHostKernels)) return Table::host;
  if (info.has_feature(feature::kPortableKernels)) {
    if (dtype == DType::f64 && !info.has_feature(feature::kFp64))
      unsupported(op, dtype, device, "f64 only on devices with the fp64 feature");
    return Table::portable;
  }
  throw Error(ErrorCode::Unsupported, std::string(op) + " on " + device.id() +
                                          ": the device runs neither host nor portable kernels");
}

}  // namespace

std::string_view name(Binary op) {
  constexpr std::string_view kNames[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  return kNames[static_cast<size_t>(op)];
}

std::string_view name(Unary op) {
  constexpr std::string_view kNames[] = {"neg",   "abs",  "relu",    "exp",  "log", "sqrt",
                                         "rsqrt", "tanh", "sigmoid", "gelu", "silu"};
  return kNames[static_cast<size_t>(op)];
}

Tensor binary(Binary op, const Tensor& a, const Tensor& b, Stream& stream) {
  const std::string_view op_name = name(op);
  if (!a.defined() || !b.defined())
    throw Error(ErrorCode::InvalidArgument, std::string(op_name) + " of an undefined tensor");
  if (!(a.device() == b.device()))
    throw Error(ErrorCode::InvalidArgument,
                std::string(op_name) + " of " + a.describe() + " and " + b.describe() +
                    ": the tensors are on different devices (" + a.device().id() + " and " +
                    b.device().id() + "); copy one with to() first");
  if (a.dtype() != b.dtype())
    throw Error(ErrorCode::InvalidArgument, std::string(op_name) + " of " + a.describe() + " and " +
                                                b.describe() +
                                                ": the dtypes differ; cast one first");
  check_stream(op_name, a, stream);
  if (!is_float(a.dtype()) && !is_integer(a.dtype()))
    unsupported(op_name, a.dtype(), a.device(), "f32, f64, i32 and i64");
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  const Table table = table_for(op_name, a.dtype(), a.device());
  Tensor out = empty(shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  const ElementwiseLayout<2> layout = layout_of(a, b, shape);
  if (table == Table::host)
    host_binary(op, a, b, out, layout, stream);
  else
    portable_binary(op, a, b, out, layout, stream);
  return out;
}

Tensor unary(Unary op, const Tensor& x, Stream& stream) {
  const std::string_view op_name = name(op);
  if (!x.defined())
    throw Error(ErrorCode::InvalidArgument, std::string(op_name) + " of an undefined tensor");
  check_stream(op_name, x, stream);
  if (!is_float(x.dtype()) && !(is_integer(x.dtype()) && integer_ok(op)))
    unsupported(op_name, x.dtype(), x.device(),
                integer_ok(op) ? "f32, f64, i32 and i64" : "f32 and f64");
  const Table table = table_for(op_name, x.dtype(), x.device());
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  const ElementwiseLayout<1> layout = layout_of(x);
  if (table == Table::host)
    host_unary(op, x, out, layout, stream);
  else
    portable_unary(op, x, out, layout, stream);
  return out;
}

}  // namespace ops

#define HAL_BINARY(op)                                          \
  Tensor op(const Tensor& a, const Tensor& b, Stream& stream) { \
    return ops::binary(ops::Binary::op, a, b, stream);          \
  }
HAL_BINARY(add)
HAL_BINARY(sub)
HAL_BINARY(mul)
HAL_BINARY(div)
HAL_BINARY(maximum)
HAL_BINARY(minimum)
#undef HAL_BINARY

#define HAL_UNARY(op) \
  Tensor op(const Tensor& x, Stream& stream) { return ops::unary(ops::Unary::op, x, stream); }
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

}  // namespace hal
