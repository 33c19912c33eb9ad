// A loaded model as hal runs it: nodes in an order where every input is defined before use,
// attributes decoded, constants as host tensors. Built from ONNX's protobuf classes by
// onnx_import.cpp and free of them, so the executor and the planner never see protobuf.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hal/dtype.hpp"
#include "hal/model.hpp"
#include "hal/ops.hpp"
#include "hal/tensor.hpp"

namespace hal::model {

// A tensor held on the host: an initializer, a Constant's value, a test's input.
struct HostTensor {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::byte> bytes;  // numel * size_of(dtype), row-major

  int64_t numel() const { return hal::numel(shape); }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
};

struct ModelGraph;
struct OnnxOp;
struct ElementwiseChain;

// A tensor attribute of STRING elements (a Constant's value) is a StringTensor.
using AttributeValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                                    std::vector<float>, std::vector<std::string>, HostTensor,
                                    std::shared_ptr<const ModelGraph>, StringTensor>;

struct Node {
  std::string name;  // the node's name, or "<op_type> #<index>" where the model gives none
  std::string op_type;
  std::string domain;               // "" for the default domain
  int64_t opset = 0;                // of the node's domain, as the model imports it
  std::vector<std::string> inputs;  // "" for an optional input left out
  std::vector<std::string> outputs;
  std::map<std::string, AttributeValue, std::less<>> attributes;
  const OnnxOp* op = nullptr;  // its implementation, found once at load
  // An activation folded into this node at load ("Relu" after a Conv: fusion.hpp), applied to
  // its output; the node then has the activation's output name.
  std::string fused;
  // A chain of elementwise nodes merged into this one at load (elementwise_fusion.hpp).
  std::shared_ptr<const ElementwiseChain> chain;
  // The enclosing graphs' values its subgraphs read (If, Loop, Scan): kept alive until this
  // node has run, as its inputs are.
  std::vector<std::string> captured;
  // How many times a node of a random op (OnnxOp::random) has run, shared by the copies of the
  // node (set at load for those ops alone).
  std::shared_ptr<std::atomic<uint64_t>> runs;

  // "node 'conv1' (Conv, opset 13)": how errors name a node.
  std::string describe() const;
};

// What a FusedElementwise node computes (elementwise_fusion.hpp): its nodes as the model had
// them, in order, reading the fused node's inputs and each other, the last one making its
// output; and the same as one program of fused_elementwise, whose inputs are the fused node's.
struct ElementwiseChain {
  std::vector<Node> nodes;
  ElementwiseProgram program;
};

// A model's graph, or a subgraph (an attribute of If, Loop, Scan), whose nodes may also read
// the enclosing graphs' values.
struct ModelGraph {
  std::string name;  // the file, or the name given to load_onnx_bytes; a subgraph: where it is
  int64_t opset = 0;
  std::vector<Node> nodes;  // topologically sorted
  std::map<std::string, HostTensor, std::less<>> initializers;
  // Initializers and Constants of STRING elements, which stay on the host (never uploaded).
  std::map<std::string, StringTensor, std::less<>> string_initializers;
  std::vector<ModelValue> inputs;  // without the initializers
  // Inputs an initializer of the same name gives a default value (a model of IR version 4 on,
  // not a subgraph): a run may give them, replacing the initializer for that run, which is why
  // nothing folds through them nor takes them for constant weights. Kept in `initializers` too.
  std::vector<ModelValue> optional_inputs;
  std::vector<ModelValue> outputs;
  // For each value, the index of the last node that reads it (graph outputs: nodes.size()),
  // so the executor frees intermediates as soon as it can.
  std::map<std::string, size_t, std::less<>> last_use;
  // The graph as ONNX again, with functions expanded and only the small initializers (those
  // shape computations read) kept: serialized, for the planner's shape inference (empty for a
  // subgraph).
  std::string inference_model;

  // Whether a run may give `value` in place of its initializer (optional_inputs).
  bool overridable(std::string_view value) const {
    for (const ModelValue& input : optional_inputs)
      if (input.name == value) return true;
    return false;
  }
};

}  // namespace hal::model
