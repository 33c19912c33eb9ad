#include "model/onnx_ops.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <type_traits>

#include "core/storage_types.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "tensor/element_codec.hpp"

namespace hal::model {
namespace {

struct OpTable {
  std::vector<OnnxOp> ops;  // by op type, then `since` descending
  OpTable() {
    for (auto family :
         {elementwise_onnx_ops, shape_onnx_ops,        reduce_onnx_ops,    nn_onnx_ops,
          conv_onnx_ops,        index_onnx_ops,        resize_onnx_ops,    grid_sample_onnx_ops,
          unpool_onnx_ops,      spectral_onnx_ops,     roi_align_onnx_ops, random_onnx_ops,
          det_onnx_ops,         recurrent_onnx_ops,    scatter_onnx_ops,   quantize_onnx_ops,
          sequence_onnx_ops,    control_flow_onnx_ops, optimizer_onnx_ops, gradient_onnx_ops,
          string_onnx_ops,      tfidf_onnx_ops})
      for (const OnnxOp& op : family()) ops.push_back(op);
    std::sort(ops.begin(), ops.end(), [](const OnnxOp& a, const OnnxOp& b) {
      return a.op_type != b.op_type ? a.op_type < b.op_type : a.since > b.since;
    });
  }
};

const OpTable& table() {
  static const OpTable instance;
  return instance;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, int64_t>)
    return "an int";
  else if constexpr (std::is_same_v<T, float>)
    return "a float";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
    return "ints";
  else if constexpr (std::is_same_v<T, std::vector<float>>)
    return "floats";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>)
    return "strings";
  else
    return "a tensor";
}

}  // namespace

const OnnxOp* find_onnx_op(std::string_view op_type, int64_t opset) {
  return find_onnx_op("", op_type, opset);
}

const OnnxOp* find_onnx_op(std::string_view domain, std::string_view op_type, int64_t opset) {
  for (const OnnxOp& op : table().ops)
    if (op.op_type == op_type && op.domain == domain && op.since <= opset) return &op;
  return nullptr;
}

std::vector<std::string> onnx_op_types() {
  std::set<std::string> types;
  for (const OnnxOp& op : table().ops)
    types.emplace(op.domain.empty() ? std::string(op.op_type)
                                    : std::string(op.domain) + "." + std::string(op.op_type));
  return {types.begin(), types.end()};
}

const AttributeValue* OpContext::find(std::string_view name) const {
  const auto found = node_.attributes.find(name);
  return found == node_.attributes.end() ? nullptr : &found->second;
}

bool OpContext::has(std::string_view attribute) const { return find(attribute) != nullptr; }

bool OpContext::constant_input(size_t index) const {
  return graph_ && index < node_.inputs.size() &&
         graph_->initializers.contains(node_.inputs[index]) &&
         !graph_->overridable(node_.inputs[index]);
}

namespace {
template <class T>
T get(const OpContext& ctx, const AttributeValue* value, std::string_view name, T fallback) {
  if (!value) return fallback;
  if (const T* typed = std::get_if<T>(value)) return *typed;
  ctx.invalid("attribute '" + std::string(name) + "' is not " + type_name<T>());
}
}  // namespace

int64_t OpContext::attr_int(std::string_view name, int64_t fallback) const {
  return get(*this, find(name), name, fallback);
}
float OpContext::attr_float(std::string_view name, float fallback) const {
  return get(*this, find(name), name, fallback);
}
std::string OpContext::attr_string(std::string_view name, std::string fallback) const {
  return get(*this, find(name), name, std::move(fallback));
}
std::vector<int64_t> OpContext::attr_ints(std::string_view name,
                                          std::vector<int64_t> fallback) const {
  return get(*this, find(name), name, std::move(fallback));
}
std::vector<float> OpContext::attr_floats(std::string_view name) const {
  return get(*this, find(name), name, std::vector<float>{});
}
std::vector<std::string> OpContext::attr_strings(std::string_view name) const {
  return get(*this, find(name), name, std::vector<std::string>{});
}
const HostTensor* OpContext::attr_tensor(std::string_view name) const {
  const AttributeValue* value = find(name);
  if (!value) return nullptr;
  if (const auto* tensor = std::get_if<HostTensor>(value)) return tensor;
  invalid("attribute '" + std::string(name) + "' is not a tensor");
}

std::vector<int64_t> OpContext::read_ints(const Tensor& tensor) const {
  if (tensor.dtype() == DType::i64) return tensor.to_vector<int64_t>(stream_);
  if (tensor.dtype() == DType::i32) {
    const auto values = tensor.to_vector<int32_t>(stream_);
    return {values.begin(), values.end()};
  }
  invalid("expects an int64 tensor, got " + tensor.describe());
}

std::vector<double> OpContext::read_values(const Tensor& tensor) const {
  std::vector<std::byte> bytes(tensor.nbytes());
  tensor.copy_to_host(bytes.data(), stream_);
  stream_.synchronize();
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = tensor::decode(tensor.dtype(), bytes.data() + i * tensor.element_size());
  return values;
}

double OpContext::read_scalar(const Tensor& tensor) const {
  if (tensor.numel() != 1) invalid("expects a scalar, got " + tensor.describe());
  std::array<std::byte, 8> element{};
  tensor.copy_to_host(element.data(), stream_);
  stream_.synchronize();
  return tensor::decode(tensor.dtype(), element.data());
}

int64_t OpContext::read_int(const Tensor& tensor) const {
  if (tensor.numel() != 1) invalid("expects a scalar, got " + tensor.describe());
  return read_ints(tensor).at(0);
}

