// Fusion at load: an activation that is the only reader of a node's output is folded into that
// node where the node's op applies it itself (Conv followed by Relu: oneDNN's post-op on the CPU,
// one pass over the output fewer). The node takes the activation's output name, so the values
// the rest of the graph reads are unchanged.
#pragma once

#include <vector>

#include "model/model_graph.hpp"

namespace hal::model {

struct Fusion {
  size_t node;        // the node that takes the activation in (Conv)
  size_t activation;  // the activation's node (Relu), dropped
};

// The fusions `graph` allows; changes nothing.
std::vector<Fusion> find_fusions(const ModelGraph& graph);

// Applies `fusions`: each node gets `fused` and its activation's output, each activation's node
// goes. Returns, per node of the graph as it was, whether it was kept; `last_use` is updated.
std::vector<bool> apply_fusions(ModelGraph& graph, const std::vector<Fusion>& fusions);

// `graph.last_use` from its nodes and outputs (after nodes were removed or merged).
void index_last_uses(ModelGraph& graph);

}  // namespace hal::model
