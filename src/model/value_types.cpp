#include "model/value_types.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "hal/error.hpp"
#include "model/constant_folding.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_tensor.hpp"

namespace hal::model {
namespace {

// Values computed while planning stay small: shapes, axes and sizes, not activations.
constexpr int64_t kMaxFoldedElements = 1024;
constexpr int kMaxRounds = 16;

using ConstantValues = std::map<std::string, HostTensor, std::less<>>;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, message);
}

// Symbols bound by the given shapes first, so that an input left to its declaration takes the
// size another input gave the same symbol.
std::map<std::string, int64_t> bind_symbols(const ModelGraph& graph,
                                            const std::map<std::string, Shape>& input_shapes,
                                            int64_t symbol_size) {
  std::map<std::string, int64_t> bindings;
  for (const auto& given : input_shapes) {
    const std::string& name = given.first;
    const Shape& shape = given.second;
    // A required input, or an optional one (an initializer's default a run may replace).
    const auto named = [&](const ModelValue& v) { return v.name == name; };
    auto declared = std::find_if(graph.inputs.begin(), graph.inputs.end(), named);
    if (declared == graph.inputs.end())
      declared = std::find_if(graph.optional_inputs.begin(), graph.optional_inputs.end(), named);
    if (declared == graph.optional_inputs.end())
      invalid(graph.name + ": the model has no input '" + name + "'");
    if (!declared->ranked) continue;
    if (declared->shape.size() != shape.size())
      invalid(graph.name + ": input '" + name + "' planned with shape " + to_string(shape) +
              "; the model declares " + to_string(declared->shape));
    for (size_t d = 0; d < shape.size(); ++d) {
      const ModelDim& dim = declared->shape[d];
      if (dim.size >= 0 && dim.size != shape[d])
        invalid(graph.name + ": input '" + name + "' planned with shape " + to_string(shape) +
                "; the model declares " + to_string(declared->shape));
      if (!dim.symbol.empty()) bindings.emplace(dim.symbol, shape[d]);
    }
  }
  for (const ModelValue& value : graph.inputs)
    for (const ModelDim& dim : value.shape)
      if (!dim.symbol.empty()) bindings.emplace(dim.symbol, symbol_size);
  return bindings;
}

void set_shape(onnx::ValueInfoProto& info, const Shape& shape) {
  auto* tensor_shape = info.mutable_type()->mutable_tensor_type()->mutable_shape();
  tensor_shape->clear_dim();
  for (int64_t size : shape) tensor_shape->add_dim()->set_dim_value(size);
}

void record(const onnx::ValueInfoProto& info, ValueTypes& types) {
  if (!info.type().has_tensor_type()) return;
  const auto& tensor = info.type().tensor_type();
  const bool strings = tensor.elem_type() == kOnnxString;
  const auto dtype = strings ? DType::f32 : dtype_from_onnx(tensor.elem_type());
  if (!dtype) return;
  ValueType type{*dtype, {}, tensor.has_shape(), strings};
  for (const auto& dim : tensor.shape().dim()) {
    type.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    if (!dim.has_dim_value()) type.known = false;
  }
  const auto existing = types.find(info.name());
  if (existing == types.end() || !existing->second.known) types[info.name()] = type;
}

ValueTypes inferred_types(onnx::ModelProto& model, const std::string& name) {
  try {
    // Node-level failures leave those values unknown rather than failing the plan.
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception& error) {
    invalid(name + ": ONNX's shape inference failed: " + error.what());
  }
  ValueTypes types;
  const auto& g = model.graph();
  for (const auto& info : g.input()) record(info, types);
  for (const auto& info : g.value_info()) record(info, types);
  for (const auto& info : g.output()) record(info, types);
  return types;
}

// Shape and Size of a value of known shape, from the shape alone.
std::optional<HostTensor> shape_of(const Node& node, const ValueTypes& types) {
  const auto input = types.find(node.inputs.at(0));
  if (input == types.end() || !input->second.known) return std::nullopt;
  const Shape& shape = input->second.shape;
  std::vector<int64_t> values;
  if (node.op_type == "Size") {
    values.push_back(numel(shape));
  } else {
    const auto rank = static_cast<int64_t>(shape.size());
    auto bound = [&](const char* name, int64_t fallback) {
      const auto found = node.attributes.find(name);
      int64_t at = found == node.attributes.end() ? fallback : std::get<int64_t>(found->second);
      if (at < 0) at += rank;
      return std::clamp<int64_t>(at, 0, rank);
    };
    const int64_t start = bound("start", 0), end = bound("end", rank);
    for (int64_t d = start; d < end; ++d) values.push_back(shape[static_cast<size_t>(d)]);
  }
  HostTensor tensor{DType::i64, node.op_type == "Size" ? Shape{} : Shape{int64_t(values.size())},
                    std::vector<std::byte>(values.size() * sizeof(int64_t))};
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  return tensor;
}

