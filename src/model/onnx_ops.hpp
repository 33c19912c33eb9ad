// The ONNX ops hal runs, each written with hal's ops and views so that it runs on every device
// those run on. One table maps an op type to its implementation; an op missing here but defined
// by its ONNX schema as a function is expanded into that function at load (onnx_import.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hal/stream.hpp"
#include "hal/tensor.hpp"
#include "model/model_graph.hpp"

namespace hal::model {

// A value of a run: a tensor, a sequence of tensors, or a string tensor (on the host).
using Value = RunValue;

// Runs a subgraph (If's branches, Loop's and Scan's bodies) for the node that holds it, the
// enclosing graphs' values in scope: its inputs in order give its outputs in order.
class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  virtual std::vector<Value> run(const ModelGraph& graph,
                                 const std::vector<Value>& inputs) const = 0;
};

// What an op implementation sees: its node (attributes, opset) and the stream it runs on.
class OpContext {
 public:
  // `graph`, where given, tells which inputs are initializers (constant_input); `subgraphs`
  // runs the node's subgraphs (If, Loop, Scan).
  OpContext(const Node& node, Stream& stream, const ModelGraph* graph = nullptr,
            const SubgraphRunner* subgraphs = nullptr)
      : node_(node), stream_(stream), graph_(graph), subgraphs_(subgraphs) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return node_.opset; }
  Stream& stream() const { return stream_; }
  // Whether input `index` is one of the model's initializers, whose contents never change while
  // the model lives (a device may keep them in a layout of its own); not one a run may replace
  // (ModelGraph::optional_inputs).
  bool constant_input(size_t index) const;

  bool has(std::string_view attribute) const;
  // An attribute's value, or `fallback` where the node has none; InvalidArgument naming the
  // node and attribute when it holds another type.
  int64_t attr_int(std::string_view name, int64_t fallback) const;
  float attr_float(std::string_view name, float fallback) const;
  std::string attr_string(std::string_view name, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view name) const;
  std::vector<std::string> attr_strings(std::string_view name) const;
  const HostTensor* attr_tensor(std::string_view name) const;

  // `axis` in [-rank, rank) counted from 0; InvalidArgument naming it and the rank otherwise.
  int64_t axis(int64_t axis, int64_t rank) const;
  // The values of a small integer tensor (shapes, axes, pads), read back to the host; waits
  // for the stream.
  std::vector<int64_t> read_ints(const Tensor& tensor) const;
  // Every element of a tensor as double, read back to the host (for the ops whose result
  // depends on the values); waits for the stream.
  std::vector<double> read_values(const Tensor& tensor) const;
  // The value of a one-element tensor, as double.
  double read_scalar(const Tensor& tensor) const;
  // The value of a one-element integer tensor, exactly (a trip count of INT64_MAX included).
  int64_t read_int(const Tensor& tensor) const;

  // The node's subgraph attribute `name`; InvalidArgument where it has none.
  const ModelGraph& subgraph(std::string_view name) const;
  // Runs `graph` (one of the node's subgraphs); Unsupported where nothing runs subgraphs
  // (constant folding).
  std::vector<Value> run_subgraph(const ModelGraph& graph, const std::vector<Value>& inputs) const;

  // Input `index` of a value op as a tensor, a sequence or a string tensor; InvalidArgument
  // naming the input where it is another kind (Unsupported for strings where a tensor goes:
  // ONNX lets many ops take strings that hal runs on numbers only). An omitted input is an
  // undefined tensor.
  const Tensor& tensor(const std::vector<Value>& in, size_t index) const;
  const TensorSequence& sequence(const std::vector<Value>& in, size_t index) const;
  const StringTensor& strings(const std::vector<Value>& in, size_t index) const;
  // `value` (a subgraph's output, `what` in errors) as a tensor.
  const Tensor& value_tensor(const Value& value, const std::string& what) const;

  [[noreturn]] void unsupported(const std::string& what) const;  // Unsupported, naming the node
  [[noreturn]] void invalid(const std::string& what) const;      // InvalidArgument, likewise

 private:
  const AttributeValue* find(std::string_view name) const;
  const Node& node_;
  Stream& stream_;
  const ModelGraph* graph_;
  const SubgraphRunner* subgraphs_;
};

// `inputs` holds one tensor per node input, undefined (Tensor()) for an omitted optional one;
// returns one tensor per node output (undefined ones for outputs the op does not give).
using OpFunction = std::vector<Tensor> (*)(const OpContext& ctx, const std::vector<Tensor>& inputs);
// The same with values that may be sequences: the sequence and control-flow ops, which the
// executor runs on a path of their own so that tensor ops never pay for the variant.
using ValueOpFunction = std::vector<Value> (*)(const OpContext& ctx,
                                               const std::vector<Value>& inputs);

// The domain of ONNX's training ops (Gradient and the optimizers), which hal runs at opset 1.
// f32, f64, f16 or bf16: the dtypes with NaN, infinities and fractions.
inline bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}

inline constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";

struct OnnxOp {
  std::string_view op_type;
  int64_t since;   // the first opset of its domain whose semantics it implements
  OpFunction run;  // null for a value op
  ValueOpFunction run_values = nullptr;  // set for a value op
  // For a tensor op that also reads or makes string tensors (Cast, CastLike): what runs, on
  // the value path, where the node reads a string tensor or makes_strings(node).
  ValueOpFunction run_strings = nullptr;
  // Computes on the host whatever the node's device (the value ops on strings, TfIdfVectorizer):
  // the planner puts it on cpu:0.
  bool host = false;
  std::string_view domain = {};  // empty: the default domain
  // Draws random numbers: never folded into a constant, and each run draws afresh (a seeded
  // node's draws follow from its seed and its count of runs, Node::runs).
  bool random = false;
};

