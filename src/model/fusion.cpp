#include "model/fusion.hpp"

#include <map>
#include <set>

namespace hal::model {
namespace {

bool is(const Node& node, std::string_view op_type) {
  return node.domain.empty() && node.op_type == op_type;
}

}  // namespace

std::vector<Fusion> find_fusions(const ModelGraph& graph) {
  std::map<std::string, std::vector<size_t>, std::less<>> readers;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& name : graph.nodes[i].inputs)
      if (!name.empty()) readers[name].push_back(i);
  std::set<std::string, std::less<>> outputs;
  for (const ModelValue& output : graph.outputs) outputs.insert(output.name);

  std::vector<Fusion> fusions;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (!is(node, "Conv") || !node.fused.empty() || node.outputs.size() != 1) continue;
    const std::string& value = node.outputs[0];
    const auto found = readers.find(value);
    if (value.empty() || outputs.contains(value) || found == readers.end() ||
        found->second.size() != 1)
      continue;
    const Node& reader = graph.nodes[found->second[0]];
    if (is(reader, "Relu") && reader.inputs.size() == 1 && reader.outputs.size() == 1)
      fusions.push_back({i, found->second[0]});
  }
  return fusions;
}

std::vector<bool> apply_fusions(ModelGraph& graph, const std::vector<Fusion>& fusions) {
  std::vector<bool> kept(graph.nodes.size(), true);
  for (const Fusion& fusion : fusions) {
    Node& node = graph.nodes[fusion.node];
    const Node& activation = graph.nodes[fusion.activation];
    node.fused = activation.op_type;
    node.outputs[0] = activation.outputs[0];
    kept[fusion.activation] = false;
  }
  std::vector<Node> remaining;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (kept[i]) remaining.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(remaining);
  index_last_uses(graph);
  return kept;
}

void index_last_uses(ModelGraph& graph) {
  graph.last_use.clear();
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& name : graph.nodes[i].inputs)
      if (!name.empty()) graph.last_use[name] = i;
  for (const ModelValue& output : graph.outputs) graph.last_use[output.name] = graph.nodes.size();
}

}  // namespace hal::model
