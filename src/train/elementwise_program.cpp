#include "train/elementwise_program.hpp"

#include <map>
#include <string>

#include "hal/error.hpp"

namespace hal::train {
namespace {

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, Stream&);
using UnaryFn = Tensor (*)(const Tensor&, Stream&);

// The ops an optimizer's program uses, by name.
const std::map<std::string, BinaryFn, std::less<>>& binaries() {
  static const std::map<std::string, BinaryFn, std::less<>> table{
      {"add", add}, {"sub", sub},         {"mul", mul},
      {"div", div}, {"maximum", maximum}, {"minimum", minimum}};
  return table;
}
const std::map<std::string, UnaryFn, std::less<>>& unaries() {
  static const std::map<std::string, UnaryFn, std::less<>> table{
      {"neg", neg}, {"sqrt", sqrt}, {"rsqrt", rsqrt}, {"abs", abs}};
  return table;
}

}  // namespace

Tensor evaluate(const ElementwiseProgram& program, const std::vector<Tensor>& inputs,
                Stream& stream) {
  if (supports_op(stream.device(), "fused_elementwise", inputs.front().dtype()))
    return fused_elementwise(program, inputs, stream);
  std::vector<Tensor> registers = inputs;
  for (const ElementwiseProgram::Step& step : program.steps) {
    const auto at = [&](size_t i) {
      return registers.at(static_cast<size_t>(step.operands.at(i)));
    };
    if (const auto b = binaries().find(step.op); b != binaries().end())
      registers.push_back(b->second(at(0), at(1), stream));
    else if (const auto u = unaries().find(step.op); u != unaries().end())
      registers.push_back(u->second(at(0), stream));
    else
      throw Error(ErrorCode::Internal, "an optimizer's program uses '" + step.op + "'");
  }
  return registers.back();
}

}  // namespace hal::train
