#include "model/executor.hpp"
#include "core/host_cpu.hpp"

#include <set>
#include <utility>
#include <vector>

#include "hal/device.hpp"
#include "hal/error.hpp"
#include "hal/registry.hpp"
#include "model/onnx_ops.hpp"
#include "model/resident_weights.hpp"

namespace hal::model {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, message);
}

// Errors of a node's op, as the caller sees them: which node, whatever the op said.
[[noreturn]] void rethrow_for(const Node& node, const Error& error) {
  const std::string prefix = node.describe();
  if (error.message().rfind(prefix, 0) == 0) throw error;
  throw Error(error.code(), prefix + ": " + error.message(), error.native_code());
}

// Runs `body`, the node's op, with its errors as the caller sees them: naming the node.
template <class Body>
auto reported_for(const Node& node, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& error) {
    rethrow_for(node, error);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::OutOfMemory, node.describe() + ": out of host memory");
  } catch (const std::exception& error) {
    // A defect of the op's implementation: reported as hal's, naming the node.
    throw Error(ErrorCode::Internal, node.describe() + ": " + error.what());
  }
}

std::vector<Tensor> run_node(const ModelGraph& graph, const Node& node,
                             const std::vector<Tensor>& in, Stream& stream) {
  if (!node.op)
    throw Error(ErrorCode::Internal, node.describe() + ": loaded without an implementation");
  return reported_for(node, [&] { return node.op->run(OpContext(node, stream, &graph), in); });
}

// The run's values, each on the devices it has been needed on so far; a subgraph's run reads
// the enclosing run's values (`outer`) that it does not define itself.
class Values {
 public:
  Values(const ModelGraph& graph, RunStreams& streams, ResidentWeights* weights,
         Values* outer = nullptr)
      : graph_(graph),
        streams_(streams),
        weights_(weights),
        outer_(outer),
        strings_(graph.string_initializers.begin(), graph.string_initializers.end()) {}

