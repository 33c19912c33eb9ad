// What the collectives tests compare against: each rank's input values, made on the host, and
// the reduction over ranks computed here in double arithmetic, NumPy-style, independent of
// hal's code. Values are small integers, so that every sum, product and mean of up to 8 ranks
// is exact in every dtype (f16 and bf16 included) and the comparison can be exact. And the
// scoped settings (HAL_DIST_DEBUG ...) the tests of every engine set.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "hal/dist.hpp"
#include "hal/hal.hpp"
#include "tensor/element_codec.hpp"

namespace hal::test {

// Sets an environment variable for one scope, then restores the environment's (a run may set
// it): the settings are read at each call.
class ScopedSetting {
 public:
  ScopedSetting(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedSetting() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// HAL_DIST_DEBUG for one scope.
class DebugLevel : public ScopedSetting {
 public:
  explicit DebugLevel(const char* level) : ScopedSetting("HAL_DIST_DEBUG", level) {}
};

inline const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> list = {DType::f32, DType::f16, DType::bf16,
                                          DType::f64, DType::i8,  DType::u8,
                                          DType::i32, DType::i64, DType::boolean};
  return list;
}

// all_dtypes() and the integers sim devices and NCCL lack (16-bit, and 32- and 64-bit
// unsigned), which the CPU holds.
inline const std::vector<DType>& host_dtypes() {
  static const std::vector<DType> list = [] {
    std::vector<DType> out = all_dtypes();
    out.insert(out.end(), {DType::i16, DType::u16, DType::u32, DType::u64});
    return out;
  }();
  return list;
}

inline const std::vector<dist::ReduceOp>& all_ops() {
  using dist::ReduceOp;
  static const std::vector<ReduceOp> list = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min,
                                             ReduceOp::max, ReduceOp::avg};
  return list;
}

inline bool floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16;
}

// Element i of rank r's input: -2..2 (0..3 unsigned, 0..1 bool), varied over both.
inline double value_of(int rank, int64_t i, DType dtype, int salt = 0) {
  const int64_t mix = (rank * 7 + i * 3 + salt * 5) % 5;
  if (dtype == DType::boolean) return mix % 2 == 0 ? 1.0 : 0.0;  // mostly true, some false
  if (is_integer(dtype) && !is_signed_integer(dtype)) return static_cast<double>(mix % 4);
  return static_cast<double>(mix - 2);
}

inline std::vector<double> values(int rank, int64_t count, DType dtype, int salt = 0) {
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = value_of(rank, i, dtype, salt);
  return out;
}

inline double fold(dist::ReduceOp op, DType dtype, double a, double b) {
  using dist::ReduceOp;
  if (dtype == DType::boolean) {
    const bool any = op == ReduceOp::sum || op == ReduceOp::max;
    return any ? ((a != 0 || b != 0) ? 1 : 0) : ((a != 0 && b != 0) ? 1 : 0);
  }
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return a + b;
    case ReduceOp::prod:
      return a * b;
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::max:
      return std::max(a, b);
  }
  return a;
}

// The reduction over `ranks` of values(r, count, dtype, salt), element by element.
inline std::vector<double> reduced(dist::ReduceOp op, DType dtype, int ranks, int64_t count,
                                   int salt = 0) {
  std::vector<double> total = values(0, count, dtype, salt);
  for (int r = 1; r < ranks; ++r) {
    const std::vector<double> next = values(r, count, dtype, salt);
    for (size_t i = 0; i < total.size(); ++i) total[i] = fold(op, dtype, total[i], next[i]);
  }
  if (op == dist::ReduceOp::avg)
    for (double& v : total) v /= ranks;
  return total;
}

inline std::vector<unsigned char> encoded(const std::vector<double>& numbers, DType dtype) {
  std::vector<unsigned char> bytes(numbers.size() * size_of(dtype));
  for (size_t i = 0; i < numbers.size(); ++i)
    tensor::encode(numbers[i], dtype, bytes.data() + i * size_of(dtype), "test");
  return bytes;
}

inline Tensor tensor_of(const std::vector<double>& numbers, DType dtype, Stream& stream) {
  const std::vector<unsigned char> bytes = encoded(numbers, dtype);
  return from_host(bytes.data(), {static_cast<int64_t>(numbers.size())}, dtype, stream);
}

// The tensor's elements as doubles, after waiting for `stream`.
inline std::vector<double> read(const Tensor& t, Stream& stream) {
  std::vector<unsigned char> bytes(t.nbytes());
  if (!bytes.empty()) t.copy_to_host(bytes.data(), stream);
  stream.synchronize();
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = tensor::decode(t.dtype(), bytes.data() + i * size_of(t.dtype()));
  return out;
}

// Whether `got` is `expected`: exactly, or to half precision's rounding for f16 and bf16
// (avg over a rank count that is not a power of two).
inline ::testing::AssertionResult same_values(const std::vector<double>& got,
                                              const std::vector<double>& expected, DType dtype) {
  if (got.size() != expected.size())
    return ::testing::AssertionFailure() << got.size() << " elements, expected " << expected.size();
  const double tolerance = dtype == DType::bf16 ? 1e-2 : dtype == DType::f16 ? 1e-3 : 1e-6;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - expected[i]) > tolerance * std::max(1.0, std::fabs(expected[i])))
      return ::testing::AssertionFailure()
             << "element " << i << " is " << got[i] << ", expected " << expected[i];
  return ::testing::AssertionSuccess();
}

}  // namespace hal::test
