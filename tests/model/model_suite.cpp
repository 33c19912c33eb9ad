// ONNX models run on every visible device, each result checked against a plain loop on the
// host: an MLP (Gemm, Relu, a symbolic batch), a convolution with padding, stride and groups
// followed by max pooling, and the data-movement ops built from views and copies (Concat,
// Gather, Slice, Pad, Split).
#include <cmath>

#include "core/device_suite.hpp"
#include "hal/model.hpp"
#include "model_builder.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

std::vector<float> ramp(size_t count, float scale, float shift = 0) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = scale * static_cast<float>((i * 7) % 13) - shift;
  return values;
}

void expect_close(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-4 + 1e-4 * std::abs(expected[i])) << "element " << i;
}

class ModelSuite : public DeviceTest {
 protected:
  // Models need the ops their nodes are built from; a device without them (the test backend
  // "far") skips, saying which.
  std::string missing(std::initializer_list<const char*> ops) {
    for (const char* op : ops)
      if (!supports_op(device(), op, DType::f32)) return id() + " has no f32 " + op;
    return {};
  }
};

TEST_P(ModelSuite, AnMlpMatchesAPlainLoop) {
  if (auto why = missing({"matmul", "add", "relu"}); !why.empty()) GTEST_SKIP() << why;
  constexpr int64_t in = 5, hidden = 4, out = 3;
  const auto w1 = ramp(in * hidden, 0.1f, 0.5f), b1 = ramp(hidden, 0.05f);
  const auto w2 = ramp(hidden * out, 0.2f, 1.0f), b2 = ramp(out, 0.1f, 0.3f);
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"batch", "5"})
      .output("y", TensorProto::FLOAT, {"batch", "3"});
  builder.initializer("w1", {hidden, in}, w1).initializer("b1", {hidden}, b1);
  builder.initializer("w2", {hidden, out}, w2).initializer("b2", {out}, b2);
  ModelBuilder::set_int(builder.node("Gemm", {"x", "w1", "b1"}, {"h"}, "fc1"), "transB", 1);
  builder.node("Relu", {"h"}, {"a"});
  builder.node("Gemm", {"a", "w2", "b2"}, {"y"}, "fc2");
  const Model model = load_onnx_bytes(builder.bytes(), "mlp");
  EXPECT_EQ(model.inputs().at(0).shape.at(0).symbol, "batch");

  Stream stream = device().create_stream();
  for (int64_t batch : {1, 3}) {
    const auto x = ramp(static_cast<size_t>(batch * in), 0.3f, 1.5f);
    const auto outputs = model.run({{"x", from_vector(x, {batch, in}, stream)}}, stream);
    std::vector<float> expected;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<float> a(hidden);
      for (int64_t h = 0; h < hidden; ++h) {
        float sum = b1[h];
        for (int64_t i = 0; i < in; ++i) sum += x[b * in + i] * w1[h * in + i];
        a[h] = std::max(sum, 0.0f);
      }
      for (int64_t o = 0; o < out; ++o) {
        float sum = b2[o];
        for (int64_t h = 0; h < hidden; ++h) sum += a[h] * w2[h * out + o];
        expected.push_back(sum);
      }
    }
    expect_close(outputs.at("y").to_vector<float>(stream), expected);
  }
}