// The implementation of `op_type` of the default domain at `opset`, or null.
const OnnxOp* find_onnx_op(std::string_view op_type, int64_t opset);
// The same for an op of `domain` ("" for the default one).
const OnnxOp* find_onnx_op(std::string_view domain, std::string_view op_type, int64_t opset);
// Every op type hal runs natively, sorted.
std::vector<std::string> onnx_op_types();

// The families of ops, one file each; find_onnx_op reads them all.
std::vector<OnnxOp> elementwise_onnx_ops();
std::vector<OnnxOp> shape_onnx_ops();
std::vector<OnnxOp> reduce_onnx_ops();
std::vector<OnnxOp> nn_onnx_ops();
std::vector<OnnxOp> conv_onnx_ops();
std::vector<OnnxOp> index_onnx_ops();
std::vector<OnnxOp> resize_onnx_ops();
std::vector<OnnxOp> grid_sample_onnx_ops();
std::vector<OnnxOp> unpool_onnx_ops();
std::vector<OnnxOp> spectral_onnx_ops();  // DFT, STFT, MelWeightMatrix
std::vector<OnnxOp> roi_align_onnx_ops();
std::vector<OnnxOp> det_onnx_ops();
std::vector<OnnxOp> random_onnx_ops();  // RandomUniform, RandomNormal, -Like, Multinomial
std::vector<OnnxOp> recurrent_onnx_ops();
std::vector<OnnxOp> scatter_onnx_ops();
std::vector<OnnxOp> quantize_onnx_ops();
std::vector<OnnxOp> sequence_onnx_ops();
std::vector<OnnxOp> control_flow_onnx_ops();
std::vector<OnnxOp> optimizer_onnx_ops();  // Adagrad, Adam, Momentum (kTrainingDomain)
std::vector<OnnxOp> gradient_onnx_ops();   // Gradient (kTrainingDomain)
std::vector<OnnxOp> string_onnx_ops();
std::vector<OnnxOp> tfidf_onnx_ops();

// The string forms of Cast and CastLike (string_onnx_ops.cpp), the `run_strings` of theirs.
std::vector<Value> cast_strings(const OpContext& ctx, const std::vector<Value>& in);
std::vector<Value> cast_like_strings(const OpContext& ctx, const std::vector<Value>& in);
// Whether `node` makes string tensors whatever its inputs are (a Cast to STRING), so that its
// op's string form runs.
bool makes_strings(const Node& node);

// "a sequence", "a string tensor", "an undefined tensor", "f32[2, 3] on cpu:0": a value, in
// errors.
std::string describe_value(const Value& value);

// The op of the nodes that elementwise chains become at load (elementwise_fusion.hpp); not in
// the table, which maps the models' own op types.
const OnnxOp& fused_elementwise_onnx_op();

// Dropout in training mode, by hal::dropout's draws: {output, mask in `mask_dtype`}
// (random_onnx_ops.cpp).
std::vector<Tensor> training_dropout(const OpContext& ctx, const Tensor& x, double ratio,
                                     DType mask_dtype);

// a and b, a or b, of bool tensors (broadcasting): `where` with a constant, which every device
// with `where` runs.
Tensor logical_and_of(const Tensor& a, const Tensor& b, Stream& stream);
Tensor logical_or_of(const Tensor& a, const Tensor& b, Stream& stream);

// Whether the optional input `index` was given.
inline bool given(const std::vector<Tensor>& in, size_t index) {
  return in.size() > index && in[index].defined();
}
inline bool given(const std::vector<Value>& in, size_t index) {
  if (in.size() <= index) return false;
  const Tensor* tensor = std::get_if<Tensor>(&in[index]);
  return !tensor || tensor->defined();
}
// Host values computed in double (matrices, weights, twiddles) as a tensor of floating `dtype`:
// f64 as they are, others from f32 values (so that devices without f64 never see it).
Tensor upload_values(const std::vector<double>& values, const Shape& shape, DType dtype,
                     Stream& stream);
// The greatest (or least) value of `dtype` as a 0-d tensor: an integer type's bound from its
// own bits (i64's and u64's maxima have no double), 1 or 0 for bool, inf or -inf for floats.
Tensor bound_of(DType dtype, bool greatest, Stream& stream);
// `result` in `dtype`: ONNX keeps the input's dtype where hal promotes (Pow's exponent, Clip's
// bounds) or widens (sums of integers).
Tensor as_dtype(const Tensor& result, DType dtype, Stream& stream);
// x seen as 2-d, [product of the dimensions before `axis`, product of the rest], `axis` in
// [-rank, rank] (Flatten, and Softmax before opset 13).
Shape as_2d(const OpContext& ctx, const Tensor& x, int64_t axis);

// Building blocks the op families share (shape_onnx_ops.cpp). concat: the parts joined along
// `axis`; pad_constant: `before`/`after` elements of `value` around each dimension (negative
// counts crop).
Tensor concat(const OpContext& ctx, const std::vector<Tensor>& parts, int64_t axis);
// take: the slices of `data` at `picks` (each in range) along `axis`, in that order; one gather
// by embedding's kernel where the device has one for the dtype, else a device copy per pick.
Tensor take(const OpContext& ctx, const Tensor& data, int64_t axis,
            const std::vector<int64_t>& picks);
Tensor pad_constant(const OpContext& ctx, Tensor x, const std::vector<int64_t>& before,
                    const std::vector<int64_t>& after, double value);

// The order of dimensions that moves `axis` to the front.
std::vector<int64_t> axis_first(int64_t axis, int64_t rank);

// A host tensor made a device tensor, enqueued on `stream`.
Tensor upload(const HostTensor& tensor, Stream& stream);

}  // namespace hal::model
