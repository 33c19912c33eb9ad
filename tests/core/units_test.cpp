#include "hal/units.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "hal/device_info.hpp"

namespace hal {
namespace {

TEST(Units, FormatsBytesInBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(uint64_t{8} << 30), "8.0 GiB");
  EXPECT_EQ(format_bytes(25'232'932'864), "23.5 GiB");
  EXPECT_EQ(format_bytes(10'000'000'000'000'000'000u), "8.7 EiB");
}

TEST(Units, FormatsAnUnknownMemoryFigureAsUnknown) {
  EXPECT_EQ(format_memory({0, Provenance::unknown}), "unknown");
  EXPECT_EQ(format_memory({0, Provenance::measured}), "0 B");
  EXPECT_EQ(format_memory({uint64_t{3} << 30, Provenance::estimated}), "3.0 GiB");
}

TEST(Units, FormatsSecondsWithAUnitAtEveryMagnitude) {
  EXPECT_EQ(format_seconds(0.00302), "3.02 ms");
  EXPECT_EQ(format_seconds(2.5), "2.50 s");
  EXPECT_EQ(format_seconds(3.1e9), "3.1e+09 s");
  EXPECT_EQ(format_seconds(1e300), "1e+300 s");
  EXPECT_EQ(format_seconds(NAN), "unknown");
}

TEST(Units, ParsesByteCounts) {
  EXPECT_EQ(parse_bytes("512"), 512u);
  EXPECT_EQ(parse_bytes("64K"), 65536u);
  EXPECT_EQ(parse_bytes("8G"), uint64_t{8} << 30);
  EXPECT_EQ(parse_bytes("8g"), uint64_t{8} << 30);
  EXPECT_EQ(parse_bytes("1.5GiB"), uint64_t{3} << 29);
  EXPECT_EQ(parse_bytes(" 2 MB "), uint64_t{2} << 20);
  EXPECT_EQ(parse_bytes("3B"), 3u);
  EXPECT_EQ(parse_bytes("2P"), uint64_t{2} << 50);
}

TEST(Units, ParsesLargeByteCountsExactly) {
  EXPECT_EQ(parse_bytes("10000000000000000000"), 10'000'000'000'000'000'000u);
  EXPECT_EQ(parse_bytes("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_bytes("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_bytes("16777216T"), std::nullopt);  // 2^64
  EXPECT_EQ(parse_bytes("16777215T"), uint64_t{16777215} << 40);
}

TEST(Units, RejectsMalformedByteCounts) {
  for (const char* text : {"", "G", "-1K", "8X", "8GiBs", "nan", "inf", "1e30T", "8 G G", "0x10"})
    EXPECT_EQ(parse_bytes(text), std::nullopt) << text;
}

TEST(Units, SizeErrorsNameTheSettingQuoteTheTextAndGiveTheRange) {
  EXPECT_EQ(parse_size("memory", "inf", 1, 1024).error, "memory: 'inf' is not a finite size");
  EXPECT_EQ(parse_size("memory", "lots", 1, 1024).error,
            "memory: 'lots' is not a size (say 512M or 8G)");
  EXPECT_EQ(parse_size("memory", "2K", 1, 1024).error,
            "memory: '2K' is out of range (1 B to 1.0 KiB)");
  EXPECT_EQ(parse_size("memory", "0", 1, 1024).error,
            "memory: '0' is out of range (1 B to 1.0 KiB)");
  EXPECT_EQ(parse_size("memory", "1K", 1, 1024).value, 1024u);
}

TEST(Units, CountsAreWholeAndInRangeNeverWrapped) {
  EXPECT_EQ(parse_count("devices", "4", 0, 65536).value, 4u);
  EXPECT_EQ(parse_count("devices", " 65536 ", 0, 65536).value, 65536u);
  EXPECT_EQ(parse_count("devices", "4294967298", 0, 65536).error,
            "devices: '4294967298' is out of range (0 to 65536)");
  EXPECT_EQ(parse_count("n", "99999999999999999999", 1, UINT64_MAX).error,
            "n: '99999999999999999999' is out of range (1 to 18446744073709551615)");
  EXPECT_EQ(parse_count("--matmul", "0", 1, 8).error, "--matmul: '0' is out of range (1 to 8)");
  EXPECT_EQ(parse_count("--matmul", "-3", 1, 8).error, "--matmul: '-3' is out of range (1 to 8)");
  for (const char* text : {"", "1.5", "1e3", "+4", "4x", "nan", "0x10"})
    EXPECT_EQ(parse_count("n", text, 0, 8).error,
              std::string("n: '") + text + "' is not a whole number")
        << text;
}

TEST(Units, RealsAreFiniteAndInRange) {
  EXPECT_EQ(parse_real("gflops", "2.5", 0, 10).value, 2.5);
  EXPECT_EQ(parse_real("gflops", "1e3", 0, 1e12).value, 1000.0);
  for (const char* text : {"nan", "inf", "-inf", "1e999"})
    EXPECT_EQ(parse_real("--min-tflops", text, 0, 1e12).error,
              std::string("--min-tflops: '") + text + "' is not a finite number")
        << text;
  EXPECT_EQ(parse_real("x", "1e-999", 0, 1).value, 0.0);  // underflow is zero, not infinity
  EXPECT_EQ(parse_real("x", "-1", 0, 1e12).error, "x: '-1' is out of range (0 to 1e+12)");
  EXPECT_EQ(parse_real("x", "fast", 0, 1).error, "x: 'fast' is not a number");
  EXPECT_EQ(parse_real("x", "2GB", 0, 10).error, "x: '2GB' is not a number");
}

}  // namespace
}  // namespace hal
