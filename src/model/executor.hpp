// The executor: runs a graph's nodes in order, each on a stream of the device its placement
// gives (one stream per device), moving a value to another device where a reader runs there
// and dropping each value after its last reader, so the caching allocator reuses its memory.
// Subgraphs (If, Loop, Scan) run the same way on their node's device, reading the enclosing
// graphs' values where they are.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hal/execution_plan.hpp"
#include "hal/stream.hpp"
#include "hal/tensor.hpp"
#include "model/model_graph.hpp"

namespace hal::model {

// Each given input against its declaration: present (an optional input may be left to its
// initializer), known, of the declared dtype, rank and sizes, a symbol the same size wherever it
// appears; on `device` where one is given.
void check_inputs(const ModelGraph& graph, const std::map<std::string, RunValue>& inputs,
                  const Device* device);

// The streams a run uses, one per device, made on first use (`first` is the caller's).
class RunStreams {
 public:
  explicit RunStreams(Stream* first = nullptr);
  Stream& of(const Device& device);
  void synchronize_all();

 private:
  std::map<std::string, Stream> owned_;
  Stream* first_;
};

class ResidentWeights;

struct Execution {
  // Node index -> its device; null: every node on `streams`' first stream's device.
  const std::vector<Device>* placement = nullptr;
  // Where given, a node that is unsupported on its device runs on cpu:0 instead and is
  // recorded here (reason: the error); else the error propagates.
  std::vector<PlannedNode>* fallbacks = nullptr;
  // Where initializers stay between runs; null: uploaded for this run only.
  ResidentWeights* weights = nullptr;
};

std::map<std::string, RunValue> execute(const ModelGraph& graph,
                                        const std::map<std::string, RunValue>& inputs,
                                        RunStreams& streams, const Device& default_device,
                                        const Execution& execution);

// Tensors as values and back (run() and run_planned(), whose callers deal in tensors only):
// Unsupported naming the output where one is a sequence or a string tensor.
std::map<std::string, RunValue> as_values(const std::map<std::string, Tensor>& tensors);
std::map<std::string, Tensor> as_tensors(const ModelGraph& graph,
                                         std::map<std::string, RunValue> values);

}  // namespace hal::model
