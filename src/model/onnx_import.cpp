// ModelProto -> ModelGraph: parse with ONNX's protobuf classes, validate with ONNX's checker,
// decode attributes and initializers, and expand the ops hal does not run natively into the
// functions their ONNX schemas (or the model itself) define them as.
#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "hal/error.hpp"
#include "model/constant_folding.hpp"
#include "model/elementwise_fusion.hpp"
#include "model/fusion.hpp"
#include "model/gradient_graph.hpp"
#include "model/model_graph.hpp"
#include "model/onnx_ops.hpp"
#include "model/onnx_tensor.hpp"

namespace hal {
namespace model {
namespace {

constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 17;

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, message);
}
[[noreturn]] void unsupported(const std::string& message) {
  throw Error(ErrorCode::Unsupported, message);
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// "a map", "a sparse tensor", ...: a value's type where hal has no value of it.
std::string type_kind(const onnx::TypeProto& type) {
  if (type.has_sequence_type()) return "a sequence of non-tensors";
  if (type.has_map_type()) return "a map";
  if (type.has_optional_type()) return "an optional of neither a tensor nor a sequence";
  if (type.has_sparse_tensor_type()) return "a sparse tensor";
  return "of no type";
}

// A graph's input or output: a tensor, or a sequence of tensors, or an optional of either. A
// subgraph's may leave its type to inference: then any dtype and rank go (only a Scan or Loop
// with no iteration reads it, for an empty output's dtype).
ModelValue value_from_onnx(const onnx::ValueInfoProto& info, const std::string& model,
                           bool subgraph = false) {
  const bool optional = info.type().has_optional_type();
  const onnx::TypeProto& type = optional ? info.type().optional_type().elem_type() : info.type();
  const bool sequence =
      type.has_sequence_type() && type.sequence_type().elem_type().has_tensor_type();
  if (!type.has_tensor_type() && !sequence) {
    if (subgraph && type.value_case() == onnx::TypeProto::VALUE_NOT_SET)
      return ModelValue{info.name(), DType::f32, {}, false, false, optional};
    unsupported(model + ": graph value '" + info.name() + "' is " + type_kind(info.type()) +
                " (hal's values are tensors, sequences of tensors and optionals of those)");
  }
  const auto& tensor =
      sequence ? type.sequence_type().elem_type().tensor_type() : type.tensor_type();
  if (subgraph && tensor.elem_type() == onnx::TensorProto::UNDEFINED)
    return ModelValue{info.name(), DType::f32, {}, false, sequence, optional};
  const bool strings = tensor.elem_type() == onnx::TensorProto::STRING;
  if (strings && sequence)
    unsupported(model + ": graph value '" + info.name() +
                "' is a sequence of string tensors (hal's sequences hold numeric tensors)");
  const auto dtype = strings ? DType::f32 : dtype_from_onnx(tensor.elem_type());
  if (!dtype)
    unsupported(model + ": graph value '" + info.name() + "' has element type " +
                onnx_type_name(tensor.elem_type()));
  ModelValue value{info.name(), *dtype, {}, tensor.has_shape(), sequence, optional, strings};
  for (const auto& dim : tensor.shape().dim()) {
    ModelDim out;
    if (dim.has_dim_value())
      out.size = dim.dim_value();
    else if (dim.has_dim_param())
      out.symbol = dim.dim_param();
    value.shape.push_back(out);
  }
  return value;
}

// Renames what a subgraph of a function's node reads of the function's own values (their
// names in the expanded graph), leaving alone the names the subgraph defines.
void rename_captured(onnx::GraphProto& graph, const std::map<std::string, std::string>& rename,
                     std::set<std::string> defined) {
  for (const auto& input : graph.input()) defined.insert(input.name());
  for (const auto& init : graph.initializer()) defined.insert(init.name());
  auto renamed = [&](std::string& name) {
    if (defined.contains(name)) return;
    if (const auto found = rename.find(name); found != rename.end()) name = found->second;
  };
  for (auto& node : *graph.mutable_node()) {
    for (auto& input : *node.mutable_input()) renamed(input);
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) rename_captured(*attribute.mutable_g(), rename, defined);
      for (auto& sub : *attribute.mutable_graphs()) rename_captured(sub, rename, defined);
    }
    for (const auto& output : node.output()) defined.insert(output);
  }
  for (auto& output : *graph.mutable_output()) renamed(*output.mutable_name());
}

bool is_initializer(const ModelGraph& graph, const std::string& name) {
  return graph.initializers.contains(name) || graph.string_initializers.contains(name);
}

// An initializer of the graph: numeric ones as host tensors, STRING ones as string tensors.
void add_initializer(ModelGraph& graph, const onnx::TensorProto& init,
                     const std::filesystem::path& directory, const std::string& where) {
  if (init.data_type() == onnx::TensorProto::STRING)
    graph.string_initializers[init.name()] = strings_from_onnx(init, where);
  else
    graph.initializers[init.name()] = tensor_from_onnx(init, directory, where);
}

