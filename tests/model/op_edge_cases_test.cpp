// ONNX ops at the edges of their types and inputs: TopK and ArgMin at the integer types' bounds,
// GatherElements and Split refusing indices and sizes ONNX does not allow, ReduceLogSumExp over
// infinities and Mod's fmod of floats, each against the values ONNX's reference gives.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
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

}  // namespace
}  // namespace hal::test