TEST_P(ModelSuite, AGroupedStridedConvolutionAndMaxPoolMatchAPlainLoop) {
  if (auto why = missing({"matmul", "add", "maximum"}); !why.empty()) GTEST_SKIP() << why;
  constexpr int64_t n = 1, c = 4, h = 7, w = 6, m = 6, groups = 2, k = 3, stride = 2, pad = 1;
  const auto weights = ramp(m * (c / groups) * k * k, 0.1f, 0.6f);
  const auto bias = ramp(m, 0.2f, 0.4f);
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"1", "4", "7", "6"});
  builder.output("y", TensorProto::FLOAT, {"1", "6", "2", "1"});
  builder.initializer("w", {m, c / groups, k, k}, weights).initializer("b", {m}, bias);
  auto& conv = builder.node("Conv", {"x", "w", "b"}, {"conv"}, "conv");
  ModelBuilder::set_int(conv, "group", groups);
  ModelBuilder::set_ints(conv, "strides", {stride, stride});
  ModelBuilder::set_ints(conv, "pads", {pad, pad, pad, pad});
  auto& pool = builder.node("MaxPool", {"conv"}, {"y"}, "pool");
  ModelBuilder::set_ints(pool, "kernel_shape", {2, 2});
  ModelBuilder::set_ints(pool, "strides", {2, 2});
  const Model model = load_onnx_bytes(builder.bytes(), "conv");

  const auto x = ramp(n * c * h * w, 0.25f, 1.0f);
  Stream stream = device().create_stream();
  const auto y = model.run({{"x", from_vector(x, {n, c, h, w}, stream)}}, stream).at("y");
  ASSERT_EQ(y.shape(), (Shape{1, 6, 2, 1}));

  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;  // 4, 3
  std::vector<float> conv_out(m * oh * ow);
  for (int64_t f = 0; f < m; ++f)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        float sum = bias[f];
        const int64_t g = f / (m / groups);
        for (int64_t ci = 0; ci < c / groups; ++ci)
          for (int64_t ki = 0; ki < k; ++ki)
            for (int64_t kj = 0; kj < k; ++kj) {
              const int64_t yi = i * stride + ki - pad, xj = j * stride + kj - pad;
              if (yi < 0 || yi >= h || xj < 0 || xj >= w) continue;
              const int64_t channel = g * (c / groups) + ci;
              sum += x[(channel * h + yi) * w + xj] *
                     weights[((f * (c / groups) + ci) * k + ki) * k + kj];
            }
        conv_out[(f * oh + i) * ow + j] = sum;
      }
  std::vector<float> expected;
  for (int64_t f = 0; f < m; ++f)
    for (int64_t i = 0; i < 2; ++i) {
      float best = -INFINITY;
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t b = 0; b < 2; ++b)
          best = std::max(best, conv_out[(f * oh + 2 * i + a) * ow + b]);
      expected.push_back(best);
    }
  expect_close(y.to_vector<float>(stream), expected);
}

// A residual block: conv -> relu -> conv -> add(x) -> relu, with 3x3 kernels padded by 1. Both
// convolutions take what follows them in at load (fusion.hpp): two nodes run, each checked
// against a plain loop; where the first conv's result is also a graph output nothing fuses.
std::vector<float> conv3x3(const std::vector<float>& x, const std::vector<float>& w, int64_t c,
                           int64_t size) {
  std::vector<float> y(static_cast<size_t>(c * size * size), 0.0f);
  for (int64_t f = 0; f < c; ++f)
    for (int64_t i = 0; i < size; ++i)
      for (int64_t j = 0; j < size; ++j) {
        float sum = 0;
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t ki = 0; ki < 3; ++ki)
            for (int64_t kj = 0; kj < 3; ++kj) {
              const int64_t yi = i + ki - 1, xj = j + kj - 1;
              if (yi < 0 || yi >= size || xj < 0 || xj >= size) continue;
              sum += x[(ci * size + yi) * size + xj] * w[((f * c + ci) * 3 + ki) * 3 + kj];
            }
        y[(f * size + i) * size + j] = sum;
      }
  return y;
}

