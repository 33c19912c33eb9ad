#include "hal/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "text.hpp"

namespace hal {

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string format_seconds(double seconds) {
  char text[32];
  if (std::isnan(seconds)) return "unknown";
  if (seconds >= 1.0)
    std::snprintf(text, sizeof text, "%.2f s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  else if (seconds >= 1e-6)
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  else
    std::snprintf(text, sizeof text, "%.0f ns", seconds * 1e9);
  return text;
}

std::optional<uint64_t> parse_bytes(std::string_view text) noexcept {
  text = detail::trim(text);
  double number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || number < 0 || !std::isfinite(number)) return std::nullopt;
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  double scale = 1;
  if (!suffix.empty()) {
    switch (std::toupper(static_cast<unsigned char>(suffix.front()))) {
      case 'B':
        scale = 1;
        break;
      case 'K':
        scale = 0x1p10;
        break;
      case 'M':
        scale = 0x1p20;
        break;
      case 'G':
        scale = 0x1p30;
        break;
      case 'T':
        scale = 0x1p40;
        break;
      default:
        return std::nullopt;
    }
    std::string_view rest = suffix.substr(1);
    if (scale > 1 && !rest.empty()) {
      if (rest == "iB" || rest == "IB" || rest == "ib" || rest == "B" || rest == "b") rest = {};
    }
    if (!rest.empty()) return std::nullopt;
  }
  double bytes = number * scale;
  if (bytes >= 0x1p64) return std::nullopt;
  return static_cast<uint64_t>(std::llround(bytes));
}

}  // namespace hal
