// Running an op on cpu:0 when its device cannot, for callers that allow it (CpuFallback).
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "hal/tensor.hpp"

namespace hal::ops {

using OpBody = std::function<Tensor(const std::vector<Tensor>& inputs, Stream& stream)>;

// Runs `body` on `inputs` and `stream`. If it throws Unsupported, fallback is allowed and the
// stream is not cpu:0's, runs it again on copies of the inputs on cpu:0 and returns its result
// copied back to the stream's device, logging a warning that it did. Only the outermost op
// falls back: ops built from others move their data once. Undefined inputs stay undefined.
Tensor run_op(std::string_view op, std::vector<Tensor> inputs, Stream& stream, const OpBody& body);

}  // namespace hal::ops
