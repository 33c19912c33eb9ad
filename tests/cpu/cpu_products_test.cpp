// CPU matrix products through oneDNN: the primitives prepared once per layout are shared by
// calls with other buffers, offsets and data, and by streams running at once; products on
// both sides of the size under which one OpenMP thread runs them (2^20 multiply-adds) agree
// with a reference in double.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "hal/hal.hpp"

namespace hal {
namespace {

struct Product {
  std::vector<float> a, b, bias;
  int64_t n;
};

Product random_product(int64_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-1, 1);
  Product p{std::vector<float>(n * n), std::vector<float>(n * n), std::vector<float>(n), n};
  for (float& v : p.a) v = value(random);
  for (float& v : p.b) v = value(random);
  for (float& v : p.bias) v = value(random);
  return p;
}

// gelu(a @ b + bias) in double, gelu by erf as oneDNN's eltwise_gelu_erf.
std::vector<double> reference(const Product& p) {
  std::vector<double> y(p.a.size());
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = p.bias[j];
      for (int64_t k = 0; k < p.n; ++k) sum += double(p.a[i * p.n + k]) * p.b[k * p.n + j];
      y[i * p.n + j] = 0.5 * sum * (1 + std::erf(sum / std::sqrt(2.0)));
    }
  return y;
}

void expect_product(const Product& p, Stream& stream, const std::string& what) {
  // The operands as views at an offset into larger buffers: the prepared layout must not carry
  // the first call's addresses or offsets.
  const Tensor a = from_vector(p.a, {p.n, p.n}, stream);
  std::vector<float> shifted(p.b.size() + 3, 0);
  std::copy(p.b.begin(), p.b.end(), shifted.begin() + 3);
  const Tensor b =
      from_vector(shifted, {p.n * p.n + 3}, stream).slice(0, 3, p.n * p.n + 3).reshape({p.n, p.n});
  MatmulEpilogue epilogue;
  epilogue.bias = from_vector(p.bias, {p.n}, stream);
  epilogue.activation = "gelu";
  const std::vector<float> y = matmul(a, b, epilogue, stream).to_vector<float>(stream);
  const std::vector<double> want = reference(p);
  ASSERT_EQ(y.size(), want.size()) << what;
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << what << " element " << i;
  const std::vector<float> plain = matmul(a, b, stream).to_vector<float>(stream);
  for (int64_t j = 0; j < p.n; ++j) {
    double sum = 0;
    for (int64_t k = 0; k < p.n; ++k) sum += double(p.a[k]) * p.b[k * p.n + j];
    ASSERT_NEAR(plain[j], sum, 1e-4 * (1 + std::fabs(sum))) << what << " plain row 0, column " << j;
  }
}

TEST(CpuProducts, EachSizeAndEachCallOfALayoutComputesItsOwnProduct) {
  Stream stream = device("cpu:0").create_stream();
  // 100^3 is just under 2^20 multiply-adds (one thread), 102^3 just over (oneDNN's team).
  for (int64_t n : {1, 8, 64, 100, 102, 160})
    for (uint32_t round = 0; round < 3; ++round)
      expect_product(random_product(n, static_cast<uint32_t>(n) * 10 + round), stream,
                     std::to_string(n) + "^2, round " + std::to_string(round));
}

TEST(CpuProducts, StreamsShareAPreparedLayoutAtOnce) {
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &failures] {
      Stream stream = device("cpu:0").create_stream();
      for (uint32_t round = 0; round < 20 && failures[t].empty(); ++round) {
        const int64_t n = round % 2 ? 48 : 128;  // one thread and oneDNN's team, interleaved
        const Product p = random_product(n, static_cast<uint32_t>(t * 100) + round);
        const std::vector<double> want = reference(p);
        MatmulEpilogue epilogue;
        epilogue.bias = from_vector(p.bias, {n}, stream);
        epilogue.activation = "gelu";
        const std::vector<float> y = matmul(from_vector(p.a, {n, n}, stream),
                                            from_vector(p.b, {n, n}, stream), epilogue, stream)
                                         .to_vector<float>(stream);
        for (size_t i = 0; i < y.size(); ++i)
          if (!(std::fabs(y[i] - want[i]) <= 1e-4 * (1 + std::fabs(want[i])))) {
            failures[t] = "thread " + std::to_string(t) + " round " + std::to_string(round) +
                          " element " + std::to_string(i) + ": " + std::to_string(y[i]) +
                          " against " + std::to_string(want[i]);
            break;
          }
      }
    });
  for (std::thread& thread : threads) thread.join();
  for (const std::string& failure : failures) EXPECT_TRUE(failure.empty()) << failure;
}

}  // namespace
}  // namespace hal
