// The ops on vulkan:0 against the same ops on cpu:0 (differential), on shapes the shaders treat
// differently: flat and strided operands, broadcasts, views, long reductions, rows longer than a
// work group, matrices that are no multiple of the 16 x 16 tile, batches and transposes. Then
// what Vulkan lacks: refused with the reason, or run on the CPU when fallback is allowed.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <thread>
#include <tuple>

#include "hal/log.hpp"
#include "hal/ops.hpp"
#include "vulkan_fixture.hpp"

namespace hal::test {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed, float low = -2, float high = 2) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> draw(low, high);
  std::vector<float> values(n);
  for (float& v : values) v = draw(engine);
  return values;
}

int64_t count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

class VulkanOpsTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped()) return;
    cpu = hal::device("cpu:0");
    here = device.create_stream();
    there = cpu.create_stream();
  }

  // `fn` on tensors made from the same values on vulkan:0 and cpu:0; the results agree within
  // `tolerance` relative to the larger of 1 and the value.
  void expect_same(const std::vector<std::pair<Shape, std::vector<float>>>& inputs,
                   const std::function<Tensor(const std::vector<Tensor>&, Stream&)>& fn,
                   const std::string& what, double tolerance = 2e-5) {
    std::vector<Tensor> on_vulkan, on_cpu;
    for (const auto& [shape, values] : inputs) {
      on_vulkan.push_back(from_vector(values, shape, here));
      on_cpu.push_back(from_vector(values, shape, there));
    }
    const Tensor got = fn(on_vulkan, here), want = fn(on_cpu, there);
    ASSERT_EQ(got.device(), device) << what;
    ASSERT_EQ(got.shape(), want.shape()) << what;
    ASSERT_EQ(got.dtype(), want.dtype()) << what;
    if (got.dtype() == DType::i64) {
      EXPECT_EQ(got.to_vector<int64_t>(here), want.to_vector<int64_t>(there)) << what;
      return;
    }
    const std::vector<float> a = got.contiguous(here).to_vector<float>(here);
    const std::vector<float> b = want.contiguous(there).to_vector<float>(there);
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(b[i])) {
        ASSERT_TRUE(std::isnan(a[i])) << what << ": element " << i;
        continue;
      }
      ASSERT_NEAR(a[i], b[i], tolerance * std::max(1.0, std::fabs(double{b[i]})))
          << what << ": element " << i;
    }
  }

  Device cpu;
  Stream here, there;
};

TEST_F(VulkanOpsTest, BinaryOpsFlatBroadcastAndOnViews) {
  using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, Stream&);
  const std::pair<const char*, BinaryFn> ops[] = {{"add", add},         {"sub", sub},
                                                  {"mul", mul},         {"div", div},
                                                  {"maximum", maximum}, {"minimum", minimum}};
  const Shape shape{7, 33, 5};
  for (const auto& [name, op] : ops) {
    const std::vector<float> a = random_values(count(shape), 1), b = random_values(count(shape), 2);
    expect_same(
        {{shape, a}, {shape, b}}, [op](auto& in, Stream& s) { return op(in[0], in[1], s); },
        std::string(name) + " flat");
    expect_same(
        {{shape, a}, {{33, 1}, random_values(33, 3)}},
        [op](auto& in, Stream& s) { return op(in[0], in[1], s); },
        std::string(name) + " broadcast");
    expect_same(
        {{shape, a}, {{5, 33, 7}, b}},
        [op](auto& in, Stream& s) { return op(in[0], in[1].transpose(0, 2), s); },
        std::string(name) + " of a transposed view");
  }
  expect_same(
      {{{1000}, random_values(1000, 4, 0.1f, 3)}, {{1000}, random_values(1000, 5)}},
      [](auto& in, Stream& s) { return pow(in[0], in[1], s); }, "pow", 1e-4);
}

TEST_F(VulkanOpsTest, UnaryOpsOnTheirDomains) {
  using UnaryFn = Tensor (*)(const Tensor&, Stream&);
  struct Case {
    const char* name;
    UnaryFn fn;
    float low, high;
  };
  const Case cases[] = {{"neg", neg, -5, 5},          {"abs", abs, -5, 5},
                        {"relu", relu, -5, 5},        {"exp", exp, -10, 10},
                        {"log", log, 0.01f, 100},     {"sqrt", sqrt, 0, 100},
                        {"rsqrt", rsqrt, 0.01f, 100}, {"tanh", tanh, -5, 5},
                        {"sigmoid", sigmoid, -8, 8},  {"gelu", gelu, -5, 5},
                        {"silu", silu, -8, 8},        {"erf", erf, -3, 3},
                        {"floor", floor, -5, 5},      {"ceil", ceil, -5, 5},
                        {"round", round, -5, 5},      {"sin", sin, -3, 3},
                        {"cos", cos, -3, 3},          {"tan", tan, -1.2f, 1.2f},
                        {"asin", asin, -1, 1},        {"acos", acos, -1, 1},
                        {"atan", atan, -10, 10},      {"sinh", sinh, -3, 3},
                        {"cosh", cosh, -3, 3},        {"asinh", asinh, -10, 10},
                        {"acosh", acosh, 1, 10},      {"atanh", atanh, -0.99f, 0.99f}};
  for (const Case& c : cases) {
    const std::vector<float> x = random_values(4099, 7, c.low, c.high);
    expect_same(
        {{{4099}, x}}, [&c](auto& in, Stream& s) { return c.fn(in[0], s); }, c.name, 1e-5);
    expect_same(
        {{{17, 3}, random_values(51, 8, c.low, c.high)}},
        [&c](auto& in, Stream& s) { return c.fn(in[0].transpose(0, 1), s); },
        std::string(c.name) + " of a view", 1e-5);
  }
}

