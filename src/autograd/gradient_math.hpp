// Gradient arithmetic that autograd's rules and hal_model's ONNX Gradient rules share
// (src/model/gradient_rules.cpp), written with hal's ops so that it runs on the tensors' device.
#pragma once

#include <vector>

#include "hal/tensor.hpp"

namespace hal::autograd {

// `grad` summed over the dimensions a broadcast to its shape added or stretched, so that it has
// `shape`: the gradient of a broadcast operand.
Tensor sum_to(const Tensor& grad, const Shape& shape, Stream& stream);

// Along `axis`, from the op's output y: softmax y * (dy - sum(dy * y)); log_softmax
// dy - exp(y) * sum(dy).
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t axis, Stream& stream);
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy, int64_t axis, Stream& stream);

// y = a @ b as hal::matmul defines it (1-d operands a row of a or a column of b, batch
// dimensions broadcast): da = dy @ b^T and db = a^T @ dy, summed over the batch dimensions each
// operand was broadcast along, in the operands' shapes. Undefined where not `wanted`.
struct MatmulGrads {
  Tensor a, b;
};
MatmulGrads matmul_backward(const Tensor& a, const Tensor& b, const Tensor& dy, bool want_a,
                            bool want_b, Stream& stream);

// dy, the gradient of x reduced over `axes` (wrapped, ascending; dropped unless keepdim), spread
// back over x's shape.
Tensor expand_reduced(const Tensor& dy, const Shape& x_shape, const std::vector<int64_t>& axes,
                      bool keepdim, Stream& stream);

// The gradient of x.slice(dim, start, ..., step) from that of the slice: zeros of x's shape with
// `grad` at the positions the slice took (concatenation with zeros, so any device that runs
// concat runs it).
Tensor slice_backward(const Tensor& grad, const Shape& x_shape, int64_t dim, int64_t start,
                      int64_t step, Stream& stream);

}  // namespace hal::autograd
