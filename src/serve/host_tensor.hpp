// A tensor's elements on the host, as a request brings them and a response returns them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "hal/dtype.hpp"
#include "hal/tensor.hpp"

namespace hal::serve {

struct HostTensor {
  DType dtype = DType::f32;
  Shape shape;
  std::string bytes;  // row-major elements (bool as one byte each)
};

using HostTensors = std::map<std::string, HostTensor>;

int64_t element_count(const Shape& shape);

}  // namespace hal::serve
