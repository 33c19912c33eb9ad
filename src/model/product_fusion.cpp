// Fusion at load of what follows a matrix product into the product's epilogue
// (hal::MatmulEpilogue): a linear layer's bias and activation.
#include <algorithm>
#include <cmath>
#include <optional>

#include "model/fusion.hpp"
#include "model/graph_uses.hpp"

namespace hal::model {
namespace {

bool is(const Node& node, std::string_view op_type) {
  return node.domain.empty() && node.op_type == op_type;
}

// The value of a one-element floating initializer no run may replace, of rank 0 or 1: one of
// higher rank would broadcast the product to more dimensions, which the fused node drops.
std::optional<double> scalar(const ModelGraph& graph, const std::string& value) {
  const auto found = graph.initializers.find(value);
  if (found == graph.initializers.end() || graph.overridable(value) || found->second.numel() != 1 ||
      found->second.shape.size() > 1)
    return std::nullopt;
  const HostTensor& t = found->second;
  if (t.dtype == DType::f32) return *t.data<float>();
  if (t.dtype == DType::f64) return *t.data<double>();
  return std::nullopt;
}

bool near(std::optional<double> value, double want) {
  return value && std::fabs(*value - want) <= 1e-6 * std::fabs(want);
}

// The input of a two-input node other than `value`, if `value` is one of its inputs.
std::optional<std::string> other_input(const Node& node, const std::string& value) {
  if (node.inputs.size() != 2) return std::nullopt;
  if (node.inputs[0] == value) return node.inputs[1];
  if (node.inputs[1] == value) return node.inputs[0];
  return std::nullopt;
}

struct Activation {
  std::vector<size_t> nodes;  // in graph order, the last making the activation's output
  std::string name;           // ONNX's op name: "Relu", "Tanh", "Sigmoid", "Gelu"
};

// gelu as exporters write it, reading `x` from node `root`:
//   Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)
// (the last two Muls in either order of their operands), every intermediate read by the next
// node alone and x by the first and the fourth alone.
std::optional<Activation> erf_gelu(const ModelGraph& graph, const Uses& uses,
                                   const std::string& x) {
  const std::vector<size_t>& readers = uses.readers(x);
  if (readers.size() != 2 || uses.gives_out(x)) return std::nullopt;
  for (size_t first : readers) {
    const Node& scale = graph.nodes[first];
    const auto by = other_input(scale, x);
    if (!by || scale.outputs.size() != 1 || scale.inputs[0] != x) continue;
    if (!((is(scale, "Div") && near(scalar(graph, *by), std::sqrt(2.0))) ||
          (is(scale, "Mul") && near(scalar(graph, *by), std::sqrt(0.5)))))
      continue;
    const auto erf = uses.only_reader(scale.outputs[0]);
    if (!erf || !is(graph.nodes[*erf], "Erf") || graph.nodes[*erf].outputs.size() != 1) continue;
    const auto plus = uses.only_reader(graph.nodes[*erf].outputs[0]);
    if (!plus || !is(graph.nodes[*plus], "Add")) continue;
    const auto one = other_input(graph.nodes[*plus], graph.nodes[*erf].outputs[0]);
    if (!one || !near(scalar(graph, *one), 1.0) || graph.nodes[*plus].outputs.size() != 1) continue;
    const auto times_x = uses.only_reader(graph.nodes[*plus].outputs[0]);
    if (!times_x || !is(graph.nodes[*times_x], "Mul") ||
        graph.nodes[*times_x].outputs.size() != 1 ||
        other_input(graph.nodes[*times_x], graph.nodes[*plus].outputs[0]) != x ||
        std::find(readers.begin(), readers.end(), *times_x) == readers.end())
      continue;
    const auto half = uses.only_reader(graph.nodes[*times_x].outputs[0]);
    if (!half || !is(graph.nodes[*half], "Mul") || graph.nodes[*half].outputs.size() != 1) continue;
    const auto factor = other_input(graph.nodes[*half], graph.nodes[*times_x].outputs[0]);
    if (!factor || !near(scalar(graph, *factor), 0.5)) continue;
    return Activation{{first, *erf, *plus, *times_x, *half}, "Gelu"};
  }
  return std::nullopt;
}

// The activation that alone reads `value`: a Relu, Tanh or Sigmoid node, or gelu's nodes.
std::optional<Activation> activation_after(const ModelGraph& graph, const Uses& uses,
                                           const std::string& value) {
  if (const auto reader = uses.only_reader(value)) {
    const Node& r = graph.nodes[*reader];
    for (const char* name : {"Relu", "Tanh", "Sigmoid"})
      if (is(r, name) && r.inputs.size() == 1 && r.outputs.size() == 1)
        return Activation{{*reader}, name};
    return std::nullopt;
  }
  return erf_gelu(graph, uses, value);
}

// The columns of a product whose B is an initializer no run replaces (a layer's weights).
std::optional<int64_t> constant_columns(const ModelGraph& graph, const std::string& b) {
  const auto found = graph.initializers.find(b);
  if (found == graph.initializers.end() || graph.overridable(b) || found->second.shape.size() < 2)
    return std::nullopt;
  return found->second.shape.back();
}

}  // namespace

std::string_view fused_activation(std::string_view fused) {
  const std::string_view last = fused.substr(fused.rfind('+') + 1);  // the whole when no '+'
  if (last == "Relu") return "relu";
  if (last == "Gelu") return "gelu";
  if (last == "Tanh") return "tanh";
  if (last == "Sigmoid") return "sigmoid";
  return "";
}

std::vector<Fusion> find_product_fusions(const ModelGraph& graph) {
  const Uses uses(graph);
  std::vector<Fusion> fusions;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (!node.fused.empty() || node.outputs.size() != 1) continue;
    if (is(node, "Gemm")) {
      // Its bias is its own C; only the activation after it.
      if (const auto activation = activation_after(graph, uses, node.outputs[0]))
        fusions.push_back({i, activation->nodes, activation->name, ""});
      continue;
    }
    if (!is(node, "MatMul") || node.inputs.size() != 2) continue;
    // MatMul -> Add(bias [n]) [-> activation], the bias a constant vector of the columns, so
    // that the Add neither broadcasts the product to another shape nor changes its dtype.
    const auto columns = constant_columns(graph, node.inputs[1]);
    const auto add = uses.only_reader(node.outputs[0]);
    if (!columns || !add || !is(graph.nodes[*add], "Add") ||
        graph.nodes[*add].outputs.size() != 1 || graph.nodes[*add].attributes.contains("broadcast"))
      continue;
    const auto bias = other_input(graph.nodes[*add], node.outputs[0]);
    if (!bias || *bias == node.outputs[0]) continue;
    const auto found = graph.initializers.find(*bias);
    if (found == graph.initializers.end() || graph.overridable(*bias) ||
        found->second.shape != Shape{*columns} ||
        found->second.dtype != graph.initializers.at(node.inputs[1]).dtype)
      continue;
    Fusion fusion{i, {*add}, "Add", *bias};
    if (const auto activation = activation_after(graph, uses, graph.nodes[*add].outputs[0])) {
      fusion.absorbed.insert(fusion.absorbed.end(), activation->nodes.begin(),
                             activation->nodes.end());
      fusion.fused += "+" + activation->name;
    }
    fusions.push_back(std::move(fusion));
  }
  return fusions;
}

}  // namespace hal::model
