// Fusion of elementwise chains at load: nodes of arithmetic and element functions (Add, Mul,
// Relu, Tanh, Erf ...) whose intermediate results nothing else reads become one
// FusedElementwise node, which a device with a fused kernel (hal ops: fused_elementwise) runs
// in one pass: Add(bias) -> Relu, a Gelu written as Div -> Erf -> Add -> Mul -> Mul. Each
// chain is a tree that ends in one node, its last, whose output name the fused node takes;
// devices without the kernel run the chain's nodes one by one, as the model had them.
//
// Only chains whose inputs share one floating element type are fused: the fused kernel
// computes in one dtype, and the kept ONNX model (for shape inference) stands a Sum of the
// chain's inputs in for it, whose result has their broadcast shape and that type, as the
// chain's has.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/model_graph.hpp"

namespace hal::model {

struct ElementwiseFusion {
  std::vector<size_t> nodes;        // the chain's nodes, in graph order; the last makes its output
  std::vector<std::string> inputs;  // what it reads from outside, each once, in first-read order
};

// The ONNX element type of a value (TensorProto::DataType), 0 where unknown.
using ElementTypeOf = std::function<int32_t(const std::string& value)>;

// The chains of two or more nodes `graph` allows (at most kMaxFusedElementwiseInputs inputs
// each); changes nothing. None for graphs of opset below 8 (Sum broadcasts from 8 on).
std::vector<ElementwiseFusion> find_elementwise_fusions(const ModelGraph& graph,
                                                        const ElementTypeOf& element_type);

// Replaces each chain with one node where its last node was: op_type "FusedElementwise" of
// domain "hal", named after the chain's nodes, `fused` listing their op types ("Add+Relu").
// Returns, per node of the graph as it was, whether it was kept (the chains' last nodes are,
// as the fused nodes); `last_use` is updated.
std::vector<bool> apply_elementwise_fusions(ModelGraph& graph,
                                            const std::vector<ElementwiseFusion>& fusions);

}  // namespace hal::model
