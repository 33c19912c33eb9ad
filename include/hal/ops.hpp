// Ops on tensors. Each returns a new contiguous tensor on its inputs' device, enqueued on
// `stream` (a stream of that device), and runs on every device with kernels: the CPU's host
// kernels, the portable kernels of OpenCL and CUDA devices. Inputs may be any view.
//
// Errors, all thrown before anything is enqueued: InvalidArgument for shapes that do not
// broadcast, dtypes that differ (there is no implicit promotion), tensors on different devices
// (no implicit transfer; the message names both), a stream of another device, or an axis out
// of range; Unsupported, naming the op, dtype and device, for what the device has no kernel
// for — unless the caller allows CPU fallback (CpuFallback below).
//
// f16 and bf16 are computed in f32 (converted on the device, the result rounded back); f64
// needs a device with the fp64 feature.
#pragma once

#include <string_view>
#include <vector>

#include "hal/tensor.hpp"

namespace hal {

// The shape two shapes broadcast to (NumPy's rule: align from the last dimension; sizes must
// be equal or 1). Throws InvalidArgument naming both shapes and the dimension.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Elementwise arithmetic with broadcasting: f32, f64, i32, i64, f16, bf16 (pow: not the
// integers). Integer division truncates toward zero; dividing an integer by zero gives 0.
Tensor add(const Tensor& a, const Tensor& b, Stream& stream);
Tensor sub(const Tensor& a, const Tensor& b, Stream& stream);
Tensor mul(const Tensor& a, const Tensor& b, Stream& stream);
Tensor div(const Tensor& a, const Tensor& b, Stream& stream);
Tensor maximum(const Tensor& a, const Tensor& b, Stream& stream);  // NaN if either is NaN
Tensor minimum(const Tensor& a, const Tensor& b, Stream& stream);
Tensor pow(const Tensor& a, const Tensor& b, Stream& stream);

// Comparisons with broadcasting, giving bool; the same dtypes as add. NaN compares unequal to
// everything.
Tensor eq(const Tensor& a, const Tensor& b, Stream& stream);
Tensor ne(const Tensor& a, const Tensor& b, Stream& stream);
Tensor lt(const Tensor& a, const Tensor& b, Stream& stream);
Tensor le(const Tensor& a, const Tensor& b, Stream& stream);
Tensor gt(const Tensor& a, const Tensor& b, Stream& stream);
Tensor ge(const Tensor& a, const Tensor& b, Stream& stream);

// Elements of `a` where `cond` (bool) holds, else of `b`, all three broadcast; a and b of any
// one dtype.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Stream& stream);

// Converts between any two dtypes. Floats to integers truncate toward zero and saturate at the
// integer's range, NaN giving 0; integers to narrower integers wrap; anything to bool is
// `!= 0`; f16 and bf16 round to nearest even. A cast to the tensor's own dtype returns it
// (contiguous) without a copy.
Tensor cast(const Tensor& x, DType dtype, Stream& stream);

// Elementwise functions. neg, abs and relu also take i32 and i64.
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

// Reductions over `axes` (every axis when empty; negative axes count from the end; each at
// most once), the reduced dimensions dropped unless `keepdim`. sum, max and min take f32, f64,
// i32, i64, f16 and bf16 and keep the dtype (integer sums wrap); mean takes the floating
// dtypes. max, min and argmax of no elements are InvalidArgument; NaN wins max and min.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Stream& stream);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Stream& stream);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Stream& stream);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Stream& stream);
// i64 positions of the largest element in the reduced dimensions, counted row-major over
// them (over one axis: the index along it). Ties give the first; NaN is the largest.
Tensor argmax(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim, Stream& stream);

// Along one axis: exp(x - max) / sum(exp(x - max)), and its logarithm computed stably.
Tensor softmax(const Tensor& x, int64_t axis, Stream& stream);
Tensor log_softmax(const Tensor& x, int64_t axis, Stream& stream);

// Normalisation over the trailing dimensions `normalized_shape` (which x's shape must end
// with): (x - mean) / sqrt(var + eps) * weight + bias, and x / sqrt(mean(x^2) + eps) * weight.
// weight and bias have normalized_shape, or are undefined (Tensor()) for none.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, Stream& stream);
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, double eps,
                Stream& stream);

// Matrix product through the device's BLAS (OpenBLAS on the CPU, CLBlast on OpenCL, cuBLAS on
// CUDA), f32 and f64. [..., m, k] @ [..., k, n] -> [..., m, n], batch dimensions broadcast; a
// 1-d operand is a row (of A) or a column (of B), dropped from the result. Transposed views go
// to the BLAS as they are; other strided layouts are copied contiguous first.
Tensor matmul(const Tensor& a, const Tensor& b, Stream& stream);

// While one is alive on a thread, ops that the stream's device cannot run (Unsupported) run on
// cpu:0 instead: the inputs are copied there, the op runs, and the result is copied back to
// the device, synchronously, with a warning logged naming the op and device. Nested scopes
// restore the outer setting. HAL_OPS_FALLBACK=cpu in the environment allows it by default.
class CpuFallback {
 public:
  explicit CpuFallback(bool allowed = true);
  ~CpuFallback();
  CpuFallback(const CpuFallback&) = delete;
  CpuFallback& operator=(const CpuFallback&) = delete;

  static bool allowed();  // on this thread, now

 private:
  bool previous_;
};

}  // namespace hal
