#include "ops/op_checks.hpp"

#include "core/error_context.hpp"
#include "hal/backend.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"

namespace hal::ops {

void check_defined(std::string_view op, const Tensor& x) {
  if (!x.defined())
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of an undefined tensor");
}

const DeviceImpl& device_of(const Tensor& x) {
  return x.defined() ? x.storage().impl()->device() : *x.device().impl();
}

const DeviceImpl& device_of(const Stream& stream) {
  return stream.impl() ? stream.impl()->device() : *stream.device().impl();
}

Tensor empty_beside(const Tensor& x, const Shape& shape, DType dtype) {
  if (!x.defined()) return empty(shape, dtype, x.device());  // throws, as device() does
  return detail::empty_on(shape, dtype, x.storage().impl()->device_ptr());
}

void check_same_device(std::string_view op, const Tensor& a, const Tensor& b) {
  if (&device_of(a) != &device_of(b)) [[unlikely]]
    throw Error(ErrorCode::InvalidArgument,
                std::string(op) + " of " + a.describe() + " and " + b.describe() +
                    ": the tensors are on different devices (" + a.device().id() + " and " +
                    b.device().id() + "); copy one with to() first");
}

void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of " + a.describe() + " and " +
                                                b.describe() +
                                                ": the dtypes differ; cast one first");
}

void check_stream(std::string_view op, const Tensor& x, const Stream& stream) {
  if (&device_of(stream) != &device_of(x)) [[unlikely]]
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of " + x.describe() +
                                                " on a stream of " + stream.device().id() +
                                                ": use a stream of " + x.device().id());
}

int64_t wrap_axis(std::string_view op, const Tensor& x, int64_t axis) {
  const auto rank = static_cast<int64_t>(x.dim());
  if (axis < -rank || axis >= rank)
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of " + x.describe() + ": axis " +
                                                std::to_string(axis) + " is out of range for " +
                                                std::to_string(rank) + " dimensions");
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_operands(std::string_view op, const Tensor& a, const Tensor& b) {
  return broadcast_named(a.shape(), b.shape(), [&] {
    return std::string(op) + " of " + a.describe() + " and " + b.describe();
  });
}

Shape broadcast_named(const Shape& a, const Shape& b, const std::function<std::string()>& what) {
  try {
    const detail::ErrorReportsMuted rewrapped;  // reported below, with the op and operands
    return broadcast_shapes(a, b);
  } catch (const Error& error) {
    throw Error(error.code(), what() + ": " + error.message());
  }
}

void check_dtype(std::string_view op, const Tensor& x, DType dtype) {
  if (is_valid(dtype)) return;
  throw Error(ErrorCode::InvalidArgument,
              std::string(op) + " of " + x.describe() + ": dtype " +
                  std::to_string(static_cast<int>(dtype)) +
                  " is not one of hal's dtypes (f32, f16, bf16, f64, i8, u8, i32, i64, bool)");
}

bool is_half(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }

}  // namespace hal::ops
