// matmul on every device with a BLAS, against a plain triple loop in double precision: plain,
// transposed and strided operands, broadcast batches, vectors, empty inner dimensions.
#include <random>

#include "op_values.hpp"

namespace hal::test {
namespace {

std::vector<double> random_values(size_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<double> out(n);
  for (double& v : out) v = static_cast<float>(value(random));  // exact in f32 too
  return out;
}

// The reference: a and b as row-major batches of matrices (batch entries given by index).
std::vector<double> reference(const std::vector<double>& a, const std::vector<double>& b,
                              int64_t batch, int64_t m, int64_t k, int64_t n, int64_t a_batches,
                              int64_t b_batches) {
  std::vector<double> c(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t i = 0; i < batch; ++i) {
    const double* ai = a.data() + (i % a_batches) * m * k;
    const double* bi = b.data() + (i % b_batches) * k * n;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t p = 0; p < k; ++p)
        for (int64_t col = 0; col < n; ++col)
          c[static_cast<size_t>(i * m * n + r * n + col)] += ai[r * k + p] * bi[p * n + col];
  }
  return c;
}

class MatmulSuite : public DeviceTest {
 protected:
  void SetUp() override {
    // Devices without a BLAS say so (BadArguments checks it); the others must multiply.
    Stream probe = device().create_stream();
    try {
      matmul(zeros({1, 1}, DType::f32, probe), zeros({1, 1}, DType::f32, probe), probe);
      probe.synchronize();
    } catch (const Error& error) {
      if (error.code() != ErrorCode::Unsupported) throw;
      reason_ = error.what();
    }
  }
  bool has_blas() const { return reason_.empty(); }
  std::vector<DType> dtypes() const {
    std::vector<DType> out{DType::f32};
    if (device().info().has_feature(feature::kFp64)) out.push_back(DType::f64);
    return out;
  }
  void expect_product(const Tensor& got, const std::vector<double>& want, int64_t k,
                      const std::string& what) {
    const std::vector<double> values = numbers(got, stream);
    ASSERT_EQ(values.size(), want.size()) << what;
    const double tolerance = got.dtype() == DType::f32 ? 1e-5 * static_cast<double>(k + 1) : 1e-12;
    for (size_t i = 0; i < values.size(); ++i)
      ASSERT_NEAR(values[i], want[i], tolerance) << what << " element " << i;
  }
  std::string reason_;
  Stream stream = device().create_stream();
};

TEST_P(MatmulSuite, MatricesOfManySizes) {
  if (!has_blas()) GTEST_SKIP() << reason_;
  const std::array<int64_t, 3> sizes[] = {{1, 1, 1}, {3, 4, 5}, {17, 33, 9}, {64, 64, 64}};
  for (DType dtype : dtypes())
    for (const auto& [m, k, n] : sizes) {
      const auto a = random_values(static_cast<size_t>(m * k), 1);
      const auto b = random_values(static_cast<size_t>(k * n), 2);
      const Tensor c =
          matmul(make(a, {m, k}, dtype, stream), make(b, {k, n}, dtype, stream), stream);
      EXPECT_EQ(c.shape(), (Shape{m, n}));
      expect_product(c, reference(a, b, 1, m, k, n, 1, 1), k,
                     std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + " " +
                         std::string(to_string(dtype)) + " on " + id());
    }
}

TEST_P(MatmulSuite, TransposedAndStridedOperands) {
  if (!has_blas()) GTEST_SKIP() << reason_;
  const int64_t m = 6, k = 5, n = 7;
  const auto a = random_values(m * k, 3), b = random_values(k * n, 4);
  const std::vector<double> want = reference(a, b, 1, m, k, n, 1, 1);
  // A stored as its transpose, B stored as its transpose: both reach the BLAS as they are.
  std::vector<double> a_t(a.size()), b_t(b.size());
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c) a_t[c * m + r] = a[r * k + c];
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) b_t[c * k + r] = b[r * n + c];
  const Tensor at = make(a_t, {k, m}, DType::f32, stream).transpose(0, 1);
  const Tensor bt = make(b_t, {n, k}, DType::f32, stream).transpose(0, 1);
  const Tensor bb = make(b, {k, n}, DType::f32, stream);
  expect_product(matmul(at, bt, stream), want, k, "A^T-stored @ B^T-stored");
  expect_product(matmul(at, bb, stream), want, k, "A^T-stored @ B");
  // Every other column of a wider matrix: neither rows nor columns are contiguous.
  std::vector<double> wide(static_cast<size_t>(m * k * 2), 9.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c) wide[r * 2 * k + 2 * c] = a[r * k + c];
  const Tensor strided = make(wide, {m, 2 * k}, DType::f32, stream).slice(1, 0, 2 * k, 2);
  expect_product(matmul(strided, bb, stream), want, k, "strided A @ B");
}