TEST_F(VulkanOpsTest, ReductionsOverAxesViewsAndLongRows) {
  using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);
  const std::pair<const char*, ReduceFn> ops[] = {
      {"sum", sum}, {"mean", mean}, {"max", max}, {"min", min}, {"argmax", argmax}};
  const Shape shape{6, 50, 9};
  const std::vector<float> x = random_values(count(shape), 9);
  for (const auto& [name, op] : ops) {
    for (const std::vector<int64_t>& axes :
         {std::vector<int64_t>{}, {0}, {1}, {2}, {0, 2}, {-1, -2}}) {
      expect_same(
          {{shape, x}}, [op, &axes](auto& in, Stream& s) { return op(in[0], axes, false, s); },
          std::string(name) + " over " + std::to_string(axes.size()) + " axes", 1e-4);
    }
    expect_same(
        {{shape, x}}, [op](auto& in, Stream& s) { return op(in[0].transpose(0, 2), {1}, true, s); },
        std::string(name) + " of a view");
    expect_same(
        {{{100003}, random_values(100003, 10)}},
        [op](auto& in, Stream& s) { return op(in[0], {}, false, s); },
        std::string(name) + " of 100003 elements", 1e-4);
  }
}

// The bytes of a result, copied to the host: integers compared exactly, past 2^53 too.
std::vector<uint8_t> bytes_of(const Tensor& t, Stream& stream) {
  std::vector<uint8_t> out(t.nbytes());
  t.copy_to_host(out.data(), stream);
  stream.synchronize();
  return out;
}

// Integer reductions (reduce.comp without FLOATING, argmax.comp) in every integer the device holds,
// over axes, views and more elements than a work group: max, min and argmax of each type with its
// extremes in the data; sums (of i64 and u64, to which sum widens the narrow ones) exact past
// 2^53 and wrapping as the CPU's do.
TEST_F(VulkanOpsTest, IntegerReductionsMatchTheCpuExactly) {
  const std::vector<DType> listed = here.device().info().dtypes;
  if (std::find(listed.begin(), listed.end(), DType::u64) == listed.end())
    GTEST_SKIP() << device.id() << " has no u64 (shaderInt64), which the test's data is made of";
  const Shape shape{5, 301, 3};
  std::mt19937_64 engine(17);
  std::vector<uint64_t> raw(static_cast<size_t>(count(shape)));
  for (uint64_t& v : raw) v = engine();
  raw[7] = 0;
  raw[100] = ~uint64_t{0};
  raw[200] = uint64_t{1} << 63;
  raw[300] = (uint64_t{1} << 63) - 1;
  using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);
  const std::pair<const char*, ReduceFn> ops[] = {
      {"max", max}, {"min", min}, {"argmax", argmax}, {"sum", sum}};
  for (DType dtype : {DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::u32,
                      DType::i64, DType::u64}) {
    if (std::find(listed.begin(), listed.end(), dtype) == listed.end()) continue;
    // The random words, narrowed by the cast's wrapping (through u64, their own bits).
    const auto make = [&](Stream& s) {
      return cast(from_host(raw.data(), shape, DType::u64, s), dtype, s);
    };
    const Tensor x_here = make(here), x_there = make(there);
    for (const auto& [name, op] : ops) {
      for (const std::vector<int64_t>& axes : {std::vector<int64_t>{}, {0}, {1}, {0, 2}}) {
        const std::string what = std::string(name) + " of " + std::string(to_string(dtype)) +
                                 " over " + std::to_string(axes.size()) + " axes";
        const Tensor got = op(x_here, axes, false, here), want = op(x_there, axes, false, there);
        ASSERT_EQ(got.device(), device) << what;
        ASSERT_EQ(got.dtype(), want.dtype()) << what;
        ASSERT_EQ(got.shape(), want.shape()) << what;
        EXPECT_EQ(bytes_of(got, here), bytes_of(want, there)) << what;
      }
      const std::string what = std::string(name) + " of a view of " + std::string(to_string(dtype));
      EXPECT_EQ(bytes_of(op(x_here.transpose(0, 2), {1}, true, here), here),
                bytes_of(op(x_there.transpose(0, 2), {1}, true, there), there))
          << what;
    }
  }
}

TEST_F(VulkanOpsTest, SoftmaxAndNormsOnShortAndLongRows) {
  for (int64_t cols : {1, 7, 128, 1000}) {
    const Shape shape{5, cols};
    const std::vector<float> x = random_values(count(shape), 11, -20, 20);
    const std::vector<float> w = random_values(cols, 12), b = random_values(cols, 13);
    const std::string at = " of rows of " + std::to_string(cols);
    expect_same(
        {{shape, x}}, [](auto& in, Stream& s) { return softmax(in[0], -1, s); }, "softmax" + at);
    expect_same(
        {{shape, x}}, [](auto& in, Stream& s) { return log_softmax(in[0], -1, s); },
        "log_softmax" + at, 1e-4);
    expect_same(
        {{shape, x}, {{cols}, w}, {{cols}, b}},
        [cols](auto& in, Stream& s) { return layer_norm(in[0], {cols}, in[1], in[2], 1e-5, s); },
        "layer_norm" + at, 1e-4);
    expect_same(
        {{shape, x}},
        [cols](auto& in, Stream& s) {
          return layer_norm(in[0], {cols}, Tensor(), Tensor(), 1e-5, s);
        },
        "layer_norm without weight and bias" + at, 1e-4);
    expect_same(
        {{shape, x}, {{cols}, w}},
        [cols](auto& in, Stream& s) { return rms_norm(in[0], {cols}, in[1], 1e-6, s); },
        "rms_norm" + at, 1e-4);
  }
}