  void define(const std::string& name, const Tensor& tensor) {
    copies_[name][tensor.device().id()] = tensor;
  }
  // An undefined tensor is an empty optional.
  void define(const std::string& name, const Value& value) {
    if (const Tensor* tensor = std::get_if<Tensor>(&value)) {
      if (tensor->defined())
        define(name, *tensor);
      else
        nones_.insert(name);
    } else if (const auto* strings = std::get_if<StringTensor>(&value)) {
      strings_[name] = *strings;
    } else {
      sequences_[name] = std::get<TensorSequence>(value);
    }
  }
  // Whether `name` is a string tensor (here or, where this run does not define it, outside).
  bool holds_strings(const std::string& name) const {
    if (strings_.contains(name)) return true;
    if (copies_.contains(name) || sequences_.contains(name) || nones_.contains(name) ||
        graph_.initializers.contains(name))
      return false;
    return outer_ && outer_->holds_strings(name);
  }
  // `name` on `device`: moved there (once) from where it was made, an initializer uploaded.
  Tensor on(const std::string& name, const Device& device) {
    auto found = copies_.find(name);
    if (found == copies_.end()) {
      const auto init = graph_.initializers.find(name);
      if (init == graph_.initializers.end()) {
        if (sequences_.contains(name))
          throw Error(ErrorCode::Unsupported,
                      "input '" + name + "' is a sequence; hal runs this op on tensors only");
        if (strings_.contains(name))
          throw Error(ErrorCode::Unsupported, "input '" + name +
                                                  "' is a string tensor; hal runs this op on "
                                                  "numeric tensors only");
        if (nones_.contains(name)) invalid("input '" + name + "' is an empty optional");
        if (outer_) return outer_->on(name, device);
        throw Error(ErrorCode::Internal,
                    graph_.name + ": value '" + name + "' read after it was dropped");
      }
      Stream& stream = streams_.of(device);
      const Tensor uploaded =
          weights_ ? weights_->on(name, init->second, stream) : upload(init->second, stream);
      if (weights_) resident_.insert(uploaded.storage().impl().get());
      copies_[name][device.id()] = uploaded;
      return uploaded;
    }
    auto& copies = found->second;
    if (const auto here = copies.find(device.id()); here != copies.end()) return here->second;
    const Tensor& source = copies.begin()->second;
    // The copy is enqueued on the reader's stream, after the maker's work is done.
    streams_.of(source.device()).synchronize();
    const Tensor moved = source.to(device, streams_.of(device));
    copies[device.id()] = moved;
    return moved;
  }
  // `name`, a tensor or a sequence, on `device` (a sequence's tensors moved there); strings
  // stay on the host.
  Value value_on(const std::string& name, const Device& device) {
    if (const auto strings = strings_.find(name); strings != strings_.end()) return strings->second;
    const auto sequence = sequences_.find(name);
    if (sequence == sequences_.end()) {
      if (nones_.contains(name)) return Tensor();
      if (outer_ && !copies_.contains(name) && !graph_.initializers.contains(name))
        return outer_->value_on(name, device);
      return on(name, device);
    }
    TensorSequence moved{sequence->second.dtype, {}};
    for (const Tensor& tensor : sequence->second.tensors) {
      if (tensor.device() == device) {
        moved.tensors.push_back(tensor);
        continue;
      }
      streams_.of(tensor.device()).synchronize();
      moved.tensors.push_back(tensor.to(device, streams_.of(device)));
    }
    return moved;
  }
  // The value where it was made (an initializer: uploaded to `device`).
  Value made(const std::string& name, const Device& device) {
    if (const auto sequence = sequences_.find(name); sequence != sequences_.end())
      return sequence->second;
    if (const auto strings = strings_.find(name); strings != strings_.end()) return strings->second;
    if (nones_.contains(name)) return Tensor();
    const auto found = copies_.find(name);
    return found == copies_.end() ? on(name, device) : found->second.begin()->second;
  }
  // Whether `tensor` is (a view of) a weight kept between runs, which this run read.
  bool resident(const Tensor& tensor) const {
    return tensor.defined() && resident_.contains(tensor.storage().impl().get());
  }
  void drop(const std::string& name) {
    copies_.erase(name);
    sequences_.erase(name);
    strings_.erase(name);
    nones_.erase(name);
  }

 private:
  const ModelGraph& graph_;
  RunStreams& streams_;
  ResidentWeights* weights_;
  Values* outer_;
  std::map<std::string, std::map<std::string, Tensor>> copies_;
  std::map<std::string, TensorSequence> sequences_;
  std::map<std::string, StringTensor, std::less<>> strings_;  // on the host, whatever the device
  std::set<std::string> nones_;                               // empty optionals
  std::set<const void*> resident_;  // the storage of the resident weights read (ResidentWeights)
};

// An output that is a resident weight, or a view of one (an initializer as a graph output,
// its Identity or Reshape): a copy, since the caller may write to what a run gives it and the
// next run reads the weight.
Tensor owned(const Tensor& tensor, const Values& values, RunStreams& streams) {
  if (!values.resident(tensor)) return tensor;
  Stream& stream = streams.of(tensor.device());
  return tensor.is_contiguous() ? tensor.to(tensor.device(), stream) : tensor.contiguous(stream);
}
RunValue owned(RunValue value, const Values& values, RunStreams& streams) {
  if (Tensor* tensor = std::get_if<Tensor>(&value)) {
    *tensor = owned(*tensor, values, streams);
  } else if (auto* sequence = std::get_if<TensorSequence>(&value)) {
    for (Tensor& element : sequence->tensors) element = owned(element, values, streams);
  }
  return value;
}

void run_nodes(const ModelGraph& graph, Values& values, RunStreams& streams,
               const Device& default_device, const Execution& execution);

