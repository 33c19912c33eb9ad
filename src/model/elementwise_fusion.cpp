#include "model/elementwise_fusion.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "model/fusion.hpp"
#include "model/graph_uses.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

// ONNX ops that are exactly one op of fused_elementwise for inputs of one floating dtype.
const std::map<std::string, std::string, std::less<>>& fusable_ops() {
  static const std::map<std::string, std::string, std::less<>> table{
      {"Add", "add"},     {"Sub", "sub"},     {"Mul", "mul"},         {"Div", "div"},
      {"Pow", "pow"},     {"Max", "maximum"}, {"Min", "minimum"},     {"Neg", "neg"},
      {"Abs", "abs"},     {"Relu", "relu"},   {"Exp", "exp"},         {"Log", "log"},
      {"Sqrt", "sqrt"},   {"Tanh", "tanh"},   {"Sigmoid", "sigmoid"}, {"Erf", "erf"},
      {"Floor", "floor"}, {"Ceil", "ceil"},   {"Round", "round"},     {"Sin", "sin"},
      {"Cos", "cos"},     {"Tan", "tan"},     {"Asin", "asin"},       {"Acos", "acos"},
      {"Atan", "atan"},   {"Sinh", "sinh"},   {"Cosh", "cosh"},       {"Asinh", "asinh"},
      {"Acosh", "acosh"}, {"Atanh", "atanh"}};
  return table;
}

bool fusable(const Node& node) {
  if (!node.domain.empty() || !node.op || !node.fused.empty() || node.chain ||
      node.outputs.size() != 1 || node.outputs[0].empty() || !node.captured.empty())
    return false;
  const auto found = fusable_ops().find(node.op_type);
  if (found == fusable_ops().end()) return false;
  const bool binary = node.op_type == "Add" || node.op_type == "Sub" || node.op_type == "Mul" ||
                      node.op_type == "Div" || node.op_type == "Pow" || node.op_type == "Max" ||
                      node.op_type == "Min";
  const size_t arity = binary ? 2 : 1;
  if (node.inputs.size() != arity) return false;
  for (const std::string& input : node.inputs)
    if (input.empty()) return false;
  return true;
}

bool floating_element_type(int32_t type) {
  constexpr int32_t kFloat = 1, kFloat16 = 10, kDouble = 11, kBfloat16 = 16;
  return type == kFloat || type == kFloat16 || type == kDouble || type == kBfloat16;
}

// The values `nodes` (a chain, in graph order) read from outside it, each once.
std::vector<std::string> outside_inputs(const ModelGraph& graph, const std::vector<size_t>& nodes) {
  std::set<std::string> made;
  for (size_t n : nodes) made.insert(graph.nodes[n].outputs[0]);
  std::vector<std::string> out;
  for (size_t n : nodes)
    for (const std::string& input : graph.nodes[n].inputs)
      if (!made.contains(input) && std::find(out.begin(), out.end(), input) == out.end())
        out.push_back(input);
  return out;
}

// The chain that ends in `root`: the producers of its inputs that only it reads, theirs in
// turn, while the chain's inputs number at most the fused op's limit.
// The chain's outside inputs are kept as it grows, not recounted over the whole chain at each
// step: a chain of 13 000 Relus took 26 s to load that way.
std::vector<size_t> grow(const ModelGraph& graph, const Uses& uses, size_t root,
                         std::vector<bool>& taken) {
  std::vector<size_t> chain{root};
  std::set<size_t> in_chain{root};
  const std::vector<std::string>& root_inputs = graph.nodes[root].inputs;
  std::set<std::string> outside(root_inputs.begin(), root_inputs.end());
  std::vector<size_t> frontier{root};
  while (!frontier.empty()) {
    const size_t reader = frontier.back();
    frontier.pop_back();
    for (const std::string& input : graph.nodes[reader].inputs) {
      const auto maker = uses.maker(input);
      if (!maker || taken[*maker] || !fusable(graph.nodes[*maker]) || in_chain.contains(*maker) ||
          !uses.only_read_by(input, reader))
        continue;
      // With the maker in, its result is made inside (only `reader` reads it) and its inputs
      // come from outside: a fusable node's inputs cannot be made by a node already in.
      std::set<std::string> larger = outside;
      larger.erase(input);
      larger.insert(graph.nodes[*maker].inputs.begin(), graph.nodes[*maker].inputs.end());
      if (larger.size() > kMaxFusedElementwiseInputs) continue;
      outside = std::move(larger);
      chain.push_back(*maker);
      in_chain.insert(*maker);
      frontier.push_back(*maker);
    }
  }
  std::sort(chain.begin(), chain.end());
  return chain;
}

}  // namespace

std::vector<ElementwiseFusion> find_elementwise_fusions(const ModelGraph& graph,
                                                        const ElementTypeOf& element_type) {
  constexpr int64_t kSumBroadcasts = 8;
  std::vector<ElementwiseFusion> fusions;
  if (graph.opset < kSumBroadcasts) return fusions;
  const Uses uses(graph);
  std::vector<bool> taken(graph.nodes.size(), false);
  // From the last node back: each chain is as long as it can be before another starts.
  for (size_t root = graph.nodes.size(); root-- > 0;) {
    if (taken[root] || !fusable(graph.nodes[root])) continue;
    const std::vector<size_t> chain = grow(graph, uses, root, taken);
    if (chain.size() < 2) continue;
    ElementwiseFusion fusion{chain, outside_inputs(graph, chain)};
    const int32_t type = element_type(fusion.inputs[0]);
    bool one_type = floating_element_type(type);
    for (const std::string& input : fusion.inputs)
      one_type = one_type && element_type(input) == type;
    if (!one_type) continue;
    for (size_t n : chain) taken[n] = true;
    fusions.push_back(std::move(fusion));
  }
  std::reverse(fusions.begin(), fusions.end());
  return fusions;
}

std::vector<bool> apply_elementwise_fusions(ModelGraph& graph,
                                            const std::vector<ElementwiseFusion>& fusions) {
  std::vector<bool> kept(graph.nodes.size(), true);
  for (const ElementwiseFusion& fusion : fusions) {
    auto chain = std::make_shared<ElementwiseChain>();
    // Registers: the inputs first, then each node's result.
    std::map<std::string, int, std::less<>> registers;
    for (const std::string& input : fusion.inputs)
      registers.emplace(input, static_cast<int>(registers.size()));
    std::string names, op_types;
    for (size_t n : fusion.nodes) {
      const Node& node = graph.nodes[n];
      ElementwiseProgram::Step step{fusable_ops().find(node.op_type)->second, {}};
      for (const std::string& input : node.inputs) step.operands.push_back(registers.at(input));
      registers.emplace(node.outputs[0], static_cast<int>(registers.size()));
      chain->program.steps.push_back(std::move(step));
      names += (names.empty() ? "" : " + ") + node.name;
      op_types += (op_types.empty() ? "" : "+") + node.op_type;
      chain->nodes.push_back(node);
    }
    for (size_t n : fusion.nodes) kept[n] = false;
    const size_t last = fusion.nodes.back();
    kept[last] = true;
    Node fused;
    fused.name = names;
    fused.op_type = "FusedElementwise";
    fused.domain = "hal";
    fused.opset = graph.nodes[last].opset;
    fused.inputs = fusion.inputs;
    fused.outputs = graph.nodes[last].outputs;
    fused.op = &fused_elementwise_onnx_op();
    fused.fused = op_types;
    fused.chain = std::move(chain);
    graph.nodes[last] = std::move(fused);
  }
  keep_nodes(graph, kept);
  return kept;
}

}  // namespace hal::model
