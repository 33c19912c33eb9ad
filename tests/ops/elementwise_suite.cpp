// The elementwise ops on every device, in the spirit of ggml's test-backend-ops: each op and
// dtype over shapes with broadcasting, views that are not contiguous, size-1 and empty
// dimensions, compared with plain loops on the host in double precision, within a tolerance
// stated per dtype.
#include <cmath>
#include <functional>

#include "op_values.hpp"

namespace hal::test {
namespace {

// The reference: a plain loop over the broadcast shape, indexing each input by its own shape.
std::vector<double> broadcast_reference(const std::vector<double>& a, const Shape& a_shape,
                                        const std::vector<double>& b, const Shape& b_shape,
                                        const std::function<double(double, double)>& fn) {
  const Shape shape = broadcast_shapes(a_shape, b_shape);
  std::vector<double> out;
  std::vector<int64_t> index(shape.size(), 0);
  auto at = [&](const Shape& own) {
    int64_t linear = 0;
    const size_t lead = shape.size() - own.size();
    for (size_t d = 0; d < own.size(); ++d)
      linear = linear * own[d] + (own[d] == 1 ? 0 : index[lead + d]);
    return static_cast<size_t>(linear);
  };
  for (int64_t n = numel(shape); n > 0; --n) {
    out.push_back(fn(a[at(a_shape)], b[at(b_shape)]));
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&, Stream&);
  std::function<double(double, double)> reference;
};

const BinaryCase kBinary[] = {
    {"add", add, [](double x, double y) { return x + y; }},
    {"sub", sub, [](double x, double y) { return x - y; }},
    {"mul", mul, [](double x, double y) { return x * y; }},
    {"div", div, [](double x, double y) { return x / y; }},
    {"maximum", maximum, [](double x, double y) { return std::max(x, y); }},
    {"minimum", minimum, [](double x, double y) { return std::min(x, y); }},
};

class ElementwiseSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs neither host nor portable kernels, so it has no "
                   << "elementwise ops (DevicesWithoutKernels checks that it says so)";
  }
  Stream stream = device().create_stream();
  std::vector<DType> dtypes() const { return compute_dtypes(device()); }
};

TEST_P(ElementwiseSuite, BinaryOpsBroadcastLikeNumpy) {
  const std::pair<Shape, Shape> shapes[] = {
      {{7}, {7}},    {{3, 5}, {3, 5}}, {{3, 5}, {5}},    {{4, 1, 3}, {2, 3}},
      {{1}, {2, 3}}, {{}, {4}},        {{2, 0}, {2, 1}}, {{65, 33}, {65, 1}},
  };
  for (const BinaryCase& c : kBinary)
    for (DType dtype : dtypes())
      for (const auto& [a_shape, b_shape] : shapes) {
        const std::string what = std::string(c.name) + " " + std::string(to_string(dtype)) + " " +
                                 to_string(a_shape) + " " + to_string(b_shape) + " on " + id();
        const bool integer_div =
            c.name == std::string("div") && dtype != DType::f32 && dtype != DType::f64;
        const auto a = inputs(static_cast<size_t>(numel(a_shape)), dtype, 1);
        const auto b = inputs(static_cast<size_t>(numel(b_shape)), dtype, 2, 0.5, 3.0, true);
        const Tensor out =
            c.op(make(a, a_shape, dtype, stream), make(b, b_shape, dtype, stream), stream);
        EXPECT_EQ(out.shape(), broadcast_shapes(a_shape, b_shape)) << what;
        EXPECT_EQ(out.dtype(), dtype) << what;
        auto want = broadcast_reference(a, a_shape, b, b_shape, c.reference);
        if (integer_div)
          for (double& v : want) v = std::trunc(v);
        if (dtype == DType::f32)
          for (double& v : want) v = static_cast<float>(v);
        expect_close(numbers(out, stream), want, dtype, what);
      }
}

TEST_P(ElementwiseSuite, OperandsMayBeAnyView) {
  const auto values = inputs(60, DType::f32, 3);
  const Tensor base = make(values, {3, 4, 5}, DType::f32, stream);
  const Tensor transposed = base.transpose(0, 2);         // [5, 4, 3], strided
  const Tensor sliced = base.slice(1, 1, 4, 2);           // [3, 2, 5]
  const Tensor row = base.slice(0, 1, 2).slice(1, 0, 1);  // [1, 1, 5], offset 20
  const Tensor sum = add(transposed, transposed.contiguous(stream), stream);
  std::vector<double> doubled = numbers(transposed, stream);
  for (double& v : doubled) v = static_cast<float>(2 * v);
  expect_close(numbers(sum, stream), doubled, DType::f32, "transposed + contiguous copy");

  const Tensor product = mul(sliced, row, stream);  // [3, 2, 5] * [1, 1, 5]
  const std::vector<double> s = numbers(sliced, stream), r = numbers(row, stream);
  std::vector<double> want(s.size());
  for (size_t i = 0; i < s.size(); ++i) want[i] = static_cast<float>(s[i] * r[i % 5]);
  expect_close(numbers(product, stream), want, DType::f32, "slice * broadcast row");

  const Tensor negated = neg(transposed, stream);
  std::vector<double> minus = numbers(transposed, stream);
  for (double& v : minus) v = -v;
  expect_close(numbers(negated, stream), minus, DType::f32, "neg of a transposed view");
}

