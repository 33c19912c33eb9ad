#include "hal/dtype.hpp"

#include <gtest/gtest.h>

namespace hal {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType dtype : kAllDTypes) EXPECT_EQ(parse_dtype(to_string(dtype)), dtype);
  EXPECT_EQ(to_string(DType::boolean), "bool");
  EXPECT_EQ(parse_dtype("f128"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
}

TEST(DType, SizesMatchTheCTypes) {
  EXPECT_EQ(size_of(DType::f32), sizeof(float));
  EXPECT_EQ(size_of(DType::f64), sizeof(double));
  EXPECT_EQ(size_of(DType::f16), 2u);
  EXPECT_EQ(size_of(DType::bf16), 2u);
  EXPECT_EQ(size_of(DType::i8), sizeof(int8_t));
  EXPECT_EQ(size_of(DType::u8), sizeof(uint8_t));
  EXPECT_EQ(size_of(DType::i32), sizeof(int32_t));
  EXPECT_EQ(size_of(DType::i64), sizeof(int64_t));
  EXPECT_EQ(size_of(DType::boolean), sizeof(bool));
  EXPECT_EQ(size_of(DType::i16), sizeof(int16_t));
  EXPECT_EQ(size_of(DType::u16), sizeof(uint16_t));
  EXPECT_EQ(size_of(DType::u32), sizeof(uint32_t));
  EXPECT_EQ(size_of(DType::u64), sizeof(uint64_t));
}

// Numbers are released for good (plugin.h's HAL_PLUGIN_DTYPE_* are the same): dtypes added later
// took the next ones.
TEST(DType, NumbersNeverChange) {
  EXPECT_EQ(static_cast<int>(DType::boolean), 8);
  EXPECT_EQ(static_cast<int>(DType::i16), 9);
  EXPECT_EQ(static_cast<int>(DType::u16), 10);
  EXPECT_EQ(static_cast<int>(DType::u32), 11);
  EXPECT_EQ(static_cast<int>(DType::u64), 12);
}

TEST(DType, IntegersAndTheirSigns) {
  int integers = 0, signed_ones = 0;
  for (DType dtype : kAllDTypes) {
    integers += is_integer(dtype);
    signed_ones += is_signed_integer(dtype);
    if (is_signed_integer(dtype)) {
      EXPECT_TRUE(is_integer(dtype)) << to_string(dtype);
    }
  }
  EXPECT_EQ(integers, 8);
  EXPECT_EQ(signed_ones, 4);
  EXPECT_FALSE(is_integer(DType::boolean));
  EXPECT_FALSE(is_integer(DType::bf16));
  EXPECT_TRUE(is_signed_integer(DType::i16));
  EXPECT_FALSE(is_signed_integer(DType::u64));
}

TEST(DType, OnlyTheListedValuesAreValid) {
  for (DType dtype : kAllDTypes) EXPECT_TRUE(is_valid(dtype));
  for (int value : {13, 99, 255}) {
    EXPECT_FALSE(is_valid(static_cast<DType>(value)));
    EXPECT_EQ(size_of(static_cast<DType>(value)), 0u);
  }
}

}  // namespace
}  // namespace hal
