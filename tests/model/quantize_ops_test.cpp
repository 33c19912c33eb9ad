// ONNX's quantization ops on cpu:0 against plain loops: rounding half to even and saturation,
// per-axis parameters, an integer product too long for f32 to sum exactly, a quantized
// convolution with padding, strides, per-channel weights and a bias; and the errors for
// parameters of the wrong shape, each naming what was wrong.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

// ONNX's saturate(round(value) + zero_point); nearbyint rounds half to even by default.
template <class T>
T quantized(float value, int zero_point) {
  const double rounded = std::nearbyint(value) + zero_point;
  return static_cast<T>(std::clamp(rounded, double{std::numeric_limits<T>::min()},
                                   double{std::numeric_limits<T>::max()}));
}

template <class T>
std::vector<T> random_values(size_t count, int low, int high, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> pick(low, high);
  std::vector<T> values(count);
  for (T& v : values) v = static_cast<T>(pick(generator));
  return values;
}

class QuantizeOps : public ::testing::Test {
 protected:
  Stream stream = device("cpu:0").create_stream();
};

TEST_F(QuantizeOps, QuantizeLinearRoundsHalfToEvenAndSaturates) {
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"10"}).input("scale", TensorProto::FLOAT, {});
  builder.input("zero", TensorProto::INT8, {}).output("y", TensorProto::INT8, {"10"});
  builder.node("QuantizeLinear", {"x", "scale", "zero"}, {"y"});
  const Model model = load_onnx_bytes(builder.bytes(), "quantize");
  const std::vector<float> x{1, 3, 5, -1, -3, -5, 6.98f, 1000, -1000, 0};
  const float scale = 2;
  const int8_t zero = -3;
  const auto y = model
                     .run({{"x", from_vector(x, {10}, stream)},
                           {"scale", from_vector<float>({scale}, {}, stream)},
                           {"zero", from_vector<int8_t>({zero}, {}, stream)}},
                          stream)
                     .at("y")
                     .to_vector<int8_t>(stream);
  std::vector<int8_t> expected;
  for (float v : x) expected.push_back(quantized<int8_t>(v / scale, zero));
  EXPECT_EQ(y, expected);
  // 0.5, 1.5 and 2.5 go to the even neighbour; the extremes to i8's bounds.
  EXPECT_EQ(y[0], -3);
  EXPECT_EQ(y[1], -1);
  EXPECT_EQ(y[2], -1);
  EXPECT_EQ(y[7], 127);
  EXPECT_EQ(y[8], -128);
}

TEST_F(QuantizeOps, PerAxisQuantizeThenDequantizeMatchAPlainLoop) {
  constexpr int64_t outer = 2, channels = 3, inner = 4;
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"2", "3", "4"});
  builder.input("scale", TensorProto::FLOAT, {"3"}).input("zero", TensorProto::UINT8, {"3"});
  builder.output("q", TensorProto::UINT8, {"2", "3", "4"});
  builder.output("y", TensorProto::FLOAT, {"2", "3", "4"});
  ModelBuilder::set_int(builder.node("QuantizeLinear", {"x", "scale", "zero"}, {"q"}), "axis", 1);
  ModelBuilder::set_int(builder.node("DequantizeLinear", {"q", "scale", "zero"}, {"y"}), "axis",
                        -2);
  const Model model = load_onnx_bytes(builder.bytes(), "per axis");
  std::vector<float> x(outer * channels * inner);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i * 37 % 101) * 1.7f - 60.0f;
  const std::vector<float> scale{0.5f, 1.25f, 3.0f};
  const std::vector<uint8_t> zero{0, 128, 250};
  const auto out = model.run({{"x", from_vector(x, {outer, channels, inner}, stream)},
                              {"scale", from_vector(scale, {channels}, stream)},
                              {"zero", from_vector(zero, {channels}, stream)}},
                             stream);
  std::vector<uint8_t> expected_q;
  std::vector<float> expected_y;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i / inner % channels;
    expected_q.push_back(quantized<uint8_t>(x[i] / scale[c], zero[c]));
    expected_y.push_back(static_cast<float>(expected_q.back() - zero[c]) * scale[c]);
  }
  EXPECT_EQ(out.at("q").to_vector<uint8_t>(stream), expected_q);
  EXPECT_EQ(out.at("y").to_vector<float>(stream), expected_y);
}

