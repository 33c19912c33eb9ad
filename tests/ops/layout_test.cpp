// The layout of an elementwise launch: operands broadcast to the result's shape, with the
// dimensions every operand walks alike merged into one.
#include <gtest/gtest.h>

#include <vector>

#include "hal/hal.hpp"
#include "ops/elementwise.hpp"

namespace hal::ops {
namespace {

Tensor on_cpu(const Shape& shape) { return empty(shape, DType::f32, device("cpu:0")); }

std::vector<int64_t> dims(const LayoutDims& d) { return {d.begin(), d.end()}; }

using Dims = std::vector<int64_t>;

TEST(ElementwiseLayout, ContiguousOperandsOfTheResultsShapeAreOneFlatDimension) {
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{4, 1, 5}, Shape{7}, Shape{1, 9}}) {
    const Tensor a = on_cpu(shape), b = on_cpu(shape);
    const ElementwiseLayout<2> layout = layout_of(a, b, shape);
    const int64_t count = numel(shape);
    EXPECT_TRUE(layout.flat) << to_string(shape);
    EXPECT_EQ(layout.count, count);
    EXPECT_EQ(dims(layout.shape), Dims{count}) << to_string(shape);
    EXPECT_EQ(dims(layout.strides[0]), Dims{1});
    EXPECT_EQ(dims(layout.strides[1]), Dims{1});
    // Unused operands of a wider layout walk nothing.
    const ElementwiseLayout<3> wide = layout_of(a, b, on_cpu(shape), shape);
    EXPECT_EQ(dims(wide.strides[2]), Dims{1});
    const ElementwiseLayout<1> one = layout_of(a);
    EXPECT_EQ(dims(one.shape), Dims{count});
    EXPECT_EQ(dims(one.strides[0]), Dims{1});
  }
}

TEST(ElementwiseLayout, ASingleElementIsOneDimensionAtStrideZero) {
  const Tensor a = on_cpu({1, 1}), b = on_cpu({1, 1});
  const ElementwiseLayout<2> layout = layout_of(a, b, {1, 1});
  EXPECT_TRUE(layout.flat);
  EXPECT_EQ(layout.count, 1);
  EXPECT_EQ(dims(layout.shape), Dims{1});
  EXPECT_EQ(dims(layout.strides[0]), Dims{0});
  EXPECT_EQ(dims(layout.strides[1]), Dims{0});
}

TEST(ElementwiseLayout, TransposedAndBroadcastOperandsKeepTheirOwnStrides) {
  // a is a transposed [3, 2]: shape [2, 3], strides [1, 2].
  const Tensor a = on_cpu({3, 2}).transpose(0, 1), b = on_cpu({2, 3});
  const ElementwiseLayout<2> crossed = layout_of(a, b, {2, 3});
  EXPECT_FALSE(crossed.flat);
  EXPECT_EQ(dims(crossed.shape), (Dims{2, 3}));
  EXPECT_EQ(dims(crossed.strides[0]), (Dims{1, 2}));
  EXPECT_EQ(dims(crossed.strides[1]), (Dims{3, 1}));
  // A row broadcast over [2, 3]: the rows cannot merge, since the row repeats.
  const Tensor row = on_cpu({3});
  const ElementwiseLayout<2> broadcast = layout_of(b, row, {2, 3});
  EXPECT_FALSE(broadcast.flat);
  EXPECT_EQ(dims(broadcast.shape), (Dims{2, 3}));
  EXPECT_EQ(dims(broadcast.strides[0]), (Dims{3, 1}));
  EXPECT_EQ(dims(broadcast.strides[1]), (Dims{0, 1}));
  // Contiguous dimensions beside a broadcast one still merge: [2, 3, 4] with a [2, 1, 4].
  const Tensor c = on_cpu({2, 3, 4}), d = on_cpu({2, 1, 4});
  const ElementwiseLayout<2> partly = layout_of(c, d, {2, 3, 4});
  EXPECT_FALSE(partly.flat);
  EXPECT_EQ(dims(partly.shape), (Dims{2, 3, 4}));
  EXPECT_EQ(dims(partly.strides[1]), (Dims{4, 0, 1}));
}

}  // namespace
}  // namespace hal::ops
