// Every vector kernel table (sse4, avx2, avx512: each one this processor runs) against the
// scalar reference: the host kernels' element functions and element_codec's conversions,
// computed in f64 where the kernel accumulates. Tolerances, stated per kernel:
//   arithmetic, neg/abs/relu/sqrt/rsqrt/floor/ceil/round, f16/bf16 <-> f32: bitwise equal
//     (a NaN is any NaN);
//   exp, log: relative 4e-7 (a few units in the last place of f32), absolute 1e-37 for exp's
//     subnormal results and 1e-7 for log near 1;
//   tanh, sigmoid, silu, erf, gelu: relative 2e-6 or absolute 1e-7 (polynomial approximations);
//   sin, cos, asin, acos, atan, sinh, cosh, asinh, acosh, atanh (Highway's): 3 units of 2^-23
//     relative to the f64 function rounded to f32, or absolute 1e-7 (at most 2 measured);
//   sums: relative 1e-12 of the sum of magnitudes (f64 lanes, another order);
//   softmax, log_softmax: 2e-6 relative + 1e-9 absolute (a log of 4 Mi: 1e-6 + 1e-6); layer_norm,
//   rms_norm: 1e-5 + 1e-6
//     (f32 lanes where the reference sums in f64).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hal/error.hpp"
#include "ops/host_element_functions.hpp"
#include "ops/simd/simd_kernels.hpp"
#include "tensor/element_codec.hpp"
#include "test_util.hpp"

namespace hal::ops {
namespace {

using simd::Isa;
using simd::Storage;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class SimdKernels : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!simd::supported(GetParam()))
      GTEST_SKIP() << "this processor (or build) has no " << simd::name(GetParam()) << " kernels";
    table = simd::kernels(GetParam());
    ASSERT_NE(table, nullptr);
    ASSERT_EQ(table->isa, GetParam());
  }
  const simd::Kernels* table = nullptr;
};

// Values with the awkward ones in: signed zeros, infinities, NaN, subnormals, large and tiny.
std::vector<float> values(size_t n, unsigned seed, float scale = 4.0f) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> out(n);
  for (float& v : out) v = normal(random);
  const float special[] = {0.0f,  -0.0f,  kInf,  -kInf,  kNaN, 1e-40f, -3e-39f,
                           1e30f, -7e-8f, 90.0f, -90.0f, 0.5f, -2.5f,  1.5f};
  for (size_t i = 0; i < n && i < std::size(special); ++i) out[i * 7 % n] = special[i];
  return out;
}

bool same(float x, float y) {
  return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof x) == 0;
}

bool close(double ours, double reference, double rtol, double atol) {
  if (std::isnan(reference)) return std::isnan(ours);
  if (std::isinf(reference)) return ours == reference;
  return std::abs(ours - reference) <= atol + rtol * std::abs(reference);
}

template <Binary kOp>
void check_binary(const simd::Kernels& table) {
  const host::BinaryFn<kOp> fn;
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{16}, size_t{33}, size_t{257}}) {
    const std::vector<float> a = values(n + 1, 1), b = values(n + 1, 2);
    for (int a_step : {0, 1})
      for (int b_step : {0, 1}) {
        if (!a_step && !b_step) continue;
        std::vector<float> out(n + 1, 123.0f);
        ASSERT_TRUE(
            table.binary(kOp, Storage::f32, a.data(), a_step, b.data(), b_step, out.data(), n));
        for (size_t i = 0; i < n; ++i)
          ASSERT_TRUE(same(out[i], fn(a[i * a_step], b[i * b_step])))
              << name(kOp) << " n " << n << " at " << i << ": " << a[i * a_step] << ", "
              << b[i * b_step] << " gave " << out[i];
        EXPECT_EQ(out[n], 123.0f) << "wrote past the end";
      }
    // f16 and bf16: widened, computed in f32, rounded once.
    for (Storage type : {Storage::f16, Storage::bf16}) {
      const bool f16 = type == Storage::f16;
      std::vector<uint16_t> ha(n), hb(n), out(n);
      for (size_t i = 0; i < n; ++i) {
        ha[i] = f16 ? tensor::f32_to_f16(a[i]) : tensor::f32_to_bf16(a[i]);
        hb[i] = f16 ? tensor::f32_to_f16(b[i]) : tensor::f32_to_bf16(b[i]);
      }
      ASSERT_TRUE(table.binary(kOp, type, ha.data(), 1, hb.data(), 1, out.data(), n));
      for (size_t i = 0; i < n; ++i) {
        const auto widen = [&](uint16_t h) {
          return f16 ? tensor::f16_to_f32(h) : tensor::bf16_to_f32(h);
        };
        const float r = fn(widen(ha[i]), widen(hb[i]));
        const float want = widen(f16 ? tensor::f32_to_f16(r) : tensor::f32_to_bf16(r));
        ASSERT_TRUE(same(widen(out[i]), want)) << name(kOp) << (f16 ? " f16" : " bf16") << " at "
                                               << i << ": " << widen(out[i]) << " vs " << want;
      }
    }
  }
}

