// Fusion at load: what follows a Conv and reads nothing but its output is folded into the Conv
// where the Conv's op applies it itself (oneDNN's post-ops on the CPU: one pass over the output
// instead of two or three):
//   Conv -> Relu                  fused "Relu"
//   Conv -> Add(residual) [-> Relu]  fused "Add" or "Add+Relu", the residual a fourth input
// The Conv takes the last absorbed node's output name, so the values the rest of the graph reads
// are unchanged.
#pragma once

#include <string>
#include <vector>

#include "model/model_graph.hpp"

namespace hal::model {

struct Fusion {
  size_t node;                   // the Conv that takes the others in
  std::vector<size_t> absorbed;  // the nodes folded into it, in order, dropped
  std::string fused;             // what `node.fused` becomes
  std::string residual;          // the Add's other input, or ""
};

// The fusions `graph` allows; changes nothing.
std::vector<Fusion> find_fusions(const ModelGraph& graph);

// Applies `fusions`: each node gets `fused`, the residual as its fourth input and the last
// absorbed node's output; the absorbed nodes go. Returns, per node of the graph as it was,
// whether it was kept; `last_use` is updated.
std::vector<bool> apply_fusions(ModelGraph& graph, const std::vector<Fusion>& fusions);

// Drops the nodes of `graph` that `kept` marks false and indexes the last uses again.
void keep_nodes(ModelGraph& graph, const std::vector<bool>& kept);

// `graph.last_use` from its nodes and outputs (after nodes were removed or merged).
void index_last_uses(ModelGraph& graph);

}  // namespace hal::model
