// ONNX's sequence and optional ops: a sequence is a list of tensors (hal::TensorSequence), an
// optional its value or none (an undefined tensor), so these ops only rearrange handles;
// SplitToSequence and ConcatFromSequence move data with the views and concat() the tensor ops
// use.
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "model/onnx_dtype.hpp"
#include "model/onnx_ops.hpp"

namespace hal::model {
namespace {

using Values = std::vector<Value>;

// A position in [-size, size) (SequenceAt, SequenceErase) or [-size, size] (SequenceInsert),
// counted from 0.
size_t position(const OpContext& ctx, const Tensor& at, size_t size, bool may_be_end) {
  const auto n = static_cast<int64_t>(size);
  const int64_t value = ctx.read_int(at);
  const int64_t last = may_be_end ? n : n - 1;
  if (value < -n || value > last)
    ctx.invalid("position " + std::to_string(value) + " is out of range for a sequence of " +
                std::to_string(size) + " tensors");
  return static_cast<size_t>(value < 0 ? value + n : value);
}

// Input `index`, a tensor to go into a sequence: an omitted one ("") or an empty optional is
// no tensor to hold.
const Tensor& element(const OpContext& ctx, const Values& in, size_t index) {
  const Tensor& tensor = ctx.tensor(in, index);
  if (tensor.defined()) return tensor;
  const auto& names = ctx.node().inputs;
  const std::string name = index < names.size() ? names[index] : "";
  ctx.invalid("input " + std::to_string(index) +
              (name.empty() ? " is omitted ('')" : " ('" + name + "') is an empty optional") +
              "; a sequence holds tensors");
}

void check_element(const OpContext& ctx, const TensorSequence& sequence, const Tensor& tensor) {
  if (tensor.dtype() != sequence.dtype)
    ctx.invalid("a " + std::string(to_string(tensor.dtype())) + " tensor in a sequence of " +
                std::string(to_string(sequence.dtype)) + " tensors");
}

Tensor scalar_bool(bool value, Stream& stream) { return full({}, value, DType::boolean, stream); }

Values sequence_empty(const OpContext& ctx, const Values&) {
  const int64_t code = ctx.attr_int("dtype", 1);  // ONNX's default: float
  const auto dtype = dtype_from_onnx(static_cast<int32_t>(code));
  if (!dtype) ctx.unsupported("element type " + onnx_type_name(static_cast<int32_t>(code)));
  return {TensorSequence{*dtype, {}}};
}

Values sequence_construct(const OpContext& ctx, const Values& in) {
  if (in.empty()) ctx.invalid("needs at least one tensor");
  TensorSequence sequence{element(ctx, in, 0).dtype(), {}};
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& tensor = element(ctx, in, i);
    check_element(ctx, sequence, tensor);
    sequence.tensors.push_back(tensor);
  }
  return {std::move(sequence)};
}

Values sequence_insert(const OpContext& ctx, const Values& in) {
  TensorSequence sequence = ctx.sequence(in, 0);
  const Tensor& tensor = element(ctx, in, 1);
  check_element(ctx, sequence, tensor);
  const size_t at = given(in, 2) ? position(ctx, ctx.tensor(in, 2), sequence.tensors.size(), true)
                                 : sequence.tensors.size();
  sequence.tensors.insert(sequence.tensors.begin() + static_cast<std::ptrdiff_t>(at), tensor);
  return {std::move(sequence)};
}

Values sequence_at(const OpContext& ctx, const Values& in) {
  const TensorSequence& sequence = ctx.sequence(in, 0);
  return {sequence.tensors[position(ctx, ctx.tensor(in, 1), sequence.tensors.size(), false)]};
}

Values sequence_erase(const OpContext& ctx, const Values& in) {
  TensorSequence sequence = ctx.sequence(in, 0);
  if (sequence.tensors.empty()) ctx.invalid("erases from an empty sequence");
  const size_t at = given(in, 1) ? position(ctx, ctx.tensor(in, 1), sequence.tensors.size(), false)
                                 : sequence.tensors.size() - 1;
  sequence.tensors.erase(sequence.tensors.begin() + static_cast<std::ptrdiff_t>(at));
  return {std::move(sequence)};
}

Values sequence_length(const OpContext& ctx, const Values& in) {
  const auto length = static_cast<int64_t>(ctx.sequence(in, 0).tensors.size());
  return {full({}, length, DType::i64, ctx.stream())};
}

// Chunks of `split` (a scalar: that size, the last one shorter; a list: those sizes) along
// `axis`, or of 1 with the axis dropped unless keepdims.
Values split_to_sequence(const OpContext& ctx, const Values& in) {
  const Tensor& x = ctx.tensor(in, 0);
  if (x.dim() == 0) ctx.invalid("cannot split a scalar");
  const int64_t axis = ctx.axis(ctx.attr_int("axis", 0), x.dim());
  const int64_t length = x.size(axis);
  std::vector<int64_t> sizes;
  const bool keep = given(in, 1) || ctx.attr_int("keepdims", 1) != 0;
  if (!given(in, 1)) {
    sizes.assign(static_cast<size_t>(length), 1);
  } else if (const Tensor& split = ctx.tensor(in, 1); split.dim() == 0) {
    const int64_t chunk = ctx.read_int(split);
    if (chunk <= 0) ctx.invalid("split " + std::to_string(chunk) + " is not positive");
    for (int64_t start = 0; start < length; start += chunk)
      sizes.push_back(std::min(chunk, length - start));
  } else {
    sizes = ctx.read_ints(split);
    int64_t total = 0;
    for (int64_t size : sizes) {
      if (size < 0) ctx.invalid("split " + to_string(sizes) + " has a negative size");
      // Each size at most the axis' (so the sum cannot wrap round to it).
      if (size > length)
        ctx.invalid("split " + to_string(sizes) + " has a size past the axis' " +
                    std::to_string(length));
      total += size;
    }
    if (total != length)
      ctx.invalid("split " + to_string(sizes) + " sums to " + std::to_string(total) +
                  ", not the axis' size " + std::to_string(length));
  }
  TensorSequence sequence{x.dtype(), {}};
  int64_t start = 0;
  for (int64_t size : sizes) {
    Tensor part = x.slice(axis, start, start + size).contiguous(ctx.stream());
    sequence.tensors.push_back(keep ? part : part.squeeze(axis));
    start += size;
  }
  return {std::move(sequence)};
}

// The tensors joined along `axis`, or stacked along a new one there (new_axis).
Values concat_from_sequence(const OpContext& ctx, const Values& in) {
  const TensorSequence& sequence = ctx.sequence(in, 0);
  if (sequence.tensors.empty()) ctx.invalid("concatenates an empty sequence");
  const bool stack = ctx.attr_int("new_axis", 0) != 0;
  if (!ctx.has("axis")) ctx.invalid("has no attribute 'axis'");
  int64_t axis = ctx.attr_int("axis", 0);
  if (!stack) return {concat(ctx, sequence.tensors, axis)};
  const int64_t rank = sequence.tensors[0].dim() + 1;
  axis = ctx.axis(axis, rank);
  std::vector<Tensor> parts;
  for (const Tensor& tensor : sequence.tensors) parts.push_back(tensor.unsqueeze(axis));
  return {concat(ctx, parts, axis)};
}

// Optional: its input, or none where it has none (the `type` attribute only types it).
Values optional(const OpContext&, const Values& in) {
  return {in.empty() ? Value(Tensor()) : in[0]};
}

Values optional_has_element(const OpContext& ctx, const Values& in) {
  return {scalar_bool(given(in, 0), ctx.stream())};
}

Values optional_get_element(const OpContext& ctx, const Values& in) {
  if (!given(in, 0)) ctx.invalid("the optional is empty");
  return {in[0]};
}

}  // namespace

std::vector<OnnxOp> sequence_onnx_ops() {
  return {
      {"ConcatFromSequence", 11, nullptr, concat_from_sequence},
      {"Optional", 15, nullptr, optional},
      {"OptionalGetElement", 15, nullptr, optional_get_element},
      {"OptionalHasElement", 15, nullptr, optional_has_element},
      {"SequenceAt", 11, nullptr, sequence_at},
      {"SequenceConstruct", 11, nullptr, sequence_construct},
      {"SequenceEmpty", 11, nullptr, sequence_empty},
      {"SequenceErase", 11, nullptr, sequence_erase},
      {"SequenceInsert", 11, nullptr, sequence_insert},
      {"SequenceLength", 11, nullptr, sequence_length},
      {"SplitToSequence", 11, nullptr, split_to_sequence},
  };
}

}  // namespace hal::model
