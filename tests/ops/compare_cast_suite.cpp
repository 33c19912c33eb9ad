// pow, comparisons, where, casts between every pair of dtypes, and f16/bf16 computed in f32, on
// every device with kernels, against host references.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "op_values.hpp"

namespace hal::test {
namespace {

class CompareCastSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs no kernels: ElementwiseWithoutKernels covers it";
  }
  bool has_fp64() const { return device().info().has_feature(feature::kFp64); }
  Stream stream = device().create_stream();
};

struct Comparison {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&, Stream&);
  std::function<bool(double, double)> reference;
};

const Comparison kComparisons[] = {
    {"eq", eq, [](double x, double y) { return x == y; }},
    {"ne", ne, [](double x, double y) { return x != y; }},
    {"lt", lt, [](double x, double y) { return x < y; }},
    {"le", le, [](double x, double y) { return x <= y; }},
    {"gt", gt, [](double x, double y) { return x > y; }},
    {"ge", ge, [](double x, double y) { return x >= y; }},
};

TEST_P(CompareCastSuite, ComparisonsBroadcastAndGiveBool) {
  std::vector<DType> dtypes = compute_dtypes(device());
  dtypes.insert(dtypes.end(), {DType::f16, DType::bf16});
  for (DType dtype : dtypes) {
    // Halves of small integers, so that equal elements are common; one NaN.
    std::vector<double> a = inputs(15, dtype, 5), b = inputs(5, dtype, 6);
    if (!integral(dtype)) {
      for (double& v : a) v = std::round(v * 2) / 2;
      for (double& v : b) v = std::round(v * 2) / 2;
      a[4] = std::numeric_limits<double>::quiet_NaN();
    }
    for (const Comparison& c : kComparisons) {
      const std::string what = std::string(c.name) + " " + std::string(to_string(dtype));
      const Tensor out = c.op(make(a, {3, 5}, dtype, stream), make(b, {5}, dtype, stream), stream);
      ASSERT_EQ(out.dtype(), DType::boolean) << what;
      ASSERT_EQ(out.shape(), (Shape{3, 5})) << what;
      const auto got = out.to_vector<uint8_t>(stream);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], c.reference(a[i], b[i % 5]) ? 1 : 0) << what << " element " << i;
    }
  }
}

TEST_P(CompareCastSuite, PowTakesFloatsOnly) {
  std::vector<DType> dtypes{DType::f32, DType::f16, DType::bf16};
  if (has_fp64()) dtypes.push_back(DType::f64);
  for (DType dtype : dtypes) {
    const auto base = inputs(12, dtype, 7, 0.25, 3.0), exponent = inputs(4, dtype, 8, -2.0, 2.0);
    const Tensor out =
        pow(make(base, {3, 4}, dtype, stream), make(exponent, {4}, dtype, stream), stream);
    std::vector<double> want;
    for (size_t i = 0; i < base.size(); ++i)
      want.push_back(rounded(std::pow(base[i], exponent[i % 4]), dtype));
    expect_close(numbers(out, stream), want, dtype, "pow " + std::string(to_string(dtype)));
  }
  const Tensor ints = zeros({2}, DType::i32, stream);
  expect_error([&] { pow(ints, ints, stream); }, ErrorCode::Unsupported,
               {"pow of i32[2]", id(), "no kernel for i32", "pow takes f32, f16, bf16 and f64"});
}

TEST_P(CompareCastSuite, HalfPrecisionComputesInF32AndRoundsBack) {
  for (DType dtype : {DType::f16, DType::bf16}) {
    const auto a = inputs(24, dtype, 9), b = inputs(24, dtype, 10, 0.5, 2.0);
    const Tensor x = make(a, {4, 6}, dtype, stream), y = make(b, {4, 6}, dtype, stream);
    const std::pair<const char*, Tensor> results[] = {
        {"add", add(x, y, stream)}, {"div", div(x, y, stream)}, {"exp", exp(x, stream)},
        {"gelu", gelu(x, stream)},  {"neg", neg(x, stream)},
    };
    const std::function<double(double, double)> references[] = {
        [](double p, double q) { return p + q; },
        [](double p, double q) { return p / q; },
        [](double p, double) { return std::exp(p); },
        [](double p, double) { return 0.5 * p * (1 + std::erf(p / std::sqrt(2.0))); },
        [](double p, double) { return -p; },
    };
    for (size_t r = 0; r < std::size(results); ++r) {
      const std::string what = std::string(results[r].first) + " " + std::string(to_string(dtype));
      EXPECT_EQ(results[r].second.dtype(), dtype) << what;
      std::vector<double> want;
      for (size_t i = 0; i < a.size(); ++i)
        want.push_back(rounded(references[r](a[i], b[i]), dtype));
      expect_close(numbers(results[r].second, stream), want, dtype, what);
    }
  }
}

