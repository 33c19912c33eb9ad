// Numbers as people write them: byte counts and times printed, and the strict parser that the
// hal command's options and the environment's settings share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hal {

struct MemoryFigure;  // hal/device_info.hpp

// 1536 -> "1.5 KiB", 25'165'824'000 -> "23.4 GiB".
std::string format_bytes(uint64_t bytes);

// A memory figure a device reported: format_bytes, or "unknown" where the device cannot tell
// (PoCL reports no free memory; 0 B would read as "full").
std::string format_memory(const MemoryFigure& figure);

// 0.00302 -> "3.02 ms", 1.2e-5 -> "12.0 us", 2.5 -> "2.50 s", 3.1e9 -> "3.1e+09 s".
std::string format_seconds(double seconds);

// A number read from text, or why it could not be: `error` names the option or setting (`what`)
// and quotes the text, e.g. "--matmul: '0' is out of range (1 to 1048576)".
template <class T>
struct Parsed {
  std::optional<T> value;
  std::string error;
};

// A whole number in [min, max]: decimal digits only ("4", "65536"); no sign, fraction,
// exponent or trailing text. Values past 2^64 are out of range, never wrapped.
Parsed<uint64_t> parse_count(std::string_view what, std::string_view text, uint64_t min,
                             uint64_t max);

// A finite real number in [min, max]: "0.5", "2", "1e3". nan and inf are refused.
Parsed<double> parse_real(std::string_view what, std::string_view text, double min, double max);

// A byte count in [min, max]: "512", "64K", "8G", "1.5GiB", "2 MB" (K, M, G, T, P are powers of
// 1024; B, iB and a lower-case letter are accepted). Whole counts are exact up to 2^64 - 1.
Parsed<uint64_t> parse_size(std::string_view what, std::string_view text, uint64_t min,
                            uint64_t max);

// parse_size over every 64-bit count; nullopt if malformed or out of range.
std::optional<uint64_t> parse_bytes(std::string_view text) noexcept;

}  // namespace hal
