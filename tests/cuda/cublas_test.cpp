// cuBLAS as the CUDA backend uses it: the library opened at run time and its statuses as
// hal::Error (no GPU needed), and GEMMs enqueued on hal streams, checked against a plain loop,
// directly and through a captured graph (on a GPU; without one those tests skip).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/cublas.hpp"
#include "backends/cuda/cuda_buffer.hpp"
#include "backends/cuda/cuda_stream.hpp"
#include "test_util.hpp"

namespace hal::cuda {
namespace {

std::shared_ptr<const Cublas> cublas_or_null(std::string* why) {
  try {
    return Cublas::load();
  } catch (const Error& error) {
    *why = error.what();
    return nullptr;
  }
}

#define REQUIRE_CUBLAS(cublas)            \
  std::string why_not;                    \
  auto cublas = cublas_or_null(&why_not); \
  if (!cublas) GTEST_SKIP() << "no cuBLAS: " << why_not

TEST(Cublas, OpensAndReportsItsVersion) {
  REQUIRE_CUBLAS(cublas);
  const std::string version = cublas->version();
  EXPECT_TRUE(version.rfind("13.", 0) == 0 || version.rfind("12.", 0) == 0) << version;
  EXPECT_EQ(Cublas::load(), cublas) << "opened once per process";
}

TEST(Cublas, StatusesBecomeErrorsWithTheirNameAndText) {
  REQUIRE_CUBLAS(cublas);
  EXPECT_EQ(cublas->describe(CUBLAS_STATUS_NOT_SUPPORTED).rfind("CUBLAS_STATUS_NOT_SUPPORTED: ", 0),
            0u);
  hal::test::expect_error(
      [&] { cublas->check(CUBLAS_STATUS_INVALID_VALUE, "stream of cuda:0", "matmul 3x4 @ 5x6"); },
      ErrorCode::InvalidArgument,
      {"stream of cuda:0: matmul 3x4 @ 5x6 failed", "CUBLAS_STATUS_INVALID_VALUE", "(7)"});
  EXPECT_NO_THROW(cublas->check(CUBLAS_STATUS_SUCCESS, "unused", "unused"));
  EXPECT_EQ(error_code(CUBLAS_STATUS_ALLOC_FAILED), ErrorCode::OutOfMemory);
  EXPECT_EQ(error_code(CUBLAS_STATUS_ARCH_MISMATCH), ErrorCode::Unsupported);
  EXPECT_EQ(error_code(CUBLAS_STATUS_EXECUTION_FAILED), ErrorCode::AsyncFailure);
  EXPECT_EQ(error_code(CUBLAS_STATUS_INTERNAL_ERROR), ErrorCode::Internal);
}

// Row-major C[m x n] = A[m x k] * B[k x n], from cuBLAS's column-major view: C^T = B^T * A^T.
struct Gemm {
  int m, n, k;
  Buffer a, b, c;
  CudaStream::BlasCall call() const {
    const CUdeviceptr pa = address_of(*a.impl()), pb = address_of(*b.impl()),
                      pc = address_of(*c.impl());
    return [=, this](const Cublas& blas, cublasHandle_t handle) {
      const float one = 1.0f, zero = 0.0f;
      return blas.cublasSgemm_v2(
          handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, reinterpret_cast<const float*>(pb), n,
          reinterpret_cast<const float*>(pa), k, &zero, reinterpret_cast<float*>(pc), n);
    };
  }
};

std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b, int m, int n,
                             int k) {
  std::vector<float> c(static_cast<size_t>(m) * n, 0.0f);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

class CublasOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto found = hal::test::backend_devices("cuda");
    if (found.empty()) GTEST_SKIP() << "no CUDA device: " << hal::test::backend_reason("cuda");
    std::string why;
    if (!cublas_or_null(&why)) GTEST_SKIP() << "no cuBLAS: " << why;
    device = found.front();
    stream = device.create_stream();
    std::mt19937 random(5);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    a.resize(static_cast<size_t>(m) * k);
    b.resize(static_cast<size_t>(k) * n);
    for (float& x : a) x = value(random);
    for (float& x : b) x = value(random);
    gemm = {m,
            n,
            k,
            device.allocate(a.size() * 4),
            device.allocate(b.size() * 4),
            device.allocate(static_cast<size_t>(m) * n * 4)};
    stream.copy_from_host(gemm.a, a.data(), a.size() * 4);
    stream.copy_from_host(gemm.b, b.data(), b.size() * 4);
  }
  CudaStream& cuda_stream() { return static_cast<CudaStream&>(*stream.impl()); }
  void expect_product() {
    std::vector<float> c(static_cast<size_t>(m) * n);
    stream.copy_to_host(c.data(), gemm.c, c.size() * 4);
    stream.synchronize();
    const std::vector<float> want = reference(a, b, m, n, k);
    for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], want[i], 1e-3f * k) << "element " << i;
  }

  static constexpr int m = 67, n = 45, k = 129;  // no multiple of a tile
  Device device;
  Stream stream;
  std::vector<float> a, b;
  Gemm gemm{};
};

TEST_F(CublasOnGpu, SgemmOnAHalStreamMatchesAPlainLoop) {
  cuda_stream().enqueue_blas({gemm.a.impl(), gemm.b.impl(), gemm.c.impl()}, "sgemm", gemm.call());
  expect_product();
}

TEST_F(CublasOnGpu, ABadCallNamesItselfAndTheStreamGoesOn) {
  hal::test::expect_error(
      [&] {
        cuda_stream().enqueue_blas({}, "sgemm with lda < k", [](const Cublas& blas, auto handle) {
          const float one = 1.0f;
          return blas.cublasSgemm_v2(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, nullptr, 1,
                                     nullptr, 1, &one, nullptr, 1);
        });
      },
      ErrorCode::InvalidArgument, {device.info().id, "sgemm with lda < k", "INVALID_VALUE"});
  cuda_stream().enqueue_blas({gemm.a.impl(), gemm.b.impl(), gemm.c.impl()}, "sgemm", gemm.call());
  expect_product();
}

TEST_F(CublasOnGpu, ACapturedSgemmReplays) {
  stream.synchronize();
  stream.begin_capture();
  cuda_stream().enqueue_blas({gemm.a.impl(), gemm.b.impl(), gemm.c.impl()}, "sgemm", gemm.call());
  const Graph graph = stream.end_capture();
  stream.fill(gemm.c, 0.0f, static_cast<size_t>(m) * n);
  stream.launch(graph);
  expect_product();
}

}  // namespace
}  // namespace hal::cuda
