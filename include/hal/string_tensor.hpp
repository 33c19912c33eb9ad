// A tensor of ONNX's STRING element type. Strings are not a DType: no device holds them, so a
// string tensor always lives on the host, and the model ops that read or make strings
// (StringNormalizer, TfIdfVectorizer, Cast to and from STRING) run on the host whatever device
// the model runs on. Part of hal_model (hal/model.hpp, hal/npy.hpp).
#pragma once

#include <string>
#include <vector>

#include "hal/tensor.hpp"

namespace hal {

struct StringTensor {
  Shape shape;
  std::vector<std::string> data;  // numel(shape) strings, row-major; UTF-8 by ONNX's convention

  int64_t numel() const { return hal::numel(shape); }
  bool operator==(const StringTensor&) const = default;
};

// "string[2, 3]", as Tensor::describe() names a tensor.
std::string describe(const StringTensor& tensor);

}  // namespace hal
