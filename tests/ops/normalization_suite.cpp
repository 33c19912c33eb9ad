// softmax, log-softmax, layer norm and RMS norm on every device with kernels, against double
// precision loops on the host, including inputs large enough to overflow exp() unshifted.
#include <cmath>

#include "op_values.hpp"

namespace hal::test {
namespace {

class NormalizationSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs no kernels: ReduceWithoutKernels covers it";
  }
  std::vector<DType> dtypes() const {
    std::vector<DType> out{DType::f32, DType::f16, DType::bf16};
    if (device().info().has_feature(feature::kFp64)) out.push_back(DType::f64);
    return out;
  }
  Stream stream = device().create_stream();
};

// Applies fn to each line of `shape` along `axis` (values row-major), in place.
template <class Fn>
void along_axis(std::vector<double>& values, const Shape& shape, size_t axis, Fn fn) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t size = shape[axis], outer = numel(shape) / (size * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<double*> line;
      for (int64_t k = 0; k < size; ++k)
        line.push_back(&values[static_cast<size_t>((o * size + k) * inner + i)]);
      fn(line);
    }
}

TEST_P(NormalizationSuite, SoftmaxAndLogSoftmaxAreStable) {
  const std::pair<Shape, int64_t> cases[] = {{{4, 10}, -1}, {{3, 5, 2}, 1}, {{6}, 0}};
  for (DType dtype : dtypes())
    for (const auto& [shape, axis] : cases)
      for (bool logarithm : {false, true}) {
        // exp(90) overflows f32: only a shifted softmax survives this range.
        const auto x = inputs(static_cast<size_t>(numel(shape)), dtype, 31, -90, 90);
        const Tensor in = make(x, shape, dtype, stream);
        const Tensor out = logarithm ? log_softmax(in, axis, stream) : softmax(in, axis, stream);
        std::vector<double> want = x;
        along_axis(want, shape, static_cast<size_t>(axis < 0 ? axis + int64_t(shape.size()) : axis),
                   [&](std::vector<double*>& line) {
                     double top = -INFINITY, total = 0;
                     for (double* v : line) top = std::max(top, *v);
                     for (double* v : line) total += std::exp(*v - top);
                     for (double* v : line)
                       *v = logarithm ? *v - top - std::log(total) : std::exp(*v - top) / total;
                   });
        for (double& v : want) v = rounded(v, dtype);
        // log-softmax values reach -180: relative tolerance.
        expect_close(numbers(out, stream), want, dtype,
                     std::string(logarithm ? "log_softmax " : "softmax ") +
                         std::string(to_string(dtype)) + " " + to_string(shape));
      }
}

TEST_P(NormalizationSuite, LayerNormAndRmsNorm) {
  const Shape shape{4, 6, 8};
  for (DType dtype : dtypes())
    for (const Shape& normalized : {Shape{8}, Shape{6, 8}}) {
      const auto x = inputs(static_cast<size_t>(numel(shape)), dtype, 32, -4, 4);
      const auto w = inputs(static_cast<size_t>(numel(normalized)), dtype, 33, 0.5, 2);
      const auto b = inputs(static_cast<size_t>(numel(normalized)), dtype, 34, -1, 1);
      const Tensor in = make(x, shape, dtype, stream), weight = make(w, normalized, dtype, stream),
                   bias = make(b, normalized, dtype, stream);
      const auto group = static_cast<size_t>(numel(normalized));
      std::vector<double> want_layer(x.size()), want_rms(x.size());
      for (size_t start = 0; start < x.size(); start += group) {
        double m = 0, var = 0, squares = 0;
        for (size_t i = 0; i < group; ++i) m += x[start + i] / static_cast<double>(group);
        for (size_t i = 0; i < group; ++i) {
          var += (x[start + i] - m) * (x[start + i] - m) / static_cast<double>(group);
          squares += x[start + i] * x[start + i] / static_cast<double>(group);
        }
        for (size_t i = 0; i < group; ++i) {
          want_layer[start + i] =
              rounded((x[start + i] - m) / std::sqrt(var + 1e-5) * w[i] + b[i], dtype);
          want_rms[start + i] = rounded(x[start + i] / std::sqrt(squares + 1e-5) * w[i], dtype);
        }
      }
      const std::string what = std::string(to_string(dtype)) + " over " + to_string(normalized);
      expect_close(numbers(layer_norm(in, normalized, weight, bias, 1e-5, stream), stream),
                   want_layer, dtype, "layer_norm " + what);
      expect_close(numbers(rms_norm(in, normalized, weight, 1e-5, stream), stream), want_rms, dtype,
                   "rms_norm " + what);
      // Without weight and bias: plain normalisation, mean 0 and variance 1 per group.
      const auto plain = numbers(layer_norm(in, normalized, Tensor(), Tensor(), 0, stream), stream);
      double total = 0;
      for (size_t i = 0; i < group; ++i) total += plain[i];
      EXPECT_NEAR(total / static_cast<double>(group), 0.0, 50 * tolerance(dtype, 1)) << what;
    }
}

TEST_P(NormalizationSuite, BadArgumentsAreRefusedByName) {
  const Tensor x = zeros({2, 3}, DType::f32, stream);
  expect_error([&] { softmax(x, 2, stream); }, ErrorCode::InvalidArgument,
               {"softmax", "axis 2", "out of range"});
  expect_error([&] { log_softmax(zeros({2}, DType::i32, stream), 0, stream); },
               ErrorCode::Unsupported, {"log_softmax of i32[2] on " + id(), "no kernel for i32"});
  expect_error([&] { layer_norm(x, {2}, Tensor(), Tensor(), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"layer_norm", "f32[2, 3]", "[2]", "trailing"});
  expect_error([&] { rms_norm(x, {}, Tensor(), 1e-5, stream); }, ErrorCode::InvalidArgument,
               {"rms_norm", "trailing"});
  expect_error([&] { layer_norm(x, {3}, zeros({4}, DType::f32, stream), Tensor(), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"layer_norm", "weight", "f32[4]", "[3]"});
  expect_error([&] { rms_norm(x, {3}, zeros({3}, DType::f64, stream), 1e-5, stream); },
               ErrorCode::InvalidArgument, {"rms_norm", "dtypes differ"});
  EXPECT_EQ(softmax(zeros({0, 3}, DType::f32, stream), 0, stream).shape(), (Shape{0, 3}));
}

TEST_P(NormalizationSuite, EpsMustBeFiniteAndNotNegative) {
  const Tensor x = ones({2, 3}, DType::f32, stream);
  for (double eps : {-1.0, std::nan(""), HUGE_VAL}) {
    expect_error([&] { rms_norm(x, {3}, Tensor(), eps, stream); }, ErrorCode::InvalidArgument,
                 {"rms_norm of f32[2, 3]", "eps", "is not finite and >= 0"});
    expect_error([&] { layer_norm(x, {3}, Tensor(), Tensor(), eps, stream); },
                 ErrorCode::InvalidArgument, {"layer_norm of f32[2, 3]", "eps"});
  }
  // f16 is normalised in f32: the check comes first all the same.
  expect_error(
      [&] {
        rms_norm(ones({2, 3}, DType::f16, stream), {3}, Tensor(), -1e-5, stream);
      },
      ErrorCode::InvalidArgument, {"rms_norm of f16[2, 3]", "eps -0.000010"});
}

HAL_DEVICE_SUITE(NormalizationSuite);

}  // namespace
}  // namespace hal::test