// Runs a value op's subgraphs on its device, its run's values in scope; the subgraph's nodes
// fall back to cpu:0 as the graph's do, and its initializers are uploaded for the run.
class Subgraphs final : public SubgraphRunner {
 public:
  Subgraphs(Values& outer, RunStreams& streams, const Device& device, const Execution& execution)
      : outer_(outer), streams_(streams), device_(device), execution_(execution) {}

  std::vector<Value> run(const ModelGraph& graph, const std::vector<Value>& inputs) const override {
    Values values(graph, streams_, nullptr, &outer_);
    for (size_t i = 0; i < inputs.size(); ++i) values.define(graph.inputs.at(i).name, inputs[i]);
    run_nodes(graph, values, streams_, device_, {.fallbacks = execution_.fallbacks});
    std::vector<Value> outputs;
    for (const ModelValue& output : graph.outputs)
      outputs.push_back(values.value_on(output.name, device_));
    return outputs;
  }

 private:
  Values& outer_;
  RunStreams& streams_;
  Device device_;
  const Execution& execution_;
};

std::vector<Value> run_value_node(const Node& node, ValueOpFunction run,
                                  const std::vector<Value>& in, Stream& stream,
                                  const SubgraphRunner& subgraphs) {
  return reported_for(node, [&] { return run(OpContext(node, stream, nullptr, &subgraphs), in); });
}

// The value op `node` runs as (a sequence, control-flow or string op), or null for a tensor op:
// a tensor op that reads or makes strings runs its string form.
ValueOpFunction value_function(const Node& node, const Values& values) {
  if (!node.op) return nullptr;
  if (node.op->run_values) return node.op->run_values;
  if (!node.op->run_strings) return nullptr;
  if (makes_strings(node)) return node.op->run_strings;
  for (const std::string& name : node.inputs)
    if (!name.empty() && values.holds_strings(name)) return node.op->run_strings;
  return nullptr;
}

// A sequence, control-flow or string node: the slower path, values as variants.
void run_value_node(const Node& node, ValueOpFunction run, Device where, Values& values,
                    RunStreams& streams, const ModelGraph& graph, const Execution& execution) {
  auto attempt = [&](const Device& device) {
    // Gathered as part of the node's work: a failure (a sequence's tensor that cannot move
    // there) names the node.
    const std::vector<Value> in = reported_for(node, [&] {
      std::vector<Value> gathered;
      for (const std::string& name : node.inputs)
        gathered.push_back(name.empty() ? Value(Tensor()) : values.value_on(name, device));
      return gathered;
    });
    const Subgraphs subgraphs(values, streams, device, execution);
    return run_value_node(node, run, in, streams.of(device), subgraphs);
  };
  std::vector<Value> out;
  try {
    out = attempt(where);
  } catch (const Error& error) {
    const Device cpu = hal::detail::host_cpu();
    if (!execution.fallbacks || error.code() != ErrorCode::Unsupported || where == cpu) throw;
    execution.fallbacks->push_back({node.name, node.op_type, cpu.id(), 0,
                                    where.id() + " could not run it: " + error.message()});
    out = attempt(cpu);
  }
  // An undefined tensor among the outputs is an empty optional (Optional, If and Loop pass them).
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o].empty()) continue;
    if (o >= out.size())
      throw Error(ErrorCode::Unsupported, node.describe() + ": output " + std::to_string(o) +
                                              " ('" + node.outputs[o] + "') is not computed");
    if (graph.last_use.contains(node.outputs[o])) values.define(node.outputs[o], out[o]);
  }
}

