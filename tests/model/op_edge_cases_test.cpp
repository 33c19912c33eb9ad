// ONNX ops at the edges of their types and inputs: TopK and ArgMin at the integer types' bounds,
// GatherElements and Split refusing indices and sizes ONNX does not allow, ReduceLogSumExp over
// infinities and Mod's fmod of floats, each against the values ONNX's reference gives; Range
// counted in its type, Softplus of very negative inputs, Sign of NaN and reductions over no
// elements; TopK's smallest with NaN, Shrink of integers, BatchNormalization's mixed types and a
// Conv's legacy broadcasting Add; Slice with negative steps, Pow of integers, MaxPool's Indices,
// MaxUnpool and BitShift.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hal/model.hpp"
#include "hal/ops.hpp"
#include "model_builder.hpp"
#include "one_node_model.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

// one_node (one_node_model.hpp) at `opset`.
Model one_node(int64_t opset, const std::string& op, const std::vector<Value>& inputs,
               const std::vector<Value>& outputs,
               const std::function<void(onnx::NodeProto&)>& attributes = {}) {
  ModelBuilder builder(opset);
  return ::hal::test::one_node(builder, op, inputs, outputs, attributes);
}

// TopK of a 1-d `x` of T (ONNX type `elem`): its values and indices.
template <class T>
std::pair<std::vector<T>, std::vector<int64_t>> top_k(int32_t elem, const std::vector<T>& x,
                                                      int64_t k, bool largest) {
  const Model model = one_node(
      11, "TopK", {{"x", elem, 1}, {"k", TensorProto::INT64, 1}},
      {{"values", elem, 1}, {"indices", TensorProto::INT64, 1}},
      [&](onnx::NodeProto& node) { ModelBuilder::set_int(node, "largest", largest ? 1 : 0); });
  Stream stream = device("cpu:0").create_stream();
  const auto out = model.run({{"x", from_vector(x, {static_cast<int64_t>(x.size())}, stream)},
                              {"k", from_vector<int64_t>({k}, {1}, stream)}},
                             stream);
  return {out.at("values").template to_vector<T>(stream),
          out.at("indices").template to_vector<int64_t>(stream)};
}

TEST(OpEdgeCases, TopKSmallestAndLargestReachTheIntegerBounds) {
  using Pair64 = std::pair<std::vector<int64_t>, std::vector<int64_t>>;
  using Pair32 = std::pair<std::vector<int32_t>, std::vector<int64_t>>;
  EXPECT_EQ(top_k<int64_t>(TensorProto::INT64, {3, 1, 2}, 2, false), (Pair64{{1, 2}, {1, 2}}));
  EXPECT_EQ(top_k<int64_t>(TensorProto::INT64, {3, 1, 2}, 1, false), (Pair64{{1}, {1}}));
  EXPECT_EQ(top_k<int32_t>(TensorProto::INT32, {3, 1, 2}, 2, false), (Pair32{{1, 2}, {1, 2}}));
  constexpr int64_t low = std::numeric_limits<int64_t>::min();
  constexpr int64_t high = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> extremes = {low, high, 0, high - 1, low + 1};
  EXPECT_EQ(top_k<int64_t>(TensorProto::INT64, extremes, 5, true),
            (Pair64{{high, high - 1, 0, low + 1, low}, {1, 3, 2, 4, 0}}));
  EXPECT_EQ(top_k<int64_t>(TensorProto::INT64, extremes, 5, false),
            (Pair64{{low, low + 1, 0, high - 1, high}, {0, 4, 2, 3, 1}}));
}

// ArgMin of `x` [rows, cols] along axis 1.
template <class T>
std::vector<int64_t> arg_min(int32_t elem, const std::vector<T>& x, int64_t rows, bool last,
                             bool keepdims) {
  const Model model =
      one_node(12, "ArgMin", {{"x", elem, 2}}, {{"y", TensorProto::INT64, keepdims ? 2 : 1}},
               [&](onnx::NodeProto& node) {
                 ModelBuilder::set_int(node, "axis", 1);
                 ModelBuilder::set_int(node, "keepdims", keepdims ? 1 : 0);
                 ModelBuilder::set_int(node, "select_last_index", last ? 1 : 0);
               });
  Stream stream = device("cpu:0").create_stream();
  const int64_t cols = static_cast<int64_t>(x.size()) / rows;
  const Tensor y = model.run({{"x", from_vector(x, {rows, cols}, stream)}}, stream).at("y");
  EXPECT_EQ(y.shape(), keepdims ? (Shape{rows, 1}) : (Shape{rows}));
  return y.to_vector<int64_t>(stream);
}

TEST(OpEdgeCases, ArgMinFindsTheIntegerTypesMinimum) {
  using Indices = std::vector<int64_t>;
  EXPECT_EQ(arg_min<int8_t>(TensorProto::INT8, {-128, 5}, 1, false, true), Indices{0});
  EXPECT_EQ(arg_min<int8_t>(TensorProto::INT8, {-128, 5, -128, 7}, 1, true, true), Indices{2});
  constexpr int32_t low32 = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(arg_min<int32_t>(TensorProto::INT32, {5, low32, 3}, 1, false, true), Indices{1});
  const std::vector<int32_t> rows = {5, low32, 3, low32, low32, 7};
  EXPECT_EQ(arg_min<int32_t>(TensorProto::INT32, rows, 2, false, false), (Indices{1, 0}));
  EXPECT_EQ(arg_min<int32_t>(TensorProto::INT32, rows, 2, true, false), (Indices{1, 1}));
  constexpr int64_t low64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(arg_min<int64_t>(TensorProto::INT64, {5, low64, 3}, 1, false, true), Indices{1});
  EXPECT_EQ(arg_min<uint8_t>(TensorProto::UINT8, {255, 0, 3}, 1, false, true), Indices{1});
  EXPECT_EQ(arg_min<uint64_t>(TensorProto::UINT64, {UINT64_MAX, 0, 3, 0}, 1, true, true),
            Indices{3});
  EXPECT_EQ(arg_min<int16_t>(TensorProto::INT16, {7, -32768, -32768}, 1, false, true), Indices{1});
}

