// Model: what a loaded graph declares, and its run on one stream (executor.cpp runs it).
#include "hal/model.hpp"

#include <set>

#include "hal/error.hpp"
#include "model/executor.hpp"
#include "model/model_graph.hpp"
#include "model/resident_weights.hpp"

namespace hal {

std::string to_string(const std::vector<ModelDim>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += i ? ", " : "";
    out += shape[i].size >= 0        ? std::to_string(shape[i].size)
           : shape[i].symbol.empty() ? "?"
                                     : shape[i].symbol;
  }
  return out + "]";
}

std::string element_type(const ModelValue& value) {
  return value.strings ? "string" : std::string(to_string(value.dtype));
}

std::string describe(const StringTensor& tensor) {
  return "string" + to_string(tensor.shape) + " on the host";
}

Model::Model(std::shared_ptr<const model::ModelGraph> graph)
    : graph_(std::move(graph)), weights_(std::make_shared<model::ResidentWeights>()) {}

const model::ModelGraph& Model::checked_graph() const {
  if (!graph_) throw Error(ErrorCode::InvalidState, "the model is empty (default-constructed)");
  return *graph_;
}

const std::vector<ModelValue>& Model::inputs() const { return checked_graph().inputs; }
const std::vector<ModelValue>& Model::outputs() const { return checked_graph().outputs; }
const std::vector<ModelValue>& Model::optional_inputs() const {
  return checked_graph().optional_inputs;
}
int64_t Model::opset() const { return checked_graph().opset; }
size_t Model::node_count() const { return checked_graph().nodes.size(); }

namespace {
// The op types of `graph`'s nodes and of the subgraphs they hold (If's branches, Loop's body).
void collect_op_types(const model::ModelGraph& graph, std::set<std::string>& types) {
  for (const model::Node& node : graph.nodes) {
    types.insert(node.op_type);
    for (const auto& [name, value] : node.attributes)
      if (const auto* subgraph = std::get_if<std::shared_ptr<const model::ModelGraph>>(&value))
        collect_op_types(**subgraph, types);
  }
}
}  // namespace

std::vector<std::string> Model::op_types() const {
  std::set<std::string> types;
  collect_op_types(checked_graph(), types);
  return {types.begin(), types.end()};
}

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs,
                                         Stream& stream) const {
  return model::as_tensors(checked_graph(), run_values(model::as_values(inputs), stream));
}

std::map<std::string, RunValue> Model::run_values(const std::map<std::string, RunValue>& inputs,
                                                  Stream& stream) const {
  const model::ModelGraph& graph = checked_graph();
  const Device device = stream.device();
  model::check_inputs(graph, inputs, &device);
  model::RunStreams streams(&stream);
  model::Execution execution;
  execution.weights = weights_.get();
  return model::execute(graph, inputs, streams, device, execution);
}

}  // namespace hal
