// matmul with an epilogue (bias, activation) on every device with a BLAS, against a host
// reference in double: through the op (hal's GEMM applying it where that GEMM runs the product,
// a fused pass after the product elsewhere) and through hal's GEMM kernel itself with each
// family of parameters; bad epilogues refused by name; autograd's gradients as the ops'.
#include <cmath>

#include "gemm_desc.hpp"
#include "op_values.hpp"
#include "ops/portable_gemm.hpp"

namespace hal::test {
namespace {

constexpr const char* kActivations[] = {"", "relu", "gelu", "tanh", "sigmoid", "silu"};

double activate(const std::string& activation, double x) {
  if (activation == "relu") return x < 0 ? 0 : x;
  if (activation == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (activation == "tanh") return std::tanh(x);
  if (activation == "sigmoid") return 1 / (1 + std::exp(-x));
  if (activation == "silu") return x / (1 + std::exp(-x));
  return x;
}

// Values in [-1.5, 1.5) that differ from element to element, so that a transposed or shifted
// read shows.
std::vector<double> values(size_t n, unsigned seed) {
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>((i * 37 + seed * 11) % 61) / 20 - 1.5;
  return out;
}

// activation(a @ b + bias) on the host, a [batch, m, k], b [batch, k, n] (batch 0: shared).
std::vector<double> reference(const std::vector<double>& a, const std::vector<double>& b,
                              const std::vector<double>& bias, int64_t batch, int64_t m, int64_t k,
                              int64_t n, bool b_shared, const std::string& activation) {
  std::vector<double> out(static_cast<size_t>(batch * m * n));
  for (int64_t e = 0; e < batch; ++e)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = bias.empty() ? 0 : bias[static_cast<size_t>(j)];
        for (int64_t l = 0; l < k; ++l)
          sum += a[static_cast<size_t>((e * m + i) * k + l)] *
                 b[static_cast<size_t>(((b_shared ? 0 : e) * k + l) * n + j)];
        out[static_cast<size_t>((e * m + i) * n + j)] = activate(activation, sum);
      }
  return out;
}

// The tensor's values as its dtype holds them (the reference reads what the device reads).
std::vector<double> rounded(const std::vector<double>& v, DType dtype, Stream& stream) {
  return numbers(make(v, {static_cast<int64_t>(v.size())}, dtype, stream), stream);
}

double tolerance(DType dtype) { return dtype == DType::f32 ? 2e-5 : 2e-2; }

class MatmulEpilogueSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!supports_op(device(), "matmul", DType::f32))
      GTEST_SKIP() << id() << " has no matmul kernel";
  }
  Stream stream = device().create_stream();
};

struct Case {
  int64_t batch, m, k, n;
  bool b_shared;      // b 2-d, one for every batch entry
  bool b_transposed;  // b a transposed view of [n, k]
};

TEST_P(MatmulEpilogueSuite, EqualsTheProductBiasAndActivationComputedOnTheHost) {
  const Case cases[] = {{1, 37, 19, 45, true, false}, {1, 8, 32, 32, true, false},
                        {1, 1, 7, 3, true, false},    {1, 70, 5, 130, true, true},
                        {3, 5, 7, 9, true, false},    {2, 5, 7, 9, false, false}};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    if (!supports_op(device(), "matmul", dtype)) continue;
    for (const Case& c : cases) {
      const auto a_host = rounded(values(c.batch * c.m * c.k, 1), dtype, stream);
      const int64_t b_entries = c.b_shared ? 1 : c.batch;
      const auto b_host = rounded(values(b_entries * c.k * c.n, 2), dtype, stream);
      const auto bias_host = rounded(values(c.n, 3), dtype, stream);
      const Shape a_shape = c.batch == 1 ? Shape{c.m, c.k} : Shape{c.batch, c.m, c.k};
      const Tensor a = make(a_host, a_shape, dtype, stream);
      Tensor b =
          make(b_host, c.b_shared ? Shape{c.k, c.n} : Shape{c.batch, c.k, c.n}, dtype, stream);
      if (c.b_transposed) {
        // The same values read through a transposed view of their [n, k] copy.
        std::vector<double> t(b_host.size());
        for (int64_t l = 0; l < c.k; ++l)
          for (int64_t j = 0; j < c.n; ++j)
            t[static_cast<size_t>(j * c.k + l)] = b_host[static_cast<size_t>(l * c.n + j)];
        b = make(t, {c.n, c.k}, dtype, stream).transpose(0, 1);
      }
      const Tensor bias = make(bias_host, {c.n}, dtype, stream);
      for (const char* activation : kActivations)
        for (bool with_bias : {false, true}) {
          const Tensor got = matmul(a, b, {with_bias ? bias : Tensor(), activation}, stream);
          const auto want = reference(a_host, b_host, with_bias ? bias_host : std::vector<double>{},
                                      c.batch, c.m, c.k, c.n, c.b_shared, activation);
          const std::string what = std::string(to_string(dtype)) + " " + to_string(a.shape()) +
                                   " @ " + to_string(b.shape()) + " activation '" + activation +
                                   "'" + (with_bias ? " with bias" : "");
          ASSERT_EQ(got.dtype(), dtype) << what;
          Shape shape = a_shape;
          shape.back() = c.n;
          ASSERT_EQ(got.shape(), shape) << what;
          const auto g = numbers(got, stream);
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(g[i], want[i], tolerance(dtype) * std::max(1.0, std::fabs(want[i])))
                << what << ", element " << i;
        }
    }
  }
}