// A Constant's value where it is strings (a STRING tensor, value_string, value_strings): such a
// Constant becomes a string initializer at load, since the tensor ops cannot hold its value.
std::optional<StringTensor> string_constant(const Node& node) {
  if (!node.domain.empty() || node.op_type != "Constant") return std::nullopt;
  for (const auto& [name, value] : node.attributes) {
    if (const auto* tensor = std::get_if<StringTensor>(&value)) return *tensor;
    if (name == "value_string")
      if (const auto* text = std::get_if<std::string>(&value)) return StringTensor{{}, {*text}};
    if (name == "value_strings")
      if (const auto* texts = std::get_if<std::vector<std::string>>(&value))
        return StringTensor{{static_cast<int64_t>(texts->size())}, *texts};
  }
  return std::nullopt;
}

// What `graph`'s nodes (and their subgraphs) read that it does not define: the enclosing
// graphs' values.
std::set<std::string> free_names(const ModelGraph& graph) {
  std::set<std::string> defined, free;
  for (const ModelValue& input : graph.inputs) defined.insert(input.name);
  for (const auto& [name, tensor] : graph.initializers) defined.insert(name);
  for (const auto& [name, tensor] : graph.string_initializers) defined.insert(name);
  for (const Node& node : graph.nodes) {
    for (const auto* names : {&node.inputs, &node.captured})
      for (const std::string& name : *names)
        if (!name.empty() && !defined.contains(name)) free.insert(name);
    for (const std::string& output : node.outputs) defined.insert(output);
  }
  for (const ModelValue& output : graph.outputs)
    if (!defined.contains(output.name)) free.insert(output.name);
  return free;
}

// The functions a model defines itself, by domain and name.
using LocalFunctions = std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*>;