void run_nodes(const ModelGraph& graph, Values& values, RunStreams& streams,
               const Device& default_device, const Execution& execution) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    Device where = execution.placement ? execution.placement->at(i) : default_device;
    if (const ValueOpFunction run = value_function(node, values)) {
      run_value_node(node, run, where, values, streams, graph, execution);
    } else {
      auto inputs_on = [&](const Device& device) {
        std::vector<Tensor> in;
        try {
          for (const std::string& name : node.inputs)
            in.push_back(name.empty() ? Tensor() : values.on(name, device));
        } catch (const Error& error) {
          rethrow_for(node, error);  // a sequence or an empty optional where a tensor goes
        }
        return in;
      };
      std::vector<Tensor> out;
      try {
        out = run_node(graph, node, inputs_on(where), streams.of(where));
      } catch (const Error& error) {
        const Device cpu = hal::detail::host_cpu();
        if (!execution.fallbacks || error.code() != ErrorCode::Unsupported || where == cpu) throw;
        execution.fallbacks->push_back({node.name, node.op_type, cpu.id(), 0,
                                        where.id() + " could not run it: " + error.message()});
        where = cpu;
        out = run_node(graph, node, inputs_on(where), streams.of(where));
      }
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        if (node.outputs[o].empty()) continue;
        if (o >= out.size() || !out[o].defined())
          throw Error(ErrorCode::Unsupported, node.describe() + ": output " + std::to_string(o) +
                                                  " ('" + node.outputs[o] + "') is not computed");
        // A value nothing reads (Dropout's mask, say) is dropped at once.
        if (graph.last_use.contains(node.outputs[o])) values.define(node.outputs[o], out[o]);
      }
    }
    // Values nobody reads again go back to the allocator.
    for (const auto* names : {&node.inputs, &node.captured})
      for (const std::string& name : *names) {
        const auto last = graph.last_use.find(name);
        if (last != graph.last_use.end() && last->second == i) values.drop(name);
      }
  }
}

}  // namespace