TEST_P(ModelSuite, AResidualBlockFusedAtLoadMatchesAPlainLoop) {
  if (auto why = missing({"matmul", "add", "relu"}); !why.empty()) GTEST_SKIP() << why;
  constexpr int64_t c = 3, size = 5;
  const auto w1 = ramp(c * c * 9, 0.1f, 0.6f), w2 = ramp(c * c * 9, 0.15f, 0.9f);
  for (bool expose_first : {false, true}) {
    ModelBuilder builder;
    builder.input("x", TensorProto::FLOAT, {"1", "3", "5", "5"});
    builder.output("y", TensorProto::FLOAT, {"1", "3", "5", "5"});
    if (expose_first) builder.output("first", TensorProto::FLOAT, {"1", "3", "5", "5"});
    builder.initializer("w1", {c, c, 3, 3}, w1).initializer("w2", {c, c, 3, 3}, w2);
    ModelBuilder::set_ints(builder.node("Conv", {"x", "w1"}, {"first"}, "conv1"), "pads",
                           {1, 1, 1, 1});
    builder.node("Relu", {"first"}, {"a"});
    ModelBuilder::set_ints(builder.node("Conv", {"a", "w2"}, {"second"}, "conv2"), "pads",
                           {1, 1, 1, 1});
    builder.node("Add", {"x", "second"}, {"sum"});
    builder.node("Relu", {"sum"}, {"y"});
    const Model model = load_onnx_bytes(builder.bytes(), "block");
    EXPECT_EQ(model.node_count(), expose_first ? 3u : 2u);

    const auto x = ramp(c * size * size, 0.2f, 1.2f);
    auto first = conv3x3(x, w1, c, size);
    auto a = first;
    for (float& v : a) v = std::max(v, 0.0f);
    auto y = conv3x3(a, w2, c, size);
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(y[i] + x[i], 0.0f);
    Stream stream = device().create_stream();
    const auto outputs = model.run({{"x", from_vector(x, {1, c, size, size}, stream)}}, stream);
    expect_close(outputs.at("y").to_vector<float>(stream), y);
    if (expose_first) expect_close(outputs.at("first").to_vector<float>(stream), first);
  }
}

TEST_P(ModelSuite, AnElementwiseChainFusedAtLoadMatchesAPlainLoop) {
  if (auto why = missing({"add", "mul", "tanh", "sigmoid", "neg"}); !why.empty())
    GTEST_SKIP() << why;
  // y = tanh((x + b)^2) + sigmoid(x): Add, Mul, Tanh and the last Add fuse (the Mul reads its
  // operand twice); the Sigmoid stays its own node, since the graph gives it out as well. The
  // integer chain m = -(n + n) stays two nodes: the fused kernel computes in floating dtypes.
  ModelBuilder builder;
  builder.input("x", TensorProto::FLOAT, {"2", "6"}).input("n", TensorProto::INT32, {"3"});
  builder.output("y", TensorProto::FLOAT, {"2", "6"})
      .output("side", TensorProto::FLOAT, {"2", "6"});
  builder.output("m", TensorProto::INT32, {"3"});
  const auto b = ramp(6, 0.1f, 0.4f);
  builder.initializer("b", {6}, b);
  builder.node("Add", {"x", "b"}, {"t"}, "bias");
  builder.node("Mul", {"t", "t"}, {"u"}, "square");
  builder.node("Tanh", {"u"}, {"v"}, "tanh");
  builder.node("Sigmoid", {"x"}, {"side"}, "sigmoid");
  builder.node("Add", {"v", "side"}, {"y"}, "sum");
  builder.node("Add", {"n", "n"}, {"twice"}, "twice");
  builder.node("Neg", {"twice"}, {"m"}, "negate");
  const Model model = load_onnx_bytes(builder.bytes(), "chain");
  EXPECT_EQ(model.node_count(), 4u);  // sigmoid, bias + square + tanh + sum, twice, negate

  const auto x = ramp(12, 0.25f, 1.5f);
  std::vector<float> y(12), side(12);
  for (size_t i = 0; i < 12; ++i) {
    side[i] = 1.0f / (1.0f + std::exp(-x[i]));
    const float t = x[i] + b[i % 6];
    y[i] = std::tanh(t * t) + side[i];
  }
  Stream stream = device().create_stream();
  const auto outputs = model.run(
      {{"x", from_vector(x, {2, 6}, stream)}, {"n", from_vector<int32_t>({1, -2, 7}, {3}, stream)}},
      stream);
  expect_close(outputs.at("y").to_vector<float>(stream), y);
  expect_close(outputs.at("side").to_vector<float>(stream), side);
  EXPECT_EQ(outputs.at("m").to_vector<int32_t>(stream), (std::vector<int32_t>{-2, 4, -14}));
}

