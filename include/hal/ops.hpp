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

// The dtype operands of dtypes a and b are promoted to, PyTorch's rules (NumPy's agree among the
// integers): bool < integers < floating dtypes, the higher category winning whole (i64 with f16
// is f16); within a category the wider (f16 with bf16 is f32); a signed with an unsigned integer
// the narrowest signed one that holds both (u8 with i8 is i16, u32 with i16 is i64), but u64
// with a signed integer is f64, as in NumPy (PyTorch refuses it).
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

// Elementwise arithmetic with broadcasting and type promotion: every dtype but bool (pow: the
// floating dtypes). Integer arithmetic wraps; integer division truncates toward
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
// Their gradients for x, given `grad` = d(loss)/d(result) (x's shape and dtype), as PyTorch's
// layer-norm backward computes them: with xhat the normalised x (no weight or bias), rstd its
// scale 1 / sqrt(var + eps) (of mean(x^2) + eps for rms_norm) and g = grad * weight,
// rstd * (g - mean(g) - xhat * mean(g * xhat)) over the normalised dimensions, without the
// mean(g) term for rms_norm. Gradients for weight and bias are sums over the leading dimensions
// of grad * xhat and grad (the autograd rules take them so).
Tensor layer_norm_backward(const Tensor& x, const Tensor& grad, const Shape& normalized_shape,
                           const Tensor& weight, double eps, Stream& stream);
Tensor rms_norm_backward(const Tensor& x, const Tensor& grad, const Shape& normalized_shape,
                         const Tensor& weight, double eps, Stream& stream);

// Matrix product through the device's BLAS (OpenBLAS on the CPU, CLBlast on OpenCL, cuBLAS on
// CUDA), f32 and f64 (f16 and bf16 computed in f32). [..., m, k] @ [..., k, n] -> [..., m, n],
// batch dimensions broadcast; a 1-d operand is a row (of A) or a column (of B), dropped from the
// result. Transposed views go to the BLAS as they are; other strided layouts are copied contiguous
// first.
Tensor matmul(const Tensor& a, const Tensor& b, Stream& stream);

// What a product applies to its result before it is stored (a GEMM epilogue, as a linear
// layer's bias and activation): `bias` added to every row, then `activation`.
struct MatmulEpilogue {
  Tensor bias;             // undefined: none; else [n], a vector of the result's columns
  std::string activation;  // "" (none), "relu", "gelu", "tanh", "sigmoid" or "silu"
};
// activation(a @ b + bias). Where the device runs the product with hal's own GEMM (OpenCL and
// CUDA devices, per shape as `hal tune` chose; docs/tuning.md), the GEMM applies the epilogue
// to each block as it stores it, one pass over the result; elsewhere the product is followed by
// one fused pass (fused_elementwise). The bias has the product's dtype (promote_types of a and
// b) and device; InvalidArgument naming the shapes for one that is not [n], or an activation
// not listed. Autograd records it as matmul, add and the activation.
Tensor matmul(const Tensor& a, const Tensor& b, const MatmulEpilogue& epilogue, Stream& stream);
// The element function an epilogue names, as its op ("" gives x itself); InvalidArgument for a
// name not listed there.
Tensor activate(const Tensor& x, std::string_view activation, Stream& stream);

// Convolution over 1 to 3 spatial dimensions, cross-correlation as ONNX and PyTorch define it:
// x [N, C, D...] with weight [M, C/groups, K...] and bias [M] (or undefined) gives [N, M, O...],
// O = (D + before + after - dilation * (K - 1) - 1) / stride + 1. Through the device's DNN
// library where it has one (oneDNN on the CPU, f32; f16 and bf16 computed in f32); elsewhere, and
// for dtypes the library lacks, built from strided views of the padded input, concat and matmul
// (im2col).
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

