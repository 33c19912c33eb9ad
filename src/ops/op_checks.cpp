#include "op_checks.hpp"

#include "hal/error.hpp"

namespace hal::ops {

void check_defined(std::string_view op, const Tensor& x) {
  if (!x.defined())
    throw Error(ErrorCode::InvalidArgument, std::string(op) + " of an undefined tensor");
}

void check_same_device(std::string_view op, const Tensor& a, const Tensor& b) {
  if (!(a.device() == b.device()))
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
  if (!(stream.device() == x.device()))
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

void unsupported(std::string_view op, DType dtype, const Device& device, std::string_view takes) {
  throw Error(ErrorCode::Unsupported, std::string(op) + " has no kernel for " +
                                          std::string(to_string(dtype)) + " on " + device.id() +
                                          " (it takes " + std::string(takes) + ")");
}

bool is_integer(DType dtype) { return dtype == DType::i32 || dtype == DType::i64; }
bool is_float(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }
bool is_half(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16; }

Table table_for(std::string_view op, DType dtype, const Device& device, std::string_view builtin) {
  const DeviceInfo& info = device.info();
  if (info.has_feature(feature::kHostKernels)) return Table::host;
  if (info.has_feature(feature::kPortableKernels)) {
    if (dtype == DType::f64 && !info.has_feature(feature::kFp64))
      unsupported(op, dtype, device, "f64 only on devices with the fp64 feature");
    return Table::portable;
  }
  if (!builtin.empty() && info.has_feature(builtin)) {
    if (!info.supports(dtype)) unsupported(op, dtype, device, "the dtypes the device lists");
    return Table::builtin;
  }
  throw Error(ErrorCode::Unsupported, std::string(op) + " on " + device.id() +
                                          ": the device runs neither host nor portable kernels");
}

}  // namespace hal::ops
