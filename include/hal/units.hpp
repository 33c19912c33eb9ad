// Byte counts as people write them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hal {

// 1536 -> "1.5 KiB", 25'165'824'000 -> "23.4 GiB".
std::string format_bytes(uint64_t bytes);

// 0.00302 -> "3.02 ms", 1.2e-5 -> "12.0 us", 2.5 -> "2.50 s".
std::string format_seconds(double seconds);
// "512", "64K", "8G", "1.5GiB", "2 MB" (K/M/G/T are powers of 1024). nullopt if malformed.
std::optional<uint64_t> parse_bytes(std::string_view text) noexcept;

}  // namespace hal
