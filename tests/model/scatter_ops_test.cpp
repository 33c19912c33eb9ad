// The scatter ONNX ops (ScatterElements, ScatterND), GatherND, TopK and the host-computed
// Unique and NonMaxSuppression against plain loops on the host, and the errors for bad inputs.
#include <algorithm>
#include <functional>
#include <numeric>

#include "hal/model.hpp"
#include "model_builder.hpp"
#include "one_node_model.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

using onnx::TensorProto;

std::vector<float> ramp(size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<float>((i * 7) % 11) - 3.5f;
  return values;
}

Model scatter_elements_model(int64_t axis, const std::string& reduction) {
  ModelBuilder builder(16);
  return one_node(builder, "ScatterElements",
                  {{"data", TensorProto::FLOAT, 2},
                   {"indices", TensorProto::INT64, 2},
                   {"updates", TensorProto::FLOAT, 2}},
                  {{"y", TensorProto::FLOAT, 2}}, [&](onnx::NodeProto& node) {
                    ModelBuilder::set_int(node, "axis", axis);
                    ModelBuilder::set_string(node, "reduction", reduction);
                  });
}

TEST(ScatterOps, ScatterElementsAddsDuplicatesAndWrapsNegativeIndices) {
  constexpr int64_t rows = 3, cols = 4, picked = 5;
  const std::vector<float> data = ramp(rows * cols);
  const std::vector<int64_t> indices = {0, -1, 3, 0, 2, 1, 1, -4, 3, 3, 2, 2, 0, 0, 0};
  std::vector<float> updates(rows * picked);
  std::iota(updates.begin(), updates.end(), 1.0f);
  Stream stream = device("cpu:0").create_stream();
  const Tensor y = scatter_elements_model(1, "add")
                       .run({{"data", from_vector(data, {rows, cols}, stream)},
                             {"indices", from_vector(indices, {rows, picked}, stream)},
                             {"updates", from_vector(updates, {rows, picked}, stream)}},
                            stream)
                       .at("y");
  std::vector<float> expected = data;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < picked; ++p) {
      int64_t col = indices[static_cast<size_t>(r * picked + p)];
      if (col < 0) col += cols;
      expected[static_cast<size_t>(r * cols + col)] += updates[static_cast<size_t>(r * picked + p)];
    }
  EXPECT_EQ(y.shape(), (Shape{rows, cols}));
  EXPECT_EQ(y.to_vector<float>(stream), expected);
}

TEST(ScatterOps, ScatterNDMultipliesTheSlicesItsTuplesName) {
  constexpr int64_t a = 3, b = 2, c = 4;
  const std::vector<float> data = ramp(a * b * c);
  const std::vector<int64_t> tuples = {2, 1, 0, 0, 2, 1, -3, -2};  // (2,1) twice, (0,0) twice
  const std::vector<float> updates = ramp(4 * c);
  ModelBuilder builder(16);
  const Model model = one_node(builder, "ScatterND",
                               {{"data", TensorProto::FLOAT, 3},
                                {"indices", TensorProto::INT64, 2},
                                {"updates", TensorProto::FLOAT, 2}},
                               {{"y", TensorProto::FLOAT, 3}}, [](onnx::NodeProto& node) {
                                 ModelBuilder::set_string(node, "reduction", "mul");
                               });
  Stream stream = device("cpu:0").create_stream();
  const Tensor y = model
                       .run({{"data", from_vector(data, {a, b, c}, stream)},
                             {"indices", from_vector(tuples, {4, 2}, stream)},
                             {"updates", from_vector(updates, {4, c}, stream)}},
                            stream)
                       .at("y");
  std::vector<float> expected = data;
  for (size_t m = 0; m < 4; ++m) {
    const int64_t i = (tuples[2 * m] + a) % a, j = (tuples[2 * m + 1] + b) % b;
    for (int64_t k = 0; k < c; ++k)
      expected[static_cast<size_t>((i * b + j) * c + k)] *= updates[m * c + static_cast<size_t>(k)];
  }
  EXPECT_EQ(y.to_vector<float>(stream), expected);
}