// Each given input against its declaration: present (unless an initializer gives its default),
// known, on the stream's device, of the declared dtype (strings: a string tensor with as many
// strings as its shape has elements) and rank, fixed sizes equal and a symbol the same size
// wherever it appears; a sequence's tensors of its dtype, on the device.
void check_inputs(const ModelGraph& graph, const std::map<std::string, RunValue>& inputs,
                  const Device* device) {
  std::set<std::string, std::less<>> declared;
  std::map<std::string, int64_t> symbols;
  std::vector<std::pair<const ModelValue*, bool>> all;  // each input, and whether it has a default
  for (const ModelValue& value : graph.inputs) all.emplace_back(&value, false);
  for (const ModelValue& value : graph.optional_inputs) all.emplace_back(&value, true);
  for (const auto& [declaration, has_default] : all) {
    const ModelValue& value = *declaration;
    declared.insert(value.name);
    const auto given = inputs.find(value.name);
    const std::string kind =
        std::string(value.optional ? "optional " : "") + (value.sequence ? "sequence of " : "");
    if (given == inputs.end()) {
      if (has_default) continue;  // the initializer's value
      invalid(graph.name + ": input '" + value.name + "' (" + kind + element_type(value) + " " +
              to_string(value.shape) + ") is missing");
    }
    const std::string where = graph.name + ": input '" + value.name + "'";
    if (const auto* none = std::get_if<Tensor>(&given->second);
        value.optional && none && !none->defined())
      continue;
    if (value.sequence) {
      const auto* sequence = std::get_if<TensorSequence>(&given->second);
      if (!sequence)
        invalid(where + " is " + describe_value(given->second) + "; the model declares a sequence");
      if (sequence->dtype != value.dtype)
        invalid(where + " is a sequence of " + std::string(to_string(sequence->dtype)) +
                "; the model declares " + std::string(to_string(value.dtype)));
      for (const Tensor& tensor : sequence->tensors) {
        if (!tensor.defined() || tensor.dtype() != sequence->dtype)
          invalid(where + " holds " +
                  (tensor.defined() ? tensor.describe() : "an undefined tensor") +
                  " in a sequence of " + std::string(to_string(sequence->dtype)));
        if (device && !(tensor.device() == *device))
          invalid(where + " holds a tensor on " + tensor.device().id() + ", the stream on " +
                  device->id());
      }
      continue;
    }
    const Shape* shape = nullptr;
    if (value.strings) {
      const auto* strings = std::get_if<StringTensor>(&given->second);
      if (!strings)
        invalid(where + " is " + describe_value(given->second) +
                "; the model declares a string tensor");
      if (numel(strings->shape) != static_cast<int64_t>(strings->data.size()))
        invalid(where + " holds " + std::to_string(strings->data.size()) + " strings for shape " +
                to_string(strings->shape));
      shape = &strings->shape;
    } else {
      const auto* given_tensor = std::get_if<Tensor>(&given->second);
      if (!given_tensor)
        invalid(where + " is " + describe_value(given->second) + "; the model declares a tensor");
      const Tensor& tensor = *given_tensor;
      if (!tensor.defined()) invalid(where + " is an undefined tensor");
      if (device && !(tensor.device() == *device))
        invalid(where + " is on " + tensor.device().id() + ", the stream on " + device->id());
      if (tensor.dtype() != value.dtype)
        invalid(where + " is " + std::string(to_string(tensor.dtype())) + "; the model declares " +
                std::string(to_string(value.dtype)));
      shape = &tensor.shape();
    }
    if (!value.ranked) continue;  // the model leaves the shape out: any shape goes
    if (shape->size() != value.shape.size())
      invalid(where + " has shape " + to_string(*shape) + "; the model declares " +
              to_string(value.shape));
    for (size_t d = 0; d < value.shape.size(); ++d) {
      const ModelDim& dim = value.shape[d];
      const int64_t size = (*shape)[d];
      if (dim.size >= 0 && dim.size != size)
        invalid(where + " has shape " + to_string(*shape) + "; the model declares " +
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
      for (const ModelValue& value : graph.optional_inputs)
        names += (names.empty() ? "" : ", ") + value.name + " (optional)";
      invalid(graph.name + ": the model has no input '" + name + "' (its inputs: " + names + ")");
    }
}

RunStreams::RunStreams(Stream* first) : first_(first) {}

Stream& RunStreams::of(const Device& device) {
  if (first_ && first_->device() == device) return *first_;
  auto found = owned_.find(device.id());
  if (found == owned_.end()) found = owned_.emplace(device.id(), device.create_stream()).first;
  return found->second;
}

void RunStreams::synchronize_all() {
  if (first_) first_->synchronize();
  for (auto& [id, stream] : owned_) stream.synchronize();
}

std::map<std::string, RunValue> execute(const ModelGraph& graph,
                                        const std::map<std::string, RunValue>& inputs,
                                        RunStreams& streams, const Device& default_device,
                                        const Execution& execution) {
  Values values(graph, streams, execution.weights);
  for (const auto& [name, value] : inputs) values.define(name, value);
  run_nodes(graph, values, streams, default_device, execution);
  std::map<std::string, RunValue> outputs;
  for (const ModelValue& output : graph.outputs) {
    RunValue value = execution.placement ? values.made(output.name, default_device)
                                         : values.value_on(output.name, default_device);
    outputs[output.name] = owned(std::move(value), values, streams);
  }
  return outputs;
}

std::map<std::string, RunValue> as_values(const std::map<std::string, Tensor>& tensors) {
  return {tensors.begin(), tensors.end()};
}

std::map<std::string, Tensor> as_tensors(const ModelGraph& graph,
                                         std::map<std::string, RunValue> values) {
  std::map<std::string, Tensor> tensors;
  for (auto& [name, value] : values) {
    Tensor* tensor = std::get_if<Tensor>(&value);
    if (!tensor)
      throw Error(ErrorCode::Unsupported,
                  graph.name + ": output '" + name + "' is " +
                      (std::holds_alternative<StringTensor>(value) ? "a string tensor"
                                                                   : "a sequence of tensors") +
                      " (Model::run_values gives it)");
    tensors.emplace(name, std::move(*tensor));
  }
  return tensors;
}

}  // namespace hal::model