TEST(OpEdgeCases, GatherElementsGathersInRangeIndicesAndRefusesTheRest) {
  Stream stream = device("cpu:0").create_stream();
  const Model along_1 =
      one_node(13, "GatherElements", {{"x", TensorProto::FLOAT, 2}, {"i", TensorProto::INT64, 2}},
               {{"y", TensorProto::FLOAT, 2}},
               [](onnx::NodeProto& node) { ModelBuilder::set_int(node, "axis", 1); });
  const Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3}, stream);
  auto gather = [&](const std::vector<int64_t>& indices) {
    return along_1.run({{"x", x}, {"i", from_vector(indices, {2, 3}, stream)}}, stream)
        .at("y")
        .to_vector<float>(stream);
  };
  EXPECT_EQ(gather({2, -1, 0, -3, 1, 1}), (std::vector<float>{2, 2, 0, 3, 4, 4}));
  expect_error(
      [&] {
        gather({0, 7, 1, 0, 0, 2});
      },
      ErrorCode::InvalidArgument,
      {"node 'under_test'", "index 7 is out of range for dimension 1 of [2, 3]"});
  expect_error(
      [&] {
        gather({0, 1, 1, -9, 0, 2});
      },
      ErrorCode::InvalidArgument, {"index -9 is out of range for dimension 1 of [2, 3]"});

  // Axis 0 of [4, 3, 2] with indices [2, 3, 2] (cut off the axis to the indices' extent), and
  // permutations along axis 1 of 2000 elements (a mask of 4 million) and of 5000 (past the
  // mask's 16 million: copies).
  const Model along_0 =
      one_node(13, "GatherElements", {{"x", TensorProto::INT32, 3}, {"i", TensorProto::INT64, 3}},
               {{"y", TensorProto::INT32, 3}});
  std::vector<int32_t> data(24);
  std::iota(data.begin(), data.end(), 100);
  const std::vector<int64_t> picks = {3, 0, -1, 2, 1, 1, 0, 0, 2, -4, 3, 3};
  const Tensor got = along_0
                         .run({{"x", from_vector(data, {4, 3, 2}, stream)},
                               {"i", from_vector(picks, {2, 3, 2}, stream)}},
                              stream)
                         .at("y");
  std::vector<int32_t> expected;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 2; ++c) {
        const int64_t pick = (picks[static_cast<size_t>((a * 3 + b) * 2 + c)] + 4) % 4;
        expected.push_back(data[static_cast<size_t>((pick * 3 + b) * 2 + c)]);
      }
  EXPECT_EQ(got.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(got.to_vector<int32_t>(stream), expected);

  for (const int64_t n : {int64_t{2000}, int64_t{5000}}) {
    std::vector<float> values(static_cast<size_t>(n));
    std::vector<int64_t> permutation(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      values[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f;
      permutation[static_cast<size_t>(i)] = (i * 7 + 3) % n;  // 7 and n are coprime
    }
    const std::vector<float> permuted = along_1
                                            .run({{"x", from_vector(values, {1, n}, stream)},
                                                  {"i", from_vector(permutation, {1, n}, stream)}},
                                                 stream)
                                            .at("y")
                                            .to_vector<float>(stream);
    std::vector<float> want;
    for (int64_t i : permutation) want.push_back(values[static_cast<size_t>(i)]);
    EXPECT_EQ(permuted, want) << n << " elements";
  }
}

// Split of `input` along axis 1 into sizes.size() parts.
std::map<std::string, Tensor> split(const Tensor& input, const std::vector<int64_t>& sizes,
                                    Stream& stream) {
  std::vector<Value> outputs;
  for (size_t i = 0; i < sizes.size(); ++i)
    outputs.push_back({"part" + std::to_string(i), TensorProto::FLOAT, 2});
  const Model model =
      one_node(13, "Split", {{"x", TensorProto::FLOAT, 2}, {"split", TensorProto::INT64, 1}},
               outputs, [](onnx::NodeProto& node) { ModelBuilder::set_int(node, "axis", 1); });
  return model.run(
      {{"x", input}, {"split", from_vector(sizes, {static_cast<int64_t>(sizes.size())}, stream)}},
      stream);
}

TEST(OpEdgeCases, SplitRefusesNegativeSizesAndSumsThatWrap) {
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3}, stream);
  const auto parts = split(x, {1, 2}, stream);
  EXPECT_EQ(parts.at("part0").to_vector<float>(stream), (std::vector<float>{0, 3}));
  EXPECT_EQ(parts.at("part1").to_vector<float>(stream), (std::vector<float>{1, 2, 4, 5}));
  expect_error(
      [&] {
        split(x, {-1, 4}, stream);
      },
      ErrorCode::InvalidArgument, {"node 'under_test'", "split [-1, 4] has a negative size -1"});
  expect_error(
      [&] {
        split(x, {4, -1}, stream);
      },
      ErrorCode::InvalidArgument, {"split [4, -1] has a negative size -1"});
  // (2^63 - 1) * 2 + 2 wraps to 0, the size of the axis.
  constexpr int64_t most = std::numeric_limits<int64_t>::max();
  expect_error(
      [&] {
        split(zeros({2, 0}, DType::f32, stream), {most, most, 2}, stream);
      },
      ErrorCode::InvalidArgument, {"does not divide dimension 1 of [2, 0]"});
}

TEST(OpEdgeCases, ReduceLogSumExpOfInfinitiesIsInfinite) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const Model model = one_node(13, "ReduceLogSumExp", {{"x", TensorProto::FLOAT, 2}},
                               {{"y", TensorProto::FLOAT, 1}}, [](onnx::NodeProto& node) {
                                 ModelBuilder::set_ints(node, "axes", {1});
                                 ModelBuilder::set_int(node, "keepdims", 0);
                               });
  Stream stream = device("cpu:0").create_stream();
  const std::vector<float> y =
      model
          .run({{"x", from_vector<float>({-inf, -inf, inf, 1, 1, 1, -inf, 0}, {4, 2}, stream)}},
               stream)
          .at("y")
          .to_vector<float>(stream);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_EQ(y[0], -inf);
  EXPECT_EQ(y[1], inf);
  EXPECT_FLOAT_EQ(y[2], 1 + std::log(2.0f));
  EXPECT_EQ(y[3], 0.0f);
}

TEST(OpEdgeCases, ModWithFmodOfFloatsIsCsFmod) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Stream stream = device("cpu:0").create_stream();
  auto mod = [&](int32_t elem, const Tensor& a, const Tensor& b, int64_t c_fmod) {
    const Model model =
        one_node(13, "Mod", {{"a", elem, 1}, {"b", elem, 1}}, {{"y", elem, 1}},
                 [&](onnx::NodeProto& node) { ModelBuilder::set_int(node, "fmod", c_fmod); });
    return model.run({{"a", a}, {"b", b}}, stream).at("y");
  };
  const std::vector<float> a = {1e10f, 5.5f, 7, -7.5f, 1e20f, -0.0f};
  const std::vector<float> b = {3, 0, inf, 2, 3, 5};
  const std::vector<float> y =
      mod(TensorProto::FLOAT, from_vector(a, {6}, stream), from_vector(b, {6}, stream), 1)
          .to_vector<float>(stream);
  ASSERT_EQ(y.size(), 6u);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_TRUE(std::isnan(y[1])) << y[1];
  EXPECT_EQ(y[2], 7.0f);
  EXPECT_EQ(y[3], -1.5f);
  EXPECT_EQ(y[4], std::fmod(1e20f, 3.0f));
  EXPECT_TRUE(y[5] == 0 && std::signbit(y[5])) << y[5];

  const std::vector<double> y64 =
      mod(TensorProto::DOUBLE, from_vector<double>({1e300, 7}, {2}, stream),
          from_vector<double>({3, -std::numeric_limits<double>::infinity()}, {2}, stream), 1)
          .to_vector<double>(stream);
  EXPECT_EQ(y64, (std::vector<double>{std::fmod(1e300, 3.0), 7}));

  const Tensor half =
      mod(TensorProto::FLOAT16,
          cast(from_vector<float>({7, 5.5f, -7.5f}, {3}, stream), DType::f16, stream),
          cast(from_vector<float>({inf, 2, 2}, {3}, stream), DType::f16, stream), 1);
  EXPECT_EQ(half.dtype(), DType::f16);
  EXPECT_EQ(cast(half, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{7, 1.5f, -1.5f}));

  // Integers keep truncating division: fmod=1 the dividend's sign, fmod=0 the divisor's.
  const Tensor ia = from_vector<int32_t>({-7, 7}, {2}, stream);
  const Tensor ib = from_vector<int32_t>({2, -2}, {2}, stream);
  EXPECT_EQ(mod(TensorProto::INT32, ia, ib, 1).to_vector<int32_t>(stream),
            (std::vector<int32_t>{-1, 1}));
  EXPECT_EQ(mod(TensorProto::INT32, ia, ib, 0).to_vector<int32_t>(stream),
            (std::vector<int32_t>{1, -1}));
}

// OneHot's depth is checked before it becomes an integer: NaN and 1e30 have no int64 (the
// conversion is undefined; it said "depth -9223372036854775808 is not positive").
TEST(OpEdgeCases, OneHotRefusesADepthThatIsNoCount) {
  Stream stream = device("cpu:0").create_stream();
  const Model model = one_node(11, "OneHot",
                               {{"i", TensorProto::INT64, 1},
                                {"depth", TensorProto::FLOAT, 0},
                                {"v", TensorProto::FLOAT, 1}},
                               {{"y", TensorProto::FLOAT, 2}});
  const auto run = [&](float depth) {
    return model
        .run({{"i", from_vector<int64_t>({0, 2}, {2}, stream)},
              {"depth", from_vector<float>({depth}, {}, stream)},
              {"v", from_vector<float>({0, 1}, {2}, stream)}},
             stream)
        .at("y");
  };
  EXPECT_EQ(run(3).to_vector<float>(stream), (std::vector<float>{1, 0, 0, 0, 0, 1}));
  for (const float depth : {std::numeric_limits<float>::quiet_NaN(), 1e30f, 0.0f, -2.0f})
    expect_error([&] { run(depth); }, ErrorCode::InvalidArgument,
                 {"node 'under_test'", "is not a positive count (1 to 2^40)"});
}

