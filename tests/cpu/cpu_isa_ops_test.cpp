// hal's ops on cpu:0 under the instruction set HAL_CPU_ISA forces (CTest runs this binary once
// per value: scalar, sse4, avx2, avx512, and an unknown one), each result checked against a
// reference computed here in f64, with the tolerances of simd_kernels_test.cpp; fused chains
// equal the same ops run apart, bitwise. Under an unknown value every op fails, naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "hal/hal.hpp"
#include "hal/ops.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/element_codec.hpp"
#include "test_util.hpp"

namespace hal {
namespace {

std::string forced() {
  const char* value = std::getenv("HAL_CPU_ISA");
  return value ? value : "";
}

bool forced_is_known() {
  try {
    if (!forced().empty()) ops::simd::parse_isa(forced());
    return true;
  } catch (const Error&) {
    return false;
  }
}

class CpuIsaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!forced_is_known()) GTEST_SKIP() << "HAL_CPU_ISA=" << forced() << " is not an ISA";
    if (!forced().empty() && !ops::simd::supported(ops::simd::parse_isa(forced())))
      GTEST_SKIP() << "this processor has no " << forced() << " kernels";
    stream = device("cpu:0").create_stream();
  }
  Stream stream;
};

std::vector<float> random_values(size_t n, unsigned seed, float scale = 2.0f) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> out(n);
  for (float& v : out) v = normal(random);
  return out;
}

void expect_close(const std::vector<float>& ours, const std::vector<double>& want, double rtol,
                  double atol, const std::string& what) {
  ASSERT_EQ(ours.size(), want.size()) << what;
  for (size_t i = 0; i < ours.size(); ++i)
    ASSERT_LE(std::abs(ours[i] - want[i]), atol + rtol * std::abs(want[i]))
        << what << " at " << i << ": " << ours[i] << " vs " << want[i];
}

TEST_F(CpuIsaOps, RunsTheForcedInstructionSet) {
  if (forced().empty())
    EXPECT_EQ(ops::simd::active_isa(), ops::simd::best_isa());
  else
    EXPECT_EQ(ops::simd::name(ops::simd::active_isa()), forced());
}

TEST_F(CpuIsaOps, SumsOverRowsColumnsAndInnerAxes) {
  const int64_t rows = 300, cols = 257;
  const std::vector<float> x = random_values(rows * cols, 1);
  const Tensor t = from_vector(x, {rows, cols}, stream);
  std::vector<double> by_row(rows, 0.0), by_col(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      by_row[r] += x[r * cols + c];
      by_col[c] += x[r * cols + c];
    }
  expect_close(sum(t, {1}, false, stream).to_vector<float>(stream), by_row, 1e-6, 1e-5, "rows");
  expect_close(sum(t, {0}, false, stream).to_vector<float>(stream), by_col, 1e-6, 1e-5, "cols");
  std::vector<double> col_means(by_col);
  for (double& m : col_means) m /= rows;
  expect_close(mean(t, {0}, false, stream).to_vector<float>(stream), col_means, 1e-6, 1e-6,
               "column means");
  // The middle axis of [3, 40, 50]: three matrices' columns.
  const Tensor cube = from_vector(random_values(3 * 40 * 50, 2), {3, 40, 50}, stream);
  const std::vector<float> c = cube.to_vector<float>(stream);
  std::vector<double> middle(3 * 50, 0.0);
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t r = 0; r < 40; ++r)
      for (int64_t j = 0; j < 50; ++j) middle[m * 50 + j] += c[(m * 40 + r) * 50 + j];
  expect_close(sum(cube, {1}, false, stream).to_vector<float>(stream), middle, 1e-6, 1e-5,
               "middle axis");
}

TEST_F(CpuIsaOps, SoftmaxAndNormsOfRows) {
  const int64_t rows = 64, cols = 515;
  const std::vector<float> x = random_values(rows * cols, 3, 3.0f);
  const std::vector<float> w = random_values(cols, 4, 1.0f), b = random_values(cols, 5, 1.0f);
  const Tensor t = from_vector(x, {rows, cols}, stream);
  std::vector<double> soft, log_soft, norm;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    double top = row[0], total = 0, mean = 0, squares = 0;
    for (int64_t j = 0; j < cols; ++j) top = std::max<double>(top, row[j]), mean += row[j];
    mean /= cols;
    for (int64_t j = 0; j < cols; ++j)
      total += std::exp(row[j] - top), squares += (row[j] - mean) * (row[j] - mean);
    const double scale = 1 / std::sqrt(squares / cols + 1e-5);
    for (int64_t j = 0; j < cols; ++j) {
      soft.push_back(std::exp(row[j] - top) / total);
      log_soft.push_back(row[j] - top - std::log(total));
      norm.push_back((row[j] - mean) * scale * w[j] + b[j]);
    }
  }
  expect_close(softmax(t, 1, stream).to_vector<float>(stream), soft, 2e-6, 1e-9, "softmax");
  expect_close(log_softmax(t, 1, stream).to_vector<float>(stream), log_soft, 2e-6, 2e-6,
               "log_softmax");
  const Tensor weight = from_vector(w, {cols}, stream), bias = from_vector(b, {cols}, stream);
  expect_close(layer_norm(t, {cols}, weight, bias, 1e-5, stream).to_vector<float>(stream), norm,
               1e-5, 1e-5, "layer_norm");
}

