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
}

TEST(DType, OnlyTheListedValuesAreValid) {
  for (DType dtype : kAllDTypes) EXPECT_TRUE(is_valid(dtype));
  for (int value : {9, 99, 255}) {
    EXPECT_FALSE(is_valid(static_cast<DType>(value)));
    EXPECT_EQ(size_of(static_cast<DType>(value)), 0u);
  }
}

}  // namespace
}  // namespace hal