// hal's GEMM kernel applies the epilogue itself, in both families of parameters and in every
// dtype it takes, at sizes that leave partial blocks at the edges.
TEST_P(MatmulEpilogueSuite, HalsGemmKernelAppliesItInEveryFamily) {
  if (!device().info().has_feature(feature::kPortableKernels))
    GTEST_SKIP() << id() << " compiles no portable kernels (hal's GEMM)";
  const int64_t m = 37, k = 21, n = 70;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    if (dtype == DType::f16 && !device().info().has_feature("fp16")) continue;
    if (dtype == DType::f16 && device().info().backend() != "opencl") {
      // The portable dialect's half is OpenCL's: f16 products elsewhere go to the device's BLAS.
      const Tensor x = zeros({1, 1}, dtype, stream);
      expect_error(
          [&] {
            ops::portable_gemm(row_major_gemm(x, x, x), ops::default_gemm_params(device().info()),
                               stream);
          },
          ErrorCode::Unsupported, {"hal's GEMM kernel: f16 on " + id(), "half on OpenCL only"});
      continue;
    }
    const auto a_host = rounded(values(m * k, 4), dtype, stream);
    const auto b_host = rounded(values(k * n, 5), dtype, stream);
    const auto bias_host = rounded(values(n, 6), dtype, stream);
    const Tensor a = make(a_host, {m, k}, dtype, stream);
    const Tensor b = make(b_host, {k, n}, dtype, stream);
    // The bias at an offset: the kernel must read from it.
    const Tensor bias =
        make(rounded(values(n + 3, 6), dtype, stream), {n + 3}, dtype, stream).slice(0, 3, n + 3);
    const auto bias_read = numbers(bias, stream);
    for (const char* text : {"direct 8x32 v16", "direct 4x32 v1", "tiled 32x32x8 wg8x8 v1"}) {
      const auto params = *ops::GemmParams::parse(text);
      if (ops::unusable(params, device().info())) continue;
      for (const char* activation : kActivations) {
        const Tensor c = empty({m, n}, dtype, device());
        ops::portable_gemm(
            row_major_gemm(a, b, c), params, stream,
            {bias.storage().impl(), static_cast<uint64_t>(bias.offset()), activation});
        const auto want = reference(a_host, b_host, bias_read, 1, m, k, n, true, activation);
        const auto got = numbers(c, stream);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], tolerance(dtype) * std::max(1.0, std::fabs(want[i])))
              << to_string(dtype) << " " << text << " '" << activation << "' element " << i;
      }
    }
  }
  const Tensor one = zeros({1, 1}, DType::f32, stream);
  expect_error(
      [&] {
        ops::portable_gemm(row_major_gemm(one, one, one), ops::default_gemm_params(device().info()),
                           stream, {nullptr, 0, "softplus"});
      },
      ErrorCode::InvalidArgument, {"hal's GEMM kernel", "'softplus'", "relu, gelu"});
}