// Integer Range and Trilu's k are integers throughout: as doubles, 2^60 + 1 was 2^60.
TEST(OpEdgeCases, IntegerRangeAndTriluAreExactPastTwoToThe53) {
  Stream stream = device("cpu:0").create_stream();
  const Model range = one_node(11, "Range",
                               {{"start", TensorProto::INT64, 0},
                                {"limit", TensorProto::INT64, 0},
                                {"delta", TensorProto::INT64, 0}},
                               {{"y", TensorProto::INT64, 1}});
  const auto run = [&](int64_t start, int64_t limit, int64_t delta) {
    return range
        .run({{"start", from_vector<int64_t>({start}, {}, stream)},
              {"limit", from_vector<int64_t>({limit}, {}, stream)},
              {"delta", from_vector<int64_t>({delta}, {}, stream)}},
             stream)
        .at("y")
        .to_vector<int64_t>(stream);
  };
  const int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_EQ(run(big, big + 7, 3), (std::vector<int64_t>{big, big + 3, big + 6}));
  EXPECT_EQ(run(10, 0, -4), (std::vector<int64_t>{10, 6, 2}));  // ceil(10 / 4) = 3
  EXPECT_EQ(run(0, 10, -1), (std::vector<int64_t>{}));
  EXPECT_EQ(run(INT64_MAX - 2, INT64_MAX, 1), (std::vector<int64_t>{INT64_MAX - 2, INT64_MAX - 1}));
  expect_error([&] { run(0, 5, 0); }, ErrorCode::InvalidArgument, {"delta is 0"});
  // i delta passes int64 midway (3 x 2^62) though every value fits.
  const int64_t quarter = int64_t{1} << 62;
  EXPECT_EQ(run(INT64_MIN, INT64_MAX, quarter),
            (std::vector<int64_t>{INT64_MIN, -quarter, 0, quarter}));

  const Model trilu =
      one_node(14, "Trilu", {{"x", TensorProto::FLOAT, 2}, {"k", TensorProto::INT64, 0}},
               {{"y", TensorProto::FLOAT, 2}});
  const auto upper = [&](int64_t k) {
    return trilu
        .run({{"x", from_vector<float>({1, 2, 3, 4}, {2, 2}, stream)},
              {"k", from_vector<int64_t>({k}, {}, stream)}},
             stream)
        .at("y")
        .to_vector<float>(stream);
  };
  EXPECT_EQ(upper(1), (std::vector<float>{0, 2, 0, 0}));
  EXPECT_EQ(upper(INT64_MIN + 1), (std::vector<float>{1, 2, 3, 4}));  // every diagonal is above it
  EXPECT_EQ(upper(INT64_MAX), (std::vector<float>{0, 0, 0, 0}));
}

