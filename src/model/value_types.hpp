// The dtype and shape of every value of a model, from ONNX's shape inference (with its data
// propagation, so Shape -> Gather -> Reshape chains resolve) for given input shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "hal/tensor.hpp"
#include "model/model_graph.hpp"

namespace hal::model {

struct ValueType {
  DType dtype = DType::f32;  // unused where `strings`
  Shape shape;               // meaningful when `known`
  bool known = false;        // the dtype and every dimension are known
  bool strings = false;      // STRING elements: a string tensor, on the host
  // Device memory: none for strings, which stay on the host.
  int64_t bytes() const {
    return known && !strings ? numel(shape) * static_cast<int64_t>(size_of(dtype)) : 0;
  }
};

using ValueTypes = std::map<std::string, ValueType, std::less<>>;

// `input_shapes` gives the shapes of some inputs (their ranks and fixed sizes checked against
// the declarations: InvalidArgument naming the input); the others take their declared shapes,
// each symbolic dimension the size an input gave it, else `symbol_size`. `bindings` receives
// the size each symbol was planned for.
ValueTypes infer_value_types(const ModelGraph& graph,
                             const std::map<std::string, Shape>& input_shapes, int64_t symbol_size,
                             std::map<std::string, int64_t>& bindings);

}  // namespace hal::model
