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
    const ElementwiseLayout<3> three = layout_of(a, b, on_cpu(shape), shape);
    EXPECT_EQ(dims(three.strides[2]), Dims{1});
    // A fused chain's layout has room for more operands than it has: those walk nothing.
    const FusedLayout fused = layout_of(std::vector<Tensor>{a, b}, shape);
    EXPECT_TRUE(fused.flat);
    EXPECT_EQ(dims(fused.strides[1]), Dims{1});
    for (size_t v = 2; v < kMaxFusedInputs; ++v) EXPECT_EQ(dims(fused.strides[v]), Dims{0}) << v;
    const ElementwiseLayout<1> one = layout_of(a);
    EXPECT_EQ(dims(one.shape), Dims{count});
    EXPECT_EQ(dims(one.strides[0]), Dims{1});
  }
}

TEST(ElementwiseLayout, AContiguousViewKeepsItsOffset) {
  // Rows 1..2 of a [4, 6]: contiguous, 6 elements into its storage.
  const Tensor rows = on_cpu({4, 6}).slice(0, 1, 3), other = on_cpu({2, 6});
  ASSERT_TRUE(rows.is_contiguous());
  const ElementwiseLayout<2> layout = layout_of(rows, other, {2, 6});
  EXPECT_TRUE(layout.flat);
  EXPECT_EQ(dims(layout.shape), Dims{12});
  EXPECT_EQ(layout.offsets[0], 6);
  EXPECT_EQ(layout.offsets[1], 0);
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
  // A broadcast dimension between two others keeps all three apart: [2, 3, 4] with [2, 1, 4].
  const Tensor c = on_cpu({2, 3, 4}), d = on_cpu({2, 1, 4});
  const ElementwiseLayout<2> apart = layout_of(c, d, {2, 3, 4});
  EXPECT_FALSE(apart.flat);
  EXPECT_EQ(dims(apart.shape), (Dims{2, 3, 4}));
  EXPECT_EQ(dims(apart.strides[1]), (Dims{4, 0, 1}));
  // Dimensions both operands walk contiguously merge: [2, 3, 4] with [1, 3, 4] is [2, 12].
  const Tensor e = on_cpu({1, 3, 4});
  const ElementwiseLayout<2> merged = layout_of(c, e, {2, 3, 4});
  EXPECT_FALSE(merged.flat);
  EXPECT_EQ(dims(merged.shape), (Dims{2, 12}));
  EXPECT_EQ(dims(merged.strides[0]), (Dims{12, 1}));
  EXPECT_EQ(dims(merged.strides[1]), (Dims{0, 1}));
}

}  // namespace
}  // namespace hal::ops
