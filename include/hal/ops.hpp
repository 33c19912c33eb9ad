// Ops on tensors. Each returns a new contiguous tensor on its inputs' device, enqueued on
// `stream` (a stream of that device), and runs on every device with kernels: the CPU's host
// kernels, the portable kernels of OpenCL and CUDA devices. Inputs may be any view.
//
// Errors, all thrown before anything is enqueued: InvalidArgument for shapes that do not
// broadcast, dtypes that differ (there is no implicit promotion), tensors on different devices
// (no implicit transfer; the message names both) or a stream of another device; Unsupported,
// naming the op, dtype and device, for a dtype the op has no kernel for.
#pragma once

#include <string_view>

#include "hal/tensor.hpp"

namespace hal {

// The shape two shapes broadcast to (NumPy's rule: align from the last dimension; sizes must
// be equal or 1). Throws InvalidArgument naming both shapes and the dimension.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Elementwise arithmetic with broadcasting: f32, f64 (on devices with f64), i32, i64. Integer
// division truncates toward zero; dividing an integer by zero gives an unspecified value.
Tensor add(const Tensor& a, const Tensor& b, Stream& stream);
Tensor sub(const Tensor& a, const Tensor& b, Stream& stream);
Tensor mul(const Tensor& a, const Tensor& b, Stream& stream);
Tensor div(const Tensor& a, const Tensor& b, Stream& stream);
Tensor maximum(const Tensor& a, const Tensor& b, Stream& stream);
Tensor minimum(const Tensor& a, const Tensor& b, Stream& stream);

// Elementwise functions. neg, abs and relu take f32, f64, i32 and i64; the others f32 and f64.
// gelu is the exact form, x * (1 + erf(x / sqrt(2))) / 2.
Tensor neg(const Tensor& x, Stream& stream);
Tensor abs(const Tensor& x, Stream& stream);
Tensor relu(const Tensor& x, Stream& stream);
Tensor exp(const Tensor& x, Stream& stream);
Tensor log(const Tensor& x, Stream& stream);
Tensor sqrt(const Tensor& x, Stream& stream);
Tensor rsqrt(const Tensor& x, Stream& stream);
Tensor tanh(const Tensor& x, Stream& stream);
Tensor sigmoid(const Tensor& x, Stream& stream);
Tensor gelu(const Tensor& x, Stream& stream);
Tensor silu(const Tensor& x, Stream& stream);

// Matrix product through the device's BLAS (OpenBLAS on the CPU, CLBlast on OpenCL, cuBLAS on
// CUDA), f32 and f64. [..., m, k] @ [..., k, n] -> [..., m, n], batch dimensions broadcast; a
// 1-d operand is a row (of A) or a column (of B), dropped from the result. Transposed views go
// to the BLAS as they are; other strided layouts are copied contiguous first.
Tensor matmul(const Tensor& a, const Tensor& b, Stream& stream);

}  // namespace hal
