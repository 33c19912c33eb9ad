// Sizes, strides, offsets and dtypes at their limits: whatever would overflow int64 or is not a
// dtype is refused with InvalidArgument naming the shape, before any memory is reached.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "test_util.hpp"

namespace hal {
namespace {

using hal::test::expect_error;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Device cpu() { return device("cpu:0"); }

TEST(TensorLimits, ElementCountsPastInt64AreRefused) {
  Stream stream = cpu().create_stream();
  expect_error(
      [&] {
        zeros({int64_t{1} << 32, int64_t{1} << 32}, DType::f32, stream);
      },
      ErrorCode::InvalidArgument,
      {"shape [4294967296, 4294967296]", "more elements than int64 can count"});
  const Tensor one = empty({1}, DType::f32, cpu());
  expect_error(
      [&] {
        one.expand({int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31});
      },
      ErrorCode::InvalidArgument,
      {"expand of f32[1] on cpu:0", "shape [2147483648, 2147483648, 2147483648]",
       "more elements than int64"});
  expect_error(
      [&] {
        numel({kMax, 2});
      },
      ErrorCode::InvalidArgument, {"[9223372036854775807, 2]", "more elements"});
  // A size of 0 empties any shape, however large the other sizes.
  EXPECT_EQ(numel({kMax, 2, 0}), 0);
  EXPECT_EQ(numel({0, kMax, kMax}), 0);
  // A negative size is an error even beside a zero.
  expect_error([&] { numel({0, -1}); }, ErrorCode::InvalidArgument, {"[0, -1]", "negative size"});
  // And after a product that overflowed.
  expect_error([&] { numel({kMax, 2, -1}); }, ErrorCode::InvalidArgument, {"negative size"});
  EXPECT_EQ(empty({int64_t{1} << 62, 0}, DType::f32, cpu()).numel(), 0);
}

TEST(TensorLimits, ByteCountsPastInt64AreRefusedBeforeAllocating) {
  expect_error([&] { empty({int64_t{1} << 61}, DType::f64, cpu()); }, ErrorCode::InvalidArgument,
               {"f64[2305843009213693952]", "8 bytes are more bytes than int64 can count"});
  expect_error([&] { empty({kMax}, DType::f32, cpu()); }, ErrorCode::InvalidArgument,
               {"f32[9223372036854775807]", "more bytes than int64 can count"});
  // A broadcast view holds no bytes of its own, but nbytes() must still count them.
  const Tensor one = empty({1}, DType::f32, cpu());
  expect_error(
      [&] {
        one.expand({int64_t{1} << 31, int64_t{1} << 31});
      },
      ErrorCode::InvalidArgument,
      {"expand of f32[1]", "f32[2147483648, 2147483648]", "more bytes"});
}

TEST(TensorLimits, RowMajorStridesPastInt64AreRefused) {
  expect_error(
      [&] {
        empty({0, int64_t{1} << 62, int64_t{1} << 62}, DType::f32, cpu());
      },
      ErrorCode::InvalidArgument,
      {"shape [0, 4611686018427387904, 4611686018427387904]", "strides overflow int64"});
  const Tensor none = empty({0}, DType::f32, cpu());
  expect_error(
      [&] {
        none.reshape({0, int64_t{1} << 62, int64_t{1} << 62});
      },
      ErrorCode::InvalidArgument, {"reshape of f32[0] on cpu:0", "strides overflow int64"});
}

TEST(TensorLimits, AFurthestElementPastInt64IsRefused) {
  const Buffer buffer = cpu().allocate(64);
  // 3 * stride wraps to a small or negative index, which used to pass the bounds check.
  for (int64_t stride : {(int64_t{1} << 62) + (int64_t{1} << 40), (int64_t{1} << 62) + 4096})
    expect_error(
        [&] { Tensor(buffer, DType::f32, {4}, {stride}); }, ErrorCode::InvalidArgument,
        {"f32[4]", "strides [" + std::to_string(stride) + "]", "furthest element overflows int64"});
  expect_error([&] { Tensor(buffer, DType::f32, {2}, {kMax}, 1); }, ErrorCode::InvalidArgument,
               {"offset 1", "furthest element overflows int64"});
  // Within int64 but past the buffer: as before, OutOfRange.
  expect_error([&] { Tensor(buffer, DType::f32, {2}, {int64_t{1} << 40}); }, ErrorCode::OutOfRange,
               {"reaches element 1099511627776", "16 elements"});
}

TEST(TensorLimits, AViewWithoutElementsIsContiguousWhateverItsStrides) {
  const Buffer buffer = cpu().allocate(64);
  const Tensor none(buffer, DType::f32, {0, 2}, {5, int64_t{1} << 62});
  EXPECT_TRUE(none.is_contiguous());
  Stream stream = cpu().create_stream();
  EXPECT_EQ(none.contiguous(stream).storage().impl(), buffer.impl());  // nothing to gather
  EXPECT_TRUE(none.to_vector<float>(stream).empty());
}

TEST(TensorLimits, ArangeCountsPastInt64AreRefused) {
  Stream stream = cpu().create_stream();
  expect_error([&] { arange(0, 1e30, 1, DType::f32, stream); }, ErrorCode::InvalidArgument,
               {"arange(", "its 1e+30 elements are more than int64 can count"});
  expect_error([&] { arange(-1e308, 1e308, 1e-300, DType::f64, stream); },
               ErrorCode::InvalidArgument, {"inf elements"});
}

// Integer aranges are counted in integers: start + i * step in doubles rounded past 2^53
// (2^53 - 2 + i gave 2^53 twice, and 2^60 + i was 2^60 for 127 of every 256 values).
TEST(TensorLimits, ArangeOfIntegersPast2To53IsExact) {
  Stream stream = cpu().create_stream();
  constexpr int64_t k53 = int64_t{1} << 53, k60 = int64_t{1} << 60;
  EXPECT_EQ(arange(9007199254740990.0, 9007199254740994.0, 1, DType::i64, stream)
                .to_vector<int64_t>(stream),
            (std::vector<int64_t>{k53 - 2, k53 - 1, k53, k53 + 1}));
  EXPECT_EQ(
      arange(-static_cast<double>(k53 - 2), -static_cast<double>(k53 + 2), -1, DType::i64, stream)
          .to_vector<int64_t>(stream),
      (std::vector<int64_t>{-(k53 - 2), -(k53 - 1), -k53, -(k53 + 1)}));
  const std::vector<int64_t> run =
      arange(static_cast<double>(k60), static_cast<double>(k60 + 512), 1, DType::i64, stream)
          .to_vector<int64_t>(stream);
  ASSERT_EQ(run.size(), 512u);
  for (int64_t i = 0; i < 512; ++i) ASSERT_EQ(run[static_cast<size_t>(i)], k60 + i) << i;
  // A fractional end bounds integers as its ceiling (its floor stepping down).
  EXPECT_EQ(arange(0, 2.5, 1, DType::i64, stream).to_vector<int64_t>(stream),
            (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(arange(3, -0.5, -2, DType::i32, stream).to_vector<int32_t>(stream),
            (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(arange(5, 5, 1, DType::i64, stream).numel(), 0);
  // A value past the dtype is refused, i64's own bound too.
  expect_error([&] { arange(120, 131, 5, DType::i8, stream); }, ErrorCode::InvalidArgument,
               {"arange: 130 is not a value of i8"});
  expect_error([&] { arange(0x1p63 - 1024, 0x1p63 + 2048, 1024, DType::i64, stream); },
               ErrorCode::InvalidArgument, {"arange: 9223372036854775808 is not a value of i64"});
}

TEST(TensorLimits, SliceWithExtremeBoundsAndStepCountsLikePython) {
  const Tensor t = empty({8, 3}, DType::f32, cpu());
  // Python: list(range(8))[-2**63 : 2**63 - 1 : 2**63 - 1] == [0]
  const Tensor first = t.slice(0, kMin, kMax, kMax);
  EXPECT_EQ(first.shape(), (Shape{1, 3}));
  EXPECT_EQ(first.offset(), 0);
  const Tensor last = t.slice(0, -1, kMax, kMax);
  EXPECT_EQ(last.shape(), (Shape{1, 3}));
  EXPECT_EQ(last.offset(), 21);
  EXPECT_EQ(t.slice(0, 3, kMin, 2).shape(), (Shape{0, 3}));
  EXPECT_EQ(t.slice(0, 1, 8, 4).shape(), (Shape{2, 3}));  // rows 1 and 5
  // Without elements, strides are unchecked: one times the step may overflow, and does no harm.
  const Tensor none(cpu().allocate(64), DType::f32, {0, 8}, {1, int64_t{1} << 62});
  EXPECT_EQ(none.slice(1, 0, 8, 2).shape(), (Shape{0, 4}));
}

TEST(TensorLimits, DTypesThatAreNotHalsAreRefused) {
  const auto bad = static_cast<DType>(99);
  EXPECT_FALSE(is_valid(bad));
  Stream stream = cpu().create_stream();
  expect_error(
      [&] {
        empty({2, 3}, bad, cpu());
      },
      ErrorCode::InvalidArgument, {"empty of [2, 3]", "dtype 99 is not one of hal's dtypes"});
  expect_error([&] { zeros({2}, bad, stream); }, ErrorCode::InvalidArgument,
               {"full of [2]", "dtype 99"});
  expect_error([&] { arange(0, 4, 1, bad, stream); }, ErrorCode::InvalidArgument,
               {"arange(", "dtype 99"});
  expect_error([&] { uniform({2}, bad, 1, stream); }, ErrorCode::InvalidArgument,
               {"uniform of [2]", "dtype 99"});
  expect_error([&] { Tensor(cpu().allocate(64), bad, {2}); }, ErrorCode::InvalidArgument,
               {"dtype 99"});
  const Tensor x = zeros({2}, DType::f32, stream);
  expect_error([&] { cast(x, bad, stream); }, ErrorCode::InvalidArgument,
               {"[2]", "dtype 99 is not one of hal's dtypes"});
}

}  // namespace
}  // namespace hal