// The nodes a file writes: a graph's, with those of the subgraphs its nodes carry.
template <class Nodes>
size_t written_nodes(const Nodes& nodes) {
  size_t count = static_cast<size_t>(nodes.size());
  for (const onnx::NodeProto& node : nodes)
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.has_g()) count += written_nodes(attribute.g().node());
      for (const onnx::GraphProto& graph : attribute.graphs()) count += written_nodes(graph.node());
    }
  return count;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& proto, std::string name, std::filesystem::path directory)
      : proto_(proto), name_(std::move(name)), directory_(std::move(directory)) {
    for (const auto& opset : proto.opset_import()) opsets_[opset.domain()] = opset.version();
    size_t written = written_nodes(proto.graph().node());
    for (const auto& function : proto.functions()) {
      functions_[{function.domain(), function.name()}] = &function;
      written += written_nodes(function.node());
    }
    node_budget_ = kNodesAlways + kNodesPerWrittenNode * written;
  }

  ModelGraph run() {
    ModelGraph graph;
    graph.name = name_;
    graph.opset = default_opset();
    const auto& g = proto_.graph();
    for (const auto& init : g.initializer())
      add_initializer(graph, init, directory_, "initializer '" + init.name() + "' of " + name_);
    if (g.sparse_initializer_size() > 0) unsupported(name_ + ": sparse initializers");
    // From IR version 4 an initializer named as an input is that input's default value (ONNX's
    // IR spec); before, every initializer had to be listed as an input, and is a constant.
    const bool defaults = proto_.ir_version() >= 4;
    for (const auto& input : g.input()) {
      if (!is_initializer(graph, input.name()))
        graph.inputs.push_back(value_from_onnx(input, name_));
      else if (defaults)
        graph.optional_inputs.push_back(value_from_onnx(input, name_));
    }
    for (const auto& output : g.output()) graph.outputs.push_back(value_from_onnx(output, name_));
    for (int i = 0; i < g.node_size(); ++i) add_node(g.node(i), {}, graph, 0, 0);
    link_gradients(graph, {});
    check_order(graph, {});
    keep_expanded(fold_constants(graph));
    fuse(graph);
    graph.inference_model = inference_model(graph);
    return graph;
  }

 private:
  int64_t default_opset() const {
    int64_t opset = 0;
    for (const auto& [domain, version] : opsets_)
      if (is_default_domain(domain)) opset = version;
    if (opset == 0) return 0;  // only other domains' ops, which the nodes will name
    if (opset < kMinOpset || opset > kMaxOpset)
      unsupported(name_ + ": imports opset " + std::to_string(opset) +
                  " of the default domain; hal runs opsets " + std::to_string(kMinOpset) + " to " +
                  std::to_string(kMaxOpset));
    return opset;
  }

  // `opset`: the default domain's opset the node speaks (a function body's own), 0 for the
  // model's; `graph`: the graph it goes into, whose values its subgraphs may read.
  Node decode(const onnx::NodeProto& proto, size_t index, int64_t opset, const ModelGraph& graph) {
    Node node;
    node.op_type = proto.op_type();
    node.domain = is_default_domain(proto.domain()) ? "" : proto.domain();
    if (node.domain.empty() && opset > 0) {
      node.opset = opset;
    } else {
      const auto imported = opsets_.find(node.domain);
      node.opset = imported != opsets_.end() ? imported->second : default_opset_or_zero();
    }
    node.name = proto.name().empty() ? node.op_type + " #" + std::to_string(index) : proto.name();
    node.inputs.assign(proto.input().begin(), proto.input().end());
    node.outputs.assign(proto.output().begin(), proto.output().end());
    std::set<std::string> captured;
    for (const auto& attribute : proto.attribute()) {
      // A type (Optional's `type`) only declares what the values themselves carry: not kept.
      if (attribute.type() == onnx::AttributeProto::TYPE_PROTO) continue;
      if (attribute.type() != onnx::AttributeProto::GRAPH) {
        node.attributes[attribute.name()] = decode(attribute, node);
        continue;
      }
      auto body = import_subgraph(attribute.g(), node, attribute.name(), graph);
      captured.merge(free_names(*body));
      node.attributes[attribute.name()] = std::move(body);
    }
    node.captured.assign(captured.begin(), captured.end());
    return node;
  }

  // A subgraph attribute of `node`, which goes into `parent`: its nodes resolved and functions
  // expanded like the graph's, its order checked with the names `parent` and the graphs around
  // it define so far in scope, its constants folded.
  std::shared_ptr<const ModelGraph> import_subgraph(const onnx::GraphProto& g, const Node& node,
                                                    const std::string& attribute,
                                                    const ModelGraph& parent) {
    auto graph = std::make_shared<ModelGraph>();
    graph->name = parent.name + ": " + node.describe() + ", attribute '" + attribute + "'";
    graph->opset = parent.opset;
    for (const auto& init : g.initializer())
      add_initializer(*graph, init, directory_,
                      "initializer '" + init.name() + "' of " + graph->name);
    if (g.sparse_initializer_size() > 0) unsupported(graph->name + ": sparse initializers");
    for (const auto& input : g.input())
      if (!is_initializer(*graph, input.name()))
        graph->inputs.push_back(value_from_onnx(input, graph->name, true));
    for (const auto& output : g.output())
      graph->outputs.push_back(value_from_onnx(output, graph->name, true));
    std::set<std::string, std::less<>> outer = scopes_.empty() ? decltype(outer){} : scopes_.back();
    for (const ModelValue& input : parent.inputs) outer.insert(input.name);
    for (const auto& [name, tensor] : parent.initializers) outer.insert(name);
    for (const auto& [name, tensor] : parent.string_initializers) outer.insert(name);
    for (const Node& earlier : parent.nodes)
      for (const std::string& output : earlier.outputs) outer.insert(output);
    scopes_.push_back(outer);
    std::vector<onnx::NodeProto> expanded;  // the parent's, kept aside
    std::swap(expanded, expanded_);
    const int64_t opset = node.domain.empty() ? node.opset : 0;
    try {
      for (int i = 0; i < g.node_size(); ++i) add_node(g.node(i), {}, *graph, 0, opset);
    } catch (...) {
      std::swap(expanded, expanded_);
      scopes_.pop_back();
      throw;
    }
    std::swap(expanded, expanded_);
    scopes_.pop_back();
    link_gradients(*graph, outer);
    check_order(*graph, outer);
    fold_constants(*graph);
    return graph;
  }

  int64_t default_opset_or_zero() const {
    for (const auto& [domain, version] : opsets_)
      if (is_default_domain(domain)) return version;
    return 0;
  }

  AttributeValue decode(const onnx::AttributeProto& a, const Node& node) const {
    using A = onnx::AttributeProto;
    const std::string where = node.describe() + ", attribute '" + a.name() + "'";
    switch (a.type()) {
      case A::INT:
        return a.i();
      case A::FLOAT:
        return a.f();
      case A::STRING:
        return a.s();
      case A::INTS:
        return std::vector<int64_t>(a.ints().begin(), a.ints().end());
      case A::FLOATS:
        return std::vector<float>(a.floats().begin(), a.floats().end());
      case A::STRINGS:
        return std::vector<std::string>(a.strings().begin(), a.strings().end());
      case A::TENSOR:
        if (a.t().data_type() == onnx::TensorProto::STRING) return strings_from_onnx(a.t(), where);
        return tensor_from_onnx(a.t(), directory_, where);
      case A::GRAPHS:
        unsupported(where + ": lists of subgraphs");
      default:
        unsupported(where + ": attribute type " + A::AttributeType_Name(a.type()));
    }
  }

  // Adds `proto` (a node of the graph, or of a function being expanded, whose values are
  // renamed by `rename`) to the graph: as itself where hal runs its op, else as its function.
  void add_node(const onnx::NodeProto& proto, const std::map<std::string, std::string>& rename,
                ModelGraph& graph, int depth, int64_t opset) {
    onnx::NodeProto node_proto = proto;
    for (auto& input : *node_proto.mutable_input())
      if (auto found = rename.find(input); found != rename.end()) input = found->second;
    for (auto& output : *node_proto.mutable_output())
      if (auto found = rename.find(output); found != rename.end()) output = found->second;
    if (!rename.empty())
      for (auto& attribute : *node_proto.mutable_attribute())
        if (attribute.has_g()) rename_captured(*attribute.mutable_g(), rename, {});
    Node node = decode(node_proto, graph.nodes.size(), opset, graph);
    if (auto strings = string_constant(node)) {
      if (node.outputs.size() != 1 || node.outputs[0].empty())
        invalid(node.describe() + ": a Constant has one output");
      graph.string_initializers[node.outputs[0]] = std::move(*strings);
      produced_types_[node.outputs[0]] = tensor_type(onnx::TensorProto::STRING);
      return;
    }
    node.op = find_onnx_op(node.domain, node.op_type, node.opset);
    if (node.op && node.op->random) node.runs = std::make_shared<std::atomic<uint64_t>>(0);
    if (node.op) {
      if (++nodes_added_ > node_budget_)
        unsupported(name_ + ": expanding its functions makes more than " +
                    std::to_string(node_budget_) + " nodes (at " + node.describe() +
                    "); functions that call each other many times over grow without bound");
      record_types(node, graph);
      if (node.domain.empty()) node_proto.set_domain("");
      graph.nodes.push_back(std::move(node));
      expanded_.push_back(std::move(node_proto));
      return;
    }
    if (depth > 8) unsupported(node.describe() + ": functions nested deeper than 8");
    if (const onnx::FunctionProto* function = local_function(node_proto)) {
      return expand(node_proto, *function, graph, depth, nullptr);
    }
    if (node.domain.empty()) {
      const auto* schema =
          onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(node.opset), "");
      if (!schema)
        unsupported(node.describe() + ": no such op in ONNX's opset " + std::to_string(node.opset));
      onnx::FunctionProto body;
      if (schema->HasFunction() && schema->GetFunction()) {
        body = *schema->GetFunction();
      } else if (schema->HasContextDependentFunction()) {
        build_function(node, node_proto, *schema, graph, body);
      } else {
        unsupported(node.describe() + ": hal has no kernel for this op");
      }
      return expand(node_proto, body, graph, depth, schema);
    }
    if (node.domain == kTrainingDomain)
      unsupported(node.describe() + ": of domain '" + node.domain +
                  "' hal runs Gradient, Adagrad, Adam and Momentum at opset 1, not " +
                  node.op_type + " at opset " + std::to_string(node.opset));
    unsupported(node.describe() + ": ops of domain '" + node.domain + "' are not supported");
  }

  // The body of an op whose function depends on its inputs' types (type_of): ONNX's builders
  // throw their own exceptions (SequenceMap's "Expected a sequence type for input 0"), which
  // become hal's, naming the node.
  void build_function(const Node& node, const onnx::NodeProto& node_proto,
                      const onnx::OpSchema& schema, const ModelGraph& graph,
                      onnx::FunctionProto& body) const {
    std::vector<onnx::TypeProto> types;  // the functions that need input types get them
    for (const auto& input : node_proto.input()) types.push_back(type_of(input, graph));
    bool built = false;
    try {
      onnx::FunctionBodyBuildContextImpl context(node_proto, types);
      built = schema.BuildContextDependentFunction(context, body);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& error) {
      unsupported(node.describe() + ": hal has no kernel for it and its function body does not " +
                  "build for these inputs: " + error.what());
    }
    if (!built)
      unsupported(node.describe() +
                  ": hal has no kernel for it and its function body "
                  "does not build for these inputs");
  }

  const onnx::FunctionProto* local_function(const onnx::NodeProto& node) const {
    const auto found = functions_.find({node.domain(), node.op_type()});
    return found == functions_.end() ? nullptr : found->second;
  }

  // The type of a value known so far, for the function bodies that depend on their inputs'
  // types (SoftmaxCrossEntropyLoss casts constants to them; SequenceMap needs a sequence).
  // Values the graph declares have theirs; a node's outputs are guessed from its op
  // (record_types), which is enough for a body's constants: its results are checked like any
  // other node's.
  onnx::TypeProto type_of(const std::string& value, const ModelGraph& graph) const {
    for (const auto& input : proto_.graph().input())
      if (input.name() == value) return input.type();
    for (const auto& info : proto_.graph().value_info())
      if (info.name() == value) return info.type();
    if (auto init = graph.initializers.find(value); init != graph.initializers.end())
      return tensor_type(onnx_elem_type(init->second.dtype));
    if (graph.string_initializers.contains(value)) return tensor_type(onnx::TensorProto::STRING);
    if (auto known = produced_types_.find(value); known != produced_types_.end())
      return known->second;
    for (const ModelValue& input : graph.inputs)  // a subgraph's: a sequence, or unknown
      if (input.name == value && input.sequence) return sequence_type(0);
    return {};
  }

  // A tensor's type of element type `elem`; unknown (no type) where `elem` is 0.
  static onnx::TypeProto tensor_type(int32_t elem) {
    onnx::TypeProto type;
    if (elem != 0) type.mutable_tensor_type()->set_elem_type(elem);
    return type;
  }
  // A sequence's type, of tensors of element type `elem` (0: unknown).
  static onnx::TypeProto sequence_type(int32_t elem) {
    onnx::TypeProto type;
    auto* tensor = type.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
    if (elem != 0) tensor->set_elem_type(elem);
    return type;
  }
  // The element type a type names: a tensor's, or its tensors' for a sequence (0: unknown).
  static int32_t elem_of(const onnx::TypeProto& type) {
    if (type.has_sequence_type()) return type.sequence_type().elem_type().tensor_type().elem_type();
    return type.tensor_type().elem_type();
  }
  // A subgraph output's type as its declaration tells it: the element type only where a shape
  // was declared with it (an undeclared one reads as f32).
  static onnx::TypeProto declared_type(const ModelValue& value) {
    const int32_t elem = value.strings  ? onnx::TensorProto::STRING
                         : value.ranked ? onnx_elem_type(value.dtype)
                                        : 0;
    return value.sequence ? sequence_type(elem) : tensor_type(elem);
  }

  // Each output's type, guessed from the node's op and its inputs' types.
  void record_types(const Node& node, const ModelGraph& graph) {
    const std::vector<onnx::TypeProto> types = output_types(node, graph);
    for (size_t o = 0; o < node.outputs.size() && o < types.size(); ++o)
      if (!node.outputs[o].empty() && types[o].value_case() != onnx::TypeProto::VALUE_NOT_SET)
        produced_types_[node.outputs[o]] = types[o];
  }

  std::vector<onnx::TypeProto> output_types(const Node& node, const ModelGraph& graph) const {
    static const std::set<std::string> sequences{"SequenceConstruct", "SplitToSequence",
                                                 "SequenceInsert", "SequenceErase"};
    const size_t outputs = node.outputs.size();
    if (node.op_type == "SequenceEmpty") {
      const auto dtype = node.attributes.find("dtype");
      const auto* code =
          dtype == node.attributes.end() ? nullptr : std::get_if<int64_t>(&dtype->second);
      return {sequence_type(code ? static_cast<int32_t>(*code) : onnx::TensorProto::FLOAT)};
    }
    if (sequences.contains(node.op_type) && !node.inputs.empty())
      return {sequence_type(elem_of(type_of(node.inputs[0], graph)))};
    // Identity and the optional ops pass their input's type on, a sequence's too (hal's
    // optional is its value, or none).
    static const std::set<std::string> passing{"Identity", "Optional", "OptionalGetElement"};
    if (passing.contains(node.op_type) && !node.inputs.empty())
      return {type_of(node.inputs[0], graph)};
    // Loop: the loop-carried values keep their initial values' types (inputs 2 on); the scan
    // outputs' are left unknown.
    if (node.op_type == "Loop") {
      std::vector<onnx::TypeProto> types;
      for (size_t i = 2; i < node.inputs.size(); ++i)
        types.push_back(type_of(node.inputs[i], graph));
      return types;
    }
    if (node.op_type == "If") return branch_types(node);
    return std::vector<onnx::TypeProto>(outputs, tensor_type(tensor_elem(node, graph)));
  }

  // An If's outputs: its then_branch's, as declared.
  static std::vector<onnx::TypeProto> branch_types(const Node& node) {
    const auto branch = node.attributes.find("then_branch");
    const auto* body = branch == node.attributes.end()
                           ? nullptr
                           : std::get_if<std::shared_ptr<const ModelGraph>>(&branch->second);
    std::vector<onnx::TypeProto> types;
    if (body && *body)
      for (const ModelValue& output : (*body)->outputs) types.push_back(declared_type(output));
    return types;
  }

  // The element type of a tensor op's outputs: its op's, or its first input's.
  int32_t tensor_elem(const Node& node, const ModelGraph& graph) const {
    static const std::set<std::string> boolean{
        "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor"};
    static const std::set<std::string> index{"Shape", "Size", "ArgMax", "ArgMin", "SequenceLength"};
    if (boolean.contains(node.op_type)) return onnx::TensorProto::BOOL;
    if (index.contains(node.op_type)) return onnx::TensorProto::INT64;
    if (node.op_type == "TfIdfVectorizer") return onnx::TensorProto::FLOAT;
    if (node.op_type == "CastLike" && node.inputs.size() > 1)
      return elem_of(type_of(node.inputs[1], graph));
    if (node.op_type == "Cast") {
      const auto to = node.attributes.find("to");
      if (to != node.attributes.end())
        if (const auto* number = std::get_if<int64_t>(&to->second))
          return static_cast<int32_t>(*number);
      return 0;
    }
    // SequenceAt and ConcatFromSequence give their sequence's element type.
    return node.inputs.empty() ? 0 : elem_of(type_of(node.inputs[0], graph));
  }

  // The model as hal runs it (functions expanded, constants folded), for shape inference:
  // initializers over kMaxInferenceElements elements become typed graph inputs, since no
  // shape depends on their values.
  std::string inference_model(const ModelGraph& folded) const {
    constexpr int64_t kMaxInferenceElements = 64;
    onnx::ModelProto model;
    model.set_ir_version(proto_.ir_version());
    *model.mutable_opset_import() = proto_.opset_import();
    onnx::GraphProto& graph = *model.mutable_graph();
    const onnx::GraphProto& original = proto_.graph();
    graph.set_name(original.name());
    for (const auto& input : original.input())
      if (!is_initializer(folded, input.name())) *graph.add_input() = input;
    *graph.mutable_output() = original.output();
    *graph.mutable_value_info() = original.value_info();
    for (const auto& [name, tensor] : folded.initializers) {
      if (tensor.numel() <= kMaxInferenceElements) {
        *graph.add_initializer() = tensor_to_onnx(tensor, name);
        continue;
      }
      auto* input = graph.add_input();
      input->set_name(name);
      auto* type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(onnx_elem_type(tensor.dtype));
      for (int64_t d : tensor.shape) type->mutable_shape()->add_dim()->set_dim_value(d);
    }
    // Strings (initializers, and Constants taken out of the graph) as typed inputs: no shape
    // depends on their contents.
    for (const auto& [name, strings] : folded.string_initializers) {
      auto* input = graph.add_input();
      input->set_name(name);
      auto* type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(onnx::TensorProto::STRING);
      for (int64_t d : strings.shape) type->mutable_shape()->add_dim()->set_dim_value(d);
    }
    for (const auto& node : expanded_) *graph.add_node() = node;
    return model.SerializeAsString();
  }

  // Inlines a function: its inputs and outputs become the node's, its intermediate values get
  // names unique in the graph, and attribute references take the node's values.
  void expand(const onnx::NodeProto& node, const onnx::FunctionProto& function, ModelGraph& graph,
              int depth, const onnx::OpSchema* schema) {
    std::map<std::string, std::string> rename;
    for (int i = 0; i < function.input_size(); ++i)
      rename[function.input(i)] = i < node.input_size() ? node.input(i) : "";
    for (int i = 0; i < function.output_size(); ++i)
      rename[function.output(i)] = i < node.output_size() ? node.output(i) : "";
    const std::string prefix = (node.name().empty() ? node.op_type() : node.name()) + "/" +
                               std::to_string(expansions_++) + "/";
    int64_t opset = 0;  // the body's own import of the default domain, where it has one
    for (const auto& import : function.opset_import())
      if (is_default_domain(import.domain())) opset = import.version();
    std::map<std::string, const onnx::AttributeProto*> node_attributes;
    // The node's attributes over the schema's defaults (MeanVarianceNormalization's axes).
    if (schema)
      for (const auto& [name, attribute] : schema->attributes())
        if (attribute.default_value.type() != onnx::AttributeProto::UNDEFINED)
          node_attributes[name] = &attribute.default_value;
    for (const auto& a : node.attribute()) node_attributes[a.name()] = &a;
    for (const auto& inner : function.node()) {
      onnx::NodeProto copy = inner;
      for (const auto& output : inner.output())
        if (!rename.contains(output)) rename[output] = output.empty() ? "" : prefix + output;
      // Attributes that refer to the calling node's: take its value, or drop (default).
      auto* attributes = copy.mutable_attribute();
      for (int a = attributes->size() - 1; a >= 0; --a) {
        auto& attribute = (*attributes)[a];
        if (attribute.ref_attr_name().empty()) continue;
        const auto given = node_attributes.find(attribute.ref_attr_name());
        if (given == node_attributes.end()) {
          attributes->DeleteSubrange(a, 1);
        } else {
          const std::string name = attribute.name();
          attribute = *given->second;
          attribute.set_name(name);
        }
      }
      if (copy.name().empty())
        copy.set_name(prefix + inner.op_type());
      else
        copy.set_name(prefix + copy.name());
      if (copy.domain().empty() || copy.domain() == "ai.onnx") {
        // The body speaks the function's opset of the default domain.
        copy.set_domain("");
      }
      add_node(copy, rename, graph, depth + 1, opset);
    }
  }

  // Nodes folded into the Conv before them (fusion.hpp), in the nodes kept for shape inference
  // too: there the Conv makes the last absorbed node's output (the same shape: an Add that
  // would broadcast the Conv's result is run as its own op by the Conv) and reads no residual.
  void fuse(ModelGraph& graph) {
    const std::vector<Fusion> fusions = find_fusions(graph);
    for (const Fusion& fusion : fusions)
      expanded_[fusion.node].set_output(0, graph.nodes[fusion.absorbed.back()].outputs[0]);
    keep_expanded(apply_fusions(graph, fusions));
    // Then elementwise chains, each standing in the kept model as a Sum of its inputs: the
    // same broadcast shape and element type (elementwise_fusion.hpp).
    const std::vector<ElementwiseFusion> chains = find_elementwise_fusions(
        graph,
        [&](const std::string& value) { return type_of(value, graph).tensor_type().elem_type(); });
    for (const ElementwiseFusion& chain : chains) {
      onnx::NodeProto& proto = expanded_[chain.nodes.back()];
      const std::string output = proto.output(0);
      proto.Clear();
      proto.set_op_type("Sum");
      proto.set_name("hal fused elementwise " + output);
      for (const std::string& input : chain.inputs) proto.add_input(input);
      proto.add_output(output);
    }
    keep_expanded(apply_elementwise_fusions(graph, chains));
  }

  // The expanded nodes that the graph's nodes still are, after folding or fusion removed some.
  void keep_expanded(const std::vector<bool>& kept) {
    std::vector<onnx::NodeProto> remaining;
    for (size_t i = 0; i < kept.size(); ++i)
      if (kept[i]) remaining.push_back(std::move(expanded_[i]));
    expanded_ = std::move(remaining);
  }

  // Every input defined before its node reads it: by the graph, an initializer, an earlier
  // node or (a subgraph's) the enclosing graphs, `outer`. ONNX requires the order; the
  // checker's message is harder to read than this one.
  static void check_order(ModelGraph& graph, const std::set<std::string, std::less<>>& outer) {
    std::set<std::string, std::less<>> defined = outer;
    for (const auto& input : graph.inputs) defined.insert(input.name);
    for (const auto& [name, tensor] : graph.initializers) defined.insert(name);
    for (const auto& [name, tensor] : graph.string_initializers) defined.insert(name);
    std::map<std::string, size_t, std::less<>> produced_by;
    for (size_t i = 0; i < graph.nodes.size(); ++i)
      for (const auto& output : graph.nodes[i].outputs) produced_by.emplace(output, i);
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node& node = graph.nodes[i];
      std::vector<std::string> reads = node.inputs;
      reads.insert(reads.end(), node.captured.begin(), node.captured.end());
      for (const auto& input : reads) {
        if (input.empty() || defined.contains(input)) {
          if (!input.empty()) graph.last_use[input] = i;
          continue;
        }
        const auto later = produced_by.find(input);
        if (later != produced_by.end())
          invalid(graph.name + ": " + node.describe() + " reads '" + input + "', which " +
                  graph.nodes[later->second].describe() +
                  " produces later: the graph has a cycle or is not in topological order");
        invalid(graph.name + ": " + node.describe() + " reads '" + input +
                "', which no node, initializer or graph input defines");
      }
      for (const auto& output : node.outputs)
        if (!output.empty()) defined.insert(output);
    }
    for (const auto& output : graph.outputs) {
      if (!defined.contains(output.name))
        invalid(graph.name + ": graph output '" + output.name + "' is defined by nothing");
      graph.last_use[output.name] = graph.nodes.size();
    }
  }

  const onnx::ModelProto& proto_;
  std::string name_;
  std::filesystem::path directory_;
  std::map<std::string, int64_t> opsets_;
  LocalFunctions functions_;
  size_t expansions_ = 0;
  // Functions calling functions (8 levels deep) can make a 1 KB file into 10^8 nodes: the
  // nodes hal runs are bounded by the nodes the file writes, with room for real expansions
  // (an op hal runs as its ONNX function body becomes ten or so).
  static constexpr size_t kNodesAlways = 100'000;
  static constexpr size_t kNodesPerWrittenNode = 16;
  size_t node_budget_ = 0;
  size_t nodes_added_ = 0;
  std::map<std::string, onnx::TypeProto> produced_types_;
  std::vector<onnx::NodeProto> expanded_;  // the nodes hal runs, as ONNX nodes
  // Per subgraph being imported, the names the graphs around it define before its node.
  std::vector<std::set<std::string, std::less<>>> scopes_;
};