TEST_P(MatmulEpilogueSuite, BadEpiloguesAreRefusedByName) {
  const Tensor a = zeros({2, 3}, DType::f32, stream), b = zeros({3, 4}, DType::f32, stream);
  const auto refused = [&](const MatmulEpilogue& epilogue, std::vector<std::string> words) {
    words.insert(words.begin(), {"matmul of f32[2, 3]", "and f32[3, 4]", "with an epilogue"});
    expect_error([&] { matmul(a, b, epilogue, stream); }, ErrorCode::InvalidArgument, words);
  };
  refused({zeros({5}, DType::f32, stream), ""},
          {"the bias f32[5]", "vector of the result's 4 columns, [4]"});
  refused({zeros({1, 4}, DType::f32, stream), ""}, {"the bias f32[1, 4]", "[4]"});
  refused({zeros({4}, DType::f16, stream), "relu"},
          {"the bias is f16, the product f32", "cast it first"});
  refused({Tensor(), "softplus"}, {"no activation 'softplus'", "relu, gelu, tanh, sigmoid, silu"});
  expect_error([&] { activate(a, "softplus", stream); }, ErrorCode::InvalidArgument,
               {"no activation 'softplus' for f32[2, 3]", "relu, gelu"});
  if (!(device() == hal::device("cpu:0"))) {
    Stream host = hal::device("cpu:0").create_stream();
    refused({zeros({4}, DType::f32, host), ""}, {"the bias is on cpu:0", "operands on " + id()});
  }
  expect_error(
      [&] {
        matmul(a, zeros({3}, DType::f32, stream), {zeros({1}, DType::f32, stream), ""}, stream);
      },
      ErrorCode::InvalidArgument,
      {"with an epilogue", "a vector b has no columns to add a bias to"});
}

// NaN and infinities come out of every path as they come out of the ops: relu keeps NaN (hal's
// x < 0 ? 0 : x), which oneDNN's relu post-op would have turned into 0 on the CPU.
TEST_P(MatmulEpilogueSuite, NonFiniteValuesComeOutAsTheOpsGiveThem) {
  const double nan = std::nan(""), inf = INFINITY;
  // Rows of a: a NaN, +inf, -inf, ordinary values; the bias has a NaN column too.
  const Tensor a = make({nan, 1, 1, inf, 1, 1, -inf, 1, 1, 0.5, -2, 1}, {4, 3}, DType::f32, stream);
  const Tensor b = make({1, -1, 0, 0.5, 2, 1, 1, 1, -1, 0, 0, 3}, {3, 4}, DType::f32, stream);
  const Tensor bias = make({0.25, nan, -1, 2}, {4}, DType::f32, stream);
  for (const char* activation : kActivations) {
    if (activation[0] && !supports_op(device(), activation, DType::f32)) continue;
    for (bool with_bias : {false, true}) {
      const MatmulEpilogue epilogue{with_bias ? bias : Tensor(), activation};
      const auto got = numbers(matmul(a, b, epilogue, stream), stream);
      Tensor want = matmul(a, b, stream);
      if (with_bias) want = add(want, bias, stream);
      want = activate(want, activation, stream);
      const auto w = numbers(want, stream);
      for (size_t i = 0; i < w.size(); ++i) {
        const std::string what = "'" + std::string(activation) + "'" +
                                 (with_bias ? " with bias" : "") + " element " + std::to_string(i);
        if (std::isnan(w[i]))
          EXPECT_TRUE(std::isnan(got[i])) << what << ": " << got[i];
        else if (std::isinf(w[i]))
          EXPECT_EQ(got[i], w[i]) << what;
        else
          EXPECT_NEAR(got[i], w[i], 1e-5 * std::max(1.0, std::fabs(w[i]))) << what;
      }
    }
  }
}

// Recorded as matmul, add and the activation: the gradients are those of the three ops.
TEST_P(MatmulEpilogueSuite, GradientsAreThoseOfTheOpsItIsMadeOf) {
  if (!supports_op(device(), "erf", DType::f32))
    GTEST_SKIP() << id() << " has no erf kernel (gelu's gradient)";
  const auto leaf = [&](const std::vector<double>& v, Shape shape) {
    return make(v, std::move(shape), DType::f32, stream).requires_grad_();
  };
  Tensor a = leaf(values(4 * 3, 7), {4, 3}), b = leaf(values(3 * 5, 8), {3, 5});
  Tensor bias = leaf(values(5, 9), {5});
  Tensor fused = sum(matmul(a, b, {bias, "gelu"}, stream), {}, false, stream);
  fused.backward(stream);
  const auto fused_grads = std::vector{numbers(a.grad(), stream), numbers(b.grad(), stream),
                                       numbers(bias.grad(), stream)};
  for (Tensor* t : {&a, &b, &bias}) t->zero_grad();
  Tensor ops = sum(gelu(add(matmul(a, b, stream), bias, stream), stream), {}, false, stream);
  ops.backward(stream);
  const auto op_grads = std::vector{numbers(a.grad(), stream), numbers(b.grad(), stream),
                                    numbers(bias.grad(), stream)};
  for (size_t t = 0; t < 3; ++t)
    for (size_t i = 0; i < op_grads[t].size(); ++i)
      EXPECT_NEAR(fused_grads[t][i], op_grads[t][i], 1e-6) << "gradient " << t << " element " << i;
}

HAL_DEVICE_SUITE(MatmulEpilogueSuite);

}  // namespace
}  // namespace hal::test