// Float Range counts ceil((limit - start) / delta) in T, as ONNX does: in f32 Range(0.7, 1.0,
// 0.1) has 3 elements (in double, 4, which it has for double's T).
TEST(OpEdgeCases, FloatRangeCountsItsElementsInItsType) {
  Stream stream = device("cpu:0").create_stream();
  const auto range = [&](int32_t elem, const Tensor& start, const Tensor& limit,
                         const Tensor& delta) {
    const Model model =
        one_node(11, "Range", {{"start", elem, 0}, {"limit", elem, 0}, {"delta", elem, 0}},
                 {{"y", elem, 1}});
    return model.run({{"start", start}, {"limit", limit}, {"delta", delta}}, stream).at("y");
  };
  const auto f32 = [&](float value) { return from_vector<float>({value}, {}, stream); };
  const auto f64 = [&](double value) { return from_vector<double>({value}, {}, stream); };
  EXPECT_EQ(range(TensorProto::FLOAT, f32(0.7f), f32(1.0f), f32(0.1f)).to_vector<float>(stream),
            (std::vector<float>{0.7f, 0.8f, 0.9f}));
  EXPECT_EQ(range(TensorProto::FLOAT, f32(0), f32(1), f32(0.25f)).to_vector<float>(stream),
            (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(range(TensorProto::FLOAT, f32(3), f32(0), f32(-1.5f)).to_vector<float>(stream),
            (std::vector<float>{3, 1.5f}));
  EXPECT_EQ(range(TensorProto::FLOAT, f32(1), f32(0), f32(0.5f)).to_vector<float>(stream),
            (std::vector<float>{}));
  EXPECT_EQ(range(TensorProto::DOUBLE, f64(0.7), f64(1.0), f64(0.1)).shape(), (Shape{4}));
}

// GlobalAveragePool and GlobalMaxPool of [N, C]: no spatial axes, so the input itself (an
// empty axis list had reduced every axis to one number).
TEST(OpEdgeCases, GlobalPoolsOfARank2InputGiveTheInput) {
  Stream stream = device("cpu:0").create_stream();
  const std::vector<float> x = {0, 1, 2, 3, 4, 5};
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    const Model rank2 =
        one_node(13, op, {{"x", TensorProto::FLOAT, 2}}, {{"y", TensorProto::FLOAT, 2}});
    const Tensor y = rank2.run({{"x", from_vector(x, {2, 3}, stream)}}, stream).at("y");
    EXPECT_EQ(y.shape(), (Shape{2, 3})) << op;
    EXPECT_EQ(y.to_vector<float>(stream), x) << op;
    const Model rank3 =
        one_node(13, op, {{"x", TensorProto::FLOAT, 3}}, {{"y", TensorProto::FLOAT, 3}});
    const Tensor pooled = rank3.run({{"x", from_vector(x, {1, 2, 3}, stream)}}, stream).at("y");
    EXPECT_EQ(pooled.shape(), (Shape{1, 2, 1})) << op;
    EXPECT_EQ(pooled.to_vector<float>(stream), std::string(op) == "GlobalMaxPool"
                                                   ? (std::vector<float>{2, 5})
                                                   : (std::vector<float>{1, 4}));
  }
}

// Softplus = log(1 + exp(x)) without exp(x) overflowing: 90 in f32 (exp(90) > 3.4e38) and 12 in
// f16 (exp(12) > 65504) were inf.
TEST(OpEdgeCases, SoftplusOfLargeInputsIsFinite) {
  Stream stream = device("cpu:0").create_stream();
  const auto softplus = [&](int32_t elem, const Tensor& x) {
    const Model model = one_node(13, "Softplus", {{"x", elem, 1}}, {{"y", elem, 1}});
    return model.run({{"x", x}}, stream).at("y");
  };
  const std::vector<float> y =
      softplus(TensorProto::FLOAT, from_vector<float>({90, 1000, -1000, 12, 0, -5}, {6}, stream))
          .to_vector<float>(stream);
  ASSERT_EQ(y.size(), 6u);
  EXPECT_EQ(y[0], 90.0f);
  EXPECT_EQ(y[1], 1000.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_NEAR(y[3], 12 + std::log1p(std::exp(-12.0)), 2e-6);
  EXPECT_FLOAT_EQ(y[4], std::log(2.0f));
  EXPECT_NEAR(y[5], std::log1p(std::exp(-5.0)), 1e-6);

  const Tensor half =
      softplus(TensorProto::FLOAT16,
               cast(from_vector<float>({12, 90, 1000, -1000}, {4}, stream), DType::f16, stream));
  EXPECT_EQ(half.dtype(), DType::f16);
  EXPECT_EQ(cast(half, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{12, 90, 1000, 0}));

  // f64 the same (np.logaddexp(x, 0)); NaN stays NaN, infinities go to inf and 0.
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> y64 =
      softplus(TensorProto::DOUBLE,
               from_vector<double>({100, 1000, -100, std::nan(""), inf, -inf}, {6}, stream))
          .to_vector<double>(stream);
  ASSERT_EQ(y64.size(), 6u);
  EXPECT_EQ(y64[0], 100.0);
  EXPECT_EQ(y64[1], 1000.0);
  EXPECT_NEAR(y64[2], 3.720075976020836e-44, 1e-58);
  EXPECT_TRUE(std::isnan(y64[3]));
  EXPECT_EQ(y64[4], inf);
  EXPECT_EQ(y64[5], 0.0);
}

// ReduceMean of integers is the exact sum divided in integers, truncating toward zero as
// ONNX's reference (NumPy's mean in the input's dtype) does: averaged in f32, 2^40 + 2 was 2^40.
// An i64 sum past 2^63 (three values of 2^62) wrapped in the division, giving a negative mean;
// NumPy's sum wraps too, so there the reference is the exact mean (Python's integers).
TEST(OpEdgeCases, IntegerReduceMeanIsExactAndTruncates) {
  Stream stream = device("cpu:0").create_stream();
  const Model i64 =
      one_node(13, "ReduceMean", {{"x", TensorProto::INT64, 1}}, {{"y", TensorProto::INT64, 0}},
               [](onnx::NodeProto& node) { ModelBuilder::set_int(node, "keepdims", 0); });
  const auto mean64 = [&](const std::vector<int64_t>& x) {
    return i64.run({{"x", from_vector(x, {static_cast<int64_t>(x.size())}, stream)}}, stream)
        .at("y")
        .to_vector<int64_t>(stream);
  };
  const int64_t big = int64_t{1} << 40;
  EXPECT_EQ(mean64({big + 1, big + 3}), std::vector<int64_t>{big + 2});
  EXPECT_EQ(mean64({3, 4}), std::vector<int64_t>{3});
  EXPECT_EQ(mean64({-3, -4}), std::vector<int64_t>{-3});
  const int64_t quarter = int64_t{1} << 62;  // 2^62
  EXPECT_EQ(mean64({quarter, quarter, quarter}), std::vector<int64_t>{quarter});
  EXPECT_EQ(mean64({-quarter, -quarter, -quarter, 5}), std::vector<int64_t>{-3458764513820540926});
  EXPECT_EQ(mean64({quarter + 1, quarter, 0}), std::vector<int64_t>{3074457345618258603});
  EXPECT_EQ(mean64({INT64_MAX, INT64_MAX, INT64_MAX - 3}), std::vector<int64_t>{INT64_MAX - 1});
  EXPECT_EQ(mean64({INT64_MIN, INT64_MIN, 1}), std::vector<int64_t>{-6148914691236517205});
  EXPECT_EQ(mean64({INT64_MAX, -7, 9}), std::vector<int64_t>{3074457345618258603});

  const Model i32 =
      one_node(13, "ReduceMean", {{"x", TensorProto::INT32, 2}}, {{"y", TensorProto::INT32, 2}},
               [](onnx::NodeProto& node) { ModelBuilder::set_ints(node, "axes", {1}); });
  const Tensor y =
      i32.run({{"x", from_vector<int32_t>({7, 8, 8, -7, -8, -8}, {2, 3}, stream)}}, stream).at("y");
  EXPECT_EQ(y.dtype(), DType::i32);
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  EXPECT_EQ(y.to_vector<int32_t>(stream), (std::vector<int32_t>{7, -7}));  // 23 / 3, -23 / 3
}

// Dropout's mask is of the input's type before opset 10 (Dropout-7's T), bool from 10.
TEST(OpEdgeCases, DropoutMaskIsOfTheInputsTypeBeforeOpset10) {
  Stream stream = device("cpu:0").create_stream();
  for (const int64_t opset : {7, 9, 10}) {
    const int32_t mask_elem = opset < 10 ? TensorProto::FLOAT : TensorProto::BOOL;
    const Model model = one_node(opset, "Dropout", {{"x", TensorProto::FLOAT, 2}},
                                 {{"y", TensorProto::FLOAT, 2}, {"mask", mask_elem, 2}});
    const auto out =
        model.run({{"x", from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, stream)}}, stream);
    EXPECT_EQ(out.at("y").to_vector<float>(stream), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    const Tensor& mask = out.at("mask");
    EXPECT_EQ(mask.shape(), (Shape{2, 3})) << "opset " << opset;
    if (opset < 10) {
      EXPECT_EQ(mask.dtype(), DType::f32) << "opset " << opset;
      EXPECT_EQ(mask.to_vector<float>(stream), std::vector<float>(6, 1.0f));
    } else {
      EXPECT_EQ(mask.dtype(), DType::boolean);
      EXPECT_EQ(mask.to_vector<uint8_t>(stream), std::vector<uint8_t>(6, 1));
    }
  }
}

// Pad's int64 constant_value is kept as itself: read as a double, 2^53 + 1 was 2^53.
TEST(OpEdgeCases, PadKeepsAnInt64ConstantExact) {
  Stream stream = device("cpu:0").create_stream();
  const Model model = one_node(13, "Pad",
                               {{"x", TensorProto::INT64, 1},
                                {"pads", TensorProto::INT64, 1},
                                {"value", TensorProto::INT64, 0}},
                               {{"y", TensorProto::INT64, 1}});
  const int64_t odd = (int64_t{1} << 53) + 1;
  const auto pad = [&](const std::vector<int64_t>& pads) {
    return model
        .run({{"x", from_vector<int64_t>({7, 8, 9}, {3}, stream)},
              {"pads", from_vector(pads, {2}, stream)},
              {"value", from_vector<int64_t>({odd}, {}, stream)}},
             stream)
        .at("y")
        .to_vector<int64_t>(stream);
  };
  EXPECT_EQ(pad({1, 1}), (std::vector<int64_t>{odd, 7, 8, 9, odd}));
  EXPECT_EQ(pad({-1, 2}), (std::vector<int64_t>{8, 9, odd, odd}));  // a negative pad crops
  EXPECT_EQ(pad({0, -2}), (std::vector<int64_t>{7}));
}

// Slice with negative steps walks backwards, starts clamped to [0, size - 1] and ends to
// [-1, size - 1] (ONNX's rule; the values are NumPy's x[start:end:step]); and Pow of integers.
TEST(OpEdgeCases, SliceWithNegativeStepsReversesAsNumPyDoes) {
  Stream stream = device("cpu:0").create_stream();
  const Model model = one_node(13, "Slice",
                               {{"x", TensorProto::INT64, 2},
                                {"starts", TensorProto::INT64, 1},
                                {"ends", TensorProto::INT64, 1},
                                {"axes", TensorProto::INT64, 1},
                                {"steps", TensorProto::INT64, 1}},
                               {{"y", TensorProto::INT64, 2}});
  std::vector<int64_t> x(3 * 5);
  std::iota(x.begin(), x.end(), 0);  // [[0..4], [5..9], [10..14]]
  const auto slice = [&](std::vector<int64_t> starts, std::vector<int64_t> ends,
                         std::vector<int64_t> axes, std::vector<int64_t> steps) {
    const auto n = static_cast<int64_t>(starts.size());
    const auto out = model.run({{"x", from_vector(x, {3, 5}, stream)},
                                {"starts", from_vector(starts, {n}, stream)},
                                {"ends", from_vector(ends, {n}, stream)},
                                {"axes", from_vector(axes, {n}, stream)},
                                {"steps", from_vector(steps, {n}, stream)}},
                               stream);
    const Tensor& y = out.at("y");
    return std::pair{y.shape(), y.to_vector<int64_t>(stream)};
  };
  constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
  constexpr int64_t kHighest = std::numeric_limits<int64_t>::max();
  // x[:, ::-1] (torch.flip's export): from the last column to before the first.
  EXPECT_EQ(slice({-1}, {kLowest}, {1}, {-1}),
            std::pair(Shape{3, 5},
                      std::vector<int64_t>{4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 14, 13, 12, 11, 10}));
  // x[::-2, 3:0:-2]: rows 2, 0 and columns 3, 1; a start past the end is clamped to the last.
  EXPECT_EQ(slice({kHighest, 3}, {kLowest, 0}, {0, 1}, {-2, -2}),
            std::pair(Shape{2, 2}, std::vector<int64_t>{13, 11, 3, 1}));
  // x[1:1:-1] and x[0:-1:-1] pick nothing (-1 is the last element, after start 0).
  EXPECT_EQ(slice({1}, {1}, {0}, {-1}).first, (Shape{0, 5}));
  EXPECT_EQ(slice({0}, {-1}, {0}, {-1}).first, (Shape{0, 5}));
  // A negative start counts from the end: x[1, -2:-5:-1].
  EXPECT_EQ(slice({1, -2}, {2, -5}, {0, 1}, {1, -1}),
            std::pair(Shape{1, 3}, std::vector<int64_t>{8, 7, 6}));
}

TEST(OpEdgeCases, PowOfIntegersIsExactAndTruncatesNegativePowers) {
  Stream stream = device("cpu:0").create_stream();
  const Model model =
      one_node(15, "Pow", {{"x", TensorProto::INT64, 1}, {"y", TensorProto::INT64, 1}},
               {{"z", TensorProto::INT64, 1}});
  const auto out = model.run({{"x", from_vector<int64_t>({3, -2, 2, 2, 7, 1}, {6}, stream)},
                              {"y", from_vector<int64_t>({4, 3, 52, -1, 0, -3}, {6}, stream)}},
                             stream);
  // 2^52 exactly; 2^-1 = 0.5 truncates to 0 (ONNX Runtime's std::pow of doubles); 1^-3 is 1.
  EXPECT_EQ(out.at("z").to_vector<int64_t>(stream),
            (std::vector<int64_t>{81, -8, int64_t{1} << 52, 0, 1, 1}));
}

// MaxPool's Indices keep the first of equal maxima in the window's scan order (onnxruntime's
// first strictly larger), numbered row-major, or column-major within the plane with
// storage_order 1; MaxUnpool refuses an index outside its output by name.
TEST(OpEdgeCases, MaxPoolIndicesTakeTheFirstOfEqualMaxima) {
  Stream stream = device("cpu:0").create_stream();
  const auto indices = [&](int64_t storage_order) {
    const Model model = one_node(12, "MaxPool", {{"x", TensorProto::FLOAT, 4}},
                                 {{"y", TensorProto::FLOAT, 4}, {"i", TensorProto::INT64, 4}},
                                 [&](onnx::NodeProto& node) {
                                   ModelBuilder::set_ints(node, "kernel_shape", {2, 2});
                                   ModelBuilder::set_int(node, "storage_order", storage_order);
                                 });
    // [[1, 5, 5], [5, 2, 0]] then a second channel of -inf: each window's first 5 is (0, 1),
    // and a window of -inf picks its first element, never -1.
    const float inf = std::numeric_limits<float>::infinity();
    const auto out =
        model.run({{"x", from_vector<float>({1, 5, 5, 5, 2, 0, -inf, -inf, -inf, -inf, -inf, -inf},
                                            {1, 2, 2, 3}, stream)}},
                  stream);
    EXPECT_EQ(out.at("y").to_vector<float>(stream), (std::vector<float>{5, 5, -inf, -inf}));
    return out.at("i").to_vector<int64_t>(stream);
  };
  EXPECT_EQ(indices(0), (std::vector<int64_t>{1, 1, 6, 7}));
  EXPECT_EQ(indices(1), (std::vector<int64_t>{2, 2, 6, 8}));  // (0, 1) is 0 + 1 x 2 rows

  // A window wholly in the padding (its two taps 3 apart around two elements) picks nothing:
  // -1, not the last position of the plane before.
  const Model dilated = one_node(12, "MaxPool", {{"x", TensorProto::FLOAT, 3}},
                                 {{"y", TensorProto::FLOAT, 3}, {"i", TensorProto::INT64, 3}},
                                 [](onnx::NodeProto& node) {
                                   ModelBuilder::set_ints(node, "kernel_shape", {2});
                                   ModelBuilder::set_ints(node, "dilations", {3});
                                   ModelBuilder::set_ints(node, "pads", {1, 1});
                                 });
  EXPECT_EQ(dilated.run({{"x", from_vector<float>({1, 2, 3, 4}, {2, 1, 2}, stream)}}, stream)
                .at("i")
                .to_vector<int64_t>(stream),
            (std::vector<int64_t>{-1, -1}));

  const Model unpool =
      one_node(11, "MaxUnpool", {{"x", TensorProto::FLOAT, 4}, {"i", TensorProto::INT64, 4}},
               {{"y", TensorProto::FLOAT, 4}}, [](onnx::NodeProto& node) {
                 ModelBuilder::set_ints(node, "kernel_shape", {2, 2});
                 ModelBuilder::set_ints(node, "strides", {2, 2});
               });
  const auto run = [&](std::vector<int64_t> at) {
    return unpool
        .run({{"x", from_vector<float>({7, 8}, {1, 1, 1, 2}, stream)},
              {"i", from_vector(at, {1, 1, 1, 2}, stream)}},
             stream)
        .at("y");
  };
  const Tensor y = run({5, 2});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 4}));
  EXPECT_EQ(y.to_vector<float>(stream), (std::vector<float>{0, 0, 8, 0, 0, 7, 0, 0}));
  expect_error(
      [&] {
        run({1, 8});
      },
      ErrorCode::InvalidArgument,
      {"MaxUnpool", "index 8 at position 1 of I is outside the output [1, 1, 2, 4]"});
  const Model shaped = one_node(11, "MaxUnpool",
                                {{"x", TensorProto::FLOAT, 4},
                                 {"i", TensorProto::INT64, 4},
                                 {"shape", TensorProto::INT64, 1}},
                                {{"y", TensorProto::FLOAT, 4}}, [](onnx::NodeProto& node) {
                                  ModelBuilder::set_ints(node, "kernel_shape", {2, 2});
                                });
  const auto huge = [&] {
    shaped.run(
        {{"x", from_vector<float>({7, 8}, {1, 1, 1, 2}, stream)},
         {"i", from_vector<int64_t>({0, 1}, {1, 1, 1, 2}, stream)},
         {"shape", from_vector<int64_t>({1, 1, int64_t{1} << 20, int64_t{1} << 20}, {4}, stream)}},
        stream);
  };
  expect_error(huge, ErrorCode::InvalidArgument, {"MaxUnpool", "has more than 2^34 elements"});
}