// External data read into the tensors themselves (with hal's checks of where it may come
// from): ONNX's checker looks for the files relative to the working directory otherwise.
void inline_tensor(onnx::TensorProto& tensor, const std::filesystem::path& directory,
                   const std::filesystem::path& model_file, const std::string& where) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL) return;
  const HostTensor read = tensor_from_onnx(tensor, directory, where, model_file);
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
  tensor.set_raw_data(read.bytes.data(), read.bytes.size());
}

// A graph's initializers and its nodes' tensor attributes (a Constant's value), and those of
// the subgraphs its nodes carry.
void inline_graph(onnx::GraphProto& graph, const std::string& name,
                  const std::filesystem::path& directory, const std::filesystem::path& model_file) {
  for (auto& init : *graph.mutable_initializer())
    inline_tensor(init, directory, model_file, "initializer '" + init.name() + "' of " + name);
  for (auto& node : *graph.mutable_node())
    for (auto& attribute : *node.mutable_attribute()) {
      const std::string where =
          "attribute '" + attribute.name() + "' of node '" + node.name() + "' of " + name;
      if (attribute.has_t()) inline_tensor(*attribute.mutable_t(), directory, model_file, where);
      for (auto& tensor : *attribute.mutable_tensors())
        inline_tensor(tensor, directory, model_file, where);
      if (attribute.has_g()) inline_graph(*attribute.mutable_g(), name, directory, model_file);
      for (auto& subgraph : *attribute.mutable_graphs())
        inline_graph(subgraph, name, directory, model_file);
    }
}

