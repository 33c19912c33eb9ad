// An elementwise program (hal::ElementwiseProgram) evaluated where it runs best: one
// fused_elementwise pass where the device has that kernel, its steps as separate ops elsewhere.
// The optimizers write their updates as such programs.
#pragma once

#include <vector>

#include "hal/ops.hpp"

namespace hal::train {

Tensor evaluate(const ElementwiseProgram& program, const std::vector<Tensor>& inputs,
                Stream& stream);

}  // namespace hal::train