TEST_P(CompareCastSuite, WhereSelectsAnyDtypeWithBroadcasting) {
  const std::vector<double> cond{1, 0, 1};
  std::vector<DType> dtypes{DType::f32, DType::f16,     DType::i64,
                            DType::u8,  DType::boolean, DType::i8};
  for (DType dtype : dtypes) {
    const std::vector<double> a = dtype == DType::boolean ? std::vector<double>(12, 1.0)
                                                          : inputs(12, dtype, 11, 0, 9),
                              b = dtype == DType::boolean ? std::vector<double>(4, 0.0)
                                                          : inputs(4, dtype, 12, 0, 9);
    std::vector<double> a_abs = a, b_abs = b;  // u8 holds no negative numbers
    for (double& e : a_abs) e = std::fabs(e);
    for (double& e : b_abs) e = std::fabs(e);
    // cond [3, 1], a [4, 3] seen transposed as [3, 4], b [4].
    const Tensor a_t = make(a_abs, {4, 3}, dtype, stream).transpose(0, 1);
    const Tensor out = where(make(cond, {3, 1}, DType::boolean, stream), a_t,
                             make(b_abs, {4}, dtype, stream), stream);
    ASSERT_EQ(out.shape(), (Shape{3, 4}));
    const auto got = numbers(out, stream);
    for (size_t r = 0; r < 3; ++r)
      for (size_t c = 0; c < 4; ++c)
        ASSERT_EQ(got[r * 4 + c], cond[r] != 0 ? a_abs[c * 3 + r] : b_abs[c])
            << to_string(dtype) << " [" << r << ", " << c << "]";
  }
  const Tensor f = zeros({3}, DType::f32, stream);
  expect_error([&] { where(f, f, f, stream); }, ErrorCode::InvalidArgument,
               {"where", "f32[3]", "must be bool"});
}

// What a cast must give, from the rules in ops.hpp, computed independently of the library.
double cast_reference(double v, DType from, DType to) {
  const bool from_float = !integral(from) && from != DType::boolean;
  switch (to) {
    case DType::boolean:
      return v != 0 ? 1 : 0;
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::f64:
      return rounded(v, to);
    default:
      break;
  }
  const int bits = to == DType::i8 || to == DType::u8 ? 8 : to == DType::i32 ? 32 : 64;
  const bool is_signed = to != DType::u8;
  const double low = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double beyond = is_signed ? std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits);
  if (from_float) {
    if (std::isnan(v)) return 0;
    if (v <= low) return low;
    if (v >= beyond) return beyond - 1;
    return std::trunc(v);
  }
  // Integers wrap modulo 2^bits.
  const double span = std::ldexp(1.0, bits);
  double wrapped = std::fmod(v, span);
  if (wrapped < low) wrapped += span;
  if (wrapped >= beyond) wrapped -= span;
  return wrapped;
}

std::vector<double> cast_inputs(DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (dtype) {
    case DType::boolean:
      return {0, 1, 1, 0};
    case DType::u8:
      return {0, 1, 127, 128, 200, 255};
    case DType::i8:
      return {0, 1, -1, 127, -128, -100};
    case DType::i32:
    case DType::i64:
      return {0, 1, -1, 127, 128, -129, 255, 256, -300, 70000, -70000, 2147483647, -2147483648.0};
    default: {
      std::vector<double> v{
          0,     1.5,   -1.5,   -2.75, 100.25, 255.5,
          256.0, 300.5, -300.5, 65504, -70000, 3e9,
          -3e9,  1e20,  -1e20,  inf,   -inf,   std::numeric_limits<double>::quiet_NaN()};
      for (double& e : v) e = rounded(e, dtype);
      return v;
    }
  }
}

TEST_P(CompareCastSuite, CastsBetweenEveryPairOfDtypes) {
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes) {
      if (!has_fp64() && (from == DType::f64 || to == DType::f64)) continue;
      const std::string what = std::string(to_string(from)) + " to " + std::string(to_string(to));
      const auto values = cast_inputs(from);
      const Tensor out =
          cast(make(values, {static_cast<int64_t>(values.size())}, from, stream), to, stream);
      ASSERT_EQ(out.dtype(), to) << what;
      const auto got = numbers(out, stream);
      for (size_t i = 0; i < values.size(); ++i) {
        const double want = cast_reference(values[i], from, to);
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(got[i])) << what << " of " << values[i];
        else
          EXPECT_EQ(got[i], want) << what << " of " << values[i];
      }
    }
}

TEST_P(CompareCastSuite, CastOfAViewAndToTheSameDtype) {
  const Tensor x = make(inputs(6, DType::f32, 13), {2, 3}, DType::f32, stream);
  const Tensor same = cast(x, DType::f32, stream);
  EXPECT_EQ(same.storage().impl(), x.storage().impl()) << "no copy";
  const Tensor t = cast(x.transpose(0, 1), DType::i32, stream);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  const auto v = numbers(x, stream), got = numbers(t, stream);
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 2; ++c) EXPECT_EQ(got[r * 2 + c], std::trunc(v[c * 3 + r]));
}

HAL_DEVICE_SUITE(CompareCastSuite);

}  // namespace
}  // namespace hal::test
