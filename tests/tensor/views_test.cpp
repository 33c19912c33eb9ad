// Views change shape, strides and offset and nothing else; what they cannot express is an
// error naming the tensor, the shapes and the dimension.
#include <gtest/gtest.h>

#include "test_util.hpp"

namespace hal {
namespace {

Tensor blank(const Shape& shape) { return empty(shape, DType::f32, device("cpu:0")); }

TEST(TensorViews, ContiguousTensorsHaveRowMajorStrides) {
  const Tensor t = blank({2, 3, 4});
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.describe(), "f32[2, 3, 4] on cpu:0");
}

TEST(TensorViews, ReshapeSharesStorageAndInfersOneSize) {
  const Tensor t = blank({2, 3, 4});
  const Tensor r = t.reshape({4, -1});
  EXPECT_EQ(r.shape(), (Shape{4, 6}));
  EXPECT_EQ(r.strides(), (Shape{6, 1}));
  EXPECT_EQ(r.storage().impl(), t.storage().impl());
  hal::test::expect_error(
      [&] {
        t.reshape({5, -1});
      },
      ErrorCode::InvalidArgument, {"reshape", "[2, 3, 4]", "[5, -1]"});
  hal::test::expect_error(
      [&] {
        t.reshape({-1, -1});
      },
      ErrorCode::InvalidArgument, {"more than one -1"});
  hal::test::expect_error([&] { t.reshape({25}); }, ErrorCode::InvalidArgument,
                          {"25 elements in the new shape, 24 in the tensor"});
}

TEST(TensorViews, TransposeSwapsStridesAndReshapeThenNeedsACopy) {
  const Tensor t = blank({2, 3}).transpose(0, 1);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  hal::test::expect_error([&] { t.reshape({6}); }, ErrorCode::InvalidArgument,
                          {"strides [1, 3]", "contiguous()"});
  // Splitting or adding a size-1 dimension needs no copy, even transposed.
  EXPECT_EQ(t.reshape({3, 1, 2}).strides(), (Shape{1, 6, 3}));
}

TEST(TensorViews, ReshapeMergesDimensionsThatAreContiguousWithEachOther) {
  const Tensor sliced = blank({4, 5, 6}).slice(0, 0, 4, 2);  // rows 0 and 2
  EXPECT_EQ(sliced.strides(), (Shape{60, 6, 1}));
  const Tensor merged = sliced.reshape({2, 30});
  EXPECT_EQ(merged.strides(), (Shape{60, 1}));
  hal::test::expect_error([&] { sliced.reshape({60}); }, ErrorCode::InvalidArgument,
                          {"cannot express"});
}

TEST(TensorViews, PermuteChecksItsOrder) {
  const Tensor t = blank({2, 3, 4});
  const Tensor p = t.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Shape{1, 12, 4}));
  EXPECT_EQ(t.permute({-1, -3, -2}).shape(), (Shape{4, 2, 3}));
  hal::test::expect_error(
      [&] {
        t.permute({0, 0, 1});
      },
      ErrorCode::InvalidArgument, {"permute", "appears twice"});
  hal::test::expect_error(
      [&] {
        t.permute({0, 1});
      },
      ErrorCode::InvalidArgument, {"2 dimensions given for 3"});
  hal::test::expect_error([&] { t.transpose(0, 3); }, ErrorCode::InvalidArgument,
                          {"transpose", "dimension 3 is out of range for 3 dimensions"});
}

TEST(TensorViews, SliceClampsLikePython) {
  const Tensor t = blank({10, 4});
  const Tensor s = t.slice(0, -4, 100, 3);  // rows 6 and 9
  EXPECT_EQ(s.shape(), (Shape{2, 4}));
  EXPECT_EQ(s.strides(), (Shape{12, 1}));
  EXPECT_EQ(s.offset(), 24);
  EXPECT_EQ(t.slice(1, 3, 1).shape(), (Shape{10, 0}));
  EXPECT_EQ(t.slice(1, 3, 1).numel(), 0);
  hal::test::expect_error([&] { t.slice(0, 0, 5, 0); }, ErrorCode::InvalidArgument,
                          {"slice", "step 0"});
}

TEST(TensorViews, ExpandBroadcastsSizeOneDimensions) {
  const Tensor column = blank({3, 1});
  const Tensor e = column.expand({2, 3, 4});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_EQ(column.expand({-1, 5}).shape(), (Shape{3, 5}));
  hal::test::expect_error(
      [&] {
        column.expand({4, 4});
      },
      ErrorCode::InvalidArgument, {"expand", "dimension 0 has size 3"});
  hal::test::expect_error([&] { column.expand({4}); }, ErrorCode::InvalidArgument,
                          {"fewer dimensions"});
  // A size below -1 is negative, not a size that dimension 0 (of size 1) cannot expand to.
  hal::test::expect_error(
      [&] {
        blank({1, 3}).expand({-2, 3});
      },
      ErrorCode::InvalidArgument,
      {"size -2 of dimension 0 is negative (only -1 keeps a dimension)"});
  hal::test::expect_error(
      [&] {
        column.expand({-5, 3, 1});
      },
      ErrorCode::InvalidArgument, {"size -5 of dimension 0 is negative"});
  hal::test::expect_error(
      [&] {
        column.expand({-1, 3, 1});
      },
      ErrorCode::InvalidArgument, {"new dimension 0 cannot be -1"});
}

TEST(TensorViews, SqueezeAndUnsqueeze) {
  const Tensor t = blank({2, 1, 3});
  EXPECT_EQ(t.squeeze(1).shape(), (Shape{2, 3}));
  EXPECT_EQ(t.unsqueeze(-1).shape(), (Shape{2, 1, 3, 1}));
  EXPECT_EQ(t.unsqueeze(0).strides(), (Shape{6, 3, 3, 1}));
  hal::test::expect_error([&] { t.squeeze(0); }, ErrorCode::InvalidArgument,
                          {"squeeze", "size 2, not 1"});
  const Tensor scalar = blank({});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.unsqueeze(0).shape(), (Shape{1}));
  EXPECT_EQ(scalar.reshape({1, 1}).shape(), (Shape{1, 1}));
}

TEST(TensorViews, AViewMustLieInsideItsStorage) {
  const Buffer buffer = device("cpu:0").allocate(64);
  EXPECT_NO_THROW(Tensor(buffer, DType::f32, {4, 4}));
  hal::test::expect_error(
      [&] {
        Tensor(buffer, DType::f32, {4, 4}, {}, 1);
      },
      ErrorCode::OutOfRange, {"reaches element 16", "16 elements"});
  hal::test::expect_error(
      [&] {
        Tensor(buffer, DType::f32, {2, 2}, {1});
      },
      ErrorCode::InvalidArgument, {"1 strides"});
  hal::test::expect_error(
      [&] {
        blank({2, -1});
      },
      ErrorCode::InvalidArgument, {"[2, -1]", "negative"});
}

}  // namespace
}  // namespace hal
