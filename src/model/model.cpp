// Model: the loaded graph and its executor, which runs the nodes in order on one stream and
// drops each intermediate after its last reader, so the caching allocator reuses its memory.
#include "hal/model.hpp"

#include <set>

#include "hal/error.hpp"
#include "model/model_graph.hpp"
#include "model/onnx_ops.hpp"

namespace hal {
namespace {

using model::ModelGraph;
using model::Node;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, message);
}

// Each given input against its declaration: present, known, on the stream's device, of the
// declared dtype and rank, fixed sizes equal and a symbol the same size wherever it appears.
void check_inputs(const ModelGraph& graph, const std::map<std::string, Tensor>& inputs,
                  const Device& device) {
  std::set<std::string, std::less<>> declared;
  std::map<std::string, int64_t> symbols;
  for (const ModelValue& value : graph.inputs) {
    declared.insert(value.name);
    const auto given = inputs.find(value.name);
    if (given == inputs.end())
      invalid(graph.name + ": input '" + value.name + "' (" + std::string(to_string(value.dtype)) +
              " " + to_string(value.shape) + ") is missing");
    const Tensor& tensor = given->second;
    const std::string where = graph.name + ": input '" + value.name + "'";
    if (!tensor.defined()) invalid(where + " is an undefined tensor");
    if (!(tensor.device() == device))
      invalid(where + " is on " + tensor.device().id() + ", the stream on " + device.id());
    if (tensor.dtype() != value.dtype)
      invalid(where + " is " + std::string(to_string(tensor.dtype())) + "; the model declares " +
              std::string(to_string(value.dtype)));
    if (!value.ranked) continue;  // the model leaves the shape out: any shape goes
    if (static_cast<size_t>(tensor.dim()) != value.shape.size())
      invalid(where + " has shape " + to_string(tensor.shape()) + "; the model declares " +
              to_string(value.shape));
    for (size_t d = 0; d < value.shape.size(); ++d) {
      const ModelDim& dim = value.shape[d];
      const int64_t size = tensor.shape()[d];
      if (dim.size >= 0 && dim.size != size)
        invalid(where + " has shape " + to_string(tensor.shape()) + "; the model declares " +
                to_string(value.shape));
      if (!dim.symbol.empty()) {
        const auto [bound, inserted] = symbols.emplace(dim.symbol, size);
        if (!inserted && bound->second != size)
          invalid(where + " gives '" + dim.symbol + "' the size " + std::to_string(size) +
                  ", another input gave it " + std::to_string(bound->second));
      }
    }
  }
  for (const auto& [name, tensor] : inputs)
    if (!declared.contains(name)) {
      std::string names;
      for (const ModelValue& value : graph.inputs)
        names += (names.empty() ? "" : ", ") + value.name;
      invalid(graph.name + ": the model has no input '" + name + "' (its inputs: " + names + ")");
    }
}

// Errors of a node's op, as the caller sees them: which node, whatever the op said.
[[noreturn]] void rethrow_for(const Node& node, const Error& error) {
  const std::string prefix = node.describe();
  if (error.message().rfind(prefix, 0) == 0) throw error;
  throw Error(error.code(), prefix + ": " + error.message(), error.native_code());
}

}  // namespace

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

const model::ModelGraph& Model::checked_graph() const {
  if (!graph_) throw Error(ErrorCode::InvalidState, "the model is empty (default-constructed)");
  return *graph_;
}

const std::vector<ModelValue>& Model::inputs() const { return checked_graph().inputs; }
const std::vector<ModelValue>& Model::outputs() const { return checked_graph().outputs; }
int64_t Model::opset() const { return checked_graph().opset; }
size_t Model::node_count() const { return checked_graph().nodes.size(); }

std::vector<std::string> Model::op_types() const {
  std::set<std::string> types;
  for (const Node& node : checked_graph().nodes) types.insert(node.op_type);
  return {types.begin(), types.end()};
}

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs,
                                         Stream& stream) const {
  const ModelGraph& graph = checked_graph();
  check_inputs(graph, inputs, stream.device());
  std::map<std::string, Tensor, std::less<>> values(inputs.begin(), inputs.end());
  auto lookup = [&](const std::string& name) -> Tensor {
    if (const auto found = values.find(name); found != values.end()) return found->second;
    // Initializers go to the device when first read in a run.
    const auto init = graph.initializers.find(name);
    if (init == graph.initializers.end())
      throw Error(ErrorCode::Internal,
                  graph.name + ": value '" + name + "' read after it was dropped");
    return values.emplace(name, model::upload(init->second, stream)).first->second;
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (!node.op)
      throw Error(ErrorCode::Internal, node.describe() + ": loaded without an implementation");
    std::vector<Tensor> in;
    for (const std::string& name : node.inputs)
      in.push_back(name.empty() ? Tensor() : lookup(name));
    std::vector<Tensor> out;
    try {
      out = node.op->run(model::OpContext(node, stream), in);
    } catch (const Error& error) {
      rethrow_for(node, error);
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::OutOfMemory, node.describe() + ": out of host memory");
    } catch (const std::exception& error) {
      // A defect of the op's implementation: reported as hal's, naming the node.
      throw Error(ErrorCode::Internal, node.describe() + ": " + error.what());
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o].empty()) continue;
      if (o >= out.size() || !out[o].defined())
        throw Error(ErrorCode::Unsupported, node.describe() + ": output " + std::to_string(o) +
                                                " ('" + node.outputs[o] + "') is not computed");
      // A value nothing reads (Dropout's mask, say) is dropped at once.
      if (graph.last_use.contains(node.outputs[o])) values[node.outputs[o]] = out[o];
    }
    // Intermediates nobody reads again go back to the allocator.
    for (const std::string& name : node.inputs) {
      const auto last = graph.last_use.find(name);
      if (last != graph.last_use.end() && last->second == i) values.erase(name);
    }
  }
  std::map<std::string, Tensor> outputs;
  for (const ModelValue& output : graph.outputs) outputs[output.name] = lookup(output.name);
  return outputs;
}

}  // namespace hal
