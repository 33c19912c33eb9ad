#include "autograd/through_parts.hpp"

#include "hal/ops.hpp"

namespace hal::autograd {

std::vector<Tensor> through_parts(const Composite& composite, const std::vector<Tensor>& inputs,
                                  const std::vector<bool>& wanted, const Tensor& dy,
                                  Stream& stream) {
  // Fresh leaves of this recomputation alone, so that its backward reaches nothing else.
  std::vector<Tensor> leaves = inputs;
  bool any = false;
  for (size_t i = 0; i < leaves.size(); ++i)
    if (wanted[i] && leaves[i].defined()) {
      leaves[i].requires_grad_();
      any = true;
    }
  std::vector<Tensor> grads(inputs.size());
  if (!any) return grads;
  Tensor y;
  {
    const EnableGrad recorded;
    y = composite(leaves, stream);
  }
  backward(y, stream, dy.dtype() == y.dtype() ? dy : cast(dy, y.dtype(), stream));
  for (size_t i = 0; i < leaves.size(); ++i)
    if (wanted[i] && leaves[i].defined()) {
      grads[i] = leaves[i].grad();
      // A leaf the parts did not reach has no gradient: zeros.
      if (!grads[i].defined()) grads[i] = zeros(leaves[i].shape(), leaves[i].dtype(), stream);
    }
  return grads;
}

std::vector<bool> wanted_inputs(const std::vector<const Tensor*>& inputs) {
  std::vector<bool> out;
  for (const Tensor* t : inputs) out.push_back(t->defined() && t->requires_grad());
  return out;
}

}  // namespace hal::autograd
