#include "hal/units.hpp"

#include <gtest/gtest.h>

namespace hal {
namespace {

TEST(Units, FormatsBytesInBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(uint64_t{8} << 30), "8.0 GiB");
  EXPECT_EQ(format_bytes(25'232'932'864), "23.5 GiB");
}

TEST(Units, ParsesByteCounts) {
  EXPECT_EQ(parse_bytes("512"), 512u);
  EXPECT_EQ(parse_bytes("64K"), 65536u);
  EXPECT_EQ(parse_bytes("8G"), uint64_t{8} << 30);
  EXPECT_EQ(parse_bytes("8g"), uint64_t{8} << 30);
  EXPECT_EQ(parse_bytes("1.5GiB"), uint64_t{3} << 29);
  EXPECT_EQ(parse_bytes(" 2 MB "), uint64_t{2} << 20);
  EXPECT_EQ(parse_bytes("3B"), 3u);
}

TEST(Units, RejectsMalformedByteCounts) {
  for (const char* text : {"", "G", "-1K", "8X", "8GiBs", "nan", "1e30T", "8 G G"})
    EXPECT_EQ(parse_bytes(text), std::nullopt) << text;
}

}  // namespace
}  // namespace hal