TEST_P(MatmulSuite, BatchesBroadcastAndVectorsSqueeze) {
  if (!has_blas()) GTEST_SKIP() << reason_;
  const int64_t m = 4, k = 5, n = 6;
  const auto a = random_values(2 * m * k, 5), b = random_values(3 * k * n, 6);
  // [2, 1, m, k] @ [3, k, n] -> [2, 3, m, n]: entry (i, j) is a[i] @ b[j].
  const Tensor c = matmul(make(a, {2, 1, m, k}, DType::f32, stream),
                          make(b, {3, k, n}, DType::f32, stream), stream);
  ASSERT_EQ(c.shape(), (Shape{2, 3, m, n}));
  const std::vector<double> got = numbers(c, stream);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      const std::vector<double> ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
      const std::vector<double> bj(b.begin() + j * k * n, b.begin() + (j + 1) * k * n);
      const std::vector<double> want = reference(ai, bj, 1, m, k, n, 1, 1);
      for (int64_t e = 0; e < m * n; ++e)
        ASSERT_NEAR(got[static_cast<size_t>((i * 3 + j) * m * n + e)], want[e], 1e-4)
            << "batch " << i << "," << j;
    }
  const auto v = random_values(k, 7);
  const Tensor vector = make(v, {k}, DType::f32, stream);
  const Tensor row =
      matmul(vector, make(b, {3, k, n}, DType::f32, stream).slice(0, 0, 1).squeeze(0), stream);
  EXPECT_EQ(row.shape(), (Shape{n}));
  expect_product(row, reference(v, b, 1, 1, k, n, 1, 1), k, "vector @ matrix");
  const Tensor column = matmul(make(a, {2 * m, k}, DType::f32, stream), vector, stream);
  EXPECT_EQ(column.shape(), (Shape{2 * m}));
  expect_product(column, reference(a, v, 1, 2 * m, k, 1, 1, 1), k, "matrix @ vector");
  const Tensor empty_sum =
      matmul(zeros({3, 0}, DType::f32, stream), zeros({0, 2}, DType::f32, stream), stream);
  EXPECT_EQ(numbers(empty_sum, stream), std::vector<double>(6, 0.0));
}

TEST_P(MatmulSuite, BadArgumentsAreRefusedByName) {
  const Tensor a = zeros({2, 3}, DType::f32, stream);
  if (!has_blas()) {
    expect_error(
        [&] {
          matmul(a, zeros({3, 2}, DType::f32, stream), stream);
        },
        ErrorCode::Unsupported, {"matmul of f32[2, 3]", id(), "no kernel for f32"});
    return;
  }
  expect_error(
      [&] {
        matmul(a, zeros({4, 2}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument, {"matmul", "[2, 3]", "[4, 2]", "inner dimensions"});
  expect_error(
      [&] { matmul(zeros({2}, DType::i32, stream), zeros({2}, DType::i32, stream), stream); },
      ErrorCode::Unsupported, {"matmul of i32[2] on " + id(), "no kernel for i32", "matmul takes"});
  expect_error(
      [&] {
        matmul(zeros({2, 3, 4}, DType::f32, stream), zeros({3, 4, 5}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument, {"do not broadcast"});
}

HAL_DEVICE_SUITE(MatmulSuite);

}  // namespace
}  // namespace hal::test