// BitShift of u8: the left shift wraps to 8 bits, a shift by 8 or more gives 0 either way (C's
// shift of the promoted value, narrowed back, as onnxruntime computes it).
TEST(OpEdgeCases, BitShiftOfBytesWrapsAndShiftsOutPastTheWidth) {
  Stream stream = device("cpu:0").create_stream();
  const auto shift = [&](const std::string& direction) {
    const Model model = one_node(
        11, "BitShift", {{"x", TensorProto::UINT8, 1}, {"y", TensorProto::UINT8, 1}},
        {{"z", TensorProto::UINT8, 1}},
        [&](onnx::NodeProto& node) { ModelBuilder::set_string(node, "direction", direction); });
    return model
        .run({{"x", from_vector<uint8_t>({200, 1, 255, 255, 77}, {5}, stream)},
              {"y", from_vector<uint8_t>({1, 7, 3, 8, 200}, {5}, stream)}},
             stream)
        .at("z")
        .to_vector<uint8_t>(stream);
  };
  EXPECT_EQ(shift("LEFT"), (std::vector<uint8_t>{144, 128, 248, 0, 0}));
  EXPECT_EQ(shift("RIGHT"), (std::vector<uint8_t>{100, 0, 31, 0, 0}));
}

// BitShift of u64: exact across the whole width (2^63 is no f32 product of a pow away).
TEST(OpEdgeCases, BitShiftOfU64IsExactAcrossItsWidth) {
  Stream stream = device("cpu:0").create_stream();
  const auto shift = [&](const std::string& direction) {
    const Model model = one_node(
        11, "BitShift", {{"x", TensorProto::UINT64, 1}, {"y", TensorProto::UINT64, 1}},
        {{"z", TensorProto::UINT64, 1}},
        [&](onnx::NodeProto& node) { ModelBuilder::set_string(node, "direction", direction); });
    return model
        .run({{"x", from_vector<uint64_t>({1, 3, UINT64_MAX, UINT64_MAX, 5}, {5}, stream)},
              {"y", from_vector<uint64_t>({63, 62, 1, 64, 0}, {5}, stream)}},
             stream)
        .at("z")
        .to_vector<uint64_t>(stream);
  };
  EXPECT_EQ(shift("LEFT"),
            (std::vector<uint64_t>{uint64_t{1} << 63, uint64_t{3} << 62, UINT64_MAX - 1, 0, 5}));
  EXPECT_EQ(shift("RIGHT"), (std::vector<uint64_t>{0, 0, UINT64_MAX >> 1, 0, 5}));
}