TEST_F(VulkanOpsTest, MatmulSizesBatchesAndTransposes) {
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {1, 17, 1}, {16, 16, 16}, {17, 33, 15}, {64, 65, 129}}) {
    const std::string what =
        "matmul " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    const std::vector<float> a = random_values(m * k, 14), b = random_values(k * n, 15);
    expect_same(
        {{{m, k}, a}, {{k, n}, b}}, [](auto& in, Stream& s) { return matmul(in[0], in[1], s); },
        what, 1e-4);
    expect_same(
        {{{k, m}, a}, {{n, k}, b}},
        [](auto& in, Stream& s) { return matmul(in[0].transpose(0, 1), in[1].transpose(0, 1), s); },
        what + " of transposes", 1e-4);
  }
  expect_same(
      {{{3, 20, 30}, random_values(1800, 16)}, {{30, 10}, random_values(300, 17)}},
      [](auto& in, Stream& s) { return matmul(in[0], in[1], s); },
      "matmul batched with a broadcast B", 1e-4);
}

// conv by Vulkan's own shaders (im2col, matmul, the epilogue): 1 to 3 spatial dimensions,
// strides, dilations, asymmetric padding, groups, bias, a residual and relu.
TEST_F(VulkanOpsTest, ConvolutionsMatchTheCpu) {
  EXPECT_TRUE(supports_op(device, "conv", DType::f32));
  for (const OpSupport& op : supported_ops(device)) {
    if (op.name != "conv") continue;
    EXPECT_EQ(op.kernels.front(), "Vulkan shaders");
  }
  struct Case {
    const char* what;
    Shape x, w;
    ConvOptions options;
    bool bias = false, residual = false;
  };
  std::vector<Case> cases;
  cases.push_back({"1-d, stride 2, padded", {2, 3, 11}, {4, 3, 3}, {}, true});
  cases.back().options.strides = {2};
  cases.back().options.pads_before = {1};
  cases.back().options.pads_after = {2};
  cases.push_back({"2-d, dilated, relu", {2, 4, 9, 8}, {6, 4, 3, 2}, {}, true});
  cases.back().options.dilations = {2, 1};
  cases.back().options.relu = true;
  cases.push_back({"2-d, 2 groups, residual", {1, 4, 7, 7}, {6, 2, 3, 3}, {}, false, true});
  cases.back().options.groups = 2;
  cases.back().options.pads_before = {1, 1};
  cases.back().options.pads_after = {1, 1};
  cases.back().options.relu = true;
  cases.push_back({"3-d, strided", {1, 2, 5, 6, 7}, {3, 2, 2, 3, 2}, {}, true});
  cases.back().options.strides = {1, 2, 3};
  uint32_t seed = 50;
  for (const Case& c : cases) {
    std::vector<std::pair<Shape, std::vector<float>>> inputs{
        {c.x, random_values(count(c.x), ++seed)}, {c.w, random_values(count(c.w), ++seed)}};
    if (c.bias) inputs.push_back({{c.w[0]}, random_values(c.w[0], ++seed)});
    const bool bias = c.bias, residual = c.residual;
    const ConvOptions options = c.options;
    const auto fn = [bias, residual, options](const std::vector<Tensor>& in, Stream& s) {
      ConvOptions with = options;
      if (residual) {
        ConvOptions bare = options;
        bare.relu = false;
        const Tensor plain = conv(in[0], in[1], Tensor(), bare, s);
        with.residual = mul(plain, plain, s);  // some tensor of the result's shape
      }
      return conv(in[0], in[1], bias ? in[2] : Tensor(), with, s);
    };
    expect_same(inputs, fn, c.what, 1e-4);
  }
}

// The result's elements as doubles, whatever its dtype (bool and u8 as 0/1 and bytes).
std::vector<double> elements(const Tensor& t, Stream& stream) {
  const Tensor wide = cast(t, DType::f64, stream);  // every dtype here converts exactly
  return wide.to_vector<double>(stream);
}

// `got` against `want` element by element: NaN where want is, infinities and zeros equal with
// their signs, others within `tolerance` relative to the larger of 1 and the value.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << what << ": element " << i << " is " << got[i];
    } else if (std::isinf(want[i]) || want[i] == 0) {
      ASSERT_TRUE(got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]))
          << what << ": element " << i << " is " << got[i] << ", not " << want[i];
    } else {
      ASSERT_NEAR(got[i], want[i], tolerance * std::max(1.0, std::fabs(want[i])))
          << what << ": element " << i;
    }
  }
}