void inline_external_data(onnx::ModelProto& proto, const std::string& name,
                          const std::filesystem::path& directory,
                          const std::filesystem::path& model_file) {
  inline_graph(*proto.mutable_graph(), name, directory, model_file);
}

// The checker's message, "node 3 (Concat): " before it where an unnamed node of the main graph
// failed it: the checker names a node by its name alone. That node is found by checking the
// nodes one by one, in scope as check_graph has them, for the one failing with this message.
std::string checker_error(const onnx::ModelProto& proto, const std::string& message) {
  const std::string core = message.substr(0, message.find("\n\n==> Context:"));
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(proto.ir_version()));
  std::unordered_map<std::string, int> opsets;
  for (const auto& opset : proto.opset_import())
    opsets[opset.domain()] = static_cast<int>(opset.version());
  ctx.set_opset_imports(opsets);
  onnx::checker::LexicalScopeContext scope;
  const onnx::GraphProto& graph = proto.graph();
  for (const auto& input : graph.input()) scope.add(input.name());
  for (const auto& init : graph.initializer()) scope.add(init.name());
  for (const auto& init : graph.sparse_initializer()) scope.add(init.values().name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    try {
      onnx::checker::check_node(node, ctx, scope);
    } catch (const std::exception& error) {
      const std::string own = error.what();
      if (!node.name().empty() || core != own.substr(0, own.find("\n\n==> Context:")))
        return message;
      return "node " + std::to_string(i) + " (" + node.op_type() + "): " + core;
    }
    for (const auto& output : node.output()) scope.add(output);
  }
  return message;
}