TEST_P(SimdKernels, ArithmeticEqualsTheReferenceBitwise) {
  check_binary<Binary::add>(*table);
  check_binary<Binary::sub>(*table);
  check_binary<Binary::mul>(*table);
  check_binary<Binary::div>(*table);
  check_binary<Binary::maximum>(*table);
  check_binary<Binary::minimum>(*table);
  float out = 0;
  EXPECT_FALSE(table->binary(Binary::pow, Storage::f32, &out, 1, &out, 1, &out, 1));
}

template <Unary kOp>
void check_unary(const simd::Kernels& table, double rtol, double atol) {
  const host::UnaryFn<kOp> fn;
  std::vector<float> x = values(1000, 3);
  for (float v = -12.0f; v <= 12.0f; v += 0.0625f) x.push_back(v);
  for (float v : {88.0f, 88.8f, -87.5f, -103.0f, -110.0f, 1e-6f, -1e-6f, 0.4999f, 3e38f})
    x.push_back(v);
  std::vector<float> out(x.size());
  ASSERT_TRUE(table.unary(kOp, Storage::f32, x.data(), out.data(), x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = fn(x[i]);
    if (rtol == 0 && atol == 0)
      ASSERT_TRUE(same(out[i], want))
          << name(kOp) << "(" << x[i] << ") = " << out[i] << ", reference " << want;
    else
      ASSERT_TRUE(close(out[i], want, rtol, atol))
          << name(kOp) << "(" << x[i] << ") = " << out[i] << ", reference " << want;
  }
}

TEST_P(SimdKernels, ExactFunctionsEqualTheReferenceBitwise) {
  check_unary<Unary::neg>(*table, 0, 0);
  check_unary<Unary::abs>(*table, 0, 0);
  check_unary<Unary::relu>(*table, 0, 0);
  check_unary<Unary::sqrt>(*table, 0, 0);
  check_unary<Unary::rsqrt>(*table, 0, 0);
  check_unary<Unary::floor>(*table, 0, 0);
  check_unary<Unary::ceil>(*table, 0, 0);
  check_unary<Unary::round>(*table, 0, 0);
}

TEST_P(SimdKernels, ApproximatedFunctionsAreWithinTheirTolerance) {
  check_unary<Unary::exp>(*table, 4e-7, 1e-37);  // absolute: subnormal results
  check_unary<Unary::log>(*table, 4e-7, 1e-7);   // absolute: near log(1) = 0
  check_unary<Unary::tanh>(*table, 2e-6, 1e-7);
  check_unary<Unary::sigmoid>(*table, 2e-6, 1e-7);
  check_unary<Unary::silu>(*table, 2e-6, 1e-7);
  check_unary<Unary::erf>(*table, 2e-6, 1e-7);
  check_unary<Unary::gelu>(*table, 2e-6, 1e-7);
  float out = 0;
  EXPECT_FALSE(table->unary(Unary::tan, Storage::f32, &out, &out, 1));
}

// kOp on `x` against the function in f64 rounded to f32: within `ulps` units in the last place
// of f32 at the result's magnitude, or `atol`; NaN where it is NaN, the same infinity.
template <Unary kOp>
void check_against_f64(const simd::Kernels& table, const std::vector<float>& x,
                       double (*f64)(double), double ulps, double atol) {
  std::vector<float> out(x.size());
  ASSERT_TRUE(table.unary(kOp, Storage::f32, x.data(), out.data(), x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = static_cast<float>(f64(x[i]));  // past f32's range, its infinity
    ASSERT_TRUE(close(out[i], want, ulps * 0x1p-23, atol))
        << name(kOp) << "(" << x[i] << ") = " << out[i] << ", f64 " << want;
    if (want == 0) {  // sin(-0) is -0
      ASSERT_EQ(std::signbit(out[i]), std::signbit(want)) << name(kOp) << "(" << x[i] << ")";
    }
  }
}

// A grid from `low` to `high` in `steps`, the awkward values (NaN, infinities, zeros), `more`.
std::vector<float> grid(float low, float high, int steps, std::vector<float> more = {}) {
  std::vector<float> x{kNaN, kInf, -kInf, 0.0f, -0.0f};
  for (int i = 0; i <= steps; ++i) x.push_back(low + (high - low) * static_cast<float>(i) / steps);
  x.insert(x.end(), more.begin(), more.end());
  // -0 again amid the grid, in a vector of values the vector kernels compute themselves.
  x.insert(x.begin() + static_cast<std::ptrdiff_t>(x.size() / 2), -0.0f);
  return x;
}

// Highway's trigonometric and hyperbolic functions (hwy/contrib/math) over their valid ranges,
// and past them, where the kernels hand the vector to the reference's std:: functions.
TEST_P(SimdKernels, TrigonometricAndHyperbolicFunctionsFollowTheirF64Values) {
  const std::vector<float> past{39000.0f, 39001.0f, -5e4f, 1e30f, 88.7f, 88.8f, -95.0f};
  check_against_f64<Unary::sin>(*table, grid(-100, 100, 40000, past), std::sin, 3, 1e-7);
  check_against_f64<Unary::cos>(*table, grid(-100, 100, 40000, past), std::cos, 3, 1e-7);
  const std::vector<float> outside{1.0001f, -1.5f, 2.0f, 0.99999994f, -0.99999994f};
  check_against_f64<Unary::asin>(*table, grid(-1, 1, 20000, outside), std::asin, 3, 1e-7);
  check_against_f64<Unary::acos>(*table, grid(-1, 1, 20000, outside), std::acos, 3, 1e-7);
  check_against_f64<Unary::atan>(*table, grid(-60, 60, 20000, past), std::atan, 3, 1e-7);
  check_against_f64<Unary::sinh>(*table, grid(-89, 89, 20000, past), std::sinh, 3, 1e-7);
  check_against_f64<Unary::cosh>(*table, grid(-89, 89, 20000, past), std::cosh, 3, 1e-7);
  check_against_f64<Unary::asinh>(*table, grid(-1e4f, 1e4f, 20000, past), std::asinh, 3, 1e-7);
  check_against_f64<Unary::acosh>(*table, grid(1, 1e4f, 20000, {0.5f, 1.0f, 1e30f}), std::acosh, 3,
                                  1e-7);
  check_against_f64<Unary::atanh>(*table, grid(-1, 1, 20000, outside), std::atanh, 3, 1e-7);
}

// The f32 reference loses gelu's and erf's relative accuracy for negative x (1 + erf cancels),
// so the same tolerances against the functions in f64, on a grid of 2^-9 through both tails.
TEST_P(SimdKernels, GeluAndErfFollowTheirF64Values) {
  std::vector<float> x;
  for (float v = -9.0f; v <= 9.0f; v += 1.0f / 512) x.push_back(v);
  std::vector<float> gelus(x.size()), erfs(x.size());
  ASSERT_TRUE(table->unary(Unary::gelu, Storage::f32, x.data(), gelus.data(), x.size()));
  ASSERT_TRUE(table->unary(Unary::erf, Storage::f32, x.data(), erfs.data(), x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double gelu = v * 0.5 * std::erfc(-v / std::sqrt(2.0));
    ASSERT_TRUE(close(gelus[i], gelu, 2e-6, 1e-7))
        << "gelu(" << v << ") = " << gelus[i] << ", f64 " << gelu;
    ASSERT_TRUE(close(erfs[i], std::erf(v), 2e-6, 1e-7)) << "erf(" << v << ") = " << erfs[i];
  }
}

TEST_P(SimdKernels, ConversionsEqualElementCodecBitwise) {
  // Every f16 and bf16 bit pattern widens exactly.
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(all.size());
  table->convert(Storage::f16, Storage::f32, all.data(), wide.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_TRUE(same(wide[i], tensor::f16_to_f32(all[i]))) << "f16 bits " << i;
  table->convert(Storage::bf16, Storage::f32, all.data(), wide.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_TRUE(same(wide[i], tensor::bf16_to_f32(all[i]))) << "bf16 bits " << i;
  // f32 rounds to nearest even: random bit patterns (every exponent), ties, overflow, NaN.
  std::mt19937 random(4);
  std::vector<float> x(200000);
  for (float& v : x) {
    const uint32_t bits = random();
    std::memcpy(&v, &bits, sizeof v);
  }
  for (float v : {65504.0f, 65519.0f, 65520.0f, 1.0009765625f + 0x1p-11f, 0x1p-25f, 0x1.8p-24f,
                  -0x1p-15f, 1.00390625f, 1.01171875f, kNaN, -kNaN, kInf, -kInf})
    x.push_back(v);
  std::vector<uint16_t> narrow(x.size());
  for (Storage type : {Storage::f16, Storage::bf16}) {
    table->convert(Storage::f32, type, x.data(), narrow.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const uint16_t want =
          type == Storage::f16 ? tensor::f32_to_f16(x[i]) : tensor::f32_to_bf16(x[i]);
      if (std::isnan(x[i]))
        ASSERT_TRUE(std::isnan(type == Storage::f16 ? tensor::f16_to_f32(narrow[i])
                                                    : tensor::bf16_to_f32(narrow[i])));
      else
        ASSERT_EQ(narrow[i], want) << (type == Storage::f16 ? "f16" : "bf16") << " of " << x[i];
    }
  }
}

TEST_P(SimdKernels, SumsEqualTheF64Reference) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{1000}, size_t{4099}}) {
    const std::vector<float> x = values(n, 5, 1.0f);
    std::vector<float> finite;
    for (float v : x) finite.push_back(std::isfinite(v) ? v : 1.0f);
    double want = 0, magnitude = 0;
    for (float v : finite) want += v, magnitude += std::abs(v);
    EXPECT_NEAR(table->sum(finite.data(), n), want, 1e-12 * magnitude + 1e-300) << n;
  }
  // Columns: rows x cols inside a wider row stride, added to what the sums held.
  for (size_t rows : {size_t{1}, size_t{5}, size_t{13}, size_t{64}})  // 13: 8 + 4 + 1
    for (size_t cols : {size_t{16}, size_t{37}, size_t{100}}) {
      const size_t stride = cols + 3;
      const std::vector<float> x = values(rows * stride, 6, 1.0f);
      std::vector<double> acc(cols, 1.0), want(cols, 1.0);
      std::vector<float> finite(x);
      for (float& v : finite) v = std::isfinite(v) ? v : 2.0f;
      for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < cols; ++j) want[j] += finite[r * stride + j];
      table->sum_columns(finite.data(), rows, stride, cols, acc.data());
      for (size_t j = 0; j < cols; ++j)
        ASSERT_NEAR(acc[j], want[j], 1e-12 * static_cast<double>(rows) * 20)
            << rows << "x" << cols << " column " << j;
    }
}

// Every length through the short loop, the four-vector blocks and the overlapping tail; the
// extreme anywhere (first, last, in the tail), infinities kept, and a NaN anywhere refused
// (false, the output untouched) for the caller's loop to name.
TEST_P(SimdKernels, ExtremesEqualTheReferenceAndRefuseNaN) {
  for (size_t n : {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{130},
                   size_t{1000}, size_t{4099}}) {
    std::vector<float> x = values(n, 7, 1.0f);
    for (float& v : x) v = std::isnan(v) ? 0.5f : v;
    for (size_t at : {size_t{0}, n / 2, n - 1}) {
      std::vector<float> y(x);
      y[at] = at == n / 2 ? -INFINITY : 1e30f;  // the minimum, or the maximum, at `at`
      for (const bool largest : {true, false}) {
        const float want =
            largest ? *std::max_element(y.begin(), y.end()) : *std::min_element(y.begin(), y.end());
        float got = 123;
        ASSERT_TRUE(table->extreme(y.data(), n, largest, &got)) << n << " " << at;
        EXPECT_EQ(got, want) << n << " at " << at << (largest ? " max" : " min");
      }
      y[at] = std::numeric_limits<float>::quiet_NaN();
      float untouched = 123;
      EXPECT_FALSE(table->extreme(y.data(), n, true, &untouched)) << n << " NaN at " << at;
      EXPECT_FALSE(table->extreme(y.data(), n, false, &untouched)) << n << " NaN at " << at;
      EXPECT_EQ(untouched, 123);
    }
  }
}

// host_rowwise.cpp's reference, in f64.
std::vector<double> softmax_reference(const std::vector<float>& x, bool logarithm) {
  double top = -std::numeric_limits<double>::infinity();
  for (float v : x) top = std::max<double>(top, v);
  if (std::isinf(top) && top < 0) top = 0;
  double total = 0;
  for (float v : x) total += std::exp(v - top);
  std::vector<double> out;
  for (float v : x)
    out.push_back(logarithm ? v - top - std::log(total) : std::exp(v - top) / total);
  return out;
}

TEST_P(SimdKernels, SoftmaxRowsMatchTheReference) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{16}, size_t{45}, size_t{4096}})
    for (bool logarithm : {false, true}) {
      std::vector<float> x = values(n, 7, 3.0f);
      for (float& v : x) v = std::isfinite(v) ? v : -1.0f;
      std::vector<float> y(n);
      table->softmax_row(x.data(), y.data(), n, logarithm);
      const std::vector<double> want = softmax_reference(x, logarithm);
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(close(y[i], want[i], 2e-6, logarithm ? 2e-6 : 1e-9))
            << n << (logarithm ? " log" : "") << " at " << i << ": " << y[i] << " vs " << want[i];
    }
  // A row of 4 Mi logits (a cross_entropy over a large vocabulary): its log-sum-exp summed in
  // f64 lanes stays within 1e-6 of the reference; summed in f32 lanes it was 2e-4 off.
  {
    std::mt19937 random(11);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> x(size_t{1} << 22), y(x.size());
    for (float& v : x) v = uniform(random);
    table->softmax_row(x.data(), y.data(), x.size(), true);
    const std::vector<double> want = softmax_reference(x, true);
    for (size_t i = 0; i < x.size(); i += 4099)
      ASSERT_TRUE(close(y[i], want[i], 1e-6, 1e-6)) << "4 Mi log at " << i << ": " << y[i];
  }
  // A row of -inf gives NaNs (0/0), as the parts do; +inf gives NaN.
  std::vector<float> minus(20, -kInf), y(20);
  table->softmax_row(minus.data(), y.data(), 20, false);
  EXPECT_TRUE(std::isnan(y[0]));
  std::vector<float> plus(20, 1.0f);
  plus[3] = kInf;
  table->softmax_row(plus.data(), y.data(), 20, false);
  EXPECT_TRUE(std::isnan(y[3]));
}