// pow as C's: GLSL's pow is undefined for negative bases and for 0^b with b <= 0 (lavapipe gave
// NaN for (-2)^2 and 0^0). Odd integer powers of negatives keep the sign, non-integer ones are
// NaN; zeros, infinities and infinite exponents give C's limits.
TEST_F(VulkanOpsTest, PowOfNegativeAndZeroBasesIsCs) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> a{-2,  -2,    -0.5f, 0,     0,     -0.0f, 2,  -1,    -8,   -3,
                             -3,  -0.0f, -0.0f, 0,     -1,    0.5f,  -2, -inf,  -inf, -inf,
                             inf, nan,   1,     -2.5f, -1.5f, 10,    -7, -0.5f, 2,    -0.0f};
  const std::vector<float> b{2,  3,  -2,  0,    -1,   3,   0.5f, inf,  1.0f / 3, 5,
                             -3, -1, -2,  -inf, -inf, inf, -inf, 3,    -2,       0.5f,
                             -1, 0,  nan, 2,    -4,   -2,  1e8f, -inf, -inf,     0.5f};
  const auto n = static_cast<int64_t>(a.size());
  for (DType dtype : {DType::f32, DType::f16}) {
    if (!supports_op(device, "pow", dtype)) continue;
    const auto run = [&](Stream& s) {
      const Tensor x = cast(from_vector(a, {n}, s), dtype, s);
      const Tensor y = cast(from_vector(b, {n}, s), dtype, s);
      return elements(pow(x, y, s), s);
    };
    expect_close(run(here), run(there), dtype == DType::f16 ? 2e-3 : 2e-5,
                 "pow in " + std::string(to_string(dtype)));
  }
  // x ** 2 and x ** 3 of negatives, as the squares of a loss are.
  const std::vector<float> x = random_values(1000, 80, -5, 5);
  for (float exponent : {2.0f, 3.0f, -1.0f}) {
    const auto run = [&](Stream& s) {
      return elements(pow(from_vector(x, {1000}, s), full({}, exponent, DType::f32, s), s), s);
    };
    expect_close(run(here), run(there), 2e-5, "x ** " + std::to_string(exponent));
  }
}

// sinh, cosh, asinh and acosh where GLSL's builtins (through e^x and x * x) overflowed: asinh(1e30)
// and cosh(89) were inf.
TEST_F(VulkanOpsTest, HyperbolicFunctionsOfLargeArguments) {
  const std::vector<float> x{1e19f, -2e19f, 1e30f, -1e30f, 3e38f, 4096,  4097,  -5000,
                             1e4f,  88,     88.5f, -89,    89.4f, 90,    -100,  -1000,
                             3,     -3,     -10,   0.5f,   1.5f,  -0.5f, 87.9f, 5000.5f};
  using UnaryFn = Tensor (*)(const Tensor&, Stream&);
  using Reference = double (*)(double);
  const std::tuple<const char*, UnaryFn, Reference> cases[] = {
      {"sinh", sinh, [](double v) { return std::sinh(v); }},
      {"cosh", cosh, [](double v) { return std::cosh(v); }},
      {"asinh", asinh, [](double v) { return std::asinh(v); }},
      {"acosh", acosh, [](double v) { return std::acosh(v); }}};
  const Tensor t = from_vector(x, {static_cast<int64_t>(x.size())}, here);
  for (const auto& [name, fn, reference] : cases) {
    std::vector<double> want;
    for (float v : x) want.push_back(static_cast<float>(reference(v)));  // rounded as f32
    expect_close(elements(fn(t, here), here), want, 1e-5, name);
  }
}

// f64 log of subnormals, which lavapipe's frexp took for 2^-1022: log(1e-310) was -709.085.
TEST_F(VulkanOpsTest, LogOfF64Subnormals) {
  const std::vector<DType>& dtypes = device.info().dtypes;
  if (std::find(dtypes.begin(), dtypes.end(), DType::f64) == dtypes.end())
    GTEST_SKIP() << device.info().name << " has no f64";
  const std::vector<double> x{1e-310, 5e-324, 0x1p-1022, 0x1p-1030, 2.2250738585072009e-308,
                              3e-320, 1e-300, 0.5,       2.0};
  std::vector<double> want;
  for (double v : x) want.push_back(std::log(v));
  const Tensor t = from_vector(x, {static_cast<int64_t>(x.size())}, here);
  expect_close(hal::log(t, here).to_vector<double>(here), want, 1e-12, "log of f64 subnormals");
}

// lavapipe stops a shader's loops after 65535 rounds in all (kernels/vulkan/common.glsl): the
// sum of 9e6 ones was 4194240, and a row of 9e6 lost its tail. 9e6 f32 are 36 MB, within one
// storage buffer binding.
TEST_F(VulkanOpsTest, ReductionsAndRowsOfNineMillionElements) {
  constexpr int64_t n = 9'000'000;
  std::vector<float> x = random_values(n, 81, 0, 1);
  x[n - 1] = 5;  // the largest, last
  expect_same(
      {{{n}, x}}, [](auto& in, Stream& s) { return sum(in[0], {}, false, s); }, "sum of 9e6", 1e-4);
  expect_same(
      {{{n}, x}}, [](auto& in, Stream& s) { return argmax(in[0], {}, false, s); }, "argmax of 9e6");
  expect_same(
      {{{n}, x}}, [](auto& in, Stream& s) { return max(in[0], {}, false, s); }, "max of 9e6");
  // Scaled by n: each element is about 1 / n.
  expect_same(
      {{{1, n}, x}},
      [](auto& in, Stream& s) {
        return mul(softmax(in[0], -1, s), full({}, static_cast<double>(n), DType::f32, s), s);
      },
      "softmax of a row of 9e6, times 9e6", 1e-4);
  // A view that repeats one element 2^29 times fits one binding but not lavapipe's loop limit:
  // refused there (it was cut short silently), summed right elsewhere.
  const Tensor one = full({1}, 1.0, DType::f32, here).expand({int64_t{1} << 29});
  const bool lavapipe = device.info().name.find("llvmpipe") != std::string::npos;
  try {
    const float total = sum(one, {}, false, here).to_vector<float>(here)[0];
    EXPECT_FALSE(lavapipe) << "lavapipe summed 2^29 elements in one shader: " << total;
    EXPECT_EQ(total, static_cast<float>(int64_t{1} << 29));
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::Unsupported) << error.what();
    EXPECT_NE(error.message().find("65 535 loop iterations"), std::string::npos) << error.what();
  }
}

