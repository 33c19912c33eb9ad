// Tensors from host numbers and their numbers back, for the op suites: each element held as a
// double, converted with the library's own element codec (f16 and bf16 round to nearest even).
#pragma once

#include <cmath>
#include <random>
#include <string>
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

// `value` rounded to `dtype` as the device stores it.
inline double rounded(double value, DType dtype) {
  if (std::isnan(value)) return value;
  switch (dtype) {
    case DType::f32:
      return static_cast<float>(value);
    case DType::f16:
      return tensor::f16_to_f32(tensor::f32_to_f16(static_cast<float>(value)));
    case DType::bf16:
      return tensor::bf16_to_f32(tensor::f32_to_bf16(static_cast<float>(value)));
    default:
      return value;
  }
}

inline bool integral(DType dtype) {
  return dtype == DType::i8 || dtype == DType::u8 || dtype == DType::i32 || dtype == DType::i64;
}

// Inputs: integers in [-20, 20] (no zero if `nonzero`), or reals in [low, high) exact in the
// dtype.
inline std::vector<double> inputs(size_t n, DType dtype, uint32_t seed, double low = -3.0,
                                  double high = 3.0, bool nonzero = false) {
  std::mt19937 random(seed);
  std::vector<double> out(n);
  for (double& v : out) {
    if (integral(dtype)) {
      do v = std::uniform_int_distribution<int>(-20, 20)(random);
      while (nonzero && v == 0);
    } else {
      v = rounded(std::uniform_real_distribution<double>(low, high)(random), dtype);
    }
  }
  return out;
}

// The tolerance for a result of `dtype` whose exact value is `want`: a few units in the last
// place of the dtype, relative to max(1, |want|).
inline double tolerance(DType dtype, double want) {
  const double scale = std::max(1.0, std::fabs(want));
  switch (dtype) {
    case DType::f32:
      return 1e-5 * scale;
    case DType::f64:
      return 1e-12 * scale;
    case DType::f16:
      return 2e-3 * scale;
    case DType::bf16:
      return 1.6e-2 * scale;
    default:
      return 0.0;
  }
}

inline void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                         DType dtype, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << what << " element " << i;
      continue;
    }
    if (std::isinf(want[i])) {
      ASSERT_EQ(got[i], want[i]) << what << " element " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], tolerance(dtype, want[i])) << what << " element " << i;
  }
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

// The dtypes ops compute in on `device`.
inline std::vector<DType> compute_dtypes(const Device& device) {
  std::vector<DType> out{DType::f32, DType::i32, DType::i64};
  if (device.info().has_feature(feature::kFp64)) out.push_back(DType::f64);
  return out;
}

}  // namespace hal::test
