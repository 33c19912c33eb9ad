// The argument checks every op shares, each throwing hal::Error with a message that names the
// op, the tensors and the devices involved, and the choice of kernel table by what the device
// runs.
#pragma once

#include <string_view>

#include "hal/tensor.hpp"

namespace hal::ops {

void check_defined(std::string_view op, const Tensor& x);
// InvalidArgument naming both devices: ops never move data implicitly.
void check_same_device(std::string_view op, const Tensor& a, const Tensor& b);
// InvalidArgument: there is no implicit type promotion.
void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b);
void check_stream(std::string_view op, const Tensor& x, const Stream& stream);
// An axis in [-rank, rank), wrapped to [0, rank); InvalidArgument otherwise.
int64_t wrap_axis(std::string_view op, const Tensor& x, int64_t axis);

[[noreturn]] void unsupported(std::string_view op, DType dtype, const Device& device,
                              std::string_view takes);

bool is_integer(DType dtype);  // i32, i64: the integer dtypes ops compute in
bool is_float(DType dtype);    // f32, f64
bool is_half(DType dtype);     // f16, bf16: ops compute them in f32

// Devices with host kernels run the host table, devices with portable kernels the portable one
// (f64 only where the device has it), devices with the feature `builtin` (builtin_binary ...)
// run the op themselves (StreamImpl::run_builtin_op, if they take the dtype); others throw
// Unsupported naming the op and device.
enum class Table { host, portable, builtin };
Table table_for(std::string_view op, DType dtype, const Device& device,
                std::string_view builtin = {});

}  // namespace hal::ops
