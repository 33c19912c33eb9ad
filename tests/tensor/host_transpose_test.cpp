// contiguous() of views whose memory runs along a dimension other than the last (transposes,
// NCHW to NHWC), or whose rows lie in another order (head permutes): the CPU copies them in
// tiles of elements or of rows (src/tensor/host_transpose.cpp).
// Every result is checked byte for byte against the view read element by element, for each
// element size, with tiles cut short at the edges, offsets, broadcast dimensions and sizes
// large enough for the pool to split the work.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "test_util.hpp"

namespace hal {
namespace {

// The view's elements in row-major order, read one at a time from its storage's bytes.
std::vector<unsigned char> read_view(const Tensor& view, const std::vector<unsigned char>& base) {
  const size_t element = view.element_size();
  std::vector<unsigned char> out(static_cast<size_t>(view.numel()) * element);
  const Shape& shape = view.shape();
  Shape index(shape.size(), 0);
  for (int64_t i = 0; i < view.numel(); ++i) {
    int64_t at = view.offset();
    for (size_t d = 0; d < shape.size(); ++d) at += index[d] * view.strides()[d];
    std::memcpy(out.data() + static_cast<size_t>(i) * element,
                base.data() + static_cast<size_t>(at) * element, element);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

class HostTransposeTest : public ::testing::TestWithParam<DType> {
 protected:
  // A tensor of `shape` holding pattern bytes, and those bytes.
  Tensor source(const Shape& shape, std::vector<unsigned char>& bytes) {
    int64_t count = 1;
    for (int64_t size : shape) count *= size;
    bytes = test::pattern_bytes(static_cast<size_t>(count) * size_of(GetParam()), 7);
    const Tensor t = from_host(bytes.data(), shape, GetParam(), stream_);
    stream_.synchronize();  // before `bytes` can move
    return t;
  }

  void expect_gathered(const Tensor& view, const std::vector<unsigned char>& base) {
    ASSERT_FALSE(view.is_contiguous()) << view.describe();
    const Tensor packed = view.contiguous(stream_);
    ASSERT_TRUE(packed.is_contiguous());
    EXPECT_EQ(packed.shape(), view.shape());
    std::vector<unsigned char> bytes(packed.nbytes());
    packed.copy_to_host(bytes.data(), stream_);
    stream_.synchronize();
    EXPECT_TRUE(bytes == read_view(view, base))
        << view.describe() << " strides " << testing::PrintToString(view.strides());
  }

  Stream stream_ = device("cpu:0").create_stream();
};

TEST_P(HostTransposeTest, MatricesOfEverySizeAroundTheTile) {
  // A tile is a cache line of elements square (64, 32, 16 or 8 of them): sizes below, at, just
  // past and far from it, and 300 x 257, past the size at which the pool splits the work.
  for (const Shape& shape : std::vector<Shape>{
           {2, 3},
           {16, 16},
           {8, 64},
           {64, 8},
           {37, 53},
           {65, 17},
           {128, 130},
           {300, 257},
           {5000, 16}}) {  // one unit of work past the pool's threshold: run once, by one thread
    std::vector<unsigned char> base;
    expect_gathered(source(shape, base).transpose(0, 1), base);
  }
}

TEST_P(HostTransposeTest, PermutesOfHigherRank) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases{
      {{2, 3, 5, 7}, {0, 2, 3, 1}},    // NCHW to NHWC: a last dimension of 3
      {{2, 40, 33, 3}, {0, 3, 1, 2}},  // and back
      {{3, 4, 5, 6}, {2, 0, 3, 1}},    // outer dimensions on both sides of the tile's
      {{2, 17, 3, 24}, {0, 2, 1, 3}},  // heads: the last dimension runs along memory already
      {{4, 70, 33}, {2, 1, 0}},        // the source's stride-1 dimension becomes the first
      {{2, 2, 2, 2, 2, 2}, {5, 4, 3, 2, 1, 0}}};
  for (const auto& [shape, order] : cases) {
    std::vector<unsigned char> base;
    const Tensor view = source(shape, base).permute(order);
    if (view.is_contiguous()) continue;
    expect_gathered(view, base);
  }
}

TEST_P(HostTransposeTest, OffsetsStepsAndBroadcastDimensions) {
  std::vector<unsigned char> base;
  const Tensor matrix = source({40, 50}, base);
  // Every other row from the fourth, columns from the sixth: an offset and a row step of 100.
  expect_gathered(matrix.slice(0, 3, 40, 2).slice(1, 5, 50).transpose(0, 1), base);
  // A column repeated along the result's last dimension (stride 0 there).
  const Tensor column = matrix.slice(1, 9, 10).reshape({40, 1}).expand({40, 70});
  ASSERT_EQ(column.strides().back(), 0);
  expect_gathered(column, base);
  // A view built directly: rows of a stride-1 dimension 33 apart, with an offset.
  const Tensor strided(matrix.storage(), GetParam(), {20, 30}, {1, 33}, 11);
  expect_gathered(strided, base);
}

INSTANTIATE_TEST_SUITE_P(ElementSizes, HostTransposeTest,
                         ::testing::Values(DType::u8, DType::f16, DType::f32, DType::f64),
                         [](const auto& param) { return std::string(to_string(param.param)); });

// Elementwise ops, fused chains, casts and where copy large transposed operands in tiles before
// they run (ops::host_rows_of); the results are those of the ops on the values, checked against the
// host. 300 x 257 is past the size where they do.
TEST(HostTransposedOperands, BinaryAndUnaryOpsOfTransposedMatrices) {
  Stream stream = device("cpu:0").create_stream();
  const int64_t rows = 300, cols = 257;
  std::vector<float> x_values(rows * cols), y_values(rows * cols), row(rows);
  for (size_t i = 0; i < x_values.size(); ++i) {
    x_values[i] = static_cast<float>(i % 97) * 0.03f - 1.0f;
    y_values[i] = static_cast<float>(i % 89) * 0.05f;
  }
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(i) * 0.5f;
  const Tensor x = from_vector(x_values, {rows, cols}, stream);  // read transposed: [cols, rows]
  const Tensor y = from_vector(y_values, {cols, rows}, stream);
  const Tensor y_t = from_vector(y_values, {rows, cols}, stream).transpose(0, 1);
  const Tensor bias = from_vector(row, {rows}, stream);
  const auto x_t = [&](int64_t i, int64_t j) { return x_values[j * cols + i]; };  // [i, j]
  const auto expect_values = [&](const Tensor& result, auto expected, const char* what) {
    ASSERT_EQ(result.shape(), (Shape{cols, rows})) << what;
    const std::vector<float> got = result.to_vector<float>(stream);
    int wrong = 0;
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < rows; ++j) {
        const float want = expected(i, j), value = got[i * rows + j];
        if (std::abs(value - want) > 1e-6f * std::max(1.0f, std::abs(want)) && wrong++ < 3)
          ADD_FAILURE() << what << " at [" << i << ", " << j << "]: " << value << " != " << want;
      }
  };
  expect_values(
      add(x.transpose(0, 1), y, stream),
      [&](int64_t i, int64_t j) { return x_t(i, j) + y_values[i * rows + j]; }, "x.T + y");
  expect_values(
      sub(y, x.transpose(0, 1), stream),
      [&](int64_t i, int64_t j) { return y_values[i * rows + j] - x_t(i, j); }, "y - x.T");
  // Both transposed: y_t[i, j] = y_values[j * cols + i].
  expect_values(
      mul(x.transpose(0, 1), y_t, stream),
      [&](int64_t i, int64_t j) { return x_t(i, j) * y_values[j * cols + i]; }, "x.T * y.T");
  expect_values(
      add(x.transpose(0, 1), bias, stream),
      [&](int64_t i, int64_t j) { return x_t(i, j) + row[j]; }, "x.T + bias row");
  expect_values(
      exp(x.transpose(0, 1), stream), [&](int64_t i, int64_t j) { return std::exp(x_t(i, j)); },
      "exp(x.T)");
}

}  // namespace
}  // namespace hal
