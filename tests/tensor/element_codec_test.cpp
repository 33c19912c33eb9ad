// Numbers as element bytes: f16 and bf16 rounding, and integers that a dtype cannot hold.
#include "tensor/element_codec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "test_util.hpp"

namespace hal::tensor {
namespace {

TEST(ElementCodec, HalfRoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(0.1f), 0x2e66);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);                          // the largest half
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);                          // rounds down to it
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                          // rounds up to infinity
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);             // the smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);             // below half of it
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: to even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: to even
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
}

TEST(ElementCodec, EveryHalfSurvivesARoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    const float value = f16_to_f32(half);
    if (std::isnan(value)) continue;
    ASSERT_EQ(f32_to_f16(value), half) << std::hex << bits << " = " << value;
  }
}

TEST(ElementCodec, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie: to even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie: to even
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(-3.5f)), -3.5f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
}

TEST(ElementCodec, IntegersOutsideTheirTypeAreRefused) {
  unsigned char out[8];
  encode(-128, DType::i8, out, "full");
  EXPECT_EQ(decode(DType::i8, out), -128);
  encode(255, DType::u8, out, "full");
  EXPECT_EQ(decode(DType::u8, out), 255);
  encode(-9007199254740992.0, DType::i64, out, "full");
  EXPECT_EQ(decode(DType::i64, out), -9007199254740992.0);
  hal::test::expect_error([&] { encode(256, DType::u8, out, "full"); }, ErrorCode::InvalidArgument,
                          {"full", "256", "u8"});
  hal::test::expect_error([&] { encode(2.5, DType::i32, out, "arange"); },
                          ErrorCode::InvalidArgument, {"arange", "2.5", "i32"});
  hal::test::expect_error([&] { encode(std::ldexp(1.0, 63), DType::i64, out, "full"); },
                          ErrorCode::InvalidArgument, {"i64"});
  hal::test::expect_error([&] { encode(NAN, DType::i8, out, "full"); }, ErrorCode::InvalidArgument,
                          {"i8"});
  encode(0.25, DType::boolean, out, "full");
  EXPECT_EQ(out[0], 1);
}

}  // namespace
}  // namespace hal::tensor