TEST_F(QuantizeOps, MatMulIntegerSumsMoreProductsThanF32HoldsExactly) {
  // 400 products of about -227 · 241 each: partial sums pass 2²⁴, where f32 stops being exact.
  constexpr int64_t m = 4, k = 400, n = 5;
  ModelBuilder builder(10);
  builder.input("a", TensorProto::UINT8, {"4", "400"}).input("b", TensorProto::INT8, {"400", "5"});
  builder.input("a_zero", TensorProto::UINT8, {"4"}).input("b_zero", TensorProto::INT8, {"5"});
  builder.output("y", TensorProto::INT32, {"4", "5"});
  builder.node("MatMulInteger", {"a", "b", "a_zero", "b_zero"}, {"y"});
  const Model model = load_onnx_bytes(builder.bytes(), "matmul integer");
  const auto a = random_values<uint8_t>(m * k, 200, 255, 1);
  const auto b = random_values<int8_t>(k * n, -128, -100, 2);
  const std::vector<uint8_t> a_zero{0, 1, 2, 3};
  const std::vector<int8_t> b_zero{127, 126, 125, 124, 0};
  const auto y = model
                     .run({{"a", from_vector(a, {m, k}, stream)},
                           {"b", from_vector(b, {k, n}, stream)},
                           {"a_zero", from_vector(a_zero, {m}, stream)},
                           {"b_zero", from_vector(b_zero, {n}, stream)}},
                          stream)
                     .at("y")
                     .to_vector<int32_t>(stream);
  std::vector<int32_t> expected;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += (a[i * k + p] - a_zero[i]) * (b[p * n + j] - b_zero[j]);
      expected.push_back(static_cast<int32_t>(sum));
    }
  EXPECT_GT(-*std::min_element(expected.begin(), expected.end()), 1 << 24);
  EXPECT_EQ(y, expected);
}