struct UnaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, Stream&);
  double (*reference)(double);
  bool integers;
  double low, high;  // the inputs' range
};

const UnaryCase kUnary[] = {
    {"neg", neg, [](double x) { return -x; }, true, -3, 3},
    {"abs", abs, [](double x) { return std::fabs(x); }, true, -3, 3},
    {"relu", relu, [](double x) { return x < 0 ? 0.0 : x; }, true, -3, 3},
    {"exp", exp, [](double x) { return std::exp(x); }, false, -5, 5},
    {"log", log, [](double x) { return std::log(x); }, false, 0.01, 10},
    {"sqrt", sqrt, [](double x) { return std::sqrt(x); }, false, 0, 10},
    {"rsqrt", rsqrt, [](double x) { return 1 / std::sqrt(x); }, false, 0.01, 10},
    {"tanh", tanh, [](double x) { return std::tanh(x); }, false, -5, 5},
    {"sigmoid", sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, false, -8, 8},
    {"gelu", gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, false, -5,
     5},
    {"silu", silu, [](double x) { return x / (1 + std::exp(-x)); }, false, -8, 8},
};

TEST_P(ElementwiseSuite, UnaryOpsMatchTheHostsFunctions) {
  for (const UnaryCase& c : kUnary)
    for (DType dtype : dtypes()) {
      const bool integer = dtype == DType::i32 || dtype == DType::i64;
      const std::string what =
          std::string(c.name) + " " + std::string(to_string(dtype)) + " on " + id();
      const auto x = inputs(1001, dtype, 4, c.low, c.high);
      const Tensor in = make(x, {7, 11, 13}, dtype, stream);
      if (integer && !c.integers) {
        // Functions of integers compute in f32 and give f32, as PyTorch's exp(int) does.
        const Tensor out = c.op(in, stream);
        EXPECT_EQ(out.dtype(), DType::f32) << what;
        std::vector<double> want;
        for (double v : numbers(in, stream)) want.push_back(static_cast<float>(c.reference(v)));
        expect_close(numbers(out, stream), want, DType::f32, what);
        continue;
      }
      std::vector<double> want;
      for (double v : x)
        want.push_back(dtype == DType::f32 ? static_cast<float>(c.reference(v)) : c.reference(v));
      expect_close(numbers(c.op(in, stream), stream), want, dtype, what);
    }
}

TEST_P(ElementwiseSuite, BadArgumentsAreRefusedByName) {
  const Tensor a = zeros({2, 3}, DType::f32, stream);
  expect_error(
      [&] {
        add(a, zeros({2, 4}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument,
      {"add of f32[2, 3]", "[2, 3]", "[2, 4]", id(), "do not broadcast", "dimension 1"});
  expect_error(
      [&] {
        pow(a, zeros({4, 3}, DType::f32, stream), stream);
      },
      ErrorCode::InvalidArgument, {"pow of f32[2, 3]", "f32[4, 3]", "do not broadcast"});
  expect_error([&] { exp(Tensor(), stream); }, ErrorCode::InvalidArgument, {"exp", "undefined"});
  for (const Device& other : suite_devices()) {
    if (other == device()) continue;
    Stream there = other.create_stream();
    const Tensor b = zeros({2, 3}, DType::f32, there);
    there.synchronize();
    expect_error([&] { add(a, b, stream); }, ErrorCode::InvalidArgument,
                 {"add", id(), other.id(), "different devices"});
    expect_error([&] { relu(a, there); }, ErrorCode::InvalidArgument,
                 {"relu", "stream of " + other.id()});
  }
}

class ElementwiseWithoutKernels : public ElementwiseSuite {
 protected:
  void SetUp() override {
    if (runs_kernels(device()) || has_builtin_ops(device()))
      GTEST_SKIP() << id() << " runs ops: see the other elementwise tests and the plugin tests";
  }
};

TEST_P(ElementwiseWithoutKernels, OpsSayTheyAreUnsupportedThere) {
  const Tensor a = zeros({2, 3}, DType::f32, stream);
  expect_error([&] { add(a, a, stream); }, ErrorCode::Unsupported,
               {"add of f32[2, 3]", id(), "no kernel for f32"});
  expect_error([&] { gelu(a, stream); }, ErrorCode::Unsupported,
               {"gelu of f32[2, 3]", id(), "no kernel for f32"});
}

HAL_DEVICE_SUITE(ElementwiseSuite);
HAL_DEVICE_SUITE(ElementwiseWithoutKernels);

}  // namespace
}  // namespace hal::test
