// Tensors from host numbers and their numbers back, for the cases that check ops against plain
// loops on the host: each element held as a double, converted with hal's element codec (f16
// and bf16 round to nearest even), which element_codec_test checks without a device.
#pragma once

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "case.hpp"
#include "hal/ops.hpp"
#include "tensor/element_codec.hpp"

namespace hal::cts {

inline Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype,
                   Stream& stream) {
  std::vector<unsigned char> bytes(values.size() * size_of(dtype));
  for (size_t i = 0; i < values.size(); ++i)
    tensor::encode(values[i], dtype, bytes.data() + i * size_of(dtype), "cts");
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

inline bool integral(DType dtype) { return is_integer(dtype); }
inline bool unsigned_integral(DType dtype) {
  return is_integer(dtype) && !is_signed_integer(dtype);
}

// Inputs: integers in [-20, 20] ([0, 40] for unsigned types; no zero if `nonzero`), or reals in
// [low, high) exact in the dtype.
inline std::vector<double> inputs(size_t n, DType dtype, uint32_t seed, double low = -3.0,
                                  double high = 3.0, bool nonzero = false) {
  std::mt19937 random(seed);
  std::vector<double> out(n);
  for (double& v : out) {
    if (integral(dtype)) {
      const int shift = unsigned_integral(dtype) ? 20 : 0;
      do v = std::uniform_int_distribution<int>(-20, 20)(random) + shift;
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

inline void check_close(const std::vector<double>& got, const std::vector<double>& want,
                        DType dtype, const std::string& what) {
  check(got.size() == want.size(), what + ": " + std::to_string(got.size()) + " elements, " +
                                       std::to_string(want.size()) + " expected");
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string at = what + " element " + std::to_string(i) + " is " +
                           std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
    if (std::isnan(want[i]))
      check(std::isnan(got[i]), at);
    else if (std::isinf(want[i]))
      check(got[i] == want[i], at);
    else
      check(std::fabs(got[i] - want[i]) <= tolerance(dtype, want[i]), at);
  }
}

inline std::string describe(const std::string& op, DType dtype) {
  return op + " " + std::string(to_string(dtype));
}

// Runs body(dtype) for each of `dtypes` in which the device's op table lists every op of `ops`,
// with CPU fallback off; NotSupported when it lists none of them.
inline void for_listed(const Device& d, const std::vector<std::string>& ops,
                       const std::vector<DType>& dtypes, const std::function<void(DType)>& body) {
  CpuFallback no_fallback(false);
  bool ran = false;
  for (DType dtype : dtypes) {
    bool listed = true;
    for (const std::string& op : ops) listed = listed && supports_op(d, op, dtype);
    if (!listed) continue;
    body(dtype);
    ran = true;
  }
  if (ran) return;
  std::string names;
  for (const std::string& op : ops) names += (names.empty() ? "" : ", ") + op;
  throw NotSupported("hal ops lists " + names + " in none of the dtypes this case tries");
}

// The dtypes ops compute in everywhere, f64 where the device has it.
inline std::vector<DType> compute_dtypes() {
  return {DType::f32, DType::i32, DType::i64, DType::f64};
}

}  // namespace hal::cts