TEST_F(QuantizeOps, QLinearConvMatchesAPlainLoop) {
  constexpr int64_t channels = 2, size = 5, features = 3, kernel = 3, stride = 2, pad = 1;
  constexpr int64_t out = (size + 2 * pad - kernel) / stride + 1;
  ModelBuilder builder(10);
  builder.input("x", TensorProto::UINT8, {"1", "2", "5", "5"})
      .input("w", TensorProto::INT8, {"3", "2", "3", "3"});
  builder.input("w_scale", TensorProto::FLOAT, {"3"}).input("w_zero", TensorProto::INT8, {"3"});
  builder.input("bias", TensorProto::INT32, {"3"}).input("x_zero", TensorProto::UINT8, {});
  builder.initializer("x_scale", {}, {0.05f}).initializer("y_scale", {}, {0.3f});
  auto& y_zero = builder.raw_initializer("y_zero");
  y_zero.set_data_type(TensorProto::UINT8);
  y_zero.add_int32_data(100);
  builder.output("y", TensorProto::UINT8, {"1", "3", "3", "3"});
  auto& node = builder.node(
      "QLinearConv",
      {"x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "bias"}, {"y"});
  ModelBuilder::set_ints(node, "pads", {pad, pad, pad, pad});
  ModelBuilder::set_ints(node, "strides", {stride, stride});
  const Model model = load_onnx_bytes(builder.bytes(), "qlinear conv");
  const auto x = random_values<uint8_t>(channels * size * size, 0, 255, 3);
  const auto w = random_values<int8_t>(features * channels * kernel * kernel, -128, 127, 4);
  const std::vector<float> w_scale{0.02f, 0.01f, 0.004f};
  const std::vector<int8_t> w_zero{0, -5, 7};
  const std::vector<int32_t> bias{-3000, 0, 4500};
  const uint8_t x_zero = 120;
  const auto y = model
                     .run({{"x", from_vector(x, {1, channels, size, size}, stream)},
                           {"w", from_vector(w, {features, channels, kernel, kernel}, stream)},
                           {"w_scale", from_vector(w_scale, {features}, stream)},
                           {"w_zero", from_vector(w_zero, {features}, stream)},
                           {"bias", from_vector(bias, {features}, stream)},
                           {"x_zero", from_vector<uint8_t>({x_zero}, {}, stream)}},
                          stream)
                     .at("y")
                     .to_vector<uint8_t>(stream);
  std::vector<uint8_t> expected;
  for (int64_t f = 0; f < features; ++f)
    for (int64_t oy = 0; oy < out; ++oy)
      for (int64_t ox = 0; ox < out; ++ox) {
        int64_t sum = bias[f];
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t ky = 0; ky < kernel; ++ky)
            for (int64_t kx = 0; kx < kernel; ++kx) {
              const int64_t iy = oy * stride + ky - pad, ix = ox * stride + kx - pad;
              // The padding holds the zero point: it adds nothing.
              if (iy < 0 || iy >= size || ix < 0 || ix >= size) continue;
              sum += (x[(c * size + iy) * size + ix] - x_zero) *
                     (w[((f * channels + c) * kernel + ky) * kernel + kx] - w_zero[f]);
            }
        const float multiplier = 0.05f * w_scale[f] / 0.3f;
        expected.push_back(quantized<uint8_t>(static_cast<float>(sum) * multiplier, 100));
      }
  EXPECT_EQ(y, expected);
}

// A QuantizeLinear of x [2, 3] with a scale of `scale_size` elements, at `opset`, `axis` set
// when given.
Model quantize_model(int64_t opset, int64_t scale_size, std::optional<int64_t> axis) {
  ModelBuilder builder(opset);
  builder.input("x", TensorProto::FLOAT, {"2", "3"});
  builder.initializer("scale", {scale_size}, std::vector<float>(scale_size, 1.0f));
  builder.output("y", TensorProto::UINT8, {"2", "3"});
  auto& node = builder.node("QuantizeLinear", {"x", "scale"}, {"y"}, "q");
  if (axis) ModelBuilder::set_int(node, "axis", *axis);
  return load_onnx_bytes(builder.bytes(), "quantize");
}

TEST_F(QuantizeOps, ParametersOfTheWrongShapeAreRefusedNamingThem) {
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, stream);
  expect_error(
      [&] {
        quantize_model(13, 2, 1).run({{"x", x}}, stream);
      },
      ErrorCode::InvalidArgument,
      {"node 'q'", "y_scale has 2 elements", "axis 1 of x [2, 3] has 3"});
  expect_error(
      [&] {
        quantize_model(13, 3, 2).run({{"x", x}}, stream);
      },
      ErrorCode::InvalidArgument, {"node 'q'", "axis 2 is out of range for rank 2"});
  expect_error(
      [&] {
        quantize_model(10, 3, std::nullopt).run({{"x", x}}, stream);
      },
      ErrorCode::InvalidArgument, {"node 'q'", "y_scale must be a scalar, got [3]"});

  ModelBuilder conv(10);
  conv.input("x", TensorProto::UINT8, {"1", "1", "3", "3"})
      .input("w", TensorProto::UINT8, {"2", "1", "2", "2"});
  conv.input("x_zero", TensorProto::UINT8, {"2"}).output("y", TensorProto::INT32, {});
  conv.node("ConvInteger", {"x", "w", "x_zero"}, {"y"}, "c");
  const Model conv_model = load_onnx_bytes(conv.bytes(), "conv integer");
  expect_error(
      [&] {
        conv_model.run(
            {{"x", from_vector<uint8_t>(std::vector<uint8_t>(9, 1), {1, 1, 3, 3}, stream)},
             {"w", from_vector<uint8_t>(std::vector<uint8_t>(8, 1), {2, 1, 2, 2}, stream)},
             {"x_zero", from_vector<uint8_t>({0, 1}, {2}, stream)}},
            stream);
      },
      ErrorCode::InvalidArgument, {"node 'c'", "x_zero_point must be a scalar, got [2]"});
}

}  // namespace
}  // namespace hal::test
