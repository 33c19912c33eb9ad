// Backward rules of the reductions, softmax and log_softmax, and the norms.
#include "autograd/constants.hpp"
#include "autograd/gradient_math.hpp"
#include "autograd/record.hpp"
#include "ops/normalization.hpp"
#include "ops/op_checks.hpp"

namespace hal::autograd {
namespace {

// The reduced axes of x, wrapped and ascending (all of them when none are given).
std::vector<int64_t> reduced_axes(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), axes.empty());
  for (int64_t axis : axes) reduced[static_cast<size_t>(ops::wrap_axis("sum", x, axis))] = true;
  std::vector<int64_t> out;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d]) out.push_back(static_cast<int64_t>(d));
  return out;
}

// d(layer_norm) or d(rms_norm) (centred = false) for x, weight and bias, all three from one
// backward op (one pass over x and dy on the CPU). Without x's gradient the weight is left out:
// the parameters' gradients do not depend on it.
std::vector<Tensor> norm_rule(bool centred, const Tensor& x, const Shape& normalized_shape,
                              const Tensor& weight, double eps, bool want_x, bool want_w,
                              bool want_b, const Tensor& dy, Stream& s) {
  if (!want_x && !want_w && !want_b) return std::vector<Tensor>(3);
  ops::NormGradients grads = ops::norm_gradients(
      centred, x, dy, normalized_shape, want_x ? weight : Tensor(), eps, want_w, want_b, s);
  return {want_x ? std::move(grads.x) : Tensor(), std::move(grads.weight), std::move(grads.bias)};
}

// What norm_rule reads: x always, the weight for x's gradient (an absent one is skipped).
std::vector<SavedSlot> norm_saves(bool want_x) {
  if (want_x) return {{0, "x"}, {1, "weight"}};
  return {{0, "x"}};
}

}  // namespace

Tensor record_reduce(ops::Reduce op, const Tensor& x, const std::vector<int64_t>& axes,
                     bool keepdim, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    switch (op) {
      case ops::Reduce::sum:
        y = sum(x, axes, keepdim, s);
        break;
      case ops::Reduce::mean:
        y = mean(x, axes, keepdim, s);
        break;
      case ops::Reduce::max:
        y = max(x, axes, keepdim, s);
        break;
      case ops::Reduce::min:
        y = min(x, axes, keepdim, s);
        break;
      case ops::Reduce::argmax:
        return argmax(x, axes, keepdim, s);  // i64: no gradient
    }
  }
  const std::vector<int64_t> reduced = reduced_axes(x, axes);
  int64_t count = 1;
  for (int64_t axis : reduced) count *= x.size(axis);
  Tensor saved_x, saved_y;
  std::vector<SavedSlot> saves;
  if (op == ops::Reduce::max || op == ops::Reduce::min) {
    saved_x = saved(x);
    saved_y = saved(y);
    saves = {{0, "x"}, {kOutput, "y"}};
  }
  return attach(ops::name(op), {&x}, y, saves,
                [op, shape = x.shape(), reduced, keepdim, count, x = saved_x, y = saved_y](
                    const Tensor& dy, Stream& stream) {
                  Tensor g = expand_reduced(dy, shape, reduced, keepdim, stream);
                  if (op == ops::Reduce::mean)
                    g = div(g, constant(static_cast<double>(count), g.dtype(), stream), stream);
                  if (op == ops::Reduce::max || op == ops::Reduce::min) {
                    // Shared evenly among the elements equal to the extreme, as PyTorch's amax.
                    const Tensor top = expand_reduced(y, shape, reduced, keepdim, stream);
                    const Tensor hits = cast(eq(x, top, stream), g.dtype(), stream);
                    const Tensor ties = sum(hits, reduced, true, stream);
                    g = div(mul(g, hits, stream), ties, stream);
                  }
                  return std::vector<Tensor>{g};
                });
}

Tensor record_softmax(const Tensor& x, int64_t axis, bool logarithm, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = logarithm ? log_softmax(x, axis, s) : softmax(x, axis, s);
  }
  const int64_t dim = ops::wrap_axis(logarithm ? "log_softmax" : "softmax", x, axis);
  return attach(logarithm ? "log_softmax" : "softmax", {&x}, y, {{kOutput, "y"}},
                [logarithm, dim, y = saved(y)](const Tensor& dy, Stream& stream) {
                  return std::vector<Tensor>{logarithm ? log_softmax_backward(y, dy, dim, stream)
                                                       : softmax_backward(y, dy, dim, stream)};
                });
}

Tensor record_layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                         const Tensor& bias, double eps, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = layer_norm(x, normalized_shape, weight, bias, eps, s);
  }
  const bool want_x = x.requires_grad(), want_w = weight.defined() && weight.requires_grad(),
             want_b = bias.defined() && bias.requires_grad();
  return attach("layer_norm", {&x, &weight, &bias}, y, norm_saves(want_x),
                [x = saved(x), w = saved(weight), normalized_shape, eps, want_x, want_w, want_b](
                    const Tensor& dy, Stream& stream) {
                  return norm_rule(true, x, normalized_shape, w, eps, want_x, want_w, want_b, dy,
                                   stream);
                });
}

Tensor record_rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                       double eps, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = rms_norm(x, normalized_shape, weight, eps, s);
  }
  const bool want_x = x.requires_grad(), want_w = weight.defined() && weight.requires_grad();
  return attach("rms_norm", {&x, &weight}, y, norm_saves(want_x),
                [x = saved(x), w = saved(weight), normalized_shape, eps, want_x, want_w](
                    const Tensor& dy, Stream& stream) {
                  std::vector<Tensor> grads = norm_rule(false, x, normalized_shape, w, eps, want_x,
                                                        want_w, false, dy, stream);
                  grads.pop_back();
                  return grads;
                });
}

}  // namespace hal::autograd
