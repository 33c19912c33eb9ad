// The descriptor of every op of ops.hpp: the one place that says what an op takes and gives.
#include <array>

#include "hal/error.hpp"
#include "ops/op_table.hpp"

namespace hal::ops {
namespace {

using namespace dtypes;
using enum OpFamily;
using enum ResultRule;

constexpr uint8_t code(Binary op) { return static_cast<uint8_t>(op); }
constexpr uint8_t code(Unary op) { return static_cast<uint8_t>(op); }
constexpr uint8_t code(Reduce op) { return static_cast<uint8_t>(op); }

constexpr std::array<std::string_view, 5> kSoftmaxParts{"max", "sub", "exp", "sum", "div"};
constexpr std::array<std::string_view, 6> kLogSoftmaxParts{"max", "sub", "exp",
                                                           "sum", "log", "div"};
constexpr std::array<std::string_view, 5> kLayerNormParts{"mean", "sub", "mul", "add", "rsqrt"};
constexpr std::array<std::string_view, 4> kRmsNormParts{"mean", "mul", "add", "rsqrt"};
constexpr std::array<std::string_view, 5> kNormBackwardParts{"mean", "sub", "mul", "add", "rsqrt"};
constexpr std::array<std::string_view, 3> kConvParts{"concat", "matmul", "add"};
// A stride-1 conv per phase of the strides; the phases padded, stacked and interleaved.
constexpr std::array<std::string_view, 3> kConvTransposeParts{"conv", "concat", "add"};
constexpr std::array<std::string_view, 3> kOneHotParts{"eq", "cast", "matmul"};
constexpr std::array<std::string_view, 7> kCrossEntropyParts{"log_softmax", "eq",  "ne", "cast",
                                                             "mul",         "sum", "div"};
constexpr std::array<std::string_view, 8> kCrossEntropyBackwardParts{
    "softmax", "eq", "ne", "cast", "mul", "sub", "sum", "div"};
constexpr std::array<std::string_view, 3> kDropoutParts{"ge", "cast", "mul"};
constexpr std::array<std::string_view, 2> kMaxPoolParts{"concat", "maximum"};
constexpr std::array<std::string_view, 3> kAvgPoolParts{"concat", "add", "div"};

// Element functions of integers compute in f32, as PyTorch's exp(int) does.
constexpr DTypeSet kFunctionInputs = kAll;
constexpr DTypeSet kComparable = kAll;

constexpr std::array kDescriptors{
    OpDescriptor{"add", binary, code(Binary::add), 2, "", kNumeric, same, {}},
    OpDescriptor{"sub", binary, code(Binary::sub), 2, "", kNumeric, same, {}},
    OpDescriptor{"mul", binary, code(Binary::mul), 2, "", kNumeric, same, {}},
    OpDescriptor{"div", binary, code(Binary::div), 2, "", kNumeric, same, {}},
    OpDescriptor{"maximum", binary, code(Binary::maximum), 2, "", kNumeric, same, {}},
    OpDescriptor{"minimum", binary, code(Binary::minimum), 2, "", kNumeric, same, {}},
    OpDescriptor{"pow", binary, code(Binary::pow), 2, "", kFloating, same, {}},
    OpDescriptor{"eq", binary, code(Binary::eq), 2, "", kComparable, boolean, {}},
    OpDescriptor{"ne", binary, code(Binary::ne), 2, "", kComparable, boolean, {}},
    OpDescriptor{"lt", binary, code(Binary::lt), 2, "", kComparable, boolean, {}},
    OpDescriptor{"le", binary, code(Binary::le), 2, "", kComparable, boolean, {}},
    OpDescriptor{"gt", binary, code(Binary::gt), 2, "", kComparable, boolean, {}},
    OpDescriptor{"ge", binary, code(Binary::ge), 2, "", kComparable, boolean, {}},
    OpDescriptor{"where", where, 0, 3, "", kAll, same, {}},
    OpDescriptor{"cast", cast, 0, 1, "dtype", kAll, given, {}},
    OpDescriptor{"neg", unary, code(Unary::neg), 1, "", kNumeric, same, {}},
    OpDescriptor{"abs", unary, code(Unary::abs), 1, "", kNumeric, same, {}},
    OpDescriptor{"relu", unary, code(Unary::relu), 1, "", kNumeric, same, {}},
    OpDescriptor{"exp", unary, code(Unary::exp), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"log", unary, code(Unary::log), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"sqrt", unary, code(Unary::sqrt), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"rsqrt", unary, code(Unary::rsqrt), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"tanh", unary, code(Unary::tanh), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"sigmoid", unary, code(Unary::sigmoid), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"gelu", unary, code(Unary::gelu), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"silu", unary, code(Unary::silu), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"erf", unary, code(Unary::erf), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"floor", unary, code(Unary::floor), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"ceil", unary, code(Unary::ceil), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"round", unary, code(Unary::round), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"sin", unary, code(Unary::sin), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"cos", unary, code(Unary::cos), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"tan", unary, code(Unary::tan), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"asin", unary, code(Unary::asin), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"acos", unary, code(Unary::acos), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"atan", unary, code(Unary::atan), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"sinh", unary, code(Unary::sinh), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"cosh", unary, code(Unary::cosh), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"asinh", unary, code(Unary::asinh), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"acosh", unary, code(Unary::acosh), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"atanh", unary, code(Unary::atanh), 1, "", kFunctionInputs, floating, {}},
    OpDescriptor{"sum", reduce, code(Reduce::sum), 1, "axes, keepdim", kAll, counting, {}},
    OpDescriptor{"mean", reduce, code(Reduce::mean), 1, "axes, keepdim", kAll, floating, {}},
    OpDescriptor{"max", reduce, code(Reduce::max), 1, "axes, keepdim", kNumeric, same, {}},
    OpDescriptor{"min", reduce, code(Reduce::min), 1, "axes, keepdim", kNumeric, same, {}},
    OpDescriptor{"argmax", reduce, code(Reduce::argmax), 1, "axes, keepdim", kNumeric, index, {}},
    OpDescriptor{"softmax", composite, 0, 1, "axis", kFloating, same, kSoftmaxParts},
    OpDescriptor{"log_softmax", composite, 0, 1, "axis", kFloating, same, kLogSoftmaxParts},
    OpDescriptor{"layer_norm", composite, 0, 3, "normalized_shape, eps", kFloating, same,
                 kLayerNormParts},
    OpDescriptor{"rms_norm", composite, 0, 2, "normalized_shape, eps", kFloating, same,
                 kRmsNormParts},
    OpDescriptor{"matmul", matmul, 0, 2, "", kFloating, same, {}},
    OpDescriptor{"conv", composite, 0, 3, "strides, dilations, pads, groups, relu", kFloating, same,
                 kConvParts},
    OpDescriptor{"conv_transpose", composite, 0, 3,
                 "strides, dilations, pads, output_padding, groups", kFloating, same,
                 kConvTransposeParts},
    OpDescriptor{"fused_elementwise", fused, 0, 0, "program", kFloating, same, {}},
    // The layers (docs/training.md). concat has an implementation on every device.
    OpDescriptor{"concat", composite, 0, 0, "axis", kAll, same, {}},
    OpDescriptor{"embedding", composite, 0, 2, "", kFloating, same, kOneHotParts},
    OpDescriptor{"embedding_backward", composite, 0, 2, "num_embeddings", kFloating, same,
                 kOneHotParts},
    OpDescriptor{"cross_entropy", composite, 0, 2, "ignore_index, label_smoothing", kFloating, same,
                 kCrossEntropyParts},
    OpDescriptor{"cross_entropy_backward", composite, 0, 3, "ignore_index, label_smoothing",
                 kFloating, same, kCrossEntropyBackwardParts},
    OpDescriptor{"dropout", composite, 0, 1, "p, seed", kFloating, same, kDropoutParts},
    OpDescriptor{"max_pool", composite, 0, 1, "kernel, strides, dilations, pads, ceil_mode",
                 kFloating, same, kMaxPoolParts},
    OpDescriptor{"avg_pool", composite, 0, 1, "kernel, strides, pads, ceil_mode, count_include_pad",
                 kFloating, same, kAvgPoolParts},
    // x's gradient through the norms (docs/training.md).
    OpDescriptor{"layer_norm_backward", composite, 0, 3, "normalized_shape, eps", kFloating, same,
                 kNormBackwardParts},
    OpDescriptor{"rms_norm_backward", composite, 0, 3, "normalized_shape, eps", kFloating, same,
                 kNormBackwardParts},
};

// Where each family's ops start in kDescriptors, in their enums' order: the reductions follow
// the last unary op.
constexpr size_t kFirstBinary = 0, kWhere = 13, kCast = 14, kFirstUnary = 15,
                 kFirstReduce = kFirstUnary + code(Unary::atanh) + 1,
                 kMatmul = kFirstReduce + code(Reduce::argmax) + 5, kConv = kMatmul + 1,
                 kConvTranspose = kConv + 1, kFused = kConvTranspose + 1, kConcat = kFused + 1;
// The indices above name the ops they are for: an op added before them moves them.
static_assert(kDescriptors[kWhere].name == "where" && kDescriptors[kCast].name == "cast");
static_assert(kDescriptors[kFirstUnary].name == "neg" && kDescriptors[kFirstReduce].name == "sum");
static_assert(kDescriptors[kMatmul].name == "matmul" && kDescriptors[kConv].name == "conv" &&
              kDescriptors[kConvTranspose].name == "conv_transpose");
static_assert(kDescriptors[kFused].name == "fused_elementwise" &&
              kDescriptors[kConcat].name == "concat");

}  // namespace

std::span<const OpDescriptor> op_descriptors() { return kDescriptors; }

const OpDescriptor& descriptor(std::string_view name) {
  for (const OpDescriptor& op : kDescriptors)
    if (op.name == name) return op;
  throw Error(ErrorCode::NotFound, "there is no op named '" + std::string(name) + "'");
}

const OpDescriptor& descriptor(Binary op) { return kDescriptors[kFirstBinary + code(op)]; }
const OpDescriptor& descriptor(Unary op) { return kDescriptors[kFirstUnary + code(op)]; }
const OpDescriptor& descriptor(Reduce op) { return kDescriptors[kFirstReduce + code(op)]; }
const OpDescriptor& where_descriptor() { return kDescriptors[kWhere]; }
const OpDescriptor& cast_descriptor() { return kDescriptors[kCast]; }
const OpDescriptor& matmul_descriptor() { return kDescriptors[kMatmul]; }
const OpDescriptor& conv_descriptor() { return kDescriptors[kConv]; }
const OpDescriptor& conv_transpose_descriptor() { return kDescriptors[kConvTranspose]; }
const OpDescriptor& fused_descriptor() { return kDescriptors[kFused]; }
const OpDescriptor& concat_descriptor() { return kDescriptors[kConcat]; }

DType result_dtype(const OpDescriptor& op, DType input) {
  switch (op.result) {
    case same:
    case given:
      return input;
    case boolean:
      return DType::boolean;
    case index:
      return DType::i64;
    case counting:  // u64's sums too large for i64 stay u64, as in PyTorch
      return kFloating.has(input) || input == DType::u64 ? input : DType::i64;
    case floating:
      return kFloating.has(input) ? input : DType::f32;
  }
  return input;
}

std::string DTypeSet::describe() const {
  std::string out;
  size_t left = 0;
  for (DType dtype : kAllDTypes) left += has(dtype);
  for (DType dtype : kAllDTypes) {
    if (!has(dtype)) continue;
    out += to_string(dtype);
    --left;
    out += left > 1 ? ", " : left == 1 ? " and " : "";
  }
  return out.empty() ? "no dtype" : out;
}

}  // namespace hal::ops
