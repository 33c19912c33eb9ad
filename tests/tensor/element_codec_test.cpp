// Numbers as element bytes: f16 and bf16 rounding, and integers that a dtype cannot hold.
#include "tensor/element_codec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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
  encode(-32768, DType::i16, out, "full");
  EXPECT_EQ(decode(DType::i16, out), -32768);
  encode(65535, DType::u16, out, "full");
  EXPECT_EQ(decode(DType::u16, out), 65535);
  encode(4294967295.0, DType::u32, out, "full");
  EXPECT_EQ(decode(DType::u32, out), 4294967295.0);
  encode(std::ldexp(1.0, 63), DType::u64, out, "full");  // past i64, inside u64
  EXPECT_EQ(decode(DType::u64, out), std::ldexp(1.0, 63));
  hal::test::expect_error([&] { encode(32768, DType::i16, out, "full"); },
                          ErrorCode::InvalidArgument, {"32768", "i16"});
  hal::test::expect_error([&] { encode(-1, DType::u16, out, "full"); }, ErrorCode::InvalidArgument,
                          {"-1", "u16"});
  hal::test::expect_error([&] { encode(std::ldexp(1.0, 64), DType::u64, out, "full"); },
                          ErrorCode::InvalidArgument, {"u64"});
}

// u64 past 2^63 reaches f16 and bf16 from its own value, rounded once (through a float rounded
// to odd): 2^63 + 2^55 + 1 lies just above bf16's tie between 2^63 and 2^63 + 2^56.
TEST(ElementCodec, U64RoundsOnceToTheHalfTypes) {
  const uint64_t above_tie = (uint64_t{1} << 63) + (uint64_t{1} << 55) + 1;
  EXPECT_EQ(bf16_to_f32(u64_to_bf16(above_tie)), std::ldexp(1.0f, 63) + std::ldexp(1.0f, 56));
  EXPECT_EQ(bf16_to_f32(u64_to_bf16(above_tie - 1)), std::ldexp(1.0f, 63));  // the tie: to even
  EXPECT_TRUE(std::isinf(f16_to_f32(u64_to_f16(uint64_t{1} << 63))));
  EXPECT_EQ(f16_to_f32(u64_to_f16(65504)), 65504.0f);
  EXPECT_EQ(f16_to_f32(u64_to_f16(2049)), 2048.0f);  // tie between 2048 and 2050: to even
  EXPECT_EQ(f16_to_f32(u64_to_f16(2051)), 2052.0f);
}

// An integer fills exactly: 2^53 + 1 in i64 and 2^64 - 1 in u64 stay themselves (through a
// double both rounded), and a float dtype gets the integer's nearest value, rounded once:
// 2^60 + 2^36 + 1 is just above f32's tie between 2^60 and 2^60 + 2^37 (a double rounds it onto
// the tie, which then goes to even, 2^60).
TEST(ElementCodec, IntegersFillExactly) {
  Stream stream = device("cpu:0").create_stream();
  const int64_t past_double = (int64_t{1} << 53) + 1;
  EXPECT_EQ(full({2}, past_double, DType::i64, stream).to_vector<int64_t>(stream),
            (std::vector<int64_t>{past_double, past_double}));
  EXPECT_EQ(full({1}, -past_double, DType::i64, stream).to_vector<int64_t>(stream),
            (std::vector<int64_t>{-past_double}));
  const uint64_t most = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(full({1}, most, DType::u64, stream).to_vector<uint64_t>(stream),
            (std::vector<uint64_t>{most}));
  const int64_t above_tie = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  EXPECT_EQ(full({1}, above_tie, DType::f32, stream).to_vector<float>(stream),
            (std::vector<float>{std::ldexp(1.0f, 60) + std::ldexp(1.0f, 37)}));
  EXPECT_EQ(full({1}, 7, DType::i8, stream).to_vector<int8_t>(stream), (std::vector<int8_t>{7}));
  EXPECT_EQ(full({1}, 2049u, DType::f16, stream).to_vector<uint16_t>(stream),
            (std::vector<uint16_t>{f32_to_f16(2048.0f)}));  // the tie: to even
  EXPECT_EQ(full({1}, short{-3}, DType::f64, stream).to_vector<double>(stream),
            (std::vector<double>{-3.0}));

  hal::test::expect_error([&] { full({1}, -1, DType::u8, stream); }, ErrorCode::InvalidArgument,
                          {"full: -1 is not a value of u8"});
  hal::test::expect_error([&] { full({1}, most, DType::i64, stream); }, ErrorCode::InvalidArgument,
                          {"full: 18446744073709551615 is not a value of i64"});
  hal::test::expect_error([&] { full({1}, int64_t{1} << 31, DType::i32, stream); },
                          ErrorCode::InvalidArgument, {"full: 2147483648 is not a value of i32"});
}

// Numbers in messages are the shortest text that reads back as them: std::to_string printed six
// decimals, so 1e-7 read "0.000000" and 1e300 printed 301 digits.
TEST(ElementCodec, MessagesShowNumbersAsTheyWereGiven) {
  EXPECT_EQ(number_text(1e-7), "1e-07");
  EXPECT_EQ(number_text(0.1), "0.1");
  EXPECT_EQ(number_text(-2.5), "-2.5");
  EXPECT_EQ(number_text(300), "300");
  EXPECT_EQ(number_text(1e300), "1e+300");
  EXPECT_EQ(number_text(9007199254740993.0), "9007199254740992");
  EXPECT_EQ(number_text(std::numeric_limits<double>::infinity()), "inf");
  Stream stream = device("cpu:0").create_stream();
  hal::test::expect_error([&] { full({1}, 1e-7, DType::i32, stream); }, ErrorCode::InvalidArgument,
                          {"full: 1e-07 is not a value of i32"});
  try {
    full({1}, 1e300, DType::i64, stream);
    ADD_FAILURE() << "full of 1e300 in i64 was not refused";
  } catch (const Error& error) {
    EXPECT_EQ(error.message(), "full: 1e+300 is not a value of i64");
  }
  hal::test::expect_error([&] { arange(0, 1, 1e-30, DType::f32, stream); },
                          ErrorCode::InvalidArgument, {"arange(0, 1, 1e-30): its "});
  hal::test::expect_error([&] { arange(0, 1e-7, 1e-8, DType::i32, stream); },
                          ErrorCode::InvalidArgument, {"arange: 1e-08 is not a value of i32"});
  hal::test::expect_error([&] { uniform({2}, DType::f32, 0, stream, 1e-7, 1e-7); },
                          ErrorCode::InvalidArgument, {"low 1e-07 is not below high 1e-07"});
  hal::test::expect_error([&] { normal({2}, DType::f32, 0, stream, 0, -1e-9); },
                          ErrorCode::InvalidArgument, {"standard deviation -1e-09 is negative"});
}

}  // namespace
}  // namespace hal::tensor