int64_t OpContext::axis(int64_t axis, int64_t rank) const {
  if (axis < -rank || axis >= rank)
    invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

const ModelGraph& OpContext::subgraph(std::string_view name) const {
  const AttributeValue* value = find(name);
  if (!value) invalid("has no attribute '" + std::string(name) + "'");
  const auto* graph = std::get_if<std::shared_ptr<const ModelGraph>>(value);
  if (!graph || !*graph) invalid("attribute '" + std::string(name) + "' is not a graph");
  return **graph;
}

std::vector<Value> OpContext::run_subgraph(const ModelGraph& graph,
                                           const std::vector<Value>& inputs) const {
  if (!subgraphs_) unsupported("runs subgraphs, which only the executor does");
  if (inputs.size() != graph.inputs.size())
    invalid("gives " + graph.name + " " + std::to_string(inputs.size()) + " inputs; it takes " +
            std::to_string(graph.inputs.size()));
  return subgraphs_->run(graph, inputs);
}

namespace {
std::string input_name(const Node& node, size_t index) {
  return "input " + std::to_string(index) +
         (index < node.inputs.size() ? " ('" + node.inputs[index] + "')" : "");
}
}  // namespace

std::string describe_value(const Value& value) {
  if (std::holds_alternative<TensorSequence>(value)) return "a sequence";
  if (std::holds_alternative<StringTensor>(value)) return "a string tensor";
  return std::get<Tensor>(value).describe();
}

const Tensor& OpContext::tensor(const std::vector<Value>& in, size_t index) const {
  if (index >= in.size()) invalid("has no " + input_name(node_, index));
  if (std::holds_alternative<StringTensor>(in[index]))
    unsupported(input_name(node_, index) + " is a string tensor; hal runs " + node_.op_type +
                " on numeric tensors only");
  const Tensor* tensor = std::get_if<Tensor>(&in[index]);
  if (!tensor) invalid(input_name(node_, index) + " is a sequence; a tensor was expected");
  return *tensor;
}

const TensorSequence& OpContext::sequence(const std::vector<Value>& in, size_t index) const {
  if (index >= in.size()) invalid("has no " + input_name(node_, index));
  const TensorSequence* sequence = std::get_if<TensorSequence>(&in[index]);
  if (!sequence)
    invalid(input_name(node_, index) + " is " + describe_value(in[index]) +
            "; a sequence was expected");
  return *sequence;
}

const StringTensor& OpContext::strings(const std::vector<Value>& in, size_t index) const {
  if (index >= in.size()) invalid("has no " + input_name(node_, index));
  const StringTensor* strings = std::get_if<StringTensor>(&in[index]);
  if (!strings)
    invalid(input_name(node_, index) + " is " + describe_value(in[index]) + "; " + node_.op_type +
            " takes a string tensor");
  return *strings;
}

const Tensor& OpContext::value_tensor(const Value& value, const std::string& what) const {
  if (std::holds_alternative<StringTensor>(value))
    unsupported(what + " is a string tensor; hal runs " + node_.op_type +
                " on numeric tensors only");
  const Tensor* tensor = std::get_if<Tensor>(&value);
  if (!tensor || !tensor->defined()) invalid(what + " is not a tensor");
  return *tensor;
}

void OpContext::unsupported(const std::string& what) const {
  throw Error(ErrorCode::Unsupported, node_.describe() + ": " + what);
}

void OpContext::invalid(const std::string& what) const {
  throw Error(ErrorCode::InvalidArgument, node_.describe() + ": " + what);
}

Tensor upload_values(const std::vector<double>& values, const Shape& shape, DType dtype,
                     Stream& stream) {
  if (dtype == DType::f64) return from_vector(values, shape, stream);
  const Tensor narrow =
      from_vector(std::vector<float>(values.begin(), values.end()), shape, stream);
  return dtype == DType::f32 ? narrow : cast(narrow, dtype, stream);
}

Tensor logical_and_of(const Tensor& a, const Tensor& b, Stream& stream) {
  return where(a, b, full({}, 0, DType::boolean, stream), stream);
}
Tensor logical_or_of(const Tensor& a, const Tensor& b, Stream& stream) {
  return where(a, full({}, 1, DType::boolean, stream), b, stream);
}

Tensor bound_of(DType dtype, bool greatest, Stream& stream) {
  Tensor out;
  // f16 and bf16 as float: their bound is an infinity too.
  hal::detail::with_storage_type<float, float, bool>(dtype, [&]<class T>() {
    using Limits = std::numeric_limits<T>;
    if constexpr (std::is_integral_v<T>)  // hal::full takes integers exactly (u64's 2^64 - 1)
      out = full({}, greatest ? Limits::max() : Limits::min(), dtype, stream);
    else
      out = full({}, greatest ? Limits::infinity() : -Limits::infinity(), dtype, stream);
  });
  return out;
}

Tensor as_dtype(const Tensor& result, DType dtype, Stream& stream) {
  return result.dtype() == dtype ? result : cast(result, dtype, stream);
}

Shape as_2d(const OpContext& ctx, const Tensor& x, int64_t axis) {
  if (axis < -x.dim() || axis > x.dim())
    ctx.invalid("axis " + std::to_string(axis) + " is out of range for " + to_string(x.shape()));
  if (axis < 0) axis += x.dim();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) (d < axis ? outer : inner) *= x.size(d);
  return {outer, inner};
}

std::vector<int64_t> axis_first(int64_t axis, int64_t rank) {
  std::vector<int64_t> order{axis};
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) order.push_back(d);
  return order;
}

Tensor upload(const HostTensor& tensor, Stream& stream) {
  return from_host(tensor.bytes.data(), tensor.shape, tensor.dtype, stream);
}

}  // namespace hal::model
