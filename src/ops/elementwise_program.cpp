#include "ops/elementwise_program.hpp"

#include <iterator>

#include "hal/error.hpp"
#include "ops/elementwise.hpp"
#include "ops/op_table.hpp"

namespace hal::ops {
namespace {

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, Stream&);
using UnaryFn = Tensor (*)(const Tensor&, Stream&);

// The public ops, not the internal entry points: they fall back to cpu:0 where that is allowed
// and the device lacks the op, as a chain written op by op does.
BinaryFn public_binary(Binary op) {
  // The arithmetic ops, in the order of ops::Binary (the comparisons after them have none).
  constexpr BinaryFn kFunctions[] = {add, sub, mul, div, maximum, minimum, pow};
  static_assert(std::size(kFunctions) == static_cast<size_t>(Binary::pow) + 1);
  return static_cast<size_t>(op) < std::size(kFunctions) ? kFunctions[static_cast<size_t>(op)]
                                                         : nullptr;
}

UnaryFn public_unary(Unary op) {
  // In the order of ops::Unary.
  constexpr UnaryFn kFunctions[] = {neg,  abs,  relu, exp,   log,  sqrt,  rsqrt, tanh, sigmoid,
                                    gelu, silu, erf,  floor, ceil, round, sin,   cos,  tan,
                                    asin, acos, atan, sinh,  cosh, asinh, acosh, atanh};
  static_assert(std::size(kFunctions) == static_cast<size_t>(Unary::atanh) + 1);
  return kFunctions[static_cast<size_t>(op)];
}

}  // namespace

Tensor evaluate(const ElementwiseProgram& program, const std::vector<Tensor>& inputs,
                Stream& stream) {
  if (supports_op(stream.device(), "fused_elementwise", inputs.front().dtype()))
    return fused_elementwise(program, inputs, stream);
  std::vector<Tensor> registers = inputs;
  for (const ElementwiseProgram::Step& step : program.steps) {
    const OpDescriptor& op = descriptor(step.op);
    const auto at = [&](size_t i) {
      return registers.at(static_cast<size_t>(step.operands.at(i)));
    };
    const BinaryFn binary =
        op.family == OpFamily::binary ? public_binary(static_cast<Binary>(op.code)) : nullptr;
    if (binary)
      registers.push_back(binary(at(0), at(1), stream));
    else if (op.family == OpFamily::unary)
      registers.push_back(public_unary(static_cast<Unary>(op.code))(at(0), stream));
    else
      throw Error(ErrorCode::Internal, "an elementwise program uses '" + step.op + "'");
  }
  return registers.back();
}

ProgramBuilder::Value ProgramBuilder::input(const Tensor& tensor) {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].storage().impl() == tensor.storage().impl() &&
        inputs_[i].offset() == tensor.offset() && inputs_[i].shape() == tensor.shape() &&
        inputs_[i].strides() == tensor.strides() && inputs_[i].dtype() == tensor.dtype())
      return {-1 - static_cast<int>(i)};
  inputs_.push_back(tensor);
  return {-static_cast<int>(inputs_.size())};
}

ProgramBuilder::Value ProgramBuilder::apply(const char* op, Value x) {
  program_.steps.push_back({op, {x.id}});
  return {static_cast<int>(program_.steps.size()) - 1};
}

ProgramBuilder::Value ProgramBuilder::apply(const char* op, Value a, Value b) {
  program_.steps.push_back({op, {a.id, b.id}});
  return {static_cast<int>(program_.steps.size()) - 1};
}

Tensor ProgramBuilder::run(Value result, Stream& stream) {
  if (result.id != static_cast<int>(program_.steps.size()) - 1)
    throw Error(ErrorCode::Internal, "ProgramBuilder::run: the result is not the last step");
  // Registers: the inputs, then the steps' results.
  const int inputs = static_cast<int>(inputs_.size());
  ElementwiseProgram program = program_;
  for (ElementwiseProgram::Step& step : program.steps)
    for (int& operand : step.operands) operand = operand < 0 ? -1 - operand : inputs + operand;
  return evaluate(program, inputs_, stream);
}

}  // namespace hal::ops
