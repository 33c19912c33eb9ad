// LRN against a plain loop over the channel window, with odd and even window sizes and the
// attributes given; a missing size refused naming the node. ConvTranspose's output_shape and
// pads, InstanceNormalization of an [N, C] input and AveragePool's count_include_pad with
// auto_pad, against ONNX's rules and reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "hal/model.hpp"
#include "model_builder.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

// x [n, c, hw]: the window of channel k runs from k - floor((size - 1) / 2) to
// k + ceil((size - 1) / 2), clipped.
std::vector<float> lrn_loop(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw,
                            int64_t size, double alpha, double beta, double bias) {
  std::vector<float> y(x.size());
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t p = 0; p < hw; ++p) {
        double sum = 0;
        for (int64_t j = std::max<int64_t>(0, k - before); j <= std::min(c - 1, k + after); ++j) {
          const double v = x[static_cast<size_t>((b * c + j) * hw + p)];
          sum += v * v;
        }
        const size_t at = static_cast<size_t>((b * c + k) * hw + p);
        y[at] = static_cast<float>(x[at] /
                                   std::pow(bias + alpha / static_cast<double>(size) * sum, beta));
      }
  return y;
}

TEST(NnOps, LrnMatchesALoopOverTheChannelWindow) {
  constexpr int64_t n = 2, c = 5, h = 2, w = 3;
  std::vector<float> x(static_cast<size_t>(n * c * h * w));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 11) * 0.4f - 2;
  Stream stream = device("cpu:0").create_stream();
  for (int64_t size : {1, 3, 4}) {
    ModelBuilder builder;
    builder.input("x", TensorProto::FLOAT, {"2", "5", "2", "3"});
    builder.output("y", TensorProto::FLOAT, {"2", "5", "2", "3"});
    auto& node = builder.node("LRN", {"x"}, {"y"}, "lrn");
    ModelBuilder::set_int(node, "size", size);
    ModelBuilder::set_float(node, "alpha", 0.02f);
    ModelBuilder::set_float(node, "beta", 0.6f);
    ModelBuilder::set_float(node, "bias", 1.5f);
    const Model model = load_onnx_bytes(builder.bytes(), "lrn");
    const auto got = model.run({{"x", from_vector(x, {n, c, h, w}, stream)}}, stream)
                         .at("y")
                         .to_vector<float>(stream);
    const auto want = lrn_loop(x, n, c, h * w, size, 0.02f, 0.6f, 1.5f);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i]))
          << "size " << size << " at " << i;
  }
}

TEST(NnOps, LrnWithoutASizeIsRefusedNamingTheNode) {
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"1", "2", "2"});
  builder.output("y", TensorProto::FLOAT, {"1", "2", "2"});
  builder.node("LRN", {"x"}, {"y"}, "lrn_without_size");
  Stream stream = device("cpu:0").create_stream();
  expect_error(
      [&] {
        const Model model = load_onnx_bytes(builder.bytes(), "lrn");
        model.run({{"x", zeros({1, 2, 2}, DType::f32, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"lrn_without_size", "size"});
}

// ConvTranspose's output_shape gives the spatial sizes (optionally after N and C): a list shorter
// than the input's spatial dimensions is refused naming the node (it was read before its start).
TEST(NnOps, AConvTransposeOutputShapeShorterThanItsSpatialDimensionsIsRefused) {
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"1", "1", "3", "3"});
  builder.input("w", TensorProto::FLOAT, {"1", "1", "2", "2"});
  builder.output("y", TensorProto::FLOAT, {"1", "1", "H", "W"});
  auto& node = builder.node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  ModelBuilder::set_ints(node, "output_shape", {7});
  const Model model = load_onnx_bytes(builder.bytes(), "convt");
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector(std::vector<float>(9, 1.0f), {1, 1, 3, 3}, stream);
  const Tensor w = from_vector(std::vector<float>(4, 1.0f), {1, 1, 2, 2}, stream);
  expect_error(
      [&] {
        model.run({{"x", x}, {"w", w}}, stream);
      },
      ErrorCode::InvalidArgument,
      {"'up'", "output_shape [7] has fewer values than the input's 2 spatial dimensions"});
  // The spatial sizes alone, and after N and C, are both taken.
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{5, 6}, std::vector<int64_t>{1, 1, 5, 6}}) {
    ModelBuilder good;
    good.input("x", TensorProto::FLOAT, {"1", "1", "3", "3"});
    good.input("w", TensorProto::FLOAT, {"1", "1", "2", "2"});
    good.output("y", TensorProto::FLOAT, {"1", "1", "H", "W"});
    ModelBuilder::set_ints(good.node("ConvTranspose", {"x", "w"}, {"y"}, "up"), "output_shape",
                           shape);
    const Tensor y =
        load_onnx_bytes(good.bytes(), "convt").run({{"x", x}, {"w", w}}, stream).at("y");
    EXPECT_EQ(y.shape(), (Shape{1, 1, 5, 6}));
  }
}

