// Elementwise programs (hal::ElementwiseProgram) inside hal: one fused_elementwise pass where the
// device has that kernel, the steps as separate ops elsewhere; and a builder that names a
// program's values, so that a chain reads as the formula it computes. Backward rules and
// optimizer updates are written this way: a gelu gradient is one pass over memory, not eleven.
#pragma once

#include <string>
#include <vector>

#include "hal/ops.hpp"

namespace hal::ops {

// The program's result: fused where `stream`'s device runs fused_elementwise for the first
// input's dtype, else step by step (the same ops, each its own pass).
Tensor evaluate(const ElementwiseProgram& program, const std::vector<Tensor>& inputs,
                Stream& stream);

// Builds a program from named values; an input given twice (the same tensor: a shared
// constant) is read once.
class ProgramBuilder {
 public:
  struct Value {
    int id;  // an input: -1 - its index; a step: its index
  };
  Value input(const Tensor& tensor);
  Value apply(const char* op, Value x);
  Value apply(const char* op, Value a, Value b);
  // Evaluates the program whose result is `result` (the last step applied).
  Tensor run(Value result, Stream& stream);

 private:
  std::vector<Tensor> inputs_;
  ElementwiseProgram program_;
};

}  // namespace hal::ops