// Linear layers fused into their products' epilogues at load (fusion.hpp): MatMul -> Add(bias)
// -> gelu as PyTorch exports it (Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5), then MatMul ->
// Add(bias) -> Tanh, then Gemm -> Sigmoid: three nodes. A bias that is a graph input (it may
// be any shape) is left to its own Add, an activation whose input the graph gives out to its
// own nodes.
TEST_P(ModelSuite, LinearLayersFusedIntoTheirProductsMatchAPlainLoop) {
  if (auto why = missing({"matmul", "add", "mul", "div", "erf", "gelu", "tanh", "sigmoid"});
      !why.empty())
    GTEST_SKIP() << why;
  constexpr int64_t rows = 3, in = 5, hidden = 7, out = 4;
  const auto w1 = ramp(in * hidden, 0.1f, 0.5f), b1 = ramp(hidden, 0.05f, 0.2f);
  const auto w2 = ramp(hidden * out, 0.2f, 1.0f), b2 = ramp(out, 0.1f, 0.3f);
  const auto w3 = ramp(out * out, 0.15f, 0.7f), b3 = ramp(out, 0.2f, 0.1f);
  for (int variant : {0, 1, 2}) {  // fused; b2 fed as an input; the first Add given out too
    ModelBuilder builder;
    builder.input("x", TensorProto::FLOAT, {"3", "5"});
    if (variant == 1) builder.input("b2", TensorProto::FLOAT, {"4"});
    builder.output("y", TensorProto::FLOAT, {"3", "4"});
    if (variant == 2) builder.output("h", TensorProto::FLOAT, {"3", "7"});
    builder.initializer("w1", {in, hidden}, w1).initializer("b1", {hidden}, b1);
    builder.initializer("w2", {hidden, out}, w2).initializer("w3", {out, out}, w3);
    if (variant != 1) builder.initializer("b2", {out}, b2);
    builder.initializer("b3", {out}, b3);
    builder.initializer("root2", {}, {std::sqrt(2.0f)}).initializer("one", {}, {1.0f});
    builder.initializer("half", {}, {0.5f});
    builder.node("MatMul", {"x", "w1"}, {"p1"}, "fc1");
    builder.node("Add", {"b1", "p1"}, {"h"}, "bias1");
    builder.node("Div", {"h", "root2"}, {"d"});
    builder.node("Erf", {"d"}, {"e"});
    builder.node("Add", {"e", "one"}, {"f"});
    builder.node("Mul", {"h", "f"}, {"g"});
    builder.node("Mul", {"g", "half"}, {"a"});
    builder.node("MatMul", {"a", "w2"}, {"p2"}, "fc2");
    builder.node("Add", {"p2", "b2"}, {"q"}, "bias2");
    builder.node("Tanh", {"q"}, {"t"});
    ModelBuilder::set_int(builder.node("Gemm", {"t", "w3", "b3"}, {"z"}, "fc3"), "transB", 1);
    builder.node("Sigmoid", {"z"}, {"y"});
    const Model model = load_onnx_bytes(builder.bytes(), "linear");
    // Fused: fc1, fc2, fc3. Else fc2's Add and Tanh stay (one elementwise node), or gelu's
    // nodes do (h given out: one elementwise node; the bias still goes into fc1).
    EXPECT_EQ(model.node_count(), variant == 0 ? 3u : 4u) << "variant " << variant;

    const auto x = ramp(rows * in, 0.3f, 1.5f);
    std::vector<float> h(rows * hidden), t(rows * out), y(rows * out);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> a(hidden);
      for (int64_t j = 0; j < hidden; ++j) {
        float sum = b1[j];
        for (int64_t i = 0; i < in; ++i) sum += x[r * in + i] * w1[i * hidden + j];
        h[r * hidden + j] = sum;
        a[j] = 0.5f * sum * (1.0f + std::erf(sum / std::sqrt(2.0f)));
      }
      for (int64_t j = 0; j < out; ++j) {
        float sum = b2[j];
        for (int64_t i = 0; i < hidden; ++i) sum += a[i] * w2[i * out + j];
        t[r * out + j] = std::tanh(sum);
      }
      for (int64_t j = 0; j < out; ++j) {
        float sum = b3[j];
        for (int64_t i = 0; i < out; ++i) sum += t[r * out + i] * w3[j * out + i];
        y[r * out + j] = 1.0f / (1.0f + std::exp(-sum));
      }
    }
    Stream stream = device().create_stream();
    std::map<std::string, Tensor> inputs{{"x", from_vector(x, {rows, in}, stream)}};
    if (variant == 1) inputs.emplace("b2", from_vector(b2, {out}, stream));
    const auto outputs = model.run(inputs, stream);
    expect_close(outputs.at("y").to_vector<float>(stream), y);
    if (variant == 2) expect_close(outputs.at("h").to_vector<float>(stream), h);
  }
}