TEST(ScatterOps, GatherNDWalksTheBatchDimensionsTogether) {
  constexpr int64_t batches = 2, a = 3, b = 4, c = 2;
  const std::vector<int32_t> data = [] {
    std::vector<int32_t> v(batches * a * b * c);
    std::iota(v.begin(), v.end(), 0);
    return v;
  }();
  const std::vector<int64_t> tuples = {0, 3, 2, -1, 1, 1, -3, 0};  // [2 batches, 2 tuples, 2]
  ModelBuilder builder(13);
  const Model model = one_node(
      builder, "GatherND", {{"data", TensorProto::INT32, 4}, {"indices", TensorProto::INT64, 3}},
      {{"y", TensorProto::INT32, 3}},
      [](onnx::NodeProto& node) { ModelBuilder::set_int(node, "batch_dims", 1); });
  Stream stream = device("cpu:0").create_stream();
  const Tensor y = model
                       .run({{"data", from_vector(data, {batches, a, b, c}, stream)},
                             {"indices", from_vector(tuples, {batches, 2, 2}, stream)}},
                            stream)
                       .at("y");
  std::vector<int32_t> expected;
  for (int64_t n = 0; n < batches; ++n)
    for (int64_t t = 0; t < 2; ++t) {
      const int64_t i = (tuples[static_cast<size_t>((n * 2 + t) * 2)] + a) % a;
      const int64_t j = (tuples[static_cast<size_t>((n * 2 + t) * 2 + 1)] + b) % b;
      for (int64_t k = 0; k < c; ++k)
        expected.push_back(data[static_cast<size_t>(((n * a + i) * b + j) * c + k)]);
    }
  EXPECT_EQ(y.shape(), (Shape{batches, 2, c}));
  EXPECT_EQ(y.to_vector<int32_t>(stream), expected);
}

// TopK along the last axis of `x` [rows, cols] by a stable sort: equal values in index order.
void expect_top_k(bool largest) {
  constexpr int64_t rows = 3, cols = 7, k = 5;
  const std::vector<float> x = {1, 3, 3, -1, 3, 0, 1, 2, 2, 2, 2, 2, 2, 2, 5, -1, 4, -1, 5, 0, 4};
  ModelBuilder builder(11);
  const Model model = one_node(
      builder, "TopK", {{"x", TensorProto::FLOAT, 2}, {"k", TensorProto::INT64, 1}},
      {{"values", TensorProto::FLOAT, 2}, {"indices", TensorProto::INT64, 2}},
      [&](onnx::NodeProto& node) { ModelBuilder::set_int(node, "largest", largest ? 1 : 0); });
  Stream stream = device("cpu:0").create_stream();
  const auto out = model.run(
      {{"x", from_vector(x, {rows, cols}, stream)}, {"k", from_vector<int64_t>({k}, {1}, stream)}},
      stream);
  std::vector<float> values;
  std::vector<int64_t> indices;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> order(cols);
    std::iota(order.begin(), order.end(), 0);
    auto at = [&](int64_t c) { return x[static_cast<size_t>(r * cols + c)]; };
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t i, int64_t j) { return largest ? at(i) > at(j) : at(i) < at(j); });
    for (int64_t i = 0; i < k; ++i) {
      values.push_back(at(order[static_cast<size_t>(i)]));
      indices.push_back(order[static_cast<size_t>(i)]);
    }
  }
  EXPECT_EQ(out.at("values").to_vector<float>(stream), values);
  EXPECT_EQ(out.at("indices").to_vector<int64_t>(stream), indices);
}

TEST(ScatterOps, TopKResolvesTiesToTheLowerIndex) {
  expect_top_k(true);
  expect_top_k(false);
}

TEST(ScatterOps, UniqueGroupsSlicesAlongTheAxisInSortedOrder) {
  // Rows [2, 1] (three times), [0, 5] and [1, 0].
  const std::vector<float> x = {2, 1, 2, 1, 0, 5, 2, 1, 1, 0};
  ModelBuilder builder(11);
  const Model model =
      one_node(builder, "Unique", {{"x", TensorProto::FLOAT, 2}},
               {{"y", TensorProto::FLOAT, 2},
                {"indices", TensorProto::INT64, 1},
                {"inverse", TensorProto::INT64, 1},
                {"counts", TensorProto::INT64, 1}},
               [](onnx::NodeProto& node) { ModelBuilder::set_int(node, "axis", 0); });
  Stream stream = device("cpu:0").create_stream();
  const auto out = model.run({{"x", from_vector(x, {5, 2}, stream)}}, stream);
  EXPECT_EQ(out.at("y").shape(), (Shape{3, 2}));
  EXPECT_EQ(out.at("y").to_vector<float>(stream), (std::vector<float>{0, 5, 1, 0, 2, 1}));
  EXPECT_EQ(out.at("indices").to_vector<int64_t>(stream), (std::vector<int64_t>{2, 4, 0}));
  EXPECT_EQ(out.at("inverse").to_vector<int64_t>(stream), (std::vector<int64_t>{2, 2, 0, 2, 1}));
  EXPECT_EQ(out.at("counts").to_vector<int64_t>(stream), (std::vector<int64_t>{1, 1, 3}));
}