Model import(onnx::ModelProto& proto, const std::string& name,
             const std::filesystem::path& directory, const std::filesystem::path& model_file) {
  inline_external_data(proto, name, directory, model_file);
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& error) {
    invalid(name + ": not a valid ONNX model: " + checker_error(proto, error.what()));
  }
  return Model(std::make_shared<const ModelGraph>(Importer(proto, name, directory).run()));
}

}  // namespace

std::string Node::describe() const {
  return "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op_type +
         (chain ? " of " + fused : "") + ", opset " + std::to_string(opset) + ")";
}

}  // namespace model

namespace {

Model parse_and_import(std::string_view bytes, std::string_view name,
                       const std::filesystem::path& directory,
                       const std::filesystem::path& model_file) {
  onnx::ModelProto proto;
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    throw Error(ErrorCode::Unsupported,
                std::string(name) + ": models over 2 GiB must keep their weights in external data");
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorCode::InvalidArgument,
                std::string(name) +
                    ": not an ONNX model (the protobuf does not parse: truncated "
                    "or another kind of file)");
  return model::import(proto, std::string(name), directory, model_file);
}

}  // namespace

Model load_onnx_bytes(std::string_view bytes, std::string_view name,
                      const std::filesystem::path& directory) {
  return parse_and_import(bytes, name, directory, {});
}

Model load_onnx(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(ErrorCode::InvalidArgument, "cannot open model file " + path.string());
  std::stringstream contents;
  contents << file.rdbuf();
  const std::string bytes = std::move(contents).str();
  return parse_and_import(bytes, path.string(),
                          path.parent_path().empty() ? "." : path.parent_path(), path);
}

}  // namespace hal
