// Backward rules: for one ONNX op, the gradients of its inputs from the gradients of its
// outputs, written with hal's ops so that they run on the device holding the tensors. ONNX's
// Gradient op (gradient_onnx_op.cpp) applies them in reverse over the nodes between its xs and
// y; they know nothing of graphs, so a tape-based autograd can apply them too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hal/tensor.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {

// What a rule sees of one node's forward run.
struct Backward {
  const OpContext& ctx;               // the forward node (attributes, opset) and the stream
  const std::vector<Tensor>& inputs;  // its inputs (undefined: omitted)
  const std::vector<Tensor>& outputs;
  // d(y)/d(output), one per output, of the output's shape (zeros where none flows).
  const std::vector<Tensor>& grads;
  // Which inputs' gradients are asked for; a rule may skip the others.
  const std::vector<bool>& wanted;
};

// One gradient per input, of the input's shape and dtype; undefined for an input that is not
// wanted or not differentiable (shapes, axes). Errors: Unsupported for what the rule does not
// cover (an attribute value), as an op's.
using BackwardRule = std::vector<Tensor> (*)(const Backward&);

// The rule of `op_type` (default domain), or null.
BackwardRule find_backward_rule(std::string_view op_type);
// The op types with a rule, sorted.
std::vector<std::string> differentiable_op_types();

}  // namespace hal::model