// maxStorageBufferRange (128 MiB on lavapipe) bounds what one binding reaches, and the shaders
// read zeros past it: an op whose operand goes further is refused, naming the limit, where the
// device binds less (lavapipe), and right where it binds more.
TEST_F(VulkanOpsTest, OperandsPastOneBindingAreRefusedOrRight) {
  const int64_t n = (int64_t{1} << 25) + 1024;  // 128 MiB and 4 KiB of f32
  const Tensor a = full({n}, 1.5, DType::f32, here), b = full({n}, 2.0, DType::f32, here);
  const bool lavapipe = device.info().name.find("llvmpipe") != std::string::npos;
  try {
    const std::vector<float> got = add(a, b, here).to_vector<float>(here);
    EXPECT_FALSE(lavapipe) << "lavapipe binds 128 MiB, and the add ran";
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    EXPECT_EQ(std::count(got.begin(), got.end(), 3.5f), n) << "elements of 1.5 + 2";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::Unsupported) << error.what();
    for (const char* part : {"add of f32[33555456]", "vulkan:0", "maxStorageBufferRange"})
      EXPECT_NE(error.message().find(part), std::string::npos) << error.message();
  }
}

// Batches past the 65535 work groups a dispatch has in z, k past lavapipe's 65535 loop rounds,
// n past 65535: split over launches (the 32-bit bound is each operand's own).
TEST_F(VulkanOpsTest, MatmulsOfLongBatchesAndDimensions) {
  const auto product = [](auto& in, Stream& s) { return matmul(in[0], in[1], s); };
  expect_same(
      {{{70000, 1, 2}, random_values(140000, 82)}, {{70000, 2, 1}, random_values(140000, 83)}},
      product, "matmul [70000, 1, 2] @ [70000, 2, 1]", 1e-4);
  std::vector<float> row = random_values(65536, 84), column = random_values(65536, 85);
  row.back() = column.back() = 2;  // the last product weighs
  expect_same({{{1, 65536}, row}, {{65536, 1}, column}}, product, "matmul [1, 65536] @ [65536, 1]",
              1e-4);
  expect_same({{{2, 3}, random_values(6, 86)}, {{3, 70000}, random_values(210000, 87)}}, product,
              "matmul [2, 3] @ [3, 70000]", 1e-4);
  expect_same(
      {{{70000, 1, 2}, random_values(140000, 88)}, {{1, 1, 2}, random_values(2, 89)}},
      [](auto& in, Stream& s) { return conv(in[0], in[1], Tensor(), {}, s); },
      "conv of x [70000, 1, 2]", 1e-4);
}

// A conv whose columns (im2col) pass what one binding reaches on lavapipe (5 entries of 37.7 MB):
// im2col and the matmuls run on as many batch entries at a time as fit.
TEST_F(VulkanOpsTest, ConvolutionWithColumnsPastOneBinding) {
  const Shape x{5, 4, 512, 512}, w{3, 4, 3, 3};
  ConvOptions options;
  options.pads_before = {1, 1};
  options.pads_after = {1, 1};
  expect_same(
      {{x, random_values(count(x), 90)}, {w, random_values(count(w), 91)}},
      [options](auto& in, Stream& s) { return conv(in[0], in[1], Tensor(), options, s); },
      "conv of x [5, 4, 512, 512]", 1e-4);
}

