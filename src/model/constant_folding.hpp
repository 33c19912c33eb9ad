// Constant folding: nodes whose inputs are all constants are run once on cpu:0 and replaced by
// their results, at load (initializer-only subgraphs: Constant nodes, weights transposed or
// reshaped by the exporter) and while planning (shape computations once the shapes are known).
#pragma once

#include <optional>
#include <vector>

#include "model/model_graph.hpp"

namespace hal::model {

// `node`'s outputs for host inputs (null: an omitted optional input), computed on cpu:0;
// nullopt where the node cannot be evaluated so (its op refuses, or an output is missing).
std::optional<std::vector<HostTensor>> evaluate_on_host(
    const Node& node, const std::vector<const HostTensor*>& inputs);

// Folds at load: each node whose inputs are all initializers (or that has none: Constant)
// becomes initializers holding its outputs, unless an output is a graph input or an input is
// an initializer a run may replace (ModelGraph::optional_inputs). Returns, per
// node of the graph as it was, whether it was kept; `graph.last_use` is updated.
std::vector<bool> fold_constants(ModelGraph& graph);

}  // namespace hal::model