// ConvTranspose's pads "can take any value greater than or equal to 0" (ONNX): a negative one is
// refused naming the node and the pads (it was taken, and cropped the output wrongly).
TEST(NnOps, ConvTransposeRefusesNegativePads) {
  Stream stream = device("cpu:0").create_stream();
  std::vector<float> input(9);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i);
  const Tensor x = from_vector(input, {1, 1, 3, 3}, stream);
  const Tensor w = from_vector(std::vector<float>(4, 1.0f), {1, 1, 2, 2}, stream);
  const auto conv_transpose = [&](const std::vector<int64_t>& pads) {
    ModelBuilder builder;
    builder.input("x", TensorProto::FLOAT, {"1", "1", "3", "3"});
    builder.input("w", TensorProto::FLOAT, {"1", "1", "2", "2"});
    builder.output("y", TensorProto::FLOAT, {"1", "1", "H", "W"});
    ModelBuilder::set_ints(builder.node("ConvTranspose", {"x", "w"}, {"y"}, "up"), "pads", pads);
    return load_onnx_bytes(builder.bytes(), "convt").run({{"x", x}, {"w", w}}, stream).at("y");
  };
  for (const std::vector<int64_t>& pads :
       {std::vector<int64_t>{-1, 0, 0, 0}, std::vector<int64_t>{0, 0, 0, INT64_MIN}})
    expect_error([&] { conv_transpose(pads); }, ErrorCode::InvalidArgument,
                 {"'up'", "pads " + to_string(pads) + " must lie in [0, 16777216]"});
  // pads [1, 0, 0, 0] drop the first row of the full [4, 4] output; NumPy's full transposed
  // convolution of arange(9) by ones((2, 2)), [1:, :].
  const Tensor y = conv_transpose({1, 0, 0, 0});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 4}));
  EXPECT_EQ(y.to_vector<float>(stream),
            (std::vector<float>{3, 8, 12, 7, 9, 20, 24, 13, 6, 13, 15, 8}));
}