TEST(ScatterOps, NonMaxSuppressionKeepsTheBestOfOverlappingBoxes) {
  // Box 1 overlaps box 0 by IoU 0.81, box 2 is apart, box 3 scores below the threshold.
  const std::vector<float> boxes = {0, 0, 10, 10, 1, 1, 10, 10, 20, 20, 30, 30, 40, 40, 50, 50};
  const std::vector<float> scores = {0.8f, 0.9f, 0.7f, 0.1f};
  ModelBuilder builder(11);
  const Model model = one_node(builder, "NonMaxSuppression",
                               {{"boxes", TensorProto::FLOAT, 3},
                                {"scores", TensorProto::FLOAT, 3},
                                {"limit", TensorProto::INT64, 1},
                                {"iou", TensorProto::FLOAT, 1},
                                {"score", TensorProto::FLOAT, 1}},
                               {{"selected", TensorProto::INT64, 2}});
  Stream stream = device("cpu:0").create_stream();
  const Tensor selected = model
                              .run({{"boxes", from_vector(boxes, {1, 4, 4}, stream)},
                                    {"scores", from_vector(scores, {1, 1, 4}, stream)},
                                    {"limit", from_vector<int64_t>({3}, {1}, stream)},
                                    {"iou", from_vector<float>({0.5f}, {1}, stream)},
                                    {"score", from_vector<float>({0.2f}, {1}, stream)}},
                                   stream)
                              .at("selected");
  EXPECT_EQ(selected.shape(), (Shape{2, 3}));
  EXPECT_EQ(selected.to_vector<int64_t>(stream), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
}

TEST(ScatterOps, BadInputsAreRefusedNamingWhatWasWrong) {
  Stream stream = device("cpu:0").create_stream();
  const Tensor data = from_vector(ramp(6), {2, 3}, stream);
  const Tensor updates = from_vector(ramp(2), {1, 2}, stream);
  auto scatter = [&](const std::vector<int64_t>& indices, const Shape& shape, const Tensor& u) {
    scatter_elements_model(1, "none").run(
        {{"data", data}, {"indices", from_vector(indices, shape, stream)}, {"updates", u}}, stream);
  };
  expect_error(
      [&] {
        scatter({0, 3}, {1, 2}, updates);
      },
      ErrorCode::InvalidArgument,
      {"node 'under_test'", "index 3 is out of range for axis 1 of size 3"});
  expect_error(
      [&] {
        scatter({0, -4}, {1, 2}, updates);
      },
      ErrorCode::InvalidArgument, {"index -4 is out of range for axis 1 of size 3"});
  expect_error(
      [&] {
        scatter({0, 1}, {2, 1}, updates);
      },
      ErrorCode::InvalidArgument, {"indices [2, 1] and updates [1, 2] must have one shape"});
  expect_error(
      [&] {
        scatter_elements_model(1, "average")
            .run({{"data", data},
                  {"indices", from_vector<int64_t>({0}, {1, 1}, stream)},
                  {"updates", from_vector(ramp(1), {1, 1}, stream)}},
                 stream);
      },
      ErrorCode::InvalidArgument, {"reduction 'average'"});

  ModelBuilder gather_builder(13);
  const Model gather =
      one_node(gather_builder, "GatherND",
               {{"data", TensorProto::FLOAT, 2}, {"indices", TensorProto::INT64, 2}},
               {{"y", TensorProto::FLOAT, 1}});
  expect_error(
      [&] {
        gather.run(
            {{"data", data}, {"indices", from_vector<int64_t>({1, 0, 2, 0}, {2, 2}, stream)}},
            stream);
      },
      ErrorCode::InvalidArgument, {"index 2 is out of range for axis 0 of size 2"});
  expect_error(
      [&] {
        gather.run({{"data", data}, {"indices", from_vector<int64_t>({0, 0, 0}, {1, 3}, stream)}},
                   stream);
      },
      ErrorCode::InvalidArgument, {"index tuples of 3 coordinates", "exceed data [2, 3]"});

  ModelBuilder nd_builder(16);
  const Model nd = one_node(nd_builder, "ScatterND",
                            {{"data", TensorProto::FLOAT, 2},
                             {"indices", TensorProto::INT64, 2},
                             {"updates", TensorProto::FLOAT, 2}},
                            {{"y", TensorProto::FLOAT, 2}});
  expect_error(
      [&] {
        nd.run({{"data", data},
                {"indices", from_vector<int64_t>({1}, {1, 1}, stream)},
                {"updates", from_vector(ramp(2), {1, 2}, stream)}},
               stream);
      },
      ErrorCode::InvalidArgument, {"updates [1, 2] must have shape [1, 3]"});

  ModelBuilder top_builder(11);
  const Model top =
      one_node(top_builder, "TopK", {{"x", TensorProto::FLOAT, 2}, {"k", TensorProto::INT64, 1}},
               {{"values", TensorProto::FLOAT, 2}, {"indices", TensorProto::INT64, 2}});
  expect_error(
      [&] {
        top.run({{"x", data}, {"k", from_vector<int64_t>({4}, {1}, stream)}}, stream);
      },
      ErrorCode::InvalidArgument, {"k 4 is out of range for axis 1 of size 3"});
}

}  // namespace
}  // namespace hal::test