TEST_P(SimdKernels, NormRowsMatchTheReference) {
  for (size_t n : {size_t{1}, size_t{5}, size_t{64}, size_t{1001}})
    for (bool centre : {true, false}) {
      std::vector<float> x = values(n, 8, 2.0f), w = values(n, 9, 1.0f), b = values(n, 10, 1.0f);
      for (auto* v : {&x, &w, &b})
        for (float& e : *v) e = std::isfinite(e) ? e + 0.25f : 0.5f;
      std::vector<float> y(n);
      table->norm_row(x.data(), y.data(), n, w.data(), b.data(), 1e-5, centre);
      double mean = 0, squares = 0;
      if (centre) {
        for (float v : x) mean += v;
        mean /= static_cast<double>(n);
      }
      for (float v : x) squares += (v - mean) * (v - mean);
      const double scale = 1.0 / std::sqrt(squares / static_cast<double>(n) + 1e-5);
      for (size_t i = 0; i < n; ++i) {
        const double want = (x[i] - mean) * scale * w[i] + b[i];
        ASSERT_TRUE(close(y[i], want, 1e-5, 1e-6))
            << n << (centre ? " layer" : " rms") << " at " << i << ": " << y[i] << " vs " << want;
      }
    }
}

// x's gradient through the norms against the closed form in double, with and without a weight,
// rows shorter than a vector, with a tail, and long; the parameters' running sums (started at
// 0.5, each alone and both) gain dy * xhat and dy.
TEST_P(SimdKernels, NormRowGradientsMatchTheReference) {
  for (size_t n : {size_t{1}, size_t{5}, size_t{64}, size_t{1001}})
    for (bool centre : {true, false})
      for (bool weighted : {true, false})
        for (int sums = 0; sums < 4; ++sums) {
          const bool weight_sums = sums & 1, bias_sums = sums & 2;
          std::vector<float> x = values(n, 8, 2.0f), dy = values(n, 9, 1.0f),
                             w = values(n, 10, 1.0f);
          for (float& e : x) e = std::isfinite(e) ? e + 0.25f : 0.5f;
          // dy and w keep to ordinary sizes: 1e30 * 1e30 overflows f32 where the reference's
          // double does not.
          for (auto* v : {&dy, &w})
            for (float& e : *v) e = std::isfinite(e) && std::abs(e) < 1e3f ? e + 0.25f : 0.5f;
          std::vector<float> dx(n), weight_sum(n, 0.5f), bias_sum(n, 0.5f);
          table->norm_row_backward(x.data(), dy.data(), dx.data(), n, weighted ? w.data() : nullptr,
                                   1e-5, centre, weight_sums ? weight_sum.data() : nullptr,
                                   bias_sums ? bias_sum.data() : nullptr);
          const auto count = static_cast<double>(n);
          double mean = 0, squares = 0;
          if (centre) {
            for (float v : x) mean += v;
            mean /= count;
          }
          for (float v : x) squares += (v - mean) * (v - mean);
          const double rstd = 1.0 / std::sqrt(squares / count + 1e-5);
          double mean_g = 0, mean_g_xhat = 0;
          for (size_t i = 0; i < n; ++i) {
            const double g = dy[i] * (weighted ? w[i] : 1.0);
            mean_g += centre ? g / count : 0;
            mean_g_xhat += g * (x[i] - mean) * rstd / count;
          }
          const std::string what = std::to_string(n) + (centre ? " layer" : " rms") +
                                   (weighted ? " weighted" : "") + ", sums " +
                                   std::to_string(sums) + " at ";
          for (size_t i = 0; i < n; ++i) {
            const double g = dy[i] * (weighted ? w[i] : 1.0);
            const double xhat = (x[i] - mean) * rstd;
            const double want = rstd * (g - mean_g - xhat * mean_g_xhat);
            ASSERT_TRUE(close(dx[i], want, 1e-5, 1e-5))
                << what << i << ": " << dx[i] << " vs " << want;
            const double want_weight_sum = weight_sums ? 0.5 + dy[i] * xhat : 0.5;
            const double want_bias_sum = bias_sums ? 0.5 + dy[i] : 0.5;
            ASSERT_TRUE(close(weight_sum[i], want_weight_sum, 1e-5, 1e-5))
                << what << i << ": weight's sum " << weight_sum[i] << " vs " << want_weight_sum;
            ASSERT_TRUE(close(bias_sum[i], want_bias_sum, 1e-6, 1e-6))
                << what << i << ": bias's sum " << bias_sum[i] << " vs " << want_bias_sum;
          }
        }
}

INSTANTIATE_TEST_SUITE_P(EachIsa, SimdKernels, ::testing::Values(Isa::sse4, Isa::avx2, Isa::avx512),
                         [](const ::testing::TestParamInfo<Isa>& isa) {
                           return std::string(simd::name(isa.param));
                         });

TEST(SimdIsa, NamesParseAndUnknownOnesAreRefused) {
  for (Isa isa : {Isa::scalar, Isa::sse4, Isa::avx2, Isa::avx512})
    EXPECT_EQ(simd::parse_isa(simd::name(isa)), isa);
  for (const char* bad : {"avx1024", "AVX2", "", "sse2"})
    test::expect_error([&] { simd::parse_isa(bad); }, ErrorCode::InvalidArgument,
                       {"HAL_CPU_ISA=" + std::string(bad), "unknown instruction set",
                        "avx512, avx2, sse4 or scalar"});
  EXPECT_TRUE(simd::supported(Isa::scalar));
  EXPECT_EQ(simd::kernels(Isa::scalar), nullptr);
  EXPECT_TRUE(simd::supported(simd::best_isa()));
}

}  // namespace
}  // namespace hal::ops