// ConvTranspose's bias is one value per output channel: any other shape is refused naming the
// node (on cpu:0 it went to oneDNN's deconvolution, which would read past a short one).
TEST(NnOps, ConvTransposeRefusesABiasOfTheWrongShape) {
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector(std::vector<float>(18, 1.0f), {1, 2, 3, 3}, stream);
  const Tensor w = from_vector(std::vector<float>(24, 1.0f), {2, 3, 2, 2}, stream);
  const auto conv_transpose = [&](const Tensor& bias) {
    ModelBuilder builder;
    builder.input("x", TensorProto::FLOAT, {"1", "2", "3", "3"});
    builder.input("w", TensorProto::FLOAT, {"2", "3", "2", "2"});
    builder.input("b", TensorProto::FLOAT, {"B"});
    builder.output("y", TensorProto::FLOAT, {"1", "3", "H", "W"});
    builder.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "up");
    return load_onnx_bytes(builder.bytes(), "convt")
        .run({{"x", x}, {"w", w}, {"b", bias}}, stream)
        .at("y");
  };
  expect_error(
      [&] {
        conv_transpose(from_vector(std::vector<float>{1, 2}, {2}, stream));
      },
      ErrorCode::InvalidArgument, {"'up'", "bias [2] is not [3]"});
  // Each output of the full [4, 4] window sums 2 channels times the taps that reach it, plus
  // the bias of its channel.
  const Tensor y = conv_transpose(from_vector(std::vector<float>{10, 20, 30}, {3}, stream));
  ASSERT_EQ(y.shape(), (Shape{1, 3, 4, 4}));
  const std::vector<float> got = y.to_vector<float>(stream);
  EXPECT_EQ(got[0], 2 + 10);        // corner: one tap
  EXPECT_EQ(got[16 + 5], 8 + 20);   // interior of channel 1: four taps
  EXPECT_EQ(got[32 + 15], 2 + 30);  // last corner of channel 2
}

// InstanceNormalization of [N, C]: ONNX's reference takes NumPy's mean and var over the spatial
// axes, of which there are none, so each element is its own mean, of variance 0, and y is B per
// channel (NaN where x is not finite). [N, C, D] as before; a rank-1 input is refused.
TEST(NnOps, InstanceNormalizationOfARank2InputIsItsBias) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float nan = std::nanf("");
  Stream stream = device("cpu:0").create_stream();
  const Tensor scale = from_vector<float>({2, 3, 4}, {3}, stream);
  const Tensor bias = from_vector<float>({0.5f, -1, 7}, {3}, stream);
  const auto instance_norm = [&](const Tensor& x) {
    std::vector<std::string> dims;
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(std::to_string(x.size(d)));
    ModelBuilder builder;
    builder.input("x", TensorProto::FLOAT, dims);
    builder.input("scale", TensorProto::FLOAT, {"3"});
    builder.input("bias", TensorProto::FLOAT, {"3"});
    builder.output("y", TensorProto::FLOAT, dims);
    builder.node("InstanceNormalization", {"x", "scale", "bias"}, {"y"}, "norm");
    return load_onnx_bytes(builder.bytes(), "instance_norm")
        .run({{"x", x}, {"scale", scale}, {"bias", bias}}, stream)
        .at("y");
  };
  const Tensor y = instance_norm(from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, stream));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(stream), (std::vector<float>{0.5f, -1, 7, 0.5f, -1, 7}));

  const std::vector<float> odd =
      instance_norm(from_vector<float>({1, inf, nan, -inf, 5, 6}, {2, 3}, stream))
          .to_vector<float>(stream);
  ASSERT_EQ(odd.size(), 6u);
  EXPECT_EQ(odd[0], 0.5f);
  EXPECT_TRUE(std::isnan(odd[1]) && std::isnan(odd[2]) && std::isnan(odd[3]));
  EXPECT_EQ(odd[4], -1.0f);
  EXPECT_EQ(odd[5], 7.0f);

  // [2, 3, 2] of arange(12) * 0.5 - 1: ONNX's reference, to f32.
  std::vector<float> x3(12);
  for (size_t i = 0; i < x3.size(); ++i) x3[i] = static_cast<float>(i) * 0.5f - 1;
  const std::vector<float> y3 =
      instance_norm(from_vector(x3, {2, 3, 2}, stream)).to_vector<float>(stream);
  const std::vector<float> per_instance = {-1.4998400211334229f, 2.499840021133423f,
                                           -3.999760150909424f,  1.9997601509094238f,
                                           3.0003199577331543f,  10.999679565429688f};
  ASSERT_EQ(y3.size(), 12u);
  for (size_t i = 0; i < y3.size(); ++i)
    EXPECT_NEAR(y3[i], per_instance[i % 6], 1e-4) << "at " << i;

  expect_error(
      [&] {
        instance_norm(from_vector<float>({1, 2, 3}, {3}, stream));
      },
      ErrorCode::InvalidArgument, {"'norm'", "expects [N, C, D1, ...], got [3]"});
}

