// Fusion at load: what follows a Conv and reads nothing but its output is folded into the Conv
// where the Conv's op applies it itself (oneDNN's post-ops on the CPU: one pass over the output
// instead of two or three):
//   Conv -> Relu                  fused "Relu"
//   Conv -> Add(residual) [-> Relu]  fused "Add" or "Add+Relu", the residual a fourth input
// and a linear layer's bias and activation into its product's epilogue (hal::MatmulEpilogue:
// hal's GEMM applies them as it stores each block; product_fusion.cpp):
//   MatMul -> Add(bias) [-> act]  fused "Add" or "Add+<act>", the bias a third input: a constant
//                                 vector of the product's columns, B a constant matrix
//   Gemm -> act                   fused "<act>"
// where <act> is Relu, Tanh, Sigmoid, or Gelu: the node or gelu as exporters write it with
// Erf (x / sqrt 2 -> Erf -> + 1 -> * x -> * 0.5).
// The Conv takes the last absorbed node's output name, so the values the rest of the graph reads
// are unchanged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/model_graph.hpp"

namespace hal::model {

struct Fusion {
  size_t node;                   // the Conv that takes the others in
  std::vector<size_t> absorbed;  // the nodes folded into it, in order, dropped
  std::string fused;             // what `node.fused` becomes
  std::string residual;          // the Add's other input (a residual, a bias), or ""
};

// The fusions `graph` allows; changes nothing.
std::vector<Fusion> find_fusions(const ModelGraph& graph);
// Those of them that fold into a product (MatMul, Gemm).
std::vector<Fusion> find_product_fusions(const ModelGraph& graph);
// The activation a product's `fused` ends with ("Add+Gelu", "Relu"), as hal::MatmulEpilogue
// names it ("gelu", "relu"); "" for none.
std::string_view fused_activation(std::string_view fused);

// Applies `fusions`: each node gets `fused`, the residual as its fourth input and the last
// absorbed node's output; the absorbed nodes go. Returns, per node of the graph as it was,
// whether it was kept; `last_use` is updated.
std::vector<bool> apply_fusions(ModelGraph& graph, const std::vector<Fusion>& fusions);

// Drops the nodes of `graph` that `kept` marks false and indexes the last uses again.
void keep_nodes(ModelGraph& graph, const std::vector<bool>& kept);

// `graph.last_use` from its nodes and outputs (after nodes were removed or merged).
void index_last_uses(ModelGraph& graph);

}  // namespace hal::model
