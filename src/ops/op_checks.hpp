// The argument checks every op shares, each throwing hal::Error with a message that names the
// op, the tensors and the devices involved.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "hal/tensor.hpp"

namespace hal::ops {

void check_defined(std::string_view op, const Tensor& x);
// The backend's object of the device a tensor's memory or a stream belongs to, read without
// making a Device handle, whose reference count costs two atomic operations a look: an op's
// checks look several times. An undefined tensor or empty stream throws as device() does.
const DeviceImpl& device_of(const Tensor& x);
const DeviceImpl& device_of(const Stream& stream);
// empty(shape, dtype, x.device()) without making a Device handle; an undefined x throws as
// x.device() does.
Tensor empty_beside(const Tensor& x, const Shape& shape, DType dtype);
// InvalidArgument naming both devices: ops never move data implicitly.
void check_same_device(std::string_view op, const Tensor& a, const Tensor& b);
// InvalidArgument: for operands that must agree (a norm's weight and its input).
void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b);
void check_stream(std::string_view op, const Tensor& x, const Stream& stream);
// An axis in [-rank, rank), wrapped to [0, rank); InvalidArgument otherwise.
int64_t wrap_axis(std::string_view op, const Tensor& x, int64_t axis);

// The shape a and b broadcast to; InvalidArgument naming the op and both operands otherwise.
Shape broadcast_operands(std::string_view op, const Tensor& a, const Tensor& b);
// broadcast_shapes of two shapes; its error led by what(): the op and its operands, built only
// for the error.
Shape broadcast_named(const Shape& a, const Shape& b, const std::function<std::string()>& what);
// InvalidArgument for a value outside DType's enumerators.
void check_dtype(std::string_view op, const Tensor& x, DType dtype);

bool is_half(DType dtype);  // f16, bf16: ops without kernels for them compute them in f32

}  // namespace hal::ops
