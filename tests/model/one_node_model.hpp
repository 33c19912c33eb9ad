// A model of one node under test, its values of known rank with every dimension symbolic: what
// the op tests build to run one ONNX op.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hal/model.hpp"
#include "model_builder.hpp"

namespace hal::test {

// A graph value of one node's model: its rank known, every dimension symbolic.
struct Value {
  std::string name;
  int32_t elem;
  int64_t rank;
};

inline std::vector<std::string> symbolic_dims(const Value& value) {
  std::vector<std::string> dims;
  for (int64_t d = 0; d < value.rank; ++d) dims.push_back(value.name + std::to_string(d));
  return dims;
}

// `builder` (its opset chosen) given the inputs, the outputs and one node "under_test" of `op`
// between them, its attributes set by `attributes`; loaded.
inline Model one_node(ModelBuilder& builder, const std::string& op,
                      const std::vector<Value>& inputs, const std::vector<Value>& outputs,
                      const std::function<void(onnx::NodeProto&)>& attributes = {}) {
  std::vector<std::string> in_names, out_names;
  for (const Value& value : inputs) {
    builder.input(value.name, value.elem, symbolic_dims(value));
    in_names.push_back(value.name);
  }
  for (const Value& value : outputs) {
    builder.output(value.name, value.elem, symbolic_dims(value));
    out_names.push_back(value.name);
  }
  auto& node = builder.node(op, in_names, out_names, "under_test");
  if (attributes) attributes(node);
  return load_onnx_bytes(builder.bytes(), op);
}

}  // namespace hal::test
