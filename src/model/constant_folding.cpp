#include "model/constant_folding.hpp"
#include "core/host_cpu.hpp"

#include "model/fusion.hpp"

#include <exception>
#include <set>

#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "hal/registry.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

// Folded results past this size stay computed at run time: a model's file would not hold them.
constexpr int64_t kMaxFoldedBytes = int64_t{64} << 20;

HostTensor to_host(const Tensor& tensor, Stream& stream) {
  HostTensor host{tensor.dtype(), tensor.shape(), std::vector<std::byte>(tensor.nbytes())};
  tensor.copy_to_host(host.bytes.data(), stream);
  stream.synchronize();
  return host;
}

// Whether `node` draws random numbers with these constant inputs: a random op's node, but a
// Dropout whose training_mode is absent or false.
bool draws(const Node& node, const std::vector<const HostTensor*>& inputs) {
  if (!node.op || !node.op->random) return false;
  if (node.op_type != "Dropout") return true;
  if (inputs.size() < 3 || !inputs[2]) return false;
  for (std::byte b : inputs[2]->bytes)
    if (b != std::byte{0}) return true;
  return false;
}

}  // namespace

std::optional<std::vector<HostTensor>> evaluate_on_host(
    const Node& node, const std::vector<const HostTensor*>& inputs) {
  // Value ops (sequences, subgraphs, which may read more than the node's inputs) are not folded.
  // Nor are random ops, which draw afresh each run (Dropout only in training mode).
  if (!node.op || !node.op->run || draws(node, inputs)) return std::nullopt;
  Stream stream = hal::detail::host_cpu().create_stream();
  try {
    std::vector<Tensor> in;
    for (const HostTensor* input : inputs) in.push_back(input ? upload(*input, stream) : Tensor());
    const std::vector<Tensor> out = node.op->run(OpContext(node, stream), in);
    std::vector<HostTensor> results;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o].empty()) {
        results.emplace_back();
        continue;
      }
      if (o >= out.size() || !out[o].defined() ||
          static_cast<int64_t>(out[o].nbytes()) > kMaxFoldedBytes)
        return std::nullopt;
      results.push_back(to_host(out[o], stream));
    }
    return results;
  } catch (const std::exception&) {
    // The node fails the same way when it runs, naming itself then (the executor reports any
    // exception, a std::bad_alloc or length_error of an op's own containers too, as hal's).
    return std::nullopt;
  }
}

std::vector<bool> fold_constants(ModelGraph& graph) {
  std::set<std::string, std::less<>> graph_inputs;
  for (const ModelValue& input : graph.inputs) graph_inputs.insert(input.name);
  // An initializer a run may replace is no constant.
  for (const ModelValue& input : graph.optional_inputs) graph_inputs.insert(input.name);
  std::vector<bool> kept(graph.nodes.size(), true);
  std::vector<Node> remaining;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& node = graph.nodes[i];
    std::vector<const HostTensor*> inputs;
    bool constant = true;
    for (const std::string& name : node.inputs) {
      const auto init = name.empty() ? graph.initializers.end() : graph.initializers.find(name);
      constant = constant && (name.empty() ||
                              (init != graph.initializers.end() && !graph_inputs.contains(name)));
      inputs.push_back(init == graph.initializers.end() ? nullptr : &init->second);
    }
    for (const std::string& name : node.outputs)
      constant = constant && !graph_inputs.contains(name);
    std::optional<std::vector<HostTensor>> results;
    if (constant) results = evaluate_on_host(node, inputs);
    if (!results) {
      remaining.push_back(std::move(node));
      continue;
    }
    for (size_t o = 0; o < node.outputs.size(); ++o)
      if (!node.outputs[o].empty()) graph.initializers[node.outputs[o]] = std::move((*results)[o]);
    kept[i] = false;
  }
  graph.nodes = std::move(remaining);
  // Readers' positions moved up; initializers nobody reads any more are dropped.
  index_last_uses(graph);
  std::erase_if(graph.initializers,
                [&](const auto& entry) { return !graph.last_use.contains(entry.first); });
  return kept;
}

}  // namespace hal::model