// Split-1 takes `split` as an optional second input too (of T by its schema; int64 as models
// write it), which Split-2 to 12 take as an attribute only.
TEST(OpEdgeCases, Split1TakesItsSizesAsAnInput) {
  Stream stream = device("cpu:0").create_stream();
  const Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {2, 5}, stream);
  for (const int32_t elem : {int32_t{TensorProto::INT64}, int32_t{TensorProto::FLOAT}}) {
    const Model model =
        one_node(1, "Split", {{"x", TensorProto::FLOAT, 2}, {"split", elem, 1}},
                 {{"a", TensorProto::FLOAT, 2}, {"b", TensorProto::FLOAT, 2}},
                 [](onnx::NodeProto& node) { ModelBuilder::set_int(node, "axis", 1); });
    const Tensor sizes = elem == TensorProto::INT64 ? from_vector<int64_t>({2, 3}, {2}, stream)
                                                    : from_vector<float>({2, 3}, {2}, stream);
    const auto parts = model.run({{"x", x}, {"split", sizes}}, stream);
    EXPECT_EQ(parts.at("a").to_vector<float>(stream), (std::vector<float>{0, 1, 5, 6}));
    EXPECT_EQ(parts.at("b").to_vector<float>(stream), (std::vector<float>{2, 3, 4, 7, 8, 9}));
  }
}

// GatherElements keeps -0 (a masked sum from +0 gave +0), NaN and -inf.
TEST(OpEdgeCases, GatherElementsKeepsNegativeZero) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Stream stream = device("cpu:0").create_stream();
  const Model model =
      one_node(13, "GatherElements", {{"x", TensorProto::FLOAT, 2}, {"i", TensorProto::INT64, 2}},
               {{"y", TensorProto::FLOAT, 2}},
               [](onnx::NodeProto& node) { ModelBuilder::set_int(node, "axis", 1); });
  const std::vector<float> y =
      model
          .run({{"x", from_vector<float>({-0.0f, std::nanf(""), -inf, 2}, {1, 4}, stream)},
                {"i", from_vector<int64_t>({0, 1, 2, 3, -4}, {1, 5}, stream)}},
               stream)
          .at("y")
          .to_vector<float>(stream);
  ASSERT_EQ(y.size(), 5u);
  EXPECT_TRUE(y[0] == 0 && std::signbit(y[0])) << y[0];
  EXPECT_TRUE(std::isnan(y[1])) << y[1];
  EXPECT_EQ(y[2], -inf);
  EXPECT_EQ(y[3], 2.0f);
  EXPECT_TRUE(y[4] == 0 && std::signbit(y[4])) << y[4];
}

// f16 and bf16 Range count ceil((limit - start) / delta) in their type too, as NumPy's float16
// (ONNX's reference) does: in double the count was one more, its last element the limit itself.
TEST(OpEdgeCases, HalfRangeCountsItsElementsInItsType) {
  Stream stream = device("cpu:0").create_stream();
  const auto range = [&](int32_t elem, DType dtype, float start, float limit, float delta) {
    const Model model =
        one_node(11, "Range", {{"start", elem, 0}, {"limit", elem, 0}, {"delta", elem, 0}},
                 {{"y", elem, 1}});
    const auto scalar = [&](float value) {
      return cast(from_vector<float>({value}, {}, stream), dtype, stream);
    };
    const Tensor y =
        model
            .run({{"start", scalar(start)}, {"limit", scalar(limit)}, {"delta", scalar(delta)}},
                 stream)
            .at("y");
    EXPECT_EQ(y.dtype(), dtype);
    return cast(y, DType::f32, stream).to_vector<float>(stream);
  };
  // len(np.arange(np.float16(0.1), np.float16(1.0), np.float16(0.1))) is 9; the values are
  // .astype(np.float16) of them (in double the count is 10).
  const std::vector<float> tenths = {
      0.0999755859375f, 0.199951171875f, 0.2998046875f, 0.39990234375f, 0.5f,
      0.599609375f,     0.69970703125f,  0.7998046875f, 0.89990234375f};
  EXPECT_EQ(range(TensorProto::FLOAT16, DType::f16, 0.1f, 1.0f, 0.1f), tenths);
  // The values are the spec's start + i * delta (in f32, rounded to f16 once), not NumPy's
  // arange, which steps by f16(start + delta) - start: 9 of them either way.
  EXPECT_EQ(range(TensorProto::FLOAT16, DType::f16, 1.0f, 0.1f, -0.1f),
            (std::vector<float>{1.0f, 0.89990234375f, 0.7998046875f, 0.7001953125f, 0.60009765625f,
                                0.5f, 0.400146484375f, 0.30029296875f, 0.2001953125f}));
  EXPECT_EQ(range(TensorProto::FLOAT16, DType::f16, 0, 1, 0.25f),
            (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  // bf16 0.3 is 0.30078125 and 0.1 is 0.10009765625: their quotient 3.0049 is 3 in bf16 (4 in
  // double, the fourth element 0.30078125, the limit).
  EXPECT_EQ(range(TensorProto::BFLOAT16, DType::bf16, 0, 0.3f, 0.1f),
            (std::vector<float>{0, 0.10009765625f, 0.2001953125f}));
}

// Softplus of very negative x is exp(x), log1p(exp(x)) to f32's precision: log(1 + exp(x))
// rounded 1 + exp(x) to 1 and gave 0 from x = -17 (ONNX's reference, log(exp(x) + 1) in f32,
// does the same; PyTorch's softplus uses log1p). References: np.log1p(np.exp(x)) in double,
// rounded to f32 (f16).
TEST(OpEdgeCases, SoftplusOfVeryNegativeInputsIsExpOfThem) {
  Stream stream = device("cpu:0").create_stream();
  const auto softplus = [&](int32_t elem, const Tensor& x) {
    const Model model = one_node(13, "Softplus", {{"x", elem, 1}}, {{"y", elem, 1}});
    return model.run({{"x", x}}, stream).at("y");
  };
  const std::vector<float> y =
      softplus(TensorProto::FLOAT, from_vector<float>({-10, -17, -20, -30, -50, -80}, {6}, stream))
          .to_vector<float>(stream);
  const std::vector<float> want = {4.539889778243378e-05f,  4.139937459513021e-08f,
                                   2.06115369216775e-09f,   9.357622912219837e-14f,
                                   1.9287498933537385e-22f, 1.8048513285848406e-35f};
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5 * want[i]) << "at " << i;

  // f16: 1 + exp(-8) rounds to 1 (exp(-8) is below half an ulp of 1), 1 + exp(-4) does not.
  const Tensor half = softplus(TensorProto::FLOAT16,
                               cast(from_vector<float>({-8, -4}, {2}, stream), DType::f16, stream));
  const std::vector<float> y16 = cast(half, DType::f32, stream).to_vector<float>(stream);
  ASSERT_EQ(y16.size(), 2u);
  EXPECT_NEAR(y16[0], 0.00033545494079589844f, 4e-3 * 0.00033545494079589844f);
  EXPECT_NEAR(y16[1], 0.0181427001953125f, 4e-3 * 0.0181427001953125f);
}

// Sign of NaN is NaN, as np.sign and torch.sign give ((x > 0) - (x < 0) was 0).
TEST(OpEdgeCases, SignOfNaNIsNaN) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Stream stream = device("cpu:0").create_stream();
  const auto sign = [&](int32_t elem, const Tensor& x) {
    const Model model = one_node(13, "Sign", {{"x", elem, 1}}, {{"y", elem, 1}});
    return model.run({{"x", x}}, stream).at("y");
  };
  // np.sign([nan, -2, -0.0, 0, 3, -inf, inf]) = [nan, -1, -0, 0, 1, -1, 1]
  const std::vector<float> y =
      sign(TensorProto::FLOAT,
           from_vector<float>({std::nanf(""), -2, -0.0f, 0, 3, -inf, inf}, {7}, stream))
          .to_vector<float>(stream);
  ASSERT_EQ(y.size(), 7u);
  EXPECT_TRUE(std::isnan(y[0])) << y[0];
  EXPECT_EQ(std::vector<float>(y.begin() + 1, y.end()), (std::vector<float>{-1, 0, 0, 1, -1, 1}));

  const std::vector<double> y64 =
      sign(TensorProto::DOUBLE,
           from_vector<double>({std::numeric_limits<double>::quiet_NaN(), -0.5}, {2}, stream))
          .to_vector<double>(stream);
  EXPECT_TRUE(std::isnan(y64.at(0))) << y64[0];
  EXPECT_EQ(y64.at(1), -1.0);

  const Tensor half =
      sign(TensorProto::FLOAT16,
           cast(from_vector<float>({std::nanf(""), 2}, {2}, stream), DType::f16, stream));
  const std::vector<float> y16 = cast(half, DType::f32, stream).to_vector<float>(stream);
  EXPECT_TRUE(std::isnan(y16.at(0))) << y16[0];
  EXPECT_EQ(y16.at(1), 1.0f);

  EXPECT_EQ(sign(TensorProto::INT32, from_vector<int32_t>({-5, 0, 7}, {3}, stream))
                .to_vector<int32_t>(stream),
            (std::vector<int32_t>{-1, 0, 1}));
}