TEST_P(ModelSuite, ConcatGatherSlicePadAndSplitMoveTheRightElements) {
  ModelBuilder builder;
  builder.input("a", TensorProto::FLOAT, {"2", "3"}).input("b", TensorProto::FLOAT, {"2", "2"});
  builder.input("rows", TensorProto::INT64, {"3"});
  builder.output("gathered", TensorProto::FLOAT, {"3", "5"});
  builder.output("left", TensorProto::FLOAT, {"2", "1"})
      .output("right", TensorProto::FLOAT, {"2", "4"});
  builder.output("padded", TensorProto::FLOAT, {"2", "7"});
  ModelBuilder::set_int(builder.node("Concat", {"a", "b"}, {"joined"}), "axis", 1);  // [2, 5]
  ModelBuilder::set_int(builder.node("Gather", {"joined", "rows"}, {"gathered"}), "axis", 0);
  auto& split = builder.node("Split", {"joined", "sizes"}, {"left", "right"});
  ModelBuilder::set_int(split, "axis", 1);
  auto& sizes = builder.raw_initializer("sizes");
  sizes.set_data_type(TensorProto::INT64);
  sizes.add_dims(2);
  sizes.add_int64_data(1);
  sizes.add_int64_data(4);
  auto& pads = builder.raw_initializer("pads");
  pads.set_data_type(TensorProto::INT64);
  pads.add_dims(4);
  for (int64_t p : {0, 1, 0, 1}) pads.add_int64_data(p);
  builder.node("Pad", {"joined", "pads"}, {"padded"});
  const Model model = load_onnx_bytes(builder.bytes(), "moves");

  Stream stream = device().create_stream();
  const auto out = model.run({{"a", from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, stream)},
                              {"b", from_vector<float>({7, 8, 9, 10}, {2, 2}, stream)},
                              {"rows", from_vector<int64_t>({1, -2, 1}, {3}, stream)}},
                             stream);
  EXPECT_EQ(out.at("gathered").to_vector<float>(stream),
            (std::vector<float>{4, 5, 6, 9, 10, 1, 2, 3, 7, 8, 4, 5, 6, 9, 10}));
  EXPECT_EQ(out.at("left").to_vector<float>(stream), (std::vector<float>{1, 4}));
  EXPECT_EQ(out.at("right").to_vector<float>(stream),
            (std::vector<float>{2, 3, 7, 8, 5, 6, 9, 10}));
  EXPECT_EQ(out.at("padded").to_vector<float>(stream),
            (std::vector<float>{0, 1, 2, 3, 7, 8, 0, 0, 4, 5, 6, 9, 10, 0}));
}

TEST_P(ModelSuite, AnOpDefinedAsAFunctionIsExpandedAndRuns) {
  if (auto why = missing({"mul", "add", "maximum", "minimum"}); !why.empty()) GTEST_SKIP() << why;
  // HardSwish has no kernel of its own: ONNX defines it as x * HardSigmoid(x, 1/6, 1/2).
  ModelBuilder builder(14);
  builder.input("x", TensorProto::FLOAT, {"5"}).output("y", TensorProto::FLOAT, {"5"});
  builder.node("HardSwish", {"x"}, {"y"}, "act");
  const Model model = load_onnx_bytes(builder.bytes(), "hardswish");
  EXPECT_GT(model.node_count(), 1u);
  const std::vector<float> x{-4, -1, 0, 1.5f, 4};
  Stream stream = device().create_stream();
  const auto y = model.run({{"x", from_vector(x, {5}, stream)}}, stream).at("y");
  std::vector<float> expected;
  for (float v : x) expected.push_back(v * std::clamp(v / 6 + 0.5f, 0.0f, 1.0f));
  expect_close(y.to_vector<float>(stream), expected);
}

HAL_DEVICE_SUITE(ModelSuite);

}  // namespace
}  // namespace hal::test
