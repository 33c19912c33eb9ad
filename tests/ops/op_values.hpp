// Tensors from host numbers and their numbers back, for the op suites: each element held as a
// double, converted with the library's own element codec (f16 and bf16 round to nearest even).
// The conformance cases that check values have their own (cts/values.hpp).
#pragma once

#include <vector>

#include "device_suite.hpp"
#include "tensor/element_codec.hpp"

namespace hal::test {

inline Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype,
                   Stream& stream) {
  std::vector<unsigned char> bytes(values.size() * size_of(dtype));
  for (size_t i = 0; i < values.size(); ++i)
    tensor::encode(values[i], dtype, bytes.data() + i * size_of(dtype), "test");
  return from_host(bytes.data(), shape, dtype, stream);
}

inline std::vector<double> numbers(const Tensor& t, Stream& stream) {
  std::vector<unsigned char> bytes(t.nbytes());
  t.copy_to_host(bytes.data(), stream);
  stream.synchronize();
  std::vector<double> out;
  for (size_t at = 0; at < bytes.size(); at += t.element_size())
    out.push_back(tensor::decode(t.dtype(), bytes.data() + at));
  return out;
}

// The devices' kernels: suites of ops skip devices without them.
inline bool runs_kernels(const Device& device) {
  return device.info().has_feature(feature::kHostKernels) ||
         device.info().has_feature(feature::kPortableKernels);
}

// Devices that run ops themselves, without kernels (plugins such as sim).
inline bool has_builtin_ops(const Device& device) {
  return device.info().has_feature(feature::kBuiltinBinary) ||
         device.info().has_feature(feature::kBuiltinUnary) ||
         device.info().has_feature(feature::kBuiltinReduce);
}

}  // namespace hal::test