TEST_F(CpuIsaOps, ElementwiseWithBroadcastAndFunctions) {
  const int64_t rows = 33, cols = 515;
  const std::vector<float> x = random_values(rows * cols, 6), y = random_values(cols, 7);
  const Tensor a = from_vector(x, {rows, cols}, stream), row = from_vector(y, {cols}, stream);
  const std::vector<float> sums = add(a, row, stream).to_vector<float>(stream);
  const std::vector<float> gelus = gelu(a, stream).to_vector<float>(stream);
  const std::vector<float> exps = exp(a, stream).to_vector<float>(stream);
  for (int64_t i = 0; i < rows * cols; ++i) {
    ASSERT_EQ(sums[i], x[i] + y[i % cols]) << i;  // arithmetic is exact on every ISA
    const double v = x[i];
    ASSERT_NEAR(gelus[i], v * 0.5 * (1 + std::erf(v / std::sqrt(2.0))), 1e-7 + 2e-6 * std::abs(v))
        << i;
    ASSERT_NEAR(exps[i], std::exp(v), 4e-7 * std::exp(v)) << i;
  }
}

TEST_F(CpuIsaOps, HalfPrecisionConvertsInRegisters) {
  const std::vector<float> x = random_values(1000, 8, 30.0f), y = random_values(1000, 9, 30.0f);
  const Tensor a = from_vector(x, {1000}, stream), b = from_vector(y, {1000}, stream);
  for (DType dtype : {DType::f16, DType::bf16}) {
    const bool f16 = dtype == DType::f16;
    const auto narrow = [&](float v) {
      return f16 ? tensor::f32_to_f16(v) : tensor::f32_to_bf16(v);
    };
    const auto widen = [&](uint16_t h) {
      return f16 ? tensor::f16_to_f32(h) : tensor::bf16_to_f32(h);
    };
    const Tensor ha = cast(a, dtype, stream), hb = cast(b, dtype, stream);
    const std::vector<float> casts = cast(ha, DType::f32, stream).to_vector<float>(stream);
    const std::vector<float> sums =
        cast(mul(ha, hb, stream), DType::f32, stream).to_vector<float>(stream);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(casts[i], widen(narrow(x[i]))) << to_string(dtype) << " cast of " << x[i];
      const float product = widen(narrow(x[i])) * widen(narrow(y[i]));
      ASSERT_EQ(sums[i], widen(narrow(product))) << to_string(dtype) << " product at " << i;
    }
  }
}

TEST_F(CpuIsaOps, HalfPrecisionMatmulAccumulatesInF32) {
  const int64_t m = 33, k = 70, n = 45;
  for (DType dtype : {DType::bf16, DType::f16}) {
    const Tensor a =
        cast(from_vector(random_values(m * k, 10, 1.0f), {m, k}, stream), dtype, stream);
    const Tensor b =
        cast(from_vector(random_values(k * n, 11, 1.0f), {k, n}, stream), dtype, stream);
    const Tensor product = matmul(a, b, stream);
    ASSERT_EQ(product.dtype(), dtype);
    const std::vector<float> wa = cast(a, DType::f32, stream).to_vector<float>(stream);
    const std::vector<float> wb = cast(b, DType::f32, stream).to_vector<float>(stream);
    const std::vector<float> ours = cast(product, DType::f32, stream).to_vector<float>(stream);
    // f32 accumulation, one rounding to the dtype: within its half unit in the last place
    // (2^-9 for bf16, 2^-12 for f16) of the magnitude, beside the f32 sum's error.
    const double ulp = dtype == DType::bf16 ? 0x1p-8 : 0x1p-11;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0, magnitude = 0;
        for (int64_t p = 0; p < k; ++p) {
          want += static_cast<double>(wa[i * k + p]) * wb[p * n + j];
          magnitude += std::abs(static_cast<double>(wa[i * k + p]) * wb[p * n + j]);
        }
        ASSERT_NEAR(ours[i * n + j], want, ulp * std::abs(want) + 1e-6 * magnitude)
            << to_string(dtype) << " at " << i << ", " << j;
      }
  }
}

TEST_F(CpuIsaOps, FusedChainEqualsTheOpsApart) {
  const int64_t rows = 70, cols = 300;
  const Tensor y = from_vector(random_values(rows * cols, 12), {rows, cols}, stream);
  const Tensor bias = from_vector(random_values(cols, 13), {cols}, stream);
  const Tensor scale = from_vector(std::vector<float>{1.25f}, {1}, stream);
  const ElementwiseProgram program{{{"add", {0, 1}}, {"gelu", {3}}, {"mul", {4, 2}}}};
  const std::vector<float> fused =
      fused_elementwise(program, {y, bias, scale}, stream).to_vector<float>(stream);
  const std::vector<float> apart =
      mul(gelu(add(y, bias, stream), stream), scale, stream).to_vector<float>(stream);
  ASSERT_EQ(fused.size(), apart.size());
  for (size_t i = 0; i < fused.size(); ++i) ASSERT_EQ(fused[i], apart[i]) << i;
}

// Under a value that names no instruction set, every op that runs a host kernel fails, saying
// which value and what it takes.
TEST(CpuIsaBadValue, EveryOpFailsNamingTheValue) {
  if (forced_is_known()) GTEST_SKIP() << "HAL_CPU_ISA=" << forced() << " is valid here";
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector(std::vector<float>(64, 1.0f), {8, 8}, stream);
  const std::vector<std::string> parts{"HAL_CPU_ISA=" + forced(), "unknown instruction set",
                                       "avx512, avx2, sse4 or scalar"};
  test::expect_error([&] { add(x, x, stream); }, ErrorCode::InvalidArgument, parts);
  test::expect_error([&] { sum(x, {0}, false, stream); }, ErrorCode::InvalidArgument, parts);
  test::expect_error([&] { softmax(x, 1, stream); }, ErrorCode::InvalidArgument, parts);
  test::expect_error([&] { gelu(x, stream); }, ErrorCode::InvalidArgument, parts);
}

}  // namespace
}  // namespace hal
