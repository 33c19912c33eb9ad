// ONNX models: loaded with the ONNX project's own protobuf classes and checker, their shapes
// inferred by ONNX's shape inference, and run node by node through hal's ops on any device.
//
//   hal::Model model = hal::load_onnx("mlp.onnx");
//   hal::Stream stream = hal::device("cpu:0").create_stream();
//   auto outputs = model.run({{"input", x}}, stream);   // name -> tensor, on x's device
//
// An op hal does not run natively but whose ONNX schema defines it as a function of other ops
// (HardSwish, Celu, LayerNormalization-17, ...) is expanded into that function when loaded.
// If, Loop and Scan run their subgraphs node by node like the graph itself; values may be
// sequences of tensors, optionals or string tensors (Model::run_values); string tensors live on
// the host and the ops on them run there (hal/string_tensor.hpp).
//
// Errors (hal::Error): a file that is missing, truncated or not a model (InvalidArgument, naming
// the file); an op, attribute, dtype or opset hal cannot run (Unsupported, naming the node, the
// op and its opset and what is missing); a graph with a cycle or an input nothing defines
// (InvalidArgument naming the node and the value); at run time a missing or unknown input, or
// one of the wrong dtype or shape (InvalidArgument naming the input and both shapes). An input
// that an initializer of the same name gives a default value (Model::optional_inputs) may be
// given or left out.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hal/string_tensor.hpp"
#include "hal/tensor.hpp"

namespace hal {

namespace model {
struct ModelGraph;
class ResidentWeights;
}  // namespace model

// One dimension of a declared graph input or output: a size, or a name bound at run time
// ("batch"), or unknown (neither).
struct ModelDim {
  int64_t size = -1;   // -1 when symbolic or unknown
  std::string symbol;  // the dim_param, when symbolic
};

struct ModelValue {
  std::string name;
  DType dtype = DType::f32;  // unused where `strings`
  std::vector<ModelDim> shape;
  bool ranked = true;  // false where the model leaves the shape out (any rank goes)
  // ONNX's sequence type: a list of tensors, each of `dtype` (`shape` then is the elements').
  bool sequence = false;
  // ONNX's optional type (of a tensor or a sequence): the value, or none, an undefined tensor.
  bool optional = false;
  // ONNX's STRING element type: the value is a StringTensor, on the host.
  bool strings = false;
};

// "f32", or "string" for a value of strings.
std::string element_type(const ModelValue& value);

// A value of ONNX's sequence type: tensors of one dtype, their shapes free to differ.
struct TensorSequence {
  DType dtype = DType::f32;
  std::vector<Tensor> tensors;
};

// What a graph input or output holds in a run: a tensor, or (ModelValue::sequence) a sequence,
// or (ModelValue::strings) a string tensor on the host; an empty optional (ModelValue::optional)
// is an undefined tensor.
using RunValue = std::variant<Tensor, TensorSequence, StringTensor>;

// "[batch, 3, 224, 224]"; "?" for an unknown dimension.
std::string to_string(const std::vector<ModelDim>& shape);

class Model {
 public:
  Model() = default;
  explicit Model(std::shared_ptr<const model::ModelGraph> graph);

  // The graph's inputs the caller must give (initializers with the same name excluded), and its
  // outputs, in the model's order.
  const std::vector<ModelValue>& inputs() const;
  const std::vector<ModelValue>& outputs() const;
  // The inputs the caller may give or leave out, in the model's order: those an initializer of
  // the same name gives a default value (ONNX IR version 4 on; before, an initializer listed as
  // an input is a constant). A run that gives one uses the value given, else the initializer.
  const std::vector<ModelValue>& optional_inputs() const;
  // The default domain's opset the model imports, and its nodes once functions are expanded.
  int64_t opset() const;
  size_t node_count() const;
  // The ops it uses, each once, sorted, its subgraphs' (If, Loop, Scan) included.
  std::vector<std::string> op_types() const;

  // Runs the graph on `stream`'s device: every input by name, optional inputs where the caller
  // replaces their default (tensors on that device, of the declared dtype; symbolic dimensions
  // take any size, the same size wherever the same name appears). Returns every graph output by
  // name, on the device, enqueued on `stream`.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs,
                                    Stream& stream) const;
  // The same for models with sequence or string inputs or outputs (run() refuses an output that
  // is not a tensor): each sequence's tensors on the stream's device, of its declared dtype; a
  // string tensor of the declared shape (its strings as many as the shape's elements).
  std::map<std::string, RunValue> run_values(const std::map<std::string, RunValue>& inputs,
                                             Stream& stream) const;

  const std::shared_ptr<const model::ModelGraph>& graph() const { return graph_; }
  // Its initializers on the devices that ran it: uploaded by the first run on a device, kept
  // until the last copy of this Model goes.
  const std::shared_ptr<model::ResidentWeights>& resident_weights() const { return weights_; }
  explicit operator bool() const { return graph_ != nullptr; }

 private:
  const model::ModelGraph& checked_graph() const;
  std::shared_ptr<const model::ModelGraph> graph_;
  std::shared_ptr<model::ResidentWeights> weights_;
};

// Loads an ONNX model file; external data files are read from the model's directory.
Model load_onnx(const std::filesystem::path& path);
// Loads a model from its serialized bytes; `name` names it in errors, `directory` is where its
// external data files are (empty: a model with external data is refused).
Model load_onnx_bytes(std::string_view bytes, std::string_view name,
                      const std::filesystem::path& directory = {});

// Reads a serialized ONNX TensorProto (ONNX's test data: input_0.pb, output_0.pb) into a tensor
// on `stream`'s device; `name`, where given, receives the tensor's name in the file. Errors name
// the file.
Tensor read_onnx_tensor(const std::filesystem::path& path, Stream& stream,
                        std::string* name = nullptr);
// The same for a value of any kind hal holds, read as `declared` says: a TensorProto (of
// STRING elements: a string tensor), a SequenceProto of tensors (an empty one of the declared
// dtype), an OptionalProto (none: an undefined tensor). Unsupported for other element kinds.
RunValue read_onnx_value(const std::filesystem::path& path, const ModelValue& declared,
                         Stream& stream, std::string* name = nullptr);

}  // namespace hal
