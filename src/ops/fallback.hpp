// Running an op on cpu:0 when its device cannot, for callers that allow it (CpuFallback).
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "hal/tensor.hpp"

namespace hal::ops {

// An op's inputs as its caller holds them: run_op copies none of them unless it falls back (a
// vector of tensor copies per call was most of a small op's allocations).
using OpInputs = std::span<const Tensor* const>;
using OpBody = std::function<Tensor(OpInputs inputs, Stream& stream)>;

// Runs `body` on `inputs` and `stream`. If it throws Unsupported, fallback is allowed and the
// stream is not cpu:0's, runs it again on copies of the inputs on cpu:0 and returns its result
// copied back to the stream's device, logging a warning that it did. Only the outermost op
// falls back: ops built from others move their data once. Undefined inputs stay undefined.
Tensor run_op(std::string_view op, OpInputs inputs, Stream& stream, const OpBody& body);

// The same for an op whose body takes its inputs as tensors (the larger layer ops, where one
// vector per call does not matter).
Tensor run_op(std::string_view op, const std::vector<Tensor>& inputs, Stream& stream,
              const std::function<Tensor(const std::vector<Tensor>&, Stream&)>& body);

}  // namespace hal::ops
