#include "model/node_cost.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <variant>

#include "model/fusion.hpp"
#include "model/onnx_dtype.hpp"

namespace hal::model {
namespace {

using Kernels = std::vector<NodeKernel>;

Kernels joined(Kernels a, const Kernels& b, const Kernels& c = {}) {
  a.insert(a.end(), b.begin(), b.end());
  a.insert(a.end(), c.begin(), c.end());
  return a;
}

// The ops whose implementation runs kernels, as they call them (quantize_onnx_ops.cpp,
// scatter_onnx_ops.cpp ...). The index arithmetic of Hardmax, Trilu, TopK and the like is i64;
// masks are bool.
const std::map<std::string_view, Kernels, std::less<>>& kernel_table() {
  // The integer products centre their 8-bit inputs and multiply them in f32 (f64 for long
  // sums), cast to i32; QLinear* then requantize: scale, round, add the zero point, saturate.
  static const Kernels integer_matmul{
      {"cast"}, {"sub", DType::f32}, {"matmul", DType::f32}, {"cast", DType::f32}};
  static const Kernels integer_conv = joined(integer_matmul, {{"add", DType::f32}});
  static const Kernels requantize{
      {"cast", DType::i32}, {"mul", DType::f32},     {"div", DType::f32},    {"round", DType::f32},
      {"add", DType::f32},  {"maximum", DType::f32}, {"minimum", DType::f32}};
  static const std::map<std::string_view, Kernels, std::less<>> table{
      {"Abs", {"abs"}},
      {"Acos", {"acos"}},
      {"Acosh", {"acosh"}},
      {"Adagrad",
       {{"cast", DType::i64}, {"gt", DType::i64}, {"add"}, {"sub"}, {"mul"}, {"div"}, {"sqrt"}}},
      {"Adam",
       {{"cast", DType::i64},
        {"gt", DType::i64},
        {"add"},
        {"sub"},
        {"mul"},
        {"div"},
        {"sqrt"},
        {"pow"},
        {"where"}}},
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
      {"Bernoulli", {{"cast"}, "lt"}},
      {"BitShift",
       {{"cast"},
        {"minimum", DType::i32},
        {"cast", DType::i32},
        {"pow", DType::f32},
        {"cast", DType::f32},
        {"mul", DType::i32},
        {"div", DType::i32},
        {"sub", DType::i32}}},
      {"Ceil", {"ceil"}},
      {"Clip", {"maximum", "minimum"}},
      {"Conv", {"matmul", "add"}},
      {"ConvInteger", integer_conv},
      {"ConvTranspose", {"matmul", "add"}},
      {"Cos", {"cos"}},
      {"Cosh", {"cosh"}},
      {"CumSum", {"add"}},
      // Products with the roots' matrices and twiddles (spectral_onnx_ops.cpp).
      {"DFT", {{"cast"}, "matmul", "mul", "add", "sub", "neg"}},
      {"DequantizeLinear", {{"cast"}, {"sub", DType::f32}, {"mul", DType::f32}}},
      {"Det", {{"cast", DType::f32}}},  // on the host, uploaded (det_onnx_op.cpp)
      {"Div", {"div"}},
      {"Einsum", {"matmul"}},
      {"Elu", {"exp", "where"}},
      {"Equal", {"eq"}},
      {"Erf", {"erf"}},
      {"Exp", {"exp"}},
      {"EyeLike", {{"sub", DType::i64}, {"eq", DType::i64}, {"cast", DType::boolean}}},
      {"Floor", {"floor"}},
      {"GRU", {"matmul", "sigmoid", "tanh"}},
      {"GatherElements",
       {{"cast"},
        {"lt", DType::i64},
        {"add", DType::i64},
        {"eq", DType::i64},
        {"where"},
        {"sum"},
        {"max"}}},
      {"Gemm", {"matmul", "add"}},
      // The taps' positions and weights, then X's pixels gathered as rows (grid_sample_onnx_op).
      {"GridSample",
       {{"cast"},
        "add",
        "sub",
        "mul",
        "div",
        "floor",
        "round",
        "abs",
        "maximum",
        "minimum",
        "eq",
        "ge",
        "le",
        "where",
        {"where", DType::boolean},
        {"add", DType::i64},
        {"mul", DType::i64},
        "embedding"}},
      {"GlobalAveragePool", {"mean"}},
      {"GlobalMaxPool", {"max"}},
      {"Greater", {"gt"}},
      {"GreaterOrEqual", {"ge"}},
      {"HardSigmoid", {"mul", "add", "maximum", "minimum"}},
      {"Hardmax", {{"argmax"}, {"eq", DType::i64}, {"cast", DType::boolean}}},
      {"InstanceNormalization", {"mean", "rsqrt"}},
      {"IsInf", {{"abs"}, {"neg"}, {"eq"}}},
      {"IsNaN", {{"ne"}}},
      {"LRN", {"mul", "add", "div", "pow"}},
      {"LSTM", {"matmul", "sigmoid", "tanh"}},
      {"LayerNormalization", {"layer_norm"}},
      {"LeakyRelu", {"where", "mul"}},
      {"Less", {"lt"}},
      {"LessOrEqual", {"le"}},
      {"Log", {"log"}},
      {"LogSoftmax", {"log_softmax"}},
      {"MatMul", {"matmul"}},
      {"MatMulInteger", integer_matmul},
      {"Max", {"maximum"}},
      {"MaxPool", {"max"}},
      {"MaxUnpool", {"embedding"}},  // the inverse map gathered as rows (unpool_onnx_op.cpp)
      {"MelWeightMatrix", {{"cast", DType::f32}}},  // worked out on the host
      {"Mean", {"add", "div"}},
      {"Min", {"minimum"}},
      {"Momentum",
       {{"cast", DType::i64}, {"gt", DType::i64}, {"add"}, {"sub"}, {"mul"}, {"where"}}},
      {"Multinomial", {{"cast"}, "eq", "where", "log", "neg", "add", "argmax"}},
      {"Mul", {"mul"}},
      {"Neg", {"neg"}},
      {"Not", {"eq"}},
      {"OneHot",
       {{"cast"},
        {"lt", DType::i64},
        {"add", DType::i64},
        {"where", DType::i64},
        {"eq", DType::i64},
        {"where"}}},
      {"Or", {"maximum"}},
      {"PRelu", {"where", "mul"}},
      {"Pow", {"pow"}},
      {"QLinearConv", joined(integer_conv, requantize, {{"add", DType::i32}})},
      {"QLinearMatMul", joined(integer_matmul, requantize)},
      {"QuantizeLinear",
       {{"div"},
        {"round", DType::f32},
        {"add", DType::f32},
        {"maximum", DType::f32},
        {"minimum", DType::f32},
        {"cast", DType::f32}}},
      {"RNN", {"matmul", "tanh"}},
      {"Range", {{"mul", DType::i64}, {"add", DType::i64}, {"cast", DType::i64}}},
      {"Reciprocal", {"div"}},
      {"ReduceL1", {"sum", "abs"}},
      {"ReduceL2", {"sum", "sqrt"}},
      {"ReduceLogSum", {{"sum"}, {"log"}}},
      // The max shifts the exponents; eq and where keep an infinite max out of it.
      {"ReduceLogSumExp", {"max", "sub", "eq", "where", "exp", "sum", "log", "add"}},
      {"ReduceMax", {"max"}},
      {"ReduceMean", {"mean"}},
      {"ReduceMin", {"min"}},
      {"ReduceProd", {{"mul"}}},
      {"ReduceSum", {"sum"}},
      {"ReduceSumSquare", {"sum", "mul"}},
      {"Relu", {"relu"}},
      {"Round", {"round"}},
      // The regions' taps gathered and weighed, then their mean or largest (roi_align_onnx_op).
      {"RoiAlign",
       {{"cast"}, "embedding", "mul", "sum", "div", "max", "where", {"cast", DType::u8}}},
      {"Selu", {"exp", "mul", "sub", "le", "where"}},
      {"Shrink", {"gt", "lt", "add", "sub", "where"}},
      {"Sigmoid", {"sigmoid"}},
      {"Sign", {"gt", "lt", "cast", "sub", "ne", "where"}},
      {"Sin", {"sin"}},
      {"Sinh", {"sinh"}},
      {"Softmax", {"softmax"}},
      {"Softplus",
       {"abs", "neg", "maximum", "exp", "add", "log", "mul", "div", "sub", "eq", "where"}},
      {"Softsign", {"abs", "add", "div"}},
      {"STFT", {{"cast"}, "embedding", "matmul", "mul", "add", "sub", "neg"}},
      {"Sqrt", {"sqrt"}},
      {"Sub", {"sub"}},
      {"Sum", {"add"}},
      {"Tan", {"tan"}},
      {"Tanh", {"tanh"}},
      {"ThresholdedRelu", {"gt", "where"}},
      {"TopK",
       {{"max"},
        {"min"},
        {"eq"},
        {"ne"},
        {"where"},
        {"where", DType::boolean},
        {"cast", DType::boolean},
        {"argmax", DType::i32},
        {"max", DType::i32},  // largest=0 over floats: whether a number is left before NaN
        {"gt", DType::i32},
        {"eq", DType::i64}}},
      {"Trilu", {{"sub", DType::i64}, {"ge", DType::i64}, {"le", DType::i64}, {"where"}}},
      {"Where", {"where"}},
      {"Xor", {"ne"}},
  };
  return table;
}

// The ops that only move data: views, copies, fills, and values read to the host and back
// (NonZero, Unique, NonMaxSuppression compute there). Every device runs them.
bool moves_data_only(std::string_view op_type) {
  static const std::set<std::string_view, std::less<>> ops{
      "Compress", "Concat", "Constant", "ConstantOfShape", "DepthToSpace", "Dropout", "Expand",
      "Flatten", "Gather", "GatherND", "Identity", "NonMaxSuppression", "NonZero", "Pad", "Reshape",
      "ReverseSequence", "Shape", "Size", "Slice", "SpaceToDepth", "Split", "Squeeze", "Tile",
      "Transpose", "Unique", "Unsqueeze",
      // Draws from hal's Philox generator, which every device makes (random_onnx_ops.cpp).
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"};
  return ops.contains(op_type);
}

template <class T>
T attribute(const Node& node, std::string_view name, T fallback) {
  const auto found = node.attributes.find(name);
  const T* value = found == node.attributes.end() ? nullptr : std::get_if<T>(&found->second);
  return value ? *value : fallback;
}

// The ops whose kernels follow an attribute: a scatter's reduction ("none" only copies rows),
// a resize's mode (nearest only picks elements), Mod's fmod (C's sign needs no compares).
std::optional<Kernels> attribute_kernels(const Node& node, const ValueTypes* types) {
  const std::string& op = node.op_type;
  // One kernel converts both ways: it must take the target dtype too (`to`; CastLike's second
  // input's), which the node's input dtype does not tell.
  if (op == "Cast" || op == "CastLike") {
    Kernels kernels{"cast"};
    std::optional<DType> target;
    if (op == "Cast") {
      target = dtype_from_onnx(static_cast<int32_t>(attribute<int64_t>(node, "to", 0)));
    } else if (types && node.inputs.size() > 1) {
      if (const auto found = types->find(node.inputs[1]);
          found != types->end() && !found->second.strings)
        target = found->second.dtype;
    }
    if (target) kernels.push_back({"cast", *target});
    return kernels;
  }
  if (op == "Scatter" || op == "ScatterElements" || op == "ScatterND") {
    const std::string reduction = attribute<std::string>(node, "reduction", "none");
    if (reduction == "add") return Kernels{"add"};
    if (reduction == "mul") return Kernels{"mul"};
    if (reduction == "max") return Kernels{"maximum"};
    if (reduction == "min") return Kernels{"minimum"};
    return Kernels{};
  }
  if (op == "Resize" || op == "Upsample") {
    if (attribute<std::string>(node, "mode", "nearest") == "nearest") return Kernels{};
    return Kernels{"mul", "sum"};  // the taps weighed and summed (halves in f32)
  }
  // MaxPool's Indices: each offset's elements matched against the maxima, the first kept.
  if (op == "MaxPool" && node.outputs.size() > 1 && !node.outputs[1].empty())
    return Kernels{"max",
                   "eq",
                   "ne",
                   {"where", DType::boolean},
                   {"eq", DType::boolean},
                   {"ne", DType::i64},
                   {"where", DType::i64},
                   {"mul", DType::i64},
                   {"add", DType::i64}};
  // Pow of an integer base runs in f64 (elementwise_onnx_ops.cpp); the sampling and spectral
  // ops in f32 but for f64 (grid_sample_onnx_op.cpp, roi_align_onnx_op.cpp,
  // spectral_onnx_ops.cpp).
  const bool in_f32 = op == "GridSample" || op == "RoiAlign" || op == "DFT" || op == "STFT";
  if ((op == "Pow" || in_f32) && types && !node.inputs.empty()) {
    const auto found = types->find(node.inputs[0]);
    if (found != types->end() && found->second.known) {
      const DType dtype = found->second.dtype;
      const bool floating =
          dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
      if (op == "Pow" && !floating)
        return Kernels{{"cast"}, {"pow", DType::f64}, {"cast", DType::f64}};
      if (in_f32 && dtype != DType::f64) {
        Kernels kernels;
        for (const NodeKernel& kernel : kernel_table().at(op))
          kernels.push_back(kernel.dtype || kernel.op == "cast"
                                ? kernel
                                : NodeKernel(kernel.op.data(), DType::f32));
        return kernels;
      }
    }
  }
  if (op == "Mod") {
    if (attribute<int64_t>(node, "fmod", 0) != 0) return Kernels{"div", "mul", "sub"};
    return Kernels{"div",
                   "mul",
                   "sub",
                   "lt",
                   "ne",
                   "where",
                   "add",
                   {"ne", DType::boolean},
                   {"where", DType::boolean}};
  }
  return std::nullopt;
}

void add_unique(Kernels& kernels, const NodeKernel& kernel) {
  if (std::find(kernels.begin(), kernels.end(), kernel) == kernels.end()) kernels.push_back(kernel);
}

// A device without the fused kernel runs the chain's nodes: it needs every one's kernels.
std::optional<Kernels> chain_kernels(const ElementwiseChain& chain, const ValueTypes* types) {
  Kernels out;
  for (const Node& step : chain.nodes) {
    const std::optional<Kernels> kernels = node_kernels(step, types);
    if (!kernels) return std::nullopt;
    for (const NodeKernel& kernel : *kernels) add_unique(out, kernel);
  }
  return out;
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
// and the weight's per-output fan-in, recurrences from their weight matrices per step. The
// integer forms (MatMulInteger, ConvInteger) multiply as many.
double matmul_like_flops(const Node& node, const ValueTypes& types) {
  const ValueType* a = type_of(node.inputs.at(0), types);
  const ValueType* b = node.inputs.size() > 1 ? type_of(node.inputs[1], types) : nullptr;
  const ValueType* out = type_of(node.outputs.at(0), types);
  if (!a || !b || !out || a->shape.empty() || b->shape.empty()) return elements(out);
  const std::string& op = node.op_type;
  if (op == "MatMul" || op == "Gemm" || op == "MatMulInteger") {
    const bool trans_a = op == "Gemm" && node.attributes.contains("transA") &&
                         std::get<int64_t>(node.attributes.at("transA")) != 0;
    const int64_t k = trans_a ? a->shape.front() : a->shape.back();
    return 2.0 * elements(out) * static_cast<double>(k);
  }
  // A weight of no output channels has no fan-in to divide by (0 / 0): no work.
  const bool convolution = op == "Conv" || op == "ConvInteger";
  if ((convolution || op == "ConvTranspose") && b->shape[0] == 0) return 0;
  if (convolution) return 2.0 * elements(out) * elements(b) / static_cast<double>(b->shape[0]);
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

std::optional<std::vector<NodeKernel>> node_kernels(const Node& node, const ValueTypes* types) {
  if (node.chain) return chain_kernels(*node.chain, types);
  std::optional<Kernels> kernels = attribute_kernels(node, types);
  if (!kernels) {
    if (const auto found = kernel_table().find(node.op_type); found != kernel_table().end())
      kernels = found->second;
    else if (moves_data_only(node.op_type))
      kernels = Kernels{};
  }
  // A Conv with a Relu folded in (fusion.hpp) applies relu itself where the device lacks conv;
  // a product with a bias and an activation folded in, where its GEMM does not apply them.
  if (kernels && node.fused.find("Relu") != std::string::npos) add_unique(*kernels, {"relu"});
  if (kernels && (node.op_type == "MatMul" || node.op_type == "Gemm")) {
    if (node.fused.rfind("Add", 0) == 0) add_unique(*kernels, {"add"});
    if (const std::string_view activation = fused_activation(node.fused); !activation.empty())
      add_unique(*kernels, NodeKernel(activation.data()));
  }
  return kernels;  // nothing: an op the planner does not know (fail closed)
}

DType node_dtype(const Node& node, const ValueTypes& types) {
  for (const std::string& input : node.inputs)
    if (!input.empty())
      if (const auto found = types.find(input); found != types.end()) return found->second.dtype;
  return DType::f32;
}

Workload node_workload(const Node& node, const ValueTypes& types) {
  static const std::set<std::string_view> matmul_like{"MatMul",     "Gemm", "Conv", "ConvTranspose",
                                                      "RNN",        "GRU",  "LSTM", "MatMulInteger",
                                                      "ConvInteger"};
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