// Folds what this round's types and constants allow; whether anything was.
bool fold_round(const ModelGraph& graph, const ValueTypes& types, ConstantValues& constants,
                std::vector<bool>& folded) {
  bool progress = false;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (folded[i] || node.outputs.empty()) continue;
    std::optional<std::vector<HostTensor>> results;
    if ((node.op_type == "Shape" || node.op_type == "Size") && node.inputs.size() == 1) {
      if (auto tensor = shape_of(node, types)) results = std::vector<HostTensor>{*tensor};
    } else {
      std::vector<const HostTensor*> inputs;
      bool constant = !node.inputs.empty();
      for (const std::string& name : node.inputs) {
        const auto found = name.empty() ? constants.end() : constants.find(name);
        constant = constant && (name.empty() || found != constants.end());
        inputs.push_back(found == constants.end() ? nullptr : &found->second);
      }
      if (constant) results = evaluate_on_host(node, inputs);
    }
    if (!results) continue;
    bool small = true;
    for (const HostTensor& result : *results) small = small && result.numel() <= kMaxFoldedElements;
    if (!small) continue;
    for (size_t o = 0; o < node.outputs.size(); ++o)
      if (!node.outputs[o].empty()) constants[node.outputs[o]] = std::move((*results)[o]);
    folded[i] = progress = true;
  }
  return progress;
}

}  // namespace

ValueTypes infer_value_types(const ModelGraph& graph,
                             const std::map<std::string, Shape>& input_shapes, int64_t symbol_size,
                             std::map<std::string, int64_t>& bindings) {
  bindings = bind_symbols(graph, input_shapes, symbol_size);
  onnx::ModelProto base;
  if (!base.ParseFromString(graph.inference_model))
    throw Error(ErrorCode::Internal,
                graph.name + ": the model kept for shape inference does not parse");
  if (base.graph().node_size() != static_cast<int>(graph.nodes.size()))
    throw Error(ErrorCode::Internal, graph.name + ": the model kept for shape inference has " +
                                         std::to_string(base.graph().node_size()) + " nodes, not " +
                                         std::to_string(graph.nodes.size()));
  for (auto& input : *base.mutable_graph()->mutable_input()) {
    if (const auto given = input_shapes.find(input.name()); given != input_shapes.end()) {
      set_shape(input, given->second);
      continue;
    }
    if (!input.type().tensor_type().has_shape()) continue;
    for (auto& dim : *input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
      if (!dim.has_dim_value() && dim.has_dim_param()) {
        // A symbol no run input binds (an unused initializer also declared an input, folded
        // away) stays a symbol for ONNX's inference; looked up with at(), it failed the plan.
        if (const auto bound = bindings.find(dim.dim_param()); bound != bindings.end())
          dim.set_dim_value(bound->second);
      }
  }
  // Rounds of ONNX's inference and folding: a Shape of a value whose shape is now known is a
  // constant, and so is what is computed from constants only, which ONNX's own propagation
  // does not always reach (PyTorch's Div and Cast of shape numbers).
  ConstantValues constants;
  for (const auto& [name, tensor] : graph.initializers)
    if (tensor.numel() <= kMaxFoldedElements) constants[name] = tensor;
  std::vector<bool> folded(graph.nodes.size(), false);
  ValueTypes types;
  for (int round = 0; round < kMaxRounds; ++round) {
    onnx::ModelProto model = base;
    auto* nodes = model.mutable_graph()->mutable_node();
    for (int i = nodes->size() - 1; i >= 0; --i)
      if (folded[static_cast<size_t>(i)]) nodes->DeleteSubrange(i, 1);
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      if (folded[i])
        for (const std::string& output : graph.nodes[i].outputs)
          if (!output.empty())
            *model.mutable_graph()->add_initializer() =
                tensor_to_onnx(constants.at(output), output);
    types = inferred_types(model, graph.name);
    if (!fold_round(graph, types, constants, folded)) break;
  }
  for (const auto& [name, tensor] : graph.initializers)
    types[name] = {tensor.dtype, tensor.shape, true};
  for (const auto& [name, strings] : graph.string_initializers)
    types[name] = {DType::f32, strings.shape, true, true};
  for (const auto& [name, tensor] : constants) types[name] = {tensor.dtype, tensor.shape, true};
  return types;
}

}  // namespace hal::model
