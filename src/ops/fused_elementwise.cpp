// fused_elementwise: the program checked and compiled to op codes, the inputs broadcast and
// promoted together, and the fused kernel the op table plans for the device.
#include <string>

#include "autograd/record.hpp"
#include "hal/error.hpp"
#include "hal/ops.hpp"
#include "ops/elementwise.hpp"
#include "ops/fallback.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_table.hpp"

namespace hal {
namespace ops {
namespace {

[[noreturn]] void malformed(size_t step, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument,
              "fused_elementwise: step " + std::to_string(step) + " " + why);
}

// Every step an arithmetic op or element function with operands defined before it; every
// input and every step but the last read by a later step (so that all flow into the result,
// whose shape is then the inputs' broadcast).
FusedProgram compile(const ElementwiseProgram& program, size_t inputs) {
  if (program.steps.empty())
    throw Error(ErrorCode::InvalidArgument, "fused_elementwise: the program has no steps");
  if (inputs == 0 || inputs > kMaxFusedInputs)
    throw Error(ErrorCode::InvalidArgument, "fused_elementwise: " + std::to_string(inputs) +
                                                " inputs (it takes 1 to " +
                                                std::to_string(kMaxFusedInputs) + ")");
  FusedProgram out;
  out.inputs = inputs;
  std::vector<bool> read(inputs + program.steps.size(), false);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ElementwiseProgram::Step& step = program.steps[s];
    const OpDescriptor* op = nullptr;
    for (const OpDescriptor& candidate : op_descriptors())
      if (candidate.name == step.op) op = &candidate;
    if (!op || (op->family != OpFamily::binary && op->family != OpFamily::unary) ||
        (op->family == OpFamily::binary && is_comparison(static_cast<Binary>(op->code))))
      malformed(s, "is '" + step.op +
                       "', which is no arithmetic op or element function (add, mul, relu, "
                       "tanh ...)");
    if (step.operands.size() != op->arity)
      malformed(s, "(" + step.op + ") has " + std::to_string(step.operands.size()) +
                       " operands, not " + std::to_string(op->arity));
    FusedStep compiled{op->family == OpFamily::binary, op->code, 0, 0};
    for (size_t o = 0; o < step.operands.size(); ++o) {
      const int operand = step.operands[o];
      if (operand < 0 || static_cast<size_t>(operand) >= inputs + s)
        malformed(s, "(" + step.op + ") reads register " + std::to_string(operand) +
                         ": an input is 0 to " + std::to_string(inputs - 1) +
                         ", an earlier step's result " + std::to_string(inputs) + " on");
      read[static_cast<size_t>(operand)] = true;
      (o == 0 ? compiled.a : compiled.b) = static_cast<uint16_t>(operand);
    }
    out.steps.push_back(compiled);
  }
  for (size_t r = 0; r + 1 < read.size(); ++r)
    if (!read[r])
      throw Error(ErrorCode::InvalidArgument,
                  "fused_elementwise: " +
                      (r < inputs ? "input " + std::to_string(r)
                                  : "the result of step " + std::to_string(r - inputs)) +
                      " is never read");
  return out;
}

Tensor fused_of(const ElementwiseProgram& program, const std::vector<Tensor>& inputs_in,
                Stream& stream) {
  const std::string_view name = fused_descriptor().name;
  const FusedProgram compiled = compile(program, inputs_in.size());
  for (const Tensor& input : inputs_in) {
    check_defined(name, input);
    check_same_device(name, inputs_in[0], input);
  }
  check_stream(name, inputs_in[0], stream);
  Shape shape = inputs_in[0].shape();
  DType dtype = inputs_in[0].dtype();
  for (size_t i = 1; i < inputs_in.size(); ++i) {
    try {
      shape = broadcast_shapes(shape, inputs_in[i].shape());
    } catch (const Error& error) {
      throw Error(ErrorCode::InvalidArgument,
                  "fused_elementwise: input " + std::to_string(i) + ", " + inputs_in[i].describe() +
                      ", does not broadcast with the others (" + error.message() + ")");
    }
    dtype = promote_types(dtype, inputs_in[i].dtype());
  }
  // Integers and bools only: computed in f32, as their functions (exp of i32) are.
  if (!dtypes::kFloating.has(dtype)) dtype = DType::f32;
  const OpPlan plan = plan_or_throw(fused_descriptor(), dtype, {&inputs_in[0]});
  std::vector<Tensor> inputs;
  for (const Tensor& input : inputs_in)
    inputs.push_back(input.dtype() == plan.compute ? input : cast_of(input, plan.compute, stream));
  Tensor out = empty_beside(inputs[0], shape, plan.compute);
  if (out.numel() > 0)
    std::get<FusedKernel>(plan.implementation->kernel)(compiled, inputs, out,
                                                       layout_of(inputs, shape), stream);
  return as_result(std::move(out), plan, stream);
}

}  // namespace
}  // namespace ops

Tensor fused_elementwise(const ElementwiseProgram& program, const std::vector<Tensor>& inputs,
                         Stream& stream) {
  const auto run = [&] {
    std::vector<const Tensor*> operands;
    operands.reserve(inputs.size());
    for (const Tensor& input : inputs) operands.push_back(&input);
    return ops::run_op("fused_elementwise", operands, stream,
                       [&program](ops::OpInputs in, Stream& s) {
                         std::vector<Tensor> tensors;
                         tensors.reserve(in.size());
                         for (const Tensor* input : in) tensors.push_back(*input);
                         return ops::fused_of(program, tensors, s);
                       });
  };
  if (!autograd::recording(inputs)) return run();
  Tensor out;
  {
    const NoGrad untracked;
    out = run();
  }
  return autograd::record_fused(inputs, std::move(out));
}

}  // namespace hal
