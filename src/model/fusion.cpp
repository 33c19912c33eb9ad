#include "model/fusion.hpp"

#include <optional>

#include "model/graph_uses.hpp"

namespace hal::model {
namespace {

bool is(const Node& node, std::string_view op_type) {
  return node.domain.empty() && node.op_type == op_type;
}

// The Relu that alone reads `node`'s single output, if any.
std::optional<size_t> relu_after(const ModelGraph& graph, const Uses& uses, size_t node) {
  const Node& n = graph.nodes[node];
  if (n.outputs.size() != 1) return std::nullopt;
  const auto reader = uses.only_reader(n.outputs[0]);
  if (!reader) return std::nullopt;
  const Node& r = graph.nodes[*reader];
  if (!is(r, "Relu") || r.inputs.size() != 1 || r.outputs.size() != 1) return std::nullopt;
  return reader;
}

}  // namespace

std::vector<Fusion> find_fusions(const ModelGraph& graph) {
  const Uses uses(graph);
  std::vector<Fusion> fusions;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (!is(node, "Conv") || !node.fused.empty() || node.outputs.size() != 1 ||
        node.inputs.size() > 3)
      continue;
    const auto reader = uses.only_reader(node.outputs[0]);
    if (!reader) continue;
    const Node& next = graph.nodes[*reader];
    if (is(next, "Relu") && next.inputs.size() == 1 && next.outputs.size() == 1) {
      fusions.push_back({i, {*reader}, "Relu", ""});
      continue;
    }
    if (!is(next, "Add") || next.inputs.size() != 2 || next.outputs.size() != 1) continue;
    // Before opset 7 `broadcast`/`axis` align B from an axis, which the fused Conv's NumPy
    // broadcasting does not: such an Add runs on its own.
    if (next.attributes.contains("broadcast") || next.attributes.contains("axis")) continue;
    const std::string& other = next.inputs[0] == node.outputs[0] ? next.inputs[1] : next.inputs[0];
    // The residual must be ready when the Conv runs, which moves the Add up to it.
    if (other.empty() || other == node.outputs[0] || !uses.ready_before(other, i)) continue;
    if (const auto relu = relu_after(graph, uses, *reader))
      fusions.push_back({i, {*reader, *relu}, "Add+Relu", other});
    else
      fusions.push_back({i, {*reader}, "Add", other});
  }
  std::vector<Fusion> products = find_product_fusions(graph);
  fusions.insert(fusions.end(), products.begin(), products.end());
  return fusions;
}

std::vector<bool> apply_fusions(ModelGraph& graph, const std::vector<Fusion>& fusions) {
  std::vector<bool> kept(graph.nodes.size(), true);
  for (const Fusion& fusion : fusions) {
    Node& node = graph.nodes[fusion.node];
    node.fused = fusion.fused;
    node.outputs[0] = graph.nodes[fusion.absorbed.back()].outputs[0];
    if (!fusion.residual.empty()) {
      if (node.op_type == "Conv") node.inputs.resize(3);  // an omitted bias stays omitted
      node.inputs.push_back(fusion.residual);
    }
    for (size_t absorbed : fusion.absorbed) kept[absorbed] = false;
  }
  keep_nodes(graph, kept);
  return kept;
}

void keep_nodes(ModelGraph& graph, const std::vector<bool>& kept) {
  std::vector<Node> remaining;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (kept[i]) remaining.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(remaining);
  index_last_uses(graph);
}

void index_last_uses(ModelGraph& graph) {
  graph.last_use.clear();
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& name : graph.nodes[i].inputs)
      if (!name.empty()) graph.last_use[name] = i;
    for (const std::string& name : graph.nodes[i].captured) graph.last_use[name] = i;
  }
  for (const ModelValue& output : graph.outputs) graph.last_use[output.name] = graph.nodes.size();
}

}  // namespace hal::model
