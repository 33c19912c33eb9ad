// Backward rules of Tensor's views and copies, and of concat: the gradient goes back through the
// inverse rearrangement (a view of it where one exists, zeros around it for a slice).
#include "autograd/gradient_math.hpp"
#include "autograd/record.hpp"
#include "ops/op_checks.hpp"

namespace hal::autograd {

Tensor record_reshape(std::string_view op, const Tensor& x, Tensor out) {
  if (!grad_enabled()) return out;
  return attach(op, {&x}, std::move(out), [shape = x.shape()](const Tensor& dy, Stream& s) {
    return std::vector<Tensor>{dy.contiguous(s).reshape(shape)};
  });
}

Tensor record_permute(std::string_view op, const Tensor& x, const std::vector<int64_t>& order,
                      Tensor out) {
  if (!grad_enabled()) return out;
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t from = order[i] < 0 ? order[i] + x.dim() : order[i];
    inverse[static_cast<size_t>(from)] = static_cast<int64_t>(i);
  }
  return attach(op, {&x}, std::move(out), [inverse](const Tensor& dy, Stream&) {
    return std::vector<Tensor>{dy.permute(inverse)};
  });
}

Tensor record_slice(const Tensor& x, int64_t dim, int64_t start, int64_t step, Tensor out) {
  if (!grad_enabled()) return out;
  return attach("slice", {&x}, std::move(out),
                [shape = x.shape(), dim, start, step](const Tensor& dy, Stream& s) {
                  return std::vector<Tensor>{slice_backward(dy, shape, dim, start, step, s)};
                });
}

Tensor record_expand(const Tensor& x, Tensor out) {
  if (!grad_enabled()) return out;
  return attach("expand", {&x}, std::move(out), [shape = x.shape()](const Tensor& dy, Stream& s) {
    return std::vector<Tensor>{sum_to(dy, shape, s)};
  });
}

Tensor record_copy(std::string_view op, const Tensor& x, Tensor out) {
  if (!grad_enabled()) return out;
  return attach(op, {&x}, std::move(out), [from = x.device()](const Tensor& dy, Stream& s) {
    return std::vector<Tensor>{dy.device() == from ? dy : dy.to(from, s)};
  });
}

Tensor record_concat(const std::vector<Tensor>& parts, int64_t axis, Stream& s) {
  Tensor y;
  {
    const NoGrad untracked;
    y = concat(parts, axis, s);
  }
  const int64_t dim = ops::wrap_axis("concat", parts.front(), axis);
  std::vector<const Tensor*> inputs;
  std::vector<int64_t> sizes;
  for (const Tensor& part : parts) {
    inputs.push_back(&part);
    sizes.push_back(part.size(dim));
  }
  return attach("concat", inputs, y, [dim, sizes](const Tensor& dy, Stream&) {
    std::vector<Tensor> grads;
    int64_t start = 0;
    for (int64_t size : sizes) {
      grads.push_back(dy.slice(dim, start, start + size));
      start += size;
    }
    return grads;
  });
}

}  // namespace hal::autograd
