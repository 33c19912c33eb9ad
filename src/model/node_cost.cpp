#include "model/node_cost.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <variant>

namespace hal::model {
namespace {

using Kernels = std::vector<std::string_view>;

// The ops whose implementation runs kernels; the rest are views, takes and copies.
const std::map<std::string_view, Kernels, std::less<>>& kernel_table() {
  static const std::map<std::string_view, Kernels, std::less<>> table{
      {"Abs", {"abs"}},
      {"Acos", {"acos"}},
      {"Acosh", {"acosh"}},
      {"Add", {"add"}},
      {"And", {"mul"}},
      {"ArgMax", {"argmax"}},
      {"ArgMin", {"argmax", "neg", "sub"}},
      {"Asin", {"asin"}},
      {"Asinh", {"asinh"}},
      {"Atan", {"atan"}},
      {"Atanh", {"atanh"}},
      {"AveragePool", {"mean"}},
      {"BatchNormalization", {"mul", "add", "rsqrt"}},
      {"Cast", {"cast"}},
      {"CastLike", {"cast"}},
      {"Ceil", {"ceil"}},
      {"Clip", {"maximum", "minimum"}},
      {"Conv", {"matmul", "add"}},
      {"ConvTranspose", {"matmul", "add"}},
      {"Cos", {"cos"}},
      {"Cosh", {"cosh"}},
      {"CumSum", {"add"}},
      {"Div", {"div"}},
      {"Einsum", {"matmul"}},
      {"Elu", {"exp", "where"}},
      {"Equal", {"eq"}},
      {"Erf", {"erf"}},
      {"Exp", {"exp"}},
      {"Floor", {"floor"}},
      {"GRU", {"matmul", "sigmoid", "tanh"}},
      {"Gemm", {"matmul", "add"}},
      {"GlobalAveragePool", {"mean"}},
      {"GlobalMaxPool", {"max"}},
      {"Greater", {"gt"}},
      {"GreaterOrEqual", {"ge"}},
      {"HardSigmoid", {"mul", "add", "maximum", "minimum"}},
      {"InstanceNormalization", {"mean", "rsqrt"}},
      {"LRN", {"mul", "add", "div", "pow"}},
      {"LSTM", {"matmul", "sigmoid", "tanh"}},
      {"LayerNormalization", {"layer_norm"}},
      {"LeakyRelu", {"where", "mul"}},
      {"Less", {"lt"}},
      {"LessOrEqual", {"le"}},
      {"Log", {"log"}},
      {"LogSoftmax", {"log_softmax"}},
      {"MatMul", {"matmul"}},
      {"Max", {"maximum"}},
      {"MaxPool", {"max"}},
      {"Mean", {"add", "div"}},
      {"Min", {"minimum"}},
      {"Mul", {"mul"}},
      {"Neg", {"neg"}},
      {"Not", {"eq"}},
      {"Or", {"maximum"}},
      {"PRelu", {"where", "mul"}},
      {"Pow", {"pow"}},
      {"RNN", {"matmul", "tanh"}},
      {"Reciprocal", {"div"}},
      {"ReduceL1", {"sum", "abs"}},
      {"ReduceL2", {"sum", "sqrt"}},
      {"ReduceLogSumExp", {"sum", "exp", "log"}},
      {"ReduceMax", {"max"}},
      {"ReduceMean", {"mean"}},
      {"ReduceMin", {"min"}},
      {"ReduceSum", {"sum"}},
      {"ReduceSumSquare", {"sum", "mul"}},
      {"Relu", {"relu"}},
      {"Round", {"round"}},
      {"Selu", {"exp", "mul", "sub", "le", "where"}},
      {"Shrink", {"gt", "lt", "add", "sub", "where"}},
      {"Sigmoid", {"sigmoid"}},
      {"Sign", {"gt", "lt", "cast", "sub"}},
      {"Sin", {"sin"}},
      {"Sinh", {"sinh"}},
      {"Softmax", {"softmax"}},
      {"Softplus", {"exp", "add", "log"}},
      {"Softsign", {"abs", "add", "div"}},
      {"Sqrt", {"sqrt"}},
      {"Sub", {"sub"}},
      {"Sum", {"add"}},
      {"Tan", {"tan"}},
      {"Tanh", {"tanh"}},
      {"ThresholdedRelu", {"gt", "where"}},
      {"Where", {"where"}},
      {"Xor", {"ne"}},
  };
  return table;
}

const ValueType* type_of(const std::string& name, const ValueTypes& types) {
  if (name.empty()) return nullptr;
  const auto found = types.find(name);
  return found != types.end() && found->second.known ? &found->second : nullptr;
}

double elements(const ValueType* type) {
  return type ? static_cast<double>(numel(type->shape)) : 0;
}

// 2 x (multiply-adds): MatMul/Gemm from A's rows and B's columns, convolutions from the output
// and the weight's per-output fan-in, recurrences from their weight matrices per step.
double matmul_like_flops(const Node& node, const ValueTypes& types) {
  const ValueType* a = type_of(node.inputs.at(0), types);
  const ValueType* b = node.inputs.size() > 1 ? type_of(node.inputs[1], types) : nullptr;
  const ValueType* out = type_of(node.outputs.at(0), types);
  if (!a || !b || !out || a->shape.empty() || b->shape.empty()) return elements(out);
  const std::string& op = node.op_type;
  if (op == "MatMul" || op == "Gemm") {
    const bool trans_a = op == "Gemm" && node.attributes.contains("transA") &&
                         std::get<int64_t>(node.attributes.at("transA")) != 0;
    const int64_t k = trans_a ? a->shape.front() : a->shape.back();
    return 2.0 * elements(out) * static_cast<double>(k);
  }
  // A weight of no output channels has no fan-in to divide by (0 / 0): no work.
  if ((op == "Conv" || op == "ConvTranspose") && b->shape[0] == 0) return 0;
  if (op == "Conv") return 2.0 * elements(out) * elements(b) / static_cast<double>(b->shape[0]);
  if (op == "ConvTranspose")
    return 2.0 * elements(a) * elements(b) / static_cast<double>(b->shape[0]);
  // RNN/GRU/LSTM: X [seq, batch, input], W [dirs, gates*hidden, input], R likewise for hidden.
  const ValueType* r = node.inputs.size() > 2 ? type_of(node.inputs[2], types) : nullptr;
  if (a->shape.size() != 3 || !r) return elements(out);
  const double steps_by_batch = static_cast<double>(a->shape[0] * a->shape[1]);
  return 2.0 * steps_by_batch * (elements(b) + elements(r));
}

// Einsum: one multiply-add per combination of the equation's indices (2 flops; 1 for one
// operand), their sizes read from the inputs' shapes; the output's elements where the equation
// has an ellipsis or a shape is unknown.
double einsum_flops(const Node& node, const ValueTypes& types) {
  const double fallback = node.outputs.empty() ? 0 : elements(type_of(node.outputs[0], types));
  const auto found = node.attributes.find("equation");
  if (found == node.attributes.end() || !std::holds_alternative<std::string>(found->second))
    return fallback;
  const std::string& equation = std::get<std::string>(found->second);
  const std::string lhs = equation.substr(0, equation.find("->"));
  if (lhs.find('.') != std::string::npos) return fallback;
  std::map<char, int64_t> sizes;
  size_t operand = 0, dim = 0;
  for (char c : lhs + ',') {
    if (c == ' ') continue;
    const ValueType* type =
        operand < node.inputs.size() ? type_of(node.inputs[operand], types) : nullptr;
    if (!type) return fallback;
    if (c == ',') {
      if (dim != type->shape.size()) return fallback;
      ++operand;
      dim = 0;
      continue;
    }
    if (dim >= type->shape.size()) return fallback;
    sizes[c] = type->shape[dim++];
  }
  double combinations = 1;
  for (const auto& [index, size] : sizes) combinations *= static_cast<double>(size);
  return (operand > 1 ? 2.0 : 1.0) * combinations;
}

}  // namespace

std::vector<std::string_view> node_kernels(const Node& node) {
  if (node.chain) {  // a device without the fused kernel runs the chain's nodes
    Kernels out;
    for (const Node& step : node.chain->nodes)
      for (std::string_view kernel : node_kernels(step))
        if (std::find(out.begin(), out.end(), kernel) == out.end()) out.push_back(kernel);
    return out;
  }
  const auto found = kernel_table().find(node.op_type);
  return found == kernel_table().end() ? Kernels{} : found->second;
}

DType node_dtype(const Node& node, const ValueTypes& types) {
  for (const std::string& input : node.inputs)
    if (!input.empty())
      if (const auto found = types.find(input); found != types.end()) return found->second.dtype;
  return DType::f32;
}

Workload node_workload(const Node& node, const ValueTypes& types) {
  static const std::set<std::string_view> matmul_like{"MatMul", "Gemm", "Conv", "ConvTranspose",
                                                      "RNN",    "GRU",  "LSTM"};
  Workload work;
  work.name = node.name;
  work.dtype = node_dtype(node, types);
  work.launches = 1;
  for (const std::string& input : node.inputs)
    if (const ValueType* type = type_of(input, types))
      work.bytes += static_cast<double>(type->bytes());
  for (const std::string& output : node.outputs)
    if (const ValueType* type = type_of(output, types))
      work.bytes += static_cast<double>(type->bytes());
  const bool has_output = !node.outputs.empty();
  work.flops = node.op_type == "Einsum" ? einsum_flops(node, types)
               : matmul_like.contains(node.op_type) && !node.inputs.empty() && has_output
                   ? matmul_like_flops(node, types)
               : has_output ? elements(type_of(node.outputs[0], types))
                            : 0;
  if (node.chain) work.flops *= static_cast<double>(node.chain->nodes.size());
  return work;
}

}  // namespace hal::model