TEST_F(VulkanOpsTest, IntegersComparisonsWhereAndCastsMatchTheCpu) {
  const std::vector<int64_t> a{7, -7, 0, 5, std::numeric_limits<int32_t>::min(), 9, -3, 100};
  const std::vector<int64_t> b{2, 2, 3, 0, -1, -9, -3, 7};
  const std::vector<float> f{1.5f, -2.5f, NAN, 3e9f, -3e9f, 0.0f, -0.0f, 255.9f};
  for (DType dtype : {DType::i32, DType::i64, DType::i8, DType::u8, DType::i16, DType::u16,
                      DType::u32, DType::u64}) {
    const std::vector<DType> listed = here.device().info().dtypes;
    if (std::find(listed.begin(), listed.end(), dtype) == listed.end()) continue;
    auto run = [&](Stream& s, const std::function<Tensor(const Tensor&, const Tensor&)>& fn) {
      const Tensor x = cast(from_vector(a, {8}, s), dtype, s);
      const Tensor y = cast(from_vector(b, {8}, s), dtype, s);
      return elements(fn(x, y), s);
    };
    using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, Stream&);
    for (BinaryFn op :
         {BinaryFn{add}, BinaryFn{sub}, BinaryFn{mul}, BinaryFn{div}, BinaryFn{maximum},
          BinaryFn{minimum}, BinaryFn{eq}, BinaryFn{lt}, BinaryFn{ge}}) {
      const auto on = [op](Stream& s) {
        return [op, &s](const Tensor& x, const Tensor& y) { return op(x, y, s); };
      };
      EXPECT_EQ(run(here, on(here)), run(there, on(there))) << to_string(dtype);
    }
    EXPECT_EQ(run(here, [&](const Tensor& x, const Tensor&) { return relu(x, here); }),
              run(there, [&](const Tensor& x, const Tensor&) { return relu(x, there); }))
        << to_string(dtype);
    if (dtype == DType::i32 || dtype == DType::i64) {
      EXPECT_EQ(
          run(here, [&](const Tensor& x, const Tensor&) { return argmax(x, {}, false, here); }),
          run(there, [&](const Tensor& x, const Tensor&) { return argmax(x, {}, false, there); }))
          << to_string(dtype);
    }
    EXPECT_EQ(run(here, [&](const Tensor& x, const Tensor&) { return neg(abs(x, here), here); }),
              run(there, [&](const Tensor& x, const Tensor&) { return neg(abs(x, there), there); }))
        << to_string(dtype);
  }
  // Floating comparisons with NaN, where with a broadcast condition, casts that saturate.
  auto floats = [&](Stream& s, const std::function<Tensor(const Tensor&, Stream&)>& fn) {
    return elements(fn(from_vector(f, {2, 4}, s), s), s);
  };
  const std::vector<std::function<Tensor(const Tensor&, Stream&)>> cases{
      [](const Tensor& x, Stream& s) {
        return lt(x, x.slice(1, 0, 1), s);  // column 0 broadcast along the rows
      },
      [](const Tensor& x, Stream& s) { return ne(x, x, s); },
      [](const Tensor& x, Stream& s) {
        return where(gt(x.slice(0, 0, 1), zeros({1, 4}, DType::f32, s), s), x, neg(x, s), s);
      },
      [](const Tensor& x, Stream& s) { return cast(x, DType::i32, s); },
      [](const Tensor& x, Stream& s) { return cast(x, DType::i64, s); },
      [](const Tensor& x, Stream& s) { return cast(x, DType::u8, s); },
      [](const Tensor& x, Stream& s) { return cast(x, DType::i8, s); },
      [](const Tensor& x, Stream& s) { return cast(x, DType::i16, s); },
      [](const Tensor& x, Stream& s) { return cast(x, DType::u16, s); },
      [](const Tensor& x, Stream& s) { return cast(x, DType::u32, s); },
      [](const Tensor& x, Stream& s) { return cast(x, DType::u64, s); },
      [](const Tensor& x, Stream& s) { return cast(x, DType::boolean, s); },
      [](const Tensor& x, Stream& s) { return cast(cast(x, DType::f16, s), DType::f32, s); },
      [](const Tensor& x, Stream& s) { return cast(cast(x, DType::boolean, s), DType::i64, s); }};
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::vector<double> got = floats(here, cases[c]), want = floats(there, cases[c]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (!(std::isnan(got[i]) && std::isnan(want[i]))) {
        EXPECT_EQ(got[i], want[i]) << "case " << c << ", element " << i;
      }
    }
  }
}

TEST_F(VulkanOpsTest, WhatVulkanLacksIsRefusedOrFallsBack) {
  // GLSL has no f64 sin: refused, or run on the CPU where fallback is allowed.
  const Tensor d = from_vector(std::vector<double>{0, 1, 2}, {3}, here);
  ASSERT_FALSE(CpuFallback::allowed());
  expect_error([&] { sin(d, here); }, ErrorCode::Unsupported,
               {"sin of f64[3]", "vulkan:0", "no kernel for f64"});
  LogCapture log;
  CpuFallback allow;
  const Tensor sin_of = sin(d, here);
  EXPECT_EQ(sin_of.device(), device);
  EXPECT_EQ(sin_of.to_vector<double>(here), (std::vector<double>{0, std::sin(1.0), std::sin(2.0)}));
  EXPECT_NE(log.lines().find("sin runs on cpu:0 instead of vulkan:0"), std::string::npos)
      << log.lines();
}

// Broadcasting that alternates between operands keeps five dimensions apart, past where.comp's
// four: refused naming every operand, and the advice in the message (expand, contiguous) runs.
TEST_F(VulkanOpsTest, WherePastItsDimensionsNamesTheOperandsAndItsAdviceWorks) {
  const Shape result{2, 2, 2, 2, 2};
  const std::vector<float> cond_values = random_values(8, 11), a_values = random_values(4, 12);
  const std::vector<float> b_values = random_values(32, 13);
  const auto inputs = [&](Stream& s) {
    return std::vector<Tensor>{
        gt(from_vector(cond_values, {2, 1, 2, 1, 2}, s), full({}, 0.0, DType::f32, s), s),
        from_vector(a_values, {1, 2, 1, 2, 1}, s), from_vector(b_values, result, s)};
  };
  const std::vector<Tensor> v = inputs(here);
  expect_error([&] { where(v[0], v[1], v[2], here); }, ErrorCode::Unsupported,
               {"where of bool[2, 1, 2, 1, 2]", "f32[1, 2, 1, 2, 1]", "5 separate dimensions",
                "expand broadcast ones to the result's shape"});
  const auto expanded = [&](const std::vector<Tensor>& t, Stream& s) {
    return where(t[0].expand(result).contiguous(s), t[1].expand(result).contiguous(s), t[2], s);
  };
  const std::vector<Tensor> c = inputs(there);
  const std::vector<float> got = expanded(v, here).to_vector<float>(here);
  EXPECT_EQ(got, where(c[0], c[1], c[2], there).to_vector<float>(there));
}

