// What embedding and its backward do with an index outside the table, on every device with
// kernels: the CPU's host kernels refuse it by name when the stream runs them (AsyncFailure at
// the next synchronize); the portable kernels and Vulkan's shaders cannot refuse from a
// kernel, so the forward gives a row of zeros and the backward adds nothing for it (the
// gradient of that zero row). Their sums are conformance cases (cts/op_layer_cases.cpp:
// op.layers.embedding*).
#include "op_values.hpp"

namespace hal::test {
namespace {

class EmbeddingSuite : public DeviceTest {
 protected:
  void SetUp() override {
    if (!runs_kernels(device()))
      GTEST_SKIP() << id() << " runs no kernels: embedding is a one-hot product there";
  }
  bool refuses() const { return device().info().has_feature(feature::kHostKernels); }
  Stream stream = device().create_stream();
};

TEST_P(EmbeddingSuite, AnIndexOutsideTheTableIsRefusedOrGivesNothing) {
  const Tensor table = make({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f32, stream);
  const Tensor indices = make({2, 3, -1, 0}, {4}, DType::i64, stream);
  const Tensor grad = make({1, 1, 2, 2, 4, 4, 8, 8}, {4, 2}, DType::f32, stream);
  if (refuses()) {
    expect_error([&] { numbers(embedding(table, indices, stream), stream); },
                 ErrorCode::AsyncFailure,
                 {"embedding", "index 3 at position 1", "out of range for 3 rows"});
    expect_error([&] { numbers(embedding_backward(grad, indices, 3, stream), stream); },
                 ErrorCode::AsyncFailure,
                 {"embedding_backward", "index 3 at position 1", "out of range for 3 rows"});
    // The stream reported its failures and runs on.
    EXPECT_EQ(numbers(embedding(table, make({2, 0}, {2}, DType::i64, stream), stream), stream),
              (std::vector<double>{5, 6, 1, 2}));
    return;
  }
  EXPECT_EQ(numbers(embedding(table, indices, stream), stream),
            (std::vector<double>{5, 6, 0, 0, 0, 0, 1, 2}));
  EXPECT_EQ(numbers(embedding_backward(grad, indices, 3, stream), stream),
            (std::vector<double>{8, 8, 0, 0, 1, 1}));
}

TEST_P(EmbeddingSuite, NoIndicesGiveZeroRowsAndNoRowsGiveAnEmptyGradient) {
  const Tensor none = zeros({0}, DType::i32, stream);
  EXPECT_EQ(numbers(embedding_backward(zeros({0, 3}, DType::f32, stream), none, 2, stream), stream),
            std::vector<double>(6, 0.0));
  EXPECT_EQ(embedding_backward(zeros({0, 3}, DType::f32, stream), none, 0, stream).shape(),
            (Shape{0, 3}));
  // The gradient of a [2, 3] batch of indices: rows taken from the trailing [.., dim].
  const Tensor batch = make({1, 0, 1, 1, 0, 1}, {2, 3}, DType::i32, stream);
  EXPECT_EQ(
      numbers(embedding_backward(ones({2, 3, 2}, DType::f32, stream), batch, 2, stream), stream),
      (std::vector<double>{2, 2, 4, 4}));
}

HAL_DEVICE_SUITE(EmbeddingSuite);

}  // namespace
}  // namespace hal::test
