// The gradient of an op built from others, found by running its parts again with recording on
// at the saved inputs and backpropagating through them: a backward rule for an op whose forward
// is a kernel of its own on some devices (conv, pooling) and its parts elsewhere.
#pragma once

#include <functional>
#include <vector>

#include "autograd/graph.hpp"

namespace hal::autograd {

using Composite = std::function<Tensor(const std::vector<Tensor>& inputs, Stream& stream)>;

// d(composite(inputs))/d(inputs[i]) times dy, for each wanted i (undefined otherwise). `inputs`
// hold no autograd state (saved()); undefined ones stay undefined.
std::vector<Tensor> through_parts(const Composite& composite, const std::vector<Tensor>& inputs,
                                  const std::vector<bool>& wanted, const Tensor& dy,
                                  Stream& stream);

// Which of `inputs` require grad.
std::vector<bool> wanted_inputs(const std::vector<const Tensor*>& inputs);

}  // namespace hal::autograd