// A reduction over a dimension of size 0 gives its value for an empty set, as ONNX's spec says
// (from opset 18) and its reference gives: ReduceMax the type's least value (-inf for floats),
// ReduceMin its greatest, ReduceLogSumExp log(0) = -inf. hal's max refused the empty set.
TEST(OpEdgeCases, ReductionsOverNoElementsGiveTheEmptySetsValue) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Stream stream = device("cpu:0").create_stream();
  const auto reduce = [&](const std::string& op, int32_t elem, const Tensor& x,
                          std::vector<int64_t> axes, bool keepdims) {
    const int64_t rank = keepdims ? x.dim() : x.dim() - static_cast<int64_t>(axes.size());
    const Model model =
        one_node(13, op, {{"x", elem, x.dim()}}, {{"y", elem, rank}}, [&](onnx::NodeProto& node) {
          if (!axes.empty()) ModelBuilder::set_ints(node, "axes", axes);
          ModelBuilder::set_int(node, "keepdims", keepdims ? 1 : 0);
        });
    return model.run({{"x", x}}, stream).at("y");
  };
  const Tensor empty_rows = zeros({2, 0}, DType::f32, stream);
  for (const auto& [op, want] : std::vector<std::pair<std::string, float>>{
           {"ReduceMax", -inf}, {"ReduceMin", inf}, {"ReduceLogSumExp", -inf}}) {
    const Tensor kept = reduce(op, TensorProto::FLOAT, empty_rows, {1}, true);
    EXPECT_EQ(kept.shape(), (Shape{2, 1})) << op;
    EXPECT_EQ(kept.to_vector<float>(stream), (std::vector<float>{want, want})) << op;
    const Tensor dropped = reduce(op, TensorProto::FLOAT, empty_rows, {-1}, false);
    EXPECT_EQ(dropped.shape(), (Shape{2})) << op;
    EXPECT_EQ(dropped.to_vector<float>(stream), (std::vector<float>{want, want})) << op;
    // No axes: every one, of [0, 3].
    const Tensor all = reduce(op, TensorProto::FLOAT, zeros({0, 3}, DType::f32, stream), {}, true);
    EXPECT_EQ(all.shape(), (Shape{1, 1})) << op;
    EXPECT_EQ(all.to_vector<float>(stream), (std::vector<float>{want})) << op;
    // Reducing the non-empty axis of [0, 3] has no results, and is no empty set.
    EXPECT_EQ(reduce(op, TensorProto::FLOAT, zeros({0, 3}, DType::f32, stream), {1}, true).shape(),
              (Shape{0, 1}))
        << op;
  }
  const Tensor half =
      reduce("ReduceMax", TensorProto::FLOAT16, zeros({2, 0}, DType::f16, stream), {1}, false);
  EXPECT_EQ(half.dtype(), DType::f16);
  EXPECT_EQ(cast(half, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{-inf, -inf}));
  // Integers: np.iinfo(dtype).min and .max.
  EXPECT_EQ(reduce("ReduceMax", TensorProto::INT32, zeros({2, 0}, DType::i32, stream), {1}, false)
                .to_vector<int32_t>(stream),
            (std::vector<int32_t>{INT32_MIN, INT32_MIN}));
  EXPECT_EQ(reduce("ReduceMin", TensorProto::INT64, zeros({0, 2}, DType::i64, stream), {0}, false)
                .to_vector<int64_t>(stream),
            (std::vector<int64_t>{INT64_MAX, INT64_MAX}));
  // Non-empty sets are reduced as before.
  EXPECT_EQ(reduce("ReduceMax", TensorProto::FLOAT,
                   from_vector<float>({1, 5, -2, 3}, {2, 2}, stream), {1}, false)
                .to_vector<float>(stream),
            (std::vector<float>{5, 3}));
}

// TopK of the smallest ranks NaN above everything, as ONNX's reference (np.sort) and PyTorch
// do: last, after inf, ties in index order (hal's min had put it first). The largest keep NaN
// first.
TEST(OpEdgeCases, TopKPutsNaNLastOfTheSmallestAndFirstOfTheLargest) {
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  constexpr float inf = std::numeric_limits<float>::infinity();
  // NaN-aware equality: the values as text.
  const auto text = [](const std::vector<float>& values) {
    std::string out;
    for (float v : values) out += (std::isnan(v) ? "nan" : std::to_string(v)) + " ";
    return out;
  };
  const auto [two, two_at] = top_k<float>(TensorProto::FLOAT, {1, nan, 3, 0.5f}, 2, false);
  EXPECT_EQ(two, (std::vector<float>{0.5f, 1}));
  EXPECT_EQ(two_at, (std::vector<int64_t>{3, 0}));
  const std::vector<float> x = {nan, inf, nan, -inf, 2};
  const auto [smallest, smallest_at] = top_k<float>(TensorProto::FLOAT, x, 5, false);
  EXPECT_EQ(text(smallest), text({-inf, 2, inf, nan, nan}));
  EXPECT_EQ(smallest_at, (std::vector<int64_t>{3, 4, 1, 0, 2}));
  const auto [largest, largest_at] = top_k<float>(TensorProto::FLOAT, x, 5, true);
  EXPECT_EQ(text(largest), text({nan, nan, inf, 2, -inf}));
  EXPECT_EQ(largest_at, (std::vector<int64_t>{0, 2, 1, 4, 3}));

  // Rows of [2, 3] along axis 1: one all NaN, one without; and f16.
  Stream stream = device("cpu:0").create_stream();
  const auto rows = [&](int32_t elem, const Tensor& input) {
    const Model model =
        one_node(11, "TopK", {{"x", elem, 2}, {"k", TensorProto::INT64, 1}},
                 {{"values", elem, 2}, {"indices", TensorProto::INT64, 2}},
                 [&](onnx::NodeProto& node) { ModelBuilder::set_int(node, "largest", 0); });
    const auto out =
        model.run({{"x", input}, {"k", from_vector<int64_t>({2}, {1}, stream)}}, stream);
    return std::pair{cast(out.at("values"), DType::f32, stream).to_vector<float>(stream),
                     out.at("indices").to_vector<int64_t>(stream)};
  };
  const Tensor mixed = from_vector<float>({nan, nan, nan, 3, nan, 2}, {2, 3}, stream);
  for (const auto& [elem, input] : std::vector<std::pair<int32_t, Tensor>>{
           {TensorProto::FLOAT, mixed}, {TensorProto::FLOAT16, cast(mixed, DType::f16, stream)}}) {
    const auto [values, indices] = rows(elem, input);
    EXPECT_EQ(text(values), text({nan, nan, 2, 3})) << elem;
    EXPECT_EQ(indices, (std::vector<int64_t>{0, 1, 2, 0})) << elem;
  }
}

