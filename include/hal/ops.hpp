// Ops on tensors. Each returns a new contiguous tensor on its inputs' device, enqueued on
// `stream` (a stream of that device), and runs on every device with kernels: the CPU's host
// kernels, the portable kernels of OpenCL and CUDA devices. Inputs may be any view.
//
// Errors, all thrown before anything is enqueued: InvalidArgument for shapes that do not
// broadcast, tensors on different devices (no implicit transfer; the message names both), a
// stream of another device, or an axis out of range; Unsupported, naming the op, the operands'
// dtypes and shapes, the device and why, for what the device has no kernel for — unless the
// caller allows CPU fallback (CpuFallback below).
//
// Which device runs which op in which dtype is one table (docs/ops.md; `hal ops` prints it):
// supported_ops() below reads it. Operands of two dtypes are promoted to one (promote_types);
// f16 and bf16 are computed in f32 where a device has no kernel for them (converted on the
// device, the result rounded back once); f64 needs a device with the fp64 feature.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hal/tensor.hpp"

namespace hal {

// The dtype operands of dtypes a and b are promoted to, PyTorch's rules (NumPy's agree here):
// bool < integers < floating dtypes, the higher category winning whole (i64 with f16 is f16);
// within a category the wider (f16 with bf16 is f32); i8 with u8 is i32, where NumPy and PyTorch
// give i16, which hal has not.
DType promote_types(DType a, DType b);

// One op as a device runs it, from the op table: the input dtypes it takes there, and for each
// who computes it ("host kernels", "OpenBLAS", "portable kernels in f32", "built from max, sub,
// exp, sum, div").
struct OpSupport {
  std::string name;
  std::vector<DType> dtypes;
  std::vector<std::string> kernels;  // one per dtype
};
// Every op of this header, in its order, with the dtypes `device` runs it in (possibly none).
std::vector<OpSupport> supported_ops(const Device& device);
// Whether `device` runs `op` (a name of this header) for inputs of `dtype`; NotFound for an
// unknown op name.
bool supports_op(const Device& device, std::string_view op, DType dtype);

// The shape two shapes broadcast to (NumPy's rule: align from the last dimension; sizes must
// be equal or 1). Throws InvalidArgument naming both shapes and the dimension.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Elementwise arithmetic with broadcasting and type promotion: f32, f64, f16, bf16, i8, u8, i32,
// i64 (pow: the floating dtypes). Integer arithmetic wraps; integer division truncates toward
// zero, and dividing an integer by zero gives 0.
Tensor add(const Tensor& a, const Tensor& b, Stream& stream);
Tensor sub(const Tensor& a, const Tensor& b, Stream& stream);
Tensor mul(const Tensor& a, const Tensor& b, Stream& stream);
Tensor div(const Tensor& a, const Tensor& b, Stream& stream);
Tensor maximum(const Tensor& a, const Tensor& b, Stream& stream);  // NaN if either is NaN
Tensor minimum(const Tensor& a, const Tensor& b, Stream& stream);
Tensor pow(const Tensor& a, const Tensor& b, Stream& stream);

// Comparisons with broadcasting and type promotion, giving bool; every dtype. NaN compares
// unequal to everything.
Tensor eq(const Tensor& a, const Tensor& b, Stream& stream);
Tensor ne(const Tensor& a, const Tensor& b, Stream& stream);
Tensor lt(const Tensor& a, const Tensor& b, Stream& stream);
Tensor le(const Tensor& a, const Tensor& b, Stream& stream);
Tensor gt(const Tensor& a, const Tensor& b, Stream& stream);
Tensor ge(const Tensor& a, const Tensor& b, Stream& stream);

// Elements of `a` where `cond` (bool) holds, else of `b`, all three broadcast; a and b of any
// dtypes, promoted to one.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Stream& stream);

// Converts between any two dtypes. Floats to integers truncate toward zero and saturate at the
// integer's range, NaN giving 0; integers to narrower integers wrap; anything to bool is
// `!= 0`; f16 and bf16 round to nearest even. A cast to the tensor's own dtype returns it
// (contiguous) without a copy.
Tensor cast(const Tensor& x, DType dtype, Stream& stream);

// Elementwise functions. neg, abs and relu take every numeric dtype and keep it (neg wraps);
// the others take any dtype and give f32 for bool and integers (as PyTorch's exp(int) does).
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
// ONNX's elementwise functions: erf; floor, ceil and round (half to even, as rint); the
// trigonometric and hyperbolic functions and their inverses. Floating results, like exp.
Tensor erf(const Tensor& x, Stream& stream);
Tensor floor(const Tensor& x, Stream& stream);
Tensor ceil(const Tensor& x, Stream& stream);
Tensor round(const Tensor& x, Stream& stream);
Tensor sin(const Tensor& x, Stream& stream);
Tensor cos(const Tensor& x, Stream& stream);
Tensor tan(const Tensor& x, Stream& stream);
Tensor asin(const Tensor& x, Stream& stream);
Tensor acos(const Tensor& x, Stream& stream);
Tensor atan(const Tensor& x, Stream& stream);
Tensor sinh(const Tensor& x, Stream& stream);
Tensor cosh(const Tensor& x, Stream& stream);
Tensor asinh(const Tensor& x, Stream& stream);
Tensor acosh(const Tensor& x, Stream& stream);
Tensor atanh(const Tensor& x, Stream& stream);

// Reductions over `axes` (every axis when empty; negative axes count from the end; each at
// most once), the reduced dimensions dropped unless `keepdim`. sum of bool and integers counts
// exactly in i64 (wrapping past its range) and gives i64, of floating dtypes keeps the dtype;
// mean of bool and integers is the exact i64 sum divided in f32, giving f32; max and min take
// the numeric dtypes and keep them. max, min and argmax of no elements are InvalidArgument; NaN
// wins max and min.
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
// CUDA), f32 and f64 (f16 and bf16 computed in f32). [..., m, k] @ [..., k, n] -> [..., m, n],
// batch dimensions broadcast; a 1-d operand is a row (of A) or a column (of B), dropped from the
// result. Transposed views go to the BLAS as they are; other strided layouts are copied contiguous
// first.
Tensor matmul(const Tensor& a, const Tensor& b, Stream& stream);

// Convolution over 1 to 3 spatial dimensions through the device's DNN library (oneDNN on the
// CPU), cross-correlation as ONNX and PyTorch define it: x [N, C, D...] with weight [M, C/groups,
// K...] and bias [M] (or undefined) gives [N, M, O...], O = (D + before + after - dilation *
// (K - 1) - 1) / stride + 1. f32 (f16 and bf16 computed in f32). Devices without such a library
// refuse (Unsupported); hal_model's Conv then builds it from views and matmul.
struct ConvOptions {
  std::vector<int64_t> strides, dilations;       // per spatial dimension; empty: all 1
  std::vector<int64_t> pads_before, pads_after;  // likewise; empty: all 0
  int64_t groups = 1;
  bool relu = false;  // max(result, 0), fused into the convolution
  // Added to the result before the ReLU (a residual block's skip connection), fused too; of
  // the result's shape and x's dtype, on x's device. Undefined: none.
  Tensor residual;
  // The weights' contents do not change while their buffer lives (a model's weights): the
  // device may keep them in its own layout between calls.
  bool constant_weights = false;
};
Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvOptions& options,
            Stream& stream);

// A chain of elementwise ops computed in one pass over the result (what a model's Add -> Relu
// or Mul -> Add -> Tanh becomes at load): no intermediate tensor is written, each input is
// read once. Step j applies `op` (an arithmetic op or element function of this header: "add",
// "mul", "relu", "tanh" ...; not a comparison) to its operands, each an input (0 .. inputs - 1)
// or an earlier step's result (inputs + j); the last step's result is returned.
struct ElementwiseProgram {
  struct Step {
    std::string op;
    std::vector<int> operands;  // one for a function, two for arithmetic
  };
  std::vector<Step> steps;
};
// The inputs broadcast together (each step's operands broadcast as the single op would), are
// promoted to one floating dtype and computed in it throughout: f16 and bf16 in f32, rounded
// once at the end. At most kMaxFusedElementwiseInputs inputs. InvalidArgument naming the step
// for a malformed program; Unsupported where the device has no fused kernel (`hal ops` lists
// fused_elementwise where one runs): run the steps as separate ops there.
inline constexpr size_t kMaxFusedElementwiseInputs = 8;
Tensor fused_elementwise(const ElementwiseProgram& program, const std::vector<Tensor>& inputs,
                         Stream& stream);

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