// The ops Vulkan runs in f16 and f64 on the device that lists those dtypes (shaderFloat16,
// shaderFloat64): by its own shaders, not through f32, and agreeing with cpu:0.
class VulkanFloatDTypesTest : public VulkanOpsTest, public ::testing::WithParamInterface<DType> {
 protected:
  void SetUp() override {
    VulkanOpsTest::SetUp();
    if (IsSkipped()) return;
    const std::vector<DType>& dtypes = device.info().dtypes;
    if (std::find(dtypes.begin(), dtypes.end(), GetParam()) == dtypes.end())
      GTEST_SKIP() << device.info().name << " has no " << to_string(GetParam());
  }

  // `fn` on the values made in f32 and cast to the dtype, on both devices; the results are
  // compared in f64, within `tolerance` relative to the larger of 1 and the value.
  void expect_same_in(const std::vector<std::pair<Shape, std::vector<float>>>& inputs,
                      const std::function<Tensor(const std::vector<Tensor>&, Stream&)>& fn,
                      const std::string& what, double tolerance) {
    const DType dtype = GetParam();
    const std::string at = what + " in " + std::string(to_string(dtype));
    std::vector<Tensor> on_vulkan, on_cpu;
    for (const auto& [shape, values] : inputs) {
      on_vulkan.push_back(cast(from_vector(values, shape, here), dtype, here));
      on_cpu.push_back(cast(from_vector(values, shape, there), dtype, there));
    }
    const Tensor got = fn(on_vulkan, here), want = fn(on_cpu, there);
    ASSERT_EQ(got.device(), device) << at;
    ASSERT_EQ(got.shape(), want.shape()) << at;
    ASSERT_EQ(got.dtype(), want.dtype()) << at;
    const std::vector<double> a = widened(got, here), b = widened(want, there);
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(b[i]) || std::isinf(b[i])) {
        ASSERT_TRUE(std::isnan(b[i]) ? std::isnan(a[i]) : a[i] == b[i])
            << at << ": element " << i << " is " << a[i] << ", not " << b[i];
        continue;
      }
      ASSERT_NEAR(a[i], b[i], tolerance * std::max(1.0, std::fabs(b[i])))
          << at << ": element " << i;
    }
  }
  // f16 and bool exactly as f32 (a device with f16 may lack f64), f64 as it is.
  static std::vector<double> widened(const Tensor& t, Stream& stream) {
    if (t.dtype() == DType::f64) return t.contiguous(stream).to_vector<double>(stream);
    const std::vector<float> narrow = cast(t, DType::f32, stream).to_vector<float>(stream);
    return {narrow.begin(), narrow.end()};
  }
  // f16 results round once more than the CPU's f32 steps may: one f16 ulp (2^-10) apart.
  double tolerance() const { return GetParam() == DType::f16 ? 2e-3 : 1e-12; }
};

TEST_P(VulkanFloatDTypesTest, RunByVulkanShaders) {
  const std::vector<std::string> ops =
      GetParam() == DType::f16
          ? std::vector<std::string>{"add",        "div",    "maximum", "pow", "exp",
                                     "tanh",       "sum",    "mean",    "max", "softmax",
                                     "layer_norm", "matmul", "lt"}
          : std::vector<std::string>{"add", "div",  "maximum", "neg",    "sqrt", "floor",
                                     "sum", "mean", "min",     "matmul", "lt"};
  for (const OpSupport& op : supported_ops(device)) {
    if (std::find(ops.begin(), ops.end(), op.name) == ops.end()) continue;
    const auto at = std::find(op.dtypes.begin(), op.dtypes.end(), GetParam());
    ASSERT_NE(at, op.dtypes.end()) << op.name << " in " << to_string(GetParam());
    EXPECT_EQ(op.kernels[static_cast<size_t>(at - op.dtypes.begin())], "Vulkan shaders")
        << op.name << " in " << to_string(GetParam());
  }
}

TEST_P(VulkanFloatDTypesTest, ArithmeticFunctionsAndComparisonsMatchTheCpu) {
  using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, Stream&);
  const std::pair<const char*, BinaryFn> binary[] = {
      {"add", add},         {"sub", sub},         {"mul", mul}, {"div", div},
      {"maximum", maximum}, {"minimum", minimum}, {"lt", lt},   {"eq", eq}};
  std::vector<float> a = random_values(24 * 7, 31), b = random_values(7, 32);
  a[5] = NAN;
  for (const auto& [name, op] : binary) {
    expect_same_in(
        {{{24, 7}, a}, {{7}, b}}, [op](auto& in, Stream& s) { return op(in[0], in[1], s); },
        std::string(name) + " broadcast", tolerance());
    expect_same_in(
        {{{7, 24}, a}, {{7, 24}, a}},
        [op](auto& in, Stream& s) { return op(in[0].transpose(0, 1), in[1].transpose(0, 1), s); },
        std::string(name) + " of views", tolerance());
  }
  using UnaryFn = Tensor (*)(const Tensor&, Stream&);
  std::vector<std::pair<const char*, UnaryFn>> unary{
      {"neg", neg}, {"abs", abs},      {"relu", relu},  {"sqrt", sqrt},
      {"exp", exp}, {"log", hal::log}, {"floor", floor}};
  if (GetParam() == DType::f16) unary.insert(unary.end(), {{"tanh", tanh}, {"sigmoid", sigmoid}});
  // exp and log over their range: 0 and the ends (overflow to inf, underflow to 0, subnormal
  // results), negatives (log: NaN), NaN and the infinities.
  std::vector<float> x = random_values(300, 33, 0.0f, 4.0f);
  const std::vector<float> wide = random_values(200, 34, -740.0f, 740.0f);
  x.insert(x.end(), wide.begin(), wide.end());
  for (float edge : {0.0f, -0.0f, 1.0f, -1.0f, 709.0f, 710.0f, -708.0f, -740.0f, -746.0f, 1e-30f,
                     3e38f, NAN, INFINITY, -INFINITY})
    x.push_back(edge);
  const Shape shape{static_cast<int64_t>(x.size())};
  for (const auto& [name, op] : unary)
    expect_same_in(
        {{shape, x}}, [op](auto& in, Stream& s) { return op(in[0], s); }, name, tolerance());
}