// Shrink of integers (ONNX allows every numeric type): compared with the float lambd and moved
// by the float bias as ONNX's reference does, in float64, then truncated back to the type. The
// default lambd 0.5 had no i32 constant.
TEST(OpEdgeCases, ShrinkOfIntegersComparesAndShiftsInFloat) {
  Stream stream = device("cpu:0").create_stream();
  const auto shrink = [&](int32_t elem, const Tensor& x, std::optional<float> lambd,
                          std::optional<float> bias) {
    const Model model =
        one_node(13, "Shrink", {{"x", elem, 1}}, {{"y", elem, 1}}, [&](onnx::NodeProto& node) {
          if (lambd) ModelBuilder::set_float(node, "lambd", *lambd);
          if (bias) ModelBuilder::set_float(node, "bias", *bias);
        });
    const Tensor y = model.run({{"x", x}}, stream).at("y");
    EXPECT_EQ(y.dtype(), x.dtype());
    return y;
  };
  EXPECT_EQ(shrink(TensorProto::INT32, from_vector<int32_t>({-3, -1, 0, 1, 2}, {5}, stream),
                   std::nullopt, std::nullopt)
                .to_vector<int32_t>(stream),
            (std::vector<int32_t>{-3, -1, 0, 1, 2}));
  // -3 + 1.5 = -1.5 and 3 - 1.5 = 1.5 truncate to -1 and 1; -1 .. 1 are within lambd.
  EXPECT_EQ(shrink(TensorProto::INT8,
                   from_vector<int8_t>({-128, -3, -1, 0, 1, 2, 3, 127}, {8}, stream), 1.5f, 1.5f)
                .to_vector<int8_t>(stream),
            (std::vector<int8_t>{-126, -1, 0, 0, 0, 0, 1, 125}));
  const int64_t big = (int64_t{1} << 40) + 1;
  EXPECT_EQ(
      shrink(TensorProto::INT64, from_vector<int64_t>({-big, 0, big}, {3}, stream), 2.0f, 1.0f)
          .to_vector<int64_t>(stream),
      (std::vector<int64_t>{-big + 1, 0, big - 1}));
}

// BatchNormalization from opset 15 takes its parameters in other types than X (T1, T2): Y has
// X's type, f16 here, not the f32 of its parameters.
TEST(OpEdgeCases, BatchNormalizationGivesXsTypeWithWiderParameters) {
  Stream stream = device("cpu:0").create_stream();
  const Model model = one_node(15, "BatchNormalization",
                               {{"x", TensorProto::FLOAT16, 3},
                                {"scale", TensorProto::FLOAT, 1},
                                {"bias", TensorProto::FLOAT, 1},
                                {"mean", TensorProto::FLOAT, 1},
                                {"var", TensorProto::FLOAT, 1}},
                               {{"y", TensorProto::FLOAT16, 3}});
  const std::vector<float> x = {1, 2, -1, 0.5f, 4, -2};  // [1, 2, 3]
  const std::vector<float> scale = {2, 0.5f}, bias = {1, -1}, mean = {0.5f, 1}, var = {4, 0.25f};
  const Tensor y = model
                       .run({{"x", cast(from_vector(x, {1, 2, 3}, stream), DType::f16, stream)},
                             {"scale", from_vector(scale, {2}, stream)},
                             {"bias", from_vector(bias, {2}, stream)},
                             {"mean", from_vector(mean, {2}, stream)},
                             {"var", from_vector(var, {2}, stream)}},
                            stream)
                       .at("y");
  EXPECT_EQ(y.dtype(), DType::f16);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 3}));
  std::vector<float> want;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i / 3;
    want.push_back((x[i] - mean[c]) / std::sqrt(var[c] + 1e-5f) * scale[c] + bias[c]);
  }
  const std::vector<float> got = cast(y, DType::f32, stream).to_vector<float>(stream);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-2) << i;
}

// A GELU written with a constant of rank 3 ([1, 1, 1] sqrt 2) broadcasts a [5, 3] product to
// [1, 5, 3]: it is not fused into the product (which would drop the dimension), and the output
// keeps the rank ONNX gives it. The same GELU with a 0-d constant fuses.
TEST(OpEdgeCases, AGeluWhoseConstantAddsDimensionsStaysOutOfTheProduct) {
  Stream stream = device("cpu:0").create_stream();
  for (bool rank3 : {false, true}) {
    ModelBuilder builder(13);
    builder.input("x", TensorProto::FLOAT, {"5", "4"});
    builder.output(
        "y", TensorProto::FLOAT,
        rank3 ? std::vector<std::string>{"1", "5", "3"} : std::vector<std::string>{"5", "3"});
    builder.initializer("w", {4, 3}, std::vector<float>(12, 0.25f));
    builder.initializer("b", {3}, {0.5f, -1.0f, 2.0f});
    builder.initializer("root2", rank3 ? std::vector<int64_t>{1, 1, 1} : std::vector<int64_t>{},
                        {std::sqrt(2.0f)});
    builder.initializer("one", {}, {1.0f}).initializer("half", {}, {0.5f});
    builder.node("MatMul", {"x", "w"}, {"p"});
    builder.node("Add", {"p", "b"}, {"h"});
    builder.node("Div", {"h", "root2"}, {"d"});
    builder.node("Erf", {"d"}, {"e"});
    builder.node("Add", {"e", "one"}, {"f"});
    builder.node("Mul", {"h", "f"}, {"g"});
    builder.node("Mul", {"g", "half"}, {"y"});
    const Model model = load_onnx_bytes(builder.bytes(), "gelu_rank");
    EXPECT_EQ(model.node_count(), rank3 ? 2u : 1u);  // the product, and the GELU's chain
    std::vector<float> x(20);
    std::iota(x.begin(), x.end(), -10.0f);
    const Tensor y = model.run({{"x", from_vector(x, {5, 4}, stream)}}, stream).at("y");
    EXPECT_EQ(y.shape(), rank3 ? (Shape{1, 5, 3}) : (Shape{5, 3}));
    const std::vector<float> got = y.to_vector<float>(stream);
    const float bias[3] = {0.5f, -1.0f, 2.0f};
    for (size_t r = 0; r < 5; ++r)
      for (size_t c = 0; c < 3; ++c) {
        float h = bias[c];
        for (size_t i = 0; i < 4; ++i) h += 0.25f * x[r * 4 + i];
        EXPECT_NEAR(got[r * 3 + c], 0.5f * h * (1 + std::erf(h / std::sqrt(2.0f))), 1e-5f)
            << r << ", " << c;
      }
  }
}

// Before opset 7 an Add with broadcast=1 and axis=1 lines B [C] up with axis 1 of a Conv's
// [N, C, H, W]: such an Add is not fused into the Conv, whose residual broadcasts as NumPy does
// (from the last axis: W == C added along W; W != C failed).
TEST(OpEdgeCases, AConvsLegacyBroadcastAddAddsAlongTheChannels) {
  Stream stream = device("cpu:0").create_stream();
  ModelBuilder builder(6);
  builder.input("x", TensorProto::FLOAT, {"1", "3", "H", "W"});
  builder.output("y", TensorProto::FLOAT, {"1", "3", "H", "W"});
  // 1x1 weights that swap channels 0 and 2.
  builder.initializer("w", {3, 3, 1, 1}, {0, 0, 1, 0, 1, 0, 1, 0, 0});
  builder.initializer("b", {3}, {10, 20, 30});
  builder.node("Conv", {"x", "w"}, {"c"});
  auto& add = builder.node("Add", {"c", "b"}, {"y"});
  ModelBuilder::set_int(add, "broadcast", 1);
  ModelBuilder::set_int(add, "axis", 1);
  const Model model = load_onnx_bytes(builder.bytes(), "legacy_add");
  EXPECT_EQ(model.node_count(), 2u);
  for (const int64_t size : {int64_t{3}, int64_t{4}}) {
    std::vector<float> x(static_cast<size_t>(3 * size * size));
    std::iota(x.begin(), x.end(), 0.0f);
    const Tensor y = model.run({{"x", from_vector(x, {1, 3, size, size}, stream)}}, stream).at("y");
    std::vector<float> want;
    const size_t plane = static_cast<size_t>(size * size);
    for (size_t c = 0; c < 3; ++c)
      for (size_t i = 0; i < plane; ++i) want.push_back(x[(2 - c) * plane + i] + 10.0f * (c + 1));
    EXPECT_EQ(y.to_vector<float>(stream), want) << size;
  }
}

}  // namespace
}  // namespace hal::test
