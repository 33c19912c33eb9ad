// Gradient checks: a function of tensors, its inputs drawn from a fixed seed, and two checks of
// backward's gradients of sum(f(inputs) * weights) (weights fixed too, so that every element of
// the Jacobian counts): against central finite differences in f64 on cpu:0, and on any device
// against cpu:0's gradients.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hal/hal.hpp"

namespace hal::test {

struct InputSpec {
  Shape shape;
  double low = -1, high = 1;
  bool differentiable = true;  // false: passed in, not differentiated (indices, masks)
  DType dtype = DType::f64;    // of a non-differentiable input (i64 indices); the others follow
                               // the check's dtype
};

using GradFn = std::function<Tensor(const std::vector<Tensor>& inputs, Stream& stream)>;

struct GradCase {
  std::string name;
  std::vector<InputSpec> inputs;
  GradFn fn;
};

// The host values of each input (integers for integer inputs), from the case's name as seed.
std::vector<std::vector<double>> input_values(const GradCase& c);

// backward's gradient of each differentiable input, on `device` with inputs in `dtype`
// (floating inputs; others keep theirs), as doubles. CPU fallback is the caller's to allow.
std::vector<std::vector<double>> backward_gradients(const GradCase& c, const Device& device,
                                                    DType dtype);

// The same by central differences on cpu:0 in f64 (step h relative to each value's size).
std::vector<std::vector<double>> numeric_gradients(const GradCase& c, double h = 1e-6);

// EXPECT that `got` matches `want` within `tolerance` times the larger of 1 and the largest
// magnitude of `want`'s input, naming the case, input and element.
void expect_close(const std::string& what, const std::vector<std::vector<double>>& got,
                  const std::vector<std::vector<double>>& want, double tolerance);

}  // namespace hal::test
