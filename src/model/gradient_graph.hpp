// How ONNX's Gradient op (domain ai.onnx.preview.training) reaches the forward values it
// differentiates.
//
// Gradient(xs, zs, y) reads only the values of xs and zs, yet reverse-mode differentiation
// needs every intermediate value between xs and y (Mul's operands, Sigmoid's output ...). The
// executor runs nodes in topological order and drops each value after its last reader, so at
// load each Gradient node is linked to its forward part:
//  - the differentiated nodes are those before it that depend on some x and that y depends
//    on; copies of them (attributes, op) go into the node's attribute kForwardAttribute, a
//    graph of those nodes in order;
//  - every value those nodes read or make is appended to the Gradient node's inputs. The
//    executor then treats them like any input: it keeps them alive until the Gradient node has
//    run (last_use), moves them to its device, and the planner counts them, with no path of
//    its own. The forward pass is not run twice: the Gradient reuses the graph's own values.
// Consequences, reported at load: the Gradient's inputs must be the very values xs and zs name
// (ONNX allows others fed in, which would need the forward part run again: Unsupported); y
// must be computed before the Gradient node; a differentiated node whose op has no backward
// rule (gradient_rules.hpp) is Unsupported, naming it.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "model/model_graph.hpp"

namespace hal::model {

inline constexpr std::string_view kForwardAttribute = "hal.forward";

// Links each Gradient node of `graph` (its nodes imported, their order not yet checked) as
// above; `outer` names the enclosing graphs' values (a subgraph's). InvalidArgument for xs or
// y the graph does not define, xs computed from one another, or a y that depends on no x.
void link_gradients(ModelGraph& graph, const std::set<std::string, std::less<>>& outer);

}  // namespace hal::model
