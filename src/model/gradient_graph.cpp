#include "model/gradient_graph.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "hal/error.hpp"
#include "model/gradient_rules.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

[[noreturn]] void invalid(const Node& node, const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, node.describe() + ": " + what);
}
[[noreturn]] void unsupported(const Node& node, const std::string& what) {
  throw Error(ErrorCode::Unsupported, node.describe() + ": " + what);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

template <class T>
const T* attribute(const Node& node, const char* name) {
  const auto found = node.attributes.find(name);
  return found == node.attributes.end() ? nullptr : std::get_if<T>(&found->second);
}

bool is_gradient(const Node& node) {
  return node.domain == kTrainingDomain && node.op_type == "Gradient";
}

// The graph's values as the Gradient node at `index` sees them: defined before it, or later.
struct Scope {
  std::set<std::string, std::less<>> before;
  std::map<std::string, const Node*, std::less<>> later;  // value -> the node that makes it

  Scope(const ModelGraph& graph, size_t index, const std::set<std::string, std::less<>>& outer)
      : before(outer) {
    for (const ModelValue& input : graph.inputs) before.insert(input.name);
    for (const auto& [name, tensor] : graph.initializers) before.insert(name);
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      for (const std::string& output : graph.nodes[i].outputs)
        if (!output.empty()) {
          if (i < index)
            before.insert(output);
          else
            later.emplace(output, &graph.nodes[i]);
        }
  }

  // InvalidArgument where nothing defines `name`, Unsupported where a later node does.
  void require(const Node& gradient, const std::string& what, const std::string& name) const {
    if (before.contains(name)) return;
    if (const auto maker = later.find(name); maker != later.end())
      unsupported(gradient, what + " names '" + name + "', which " + maker->second->describe() +
                                " computes after it; hal differentiates the values computed "
                                "before the Gradient node");
    invalid(gradient, what + " names '" + name + "', which the graph does not define");
  }
};

void link(ModelGraph& graph, size_t index, const std::set<std::string, std::less<>>& outer) {
  Node& gradient = graph.nodes[index];
  const auto* xs_attr = attribute<std::vector<std::string>>(gradient, "xs");
  const auto* y_attr = attribute<std::string>(gradient, "y");
  if (!xs_attr || xs_attr->empty() || !y_attr || y_attr->empty())
    invalid(gradient, "needs the attributes xs (strings) and y (a string)");
  const std::vector<std::string>& xs = *xs_attr;
  const std::string& y = *y_attr;
  std::vector<std::string> fed = xs;
  if (const auto* zs = attribute<std::vector<std::string>>(gradient, "zs"))
    fed.insert(fed.end(), zs->begin(), zs->end());
  const Scope scope(graph, index, outer);
  for (const std::string& x : xs) scope.require(gradient, "xs", x);
  scope.require(gradient, "y", y);
  if (gradient.inputs.size() != fed.size())
    invalid(gradient, "has " + std::to_string(gradient.inputs.size()) + " inputs; xs and zs name " +
                          std::to_string(fed.size()) + " (" + joined(fed) + ")");
  for (size_t i = 0; i < fed.size(); ++i)
    if (gradient.inputs[i] != fed[i])
      unsupported(gradient, "input " + std::to_string(i) + " is '" + gradient.inputs[i] +
                                "', not '" + fed[i] +
                                "' that xs and zs name there; hal differentiates at the values "
                                "the graph computes, not at others fed in");
  if (gradient.outputs.size() > xs.size())
    invalid(gradient, "has " + std::to_string(gradient.outputs.size()) +
                          " outputs, more than xs names (" + std::to_string(xs.size()) + ")");

  // The nodes before the Gradient that depend on some x; xs must not depend on one another.
  std::set<std::string, std::less<>> depends(xs.begin(), xs.end());
  std::vector<bool> on_path(index, false);
  for (size_t i = 0; i < index; ++i) {
    const Node& node = graph.nodes[i];
    bool reads_x = false;
    for (const auto* names : {&node.inputs, &node.captured})
      for (const std::string& name : *names) reads_x = reads_x || depends.contains(name);
    if (!reads_x) continue;
    on_path[i] = true;
    for (const std::string& output : node.outputs) {
      if (output.empty()) continue;
      if (std::find(xs.begin(), xs.end(), output) != xs.end())
        invalid(gradient, "xs names '" + output + "', which " + node.describe() +
                              " computes from other xs; xs must be independent");
      depends.insert(output);
    }
  }
  if (!depends.contains(y))
    invalid(gradient, "y names '" + y + "', which depends on none of xs (" + joined(xs) + ")");
  // Of those, the ones y depends on, walking back from y.
  std::set<std::string, std::less<>> needed{y};
  for (size_t i = index; i-- > 0;) {
    const Node& node = graph.nodes[i];
    bool makes_needed = false;
    for (const std::string& output : node.outputs)
      makes_needed = makes_needed || (!output.empty() && needed.contains(output));
    on_path[i] = on_path[i] && makes_needed;
    if (on_path[i]) needed.insert(node.inputs.begin(), node.inputs.end());
  }

  auto forward = std::make_shared<ModelGraph>();
  forward->name = graph.name + ": " + gradient.describe() + ", the nodes it differentiates";
  forward->opset = graph.opset;
  std::set<std::string, std::less<>> tape(gradient.inputs.begin(), gradient.inputs.end());
  std::vector<std::string> appended;
  for (size_t i = 0; i < index; ++i) {
    if (!on_path[i]) continue;
    const Node& node = graph.nodes[i];
    if (!node.domain.empty() || !find_backward_rule(node.op_type))
      unsupported(gradient, "cannot differentiate through " + node.describe() +
                                ": hal has no gradient rule for " + node.op_type + " (it has for " +
                                joined(differentiable_op_types()) + ")");
    forward->nodes.push_back(node);
    for (const auto* names : {&node.inputs, &node.outputs})
      for (const std::string& name : *names)
        if (!name.empty() && tape.insert(name).second) appended.push_back(name);
  }
  gradient.inputs.insert(gradient.inputs.end(), appended.begin(), appended.end());
  // y itself, where no node makes it on the path (y is one of xs), is an input already.
  gradient.attributes[std::string(kForwardAttribute)] =
      std::shared_ptr<const ModelGraph>(std::move(forward));
}

}  // namespace

void link_gradients(ModelGraph& graph, const std::set<std::string, std::less<>>& outer) {
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (is_gradient(graph.nodes[i])) link(graph, i, outer);
}

}  // namespace hal::model
