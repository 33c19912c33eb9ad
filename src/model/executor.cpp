#include "model/executor.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>

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

std::vector<Tensor> run_node(const ModelGraph& graph, const Node& node,
                             const std::vector<Tensor>& in, Stream& stream) {
  if (!node.op)
    throw Error(ErrorCode::Internal, node.describe() + ": loaded without an implementation");
  try {
    return node.op->run(OpContext(node, stream, &graph), in);
  } catch (const Error& error) {
    rethrow_for(node, error);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::OutOfMemory, node.describe() + ": out of host memory");
  } catch (const std::exception& error) {
    // A defect of the op's implementation: reported as hal's, naming the node.
    throw Error(ErrorCode::Internal, node.describe() + ": " + error.what());
  }
}

// The run's values, each on the devices it has been needed on so far.
class Values {
 public:
  Values(const ModelGraph& graph, RunStreams& streams, ResidentWeights* weights)
      : graph_(graph), streams_(streams), weights_(weights) {}

  void define(const std::string& name, const Tensor& tensor) {
    copies_[name][tensor.device().id()] = tensor;
  }
  // `name` on `device`: moved there (once) from where it was made, an initializer uploaded.
  Tensor on(const std::string& name, const Device& device) {
    auto found = copies_.find(name);
    if (found == copies_.end()) {
      const auto init = graph_.initializers.find(name);
      if (init == graph_.initializers.end())
        throw Error(ErrorCode::Internal,
                    graph_.name + ": value '" + name + "' read after it was dropped");
      Stream& stream = streams_.of(device);
      const Tensor uploaded =
          weights_ ? weights_->on(name, init->second, stream) : upload(init->second, stream);
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
  // The value where it was made (an initializer: uploaded to `device`).
  Tensor made(const std::string& name, const Device& device) {
    const auto found = copies_.find(name);
    return found == copies_.end() ? on(name, device) : found->second.begin()->second;
  }
  void drop(const std::string& name) { copies_.erase(name); }

 private:
  const ModelGraph& graph_;
  RunStreams& streams_;
  ResidentWeights* weights_;
  std::map<std::string, std::map<std::string, Tensor>> copies_;
};

}  // namespace

// Each given input against its declaration: present, known, on the stream's device, of the
// declared dtype and rank, fixed sizes equal and a symbol the same size wherever it appears.
void check_inputs(const ModelGraph& graph, const std::map<std::string, Tensor>& inputs,
                  const Device* device) {
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
    if (device && !(tensor.device() == *device))
      invalid(where + " is on " + tensor.device().id() + ", the stream on " + device->id());
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

std::map<std::string, Tensor> execute(const ModelGraph& graph,
                                      const std::map<std::string, Tensor>& inputs,
                                      RunStreams& streams, const Device& default_device,
                                      const Execution& execution) {
  Values values(graph, streams, execution.weights);
  for (const auto& [name, tensor] : inputs) values.define(name, tensor);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    Device where = execution.placement ? execution.placement->at(i) : default_device;
    auto inputs_on = [&](const Device& device) {
      std::vector<Tensor> in;
      for (const std::string& name : node.inputs)
        in.push_back(name.empty() ? Tensor() : values.on(name, device));
      return in;
    };
    std::vector<Tensor> out;
    static const bool prof = std::getenv("HAL_PROF") != nullptr;
    static std::map<std::string, std::pair<double, int>> acc;
    static int runs = 0;
    if (prof && i == 0) {
      streams.synchronize_all();
      if (++runs % 20 == 0) {
        for (auto& [k, v] : acc)
          std::fprintf(stderr, "%-28s %8.1f us %5d\n", k.c_str(), v.first / runs, v.second / runs);
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    std::string key;
    if (prof && (node.op_type == "MatMul" || node.op_type == "Gemm"))
      for (auto& nm : node.inputs) {
        try {
          auto t = values.on(nm, where);
          key += " " + to_string(t.shape()) + (t.is_contiguous() ? "" : "nc");
        } catch (...) {
        }
      }
    struct Guard {
      const std::string& key;
      bool on;
      std::chrono::steady_clock::time_point t0;
      const Node& n;
      RunStreams& st;
      ~Guard() {
        if (!on) return;
        st.synchronize_all();
        auto& a = acc[n.op_type + (n.fused.empty() ? "" : "+" + n.fused) + key];
        a.first += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                       .count();
        a.second++;
      }
    } guard{key, prof, t0, node, streams};
    try {
      out = run_node(graph, node, inputs_on(where), streams.of(where));
    } catch (const Error& error) {
      const Device cpu = device("cpu:0");
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
    // Values nobody reads again go back to the allocator.
    for (const std::string& name : node.inputs) {
      const auto last = graph.last_use.find(name);
      if (last != graph.last_use.end() && last->second == i) values.drop(name);
    }
  }
  std::map<std::string, Tensor> outputs;
  for (const ModelValue& output : graph.outputs) {
    outputs[output.name] = execution.placement ? values.made(output.name, default_device)
                                               : values.on(output.name, default_device);
  }
  return outputs;
}

}  // namespace hal::model