// The transposed convolution (PyTorch's conv_transpose1d/2d/3d, ONNX's ConvTranspose): the
// gradient of conv with respect to its input, as an op. x [N, C, D...] with weight [C, M/groups,
// K...] and bias [M] (or undefined) gives [N, M, O...], O = (D - 1) stride - before - after +
// dilation (K - 1) + output_padding + 1. Through the device's DNN library where it has one
// (oneDNN's deconvolution on the CPU, f32; f16 and bf16 computed in f32) and the window suits it
// (the padding after less output_padding above -stride); elsewhere one stride-1 conv per phase of
// the strides, interleaved (docs/ops.md).
struct ConvTransposeOptions {
  std::vector<int64_t> strides, dilations;       // per spatial dimension; empty: all 1
  std::vector<int64_t> pads_before, pads_after;  // likewise; empty: all 0
  // Added to the end of each output dimension (empty: all 0), below the stride or the
  // dilation: below the stride it picks among the output sizes that the convolution with the
  // same window maps back to D.
  std::vector<int64_t> output_padding;
  int64_t groups = 1;
};
Tensor conv_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const ConvTransposeOptions& options, Stream& stream);

// Layers of neural networks (docs/training.md). The CPU runs each with host kernels; other
// devices build it from the ops above where `hal ops` says so ("built from ..."), or refuse.
// All record for autograd (hal/autograd.hpp).

// The tensors joined along `axis`: one dtype, one device, equal sizes off the axis (any views).
// Every device runs it (the CPU with a host kernel, others with device copies).
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis, Stream& stream);

// Rows of `weight` [num_embeddings, dim] at `indices` (i32 or i64 of any shape, each in
// [0, num_embeddings)): [..., dim], in weight's dtype (floating). Elsewhere than on the CPU,
// built as a one-hot matrix times the weights. An index out of range is InvalidArgument where
// the indices are on the CPU (read when the kernel runs: reported by the stream's next
// synchronize as AsyncFailure) and gives a row of zeros elsewhere.
Tensor embedding(const Tensor& weight, const Tensor& indices, Stream& stream);
// embedding's gradient for the weights: the rows of `grad` [..., dim] added into rows `indices`
// of a [num_embeddings, dim] tensor of zeros.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_embeddings,
                          Stream& stream);

// Cross-entropy of `logits` [N, C] (floating) against class indices `targets` [N] (i32 or i64),
// as PyTorch's torch.nn.functional.cross_entropy with reduction="mean": per row
// (1 - s) * -log_softmax(logits)[target] + s * mean over classes of -log_softmax(logits),
// s = label_smoothing in [0, 1]; rows whose target is ignore_index are left out, and the mean is
// over the rest (NaN when none is left). A 0-d result in logits' dtype. Targets out of range are
// InvalidArgument where they are on the CPU (at the stream's synchronize, as AsyncFailure) and
// count as no class elsewhere.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                     double label_smoothing, Stream& stream);
// cross_entropy's gradient for the logits given d(loss) `grad` (0-d, logits' dtype): per row
// that counts, (softmax(logits) - ((1 - s) one_hot(target) + s / C)) * grad / rows counted; 0 in
// ignored rows.
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& targets, const Tensor& grad,
                              int64_t ignore_index, double label_smoothing, Stream& stream);

// Inverted dropout: each element kept with probability 1 - p and scaled by 1 / (1 - p), else 0.
// Element i is kept when Philox4x32-10's uniform draw i for `seed` (the one hal::uniform makes
// in f32) is >= p, so the mask is the same on every device and calling dropout again with the
// same seed on the gradient gives the backward. p in [0, 1]; p = 1 gives zeros.
Tensor dropout(const Tensor& x, double p, uint64_t seed, Stream& stream);

// Pooling over the spatial dimensions of x [N, C, D1 ...] (1 to 3 of them), as PyTorch's
// max_pool1d/2d/3d and avg_pool1d/2d/3d: windows of `kernel` placed every `strides` (empty: the
// kernel), `dilations` apart (empty: 1; max pooling only), over x padded by `pads_before` and
// `pads_after` (empty: 0). ceil_mode rounds the output size up (a last window that would start
// in the end padding is dropped). avg_pool divides each window's sum by the elements of x it
// covers, or with count_include_pad by the positions it covers in x and the explicit padding.
struct PoolOptions {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides, dilations, pads_before, pads_after;
  bool ceil_mode = false;
  bool count_include_pad = false;
};
Tensor max_pool(const Tensor& x, const PoolOptions& options, Stream& stream);
Tensor avg_pool(const Tensor& x, const PoolOptions& options, Stream& stream);

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
