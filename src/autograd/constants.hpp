// Scalar constants for backward rules (1, 0.5, eps ...): 0-d tensors made once per device, dtype
// and value and shared, so that a rule's constants cost no allocation or launch after the first
// backward. Safe to share because no op writes into its inputs.
#pragma once

#include "hal/tensor.hpp"

namespace hal::autograd {

// `value` as a 0-d tensor of `dtype` on the stream's device, ready for `stream`'s later work:
// the first request fills it on `stream` and records an event, which a request from another
// stream waits for until the fill is seen complete. Nothing here blocks the host, so a backward
// may run from a host callback of its own stream. Up to a bounded number of values per device
// are kept, beyond which each request makes a new tensor.
Tensor constant(double value, DType dtype, Stream& stream);

}  // namespace hal::autograd