TEST_P(VulkanFloatDTypesTest, ReductionsMatmulAndRowsMatchTheCpu) {
  using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool, Stream&);
  const std::pair<const char*, ReduceFn> reductions[] = {
      {"sum", sum}, {"mean", mean}, {"max", max}, {"min", min}, {"argmax", argmax}};
  const Shape shape{6, 50, 9};
  const std::vector<float> x = random_values(count(shape), 34);
  // Sums of many f16 values differ in the order of their roundings: compared relative to the
  // sum's magnitude, 0.3 % for f16.
  const double sum_tolerance = GetParam() == DType::f16 ? 3e-3 : 1e-12;
  for (const auto& [name, op] : reductions) {
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{}, {1}, {0, 2}})
      expect_same_in(
          {{shape, x}}, [op, &axes](auto& in, Stream& s) { return op(in[0], axes, false, s); },
          std::string(name) + " over " + std::to_string(axes.size()) + " axes", sum_tolerance);
    expect_same_in(
        {{{5000}, random_values(5000, 35, 0.0f, 1.0f)}},
        [op](auto& in, Stream& s) { return op(in[0], {}, false, s); },
        std::string(name) + " of 5000 elements", GetParam() == DType::f16 ? 2e-2 : 1e-10);
  }
  for (const auto& [m, k, n] :
       std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {17, 33, 15}, {20, 64, 31}}) {
    expect_same_in(
        {{{m, k}, random_values(m * k, 36)}, {{k, n}, random_values(k * n, 37)}},
        [](auto& in, Stream& s) { return matmul(in[0], in[1], s); },
        "matmul " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
        GetParam() == DType::f16 ? 1e-2 : 1e-12);
  }
  if (GetParam() != DType::f16) return;  // GLSL has no f64 exp: softmax in f64 falls back
  for (int64_t cols : {7, 300}) {
    const std::vector<float> rows = random_values(4 * cols, 38, -5, 5);
    const std::vector<float> w = random_values(cols, 39), b = random_values(cols, 40);
    expect_same_in(
        {{{4, cols}, rows}}, [](auto& in, Stream& s) { return softmax(in[0], -1, s); },
        "softmax of " + std::to_string(cols), 2e-3);
    expect_same_in(
        {{{4, cols}, rows}, {{cols}, w}, {{cols}, b}},
        [cols](auto& in, Stream& s) { return layer_norm(in[0], {cols}, in[1], in[2], 1e-5, s); },
        "layer_norm of " + std::to_string(cols), 1e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(F16AndF64, VulkanFloatDTypesTest,
                         ::testing::Values(DType::f16, DType::f64),
                         [](const auto& param) { return std::string(to_string(param.param)); });

// A device without shaderFloat16 or shaderFloat64 (HAL_VULKAN_NO_FP16=1, HAL_VULKAN_NO_FP64=1
// make lavapipe one, CTest's vulkan_backend_test.no_fp16_fp64): it lists neither dtype, and
// arithmetic in them is refused naming the op, the dtype and the device.
TEST_F(VulkanOpsTest, WithoutShaderFloat16AndFloat64TheirArithmeticIsRefused) {
  const std::vector<DType>& dtypes = device.info().dtypes;
  if (std::find(dtypes.begin(), dtypes.end(), DType::f64) != dtypes.end() ||
      std::find(dtypes.begin(), dtypes.end(), DType::f16) != dtypes.end())
    GTEST_SKIP() << device.info().name << " has f16 or f64 (run with HAL_VULKAN_NO_FP16=1 and "
                 << "HAL_VULKAN_NO_FP64=1)";
  EXPECT_FALSE(device.info().has_feature(feature::kFp16));
  EXPECT_FALSE(device.info().has_feature(feature::kFp64));
  EXPECT_FALSE(supports_op(device, "add", DType::f64));
  EXPECT_FALSE(supports_op(device, "matmul", DType::f16));
  const Tensor d = from_vector(std::vector<double>{1, 2, 3}, {3}, here);
  expect_error([&] { add(d, d, here); }, ErrorCode::Unsupported,
               {"add of f64[3]", "vulkan:0", "no kernel for f64"});
  expect_error([&] { sum(d, {}, false, here); }, ErrorCode::Unsupported,
               {"sum of f64[3]", "vulkan:0", "f64"});
}

TEST_F(VulkanOpsTest, OpsFromManyThreadsEachOnItsStream) {
  constexpr int kThreads = 6;
  std::vector<std::vector<float>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Stream stream = device.create_stream();
      const Tensor x = from_vector(random_values(64 * 48, 20 + t), {64, 48}, stream);
      const Tensor w = from_vector(random_values(48 * 32, 40 + t), {48, 32}, stream);
      results[t] = sum(softmax(matmul(x, w, stream), -1, stream), {1}, false, stream)
                       .to_vector<float>(stream);
    });
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t)
    for (float row_total : results[t]) ASSERT_NEAR(row_total, 1.0f, 1e-5f) << "thread " << t;
}

}  // namespace
}  // namespace hal::test
