#include "autograd/gradient_math.hpp"

#include <algorithm>

#include "hal/ops.hpp"

namespace hal::autograd {

Tensor sum_to(const Tensor& grad, const Shape& shape, Stream& stream) {
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  if (grad.shape() == shape || lead < 0) return grad.contiguous(stream).reshape(shape);
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < grad.dim(); ++d)
    if (d < lead || (shape[static_cast<size_t>(d - lead)] == 1 && grad.size(d) != 1))
      axes.push_back(d);
  const Tensor summed = axes.empty() ? grad.contiguous(stream) : sum(grad, axes, true, stream);
  return summed.reshape(shape);
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t axis, Stream& stream) {
  return mul(y, sub(dy, sum(mul(dy, y, stream), {axis}, true, stream), stream), stream);
}

Tensor log_softmax_backward(const Tensor& y, const Tensor& dy, int64_t axis, Stream& stream) {
  return sub(dy, mul(exp(y, stream), sum(dy, {axis}, true, stream), stream), stream);
}

MatmulGrads matmul_backward(const Tensor& a0, const Tensor& b0, const Tensor& dy0, bool want_a,
                            bool want_b, Stream& stream) {
  // As matmul sees them: a 1-d a is a row, a 1-d b a column, dropped from dy again.
  const Tensor a = a0.dim() == 1 ? a0.unsqueeze(0) : a0;
  const Tensor b = b0.dim() == 1 ? b0.unsqueeze(1) : b0;
  Tensor dy = dy0;
  if (a0.dim() == 1) dy = dy.unsqueeze(std::max<int64_t>(dy.dim() - (b0.dim() == 1 ? 0 : 1), 0));
  if (b0.dim() == 1) dy = dy.unsqueeze(dy.dim());
  const auto transposed = [](const Tensor& t) { return t.transpose(t.dim() - 2, t.dim() - 1); };
  MatmulGrads out;
  if (want_a)
    out.a = sum_to(matmul(dy, transposed(b), stream), a.shape(), stream).reshape(a0.shape());
  // b a transposed matrix (a Linear layer's weight seen as W^T): its gradient made in W's own
  // layout, dy^T a, and seen transposed, so that W's comes out contiguous.
  const bool b_transposed = a0.dim() == 2 && b0.dim() == 2 && b0.size(0) > 1 && b0.size(1) > 1 &&
                            b0.strides()[0] == 1 && b0.strides()[1] == b0.size(0);
  if (want_b && b_transposed)
    out.b = matmul(transposed(dy), a, stream).transpose(0, 1);
  else if (want_b)
    out.b = sum_to(matmul(transposed(a), dy, stream), b.shape(), stream).reshape(b0.shape());
  return out;
}

Tensor expand_reduced(const Tensor& dy, const Shape& x_shape, const std::vector<int64_t>& axes,
                      bool keepdim, Stream& stream) {
  Shape kept = x_shape;
  for (int64_t axis : axes) kept[static_cast<size_t>(axis)] = 1;
  Tensor g = dy;
  if (!keepdim) g = g.contiguous(stream).reshape(kept);
  return g.expand(x_shape).contiguous(stream);
}

Tensor slice_backward(const Tensor& grad, const Shape& x_shape, int64_t dim, int64_t start,
                      int64_t step, Stream& stream) {
  const int64_t taken = grad.size(dim), size = x_shape[static_cast<size_t>(dim)];
  const auto block = [&](int64_t count) {
    Shape shape = grad.shape();
    shape[static_cast<size_t>(dim)] = count;
    return zeros(shape, grad.dtype(), stream);
  };
  if (taken == 0) return zeros(x_shape, grad.dtype(), stream);
  Tensor spread = grad;
  int64_t length = taken;
  if (step > 1) {
    // Each element beside step - 1 zeros in a new dimension, merged: the element every step.
    Shape gap = grad.shape();
    gap.insert(gap.begin() + dim + 1, step - 1);
    const Tensor interleaved =
        concat({grad.unsqueeze(dim + 1), zeros(gap, grad.dtype(), stream)}, dim + 1, stream);
    Shape merged = grad.shape();
    merged[static_cast<size_t>(dim)] = taken * step;
    length = std::min(taken * step, size - start);
    spread = interleaved.reshape(merged).slice(dim, 0, length);
  }
  std::vector<Tensor> parts;
  if (start > 0) parts.push_back(block(start));
  parts.push_back(spread);
  if (size - start - length > 0) parts.push_back(block(size - start - length));
  return parts.size() == 1 ? spread.contiguous(stream) : concat(parts, dim, stream);
}

}  // namespace hal::autograd