// AveragePool with auto_pad SAME_UPPER/SAME_LOWER and count_include_pad = 1 divides by the whole
// window, the pads auto_pad chose counted as explicit ones are (ONNX's reference pads with 0 and
// takes np.mean; onnxruntime likewise); they were left out, as with count_include_pad = 0.
// x = arange(1, 13) as [1, 1, 3, 4], a 3x3 kernel every 2: pads (1, 1) on H, (0, 1) or (1, 0) on W.
TEST(NnOps, AveragePoolCountsAutoPadsWithCountIncludePad) {
  Stream stream = device("cpu:0").create_stream();
  const auto average_pool = [&](const Tensor& x, const std::vector<int64_t>& kernel,
                                const std::vector<int64_t>& strides, const std::string& auto_pad,
                                int64_t count_include_pad) {
    std::vector<std::string> in_dims, out_dims;
    for (int64_t d = 0; d < x.dim(); ++d) {
      in_dims.push_back("x" + std::to_string(d));
      out_dims.push_back("y" + std::to_string(d));
    }
    ModelBuilder builder(11);
    builder.input("x", TensorProto::FLOAT, in_dims).output("y", TensorProto::FLOAT, out_dims);
    auto& node = builder.node("AveragePool", {"x"}, {"y"}, "pool");
    ModelBuilder::set_ints(node, "kernel_shape", kernel);
    ModelBuilder::set_ints(node, "strides", strides);
    ModelBuilder::set_string(node, "auto_pad", auto_pad);
    ModelBuilder::set_int(node, "count_include_pad", count_include_pad);
    return load_onnx_bytes(builder.bytes(), "average_pool")
        .run({{"x", x}}, stream)
        .at("y")
        .to_vector<float>(stream);
  };
  std::vector<float> values(12);
  std::iota(values.begin(), values.end(), 1.0f);
  const Tensor x = from_vector(values, {1, 1, 3, 4}, stream);
  const auto near = [](const std::vector<float>& y, const std::vector<float>& want) {
    ASSERT_EQ(y.size(), want.size());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5f) << "at " << i;
  };
  // ONNX's reference: the window sums over 9 with the pads counted, over the elements without.
  near(average_pool(x, {3, 3}, {2, 2}, "SAME_UPPER", 1),
       {24.0f / 9, 22.0f / 9, 48.0f / 9, 38.0f / 9});
  near(average_pool(x, {3, 3}, {2, 2}, "SAME_LOWER", 1),
       {14.0f / 9, 30.0f / 9, 30.0f / 9, 54.0f / 9});
  near(average_pool(x, {3, 3}, {2, 2}, "SAME_UPPER", 0), {4, 5.5f, 8, 9.5f});
  near(average_pool(x, {3, 3}, {2, 2}, "SAME_LOWER", 0), {3.5f, 5, 7.5f, 9});
  // Four spatial dimensions, pooled from strided views: ones of [1, 1, 1, 1, 1, 3], a window
  // of 2 along the last, its one pad at the end (SAME_UPPER) or the start (SAME_LOWER).
  const Tensor ones = from_vector<float>({1, 1, 1}, {1, 1, 1, 1, 1, 3}, stream);
  near(average_pool(ones, {1, 1, 1, 2}, {1, 1, 1, 1}, "SAME_UPPER", 1), {1, 1, 0.5f});
  near(average_pool(ones, {1, 1, 1, 2}, {1, 1, 1, 1}, "SAME_LOWER", 1), {0.5f, 1, 1});
  near(average_pool(ones, {1, 1, 1, 2}, {1, 1, 1, 1}, "SAME_UPPER", 0), {1, 1, 1});
}

}  // namespace
}  // namespace hal::test
