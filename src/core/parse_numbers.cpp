// The strict number parser of units.hpp. It needs nothing of libhal but format_bytes (units.cpp),
// so the sim plugin, which links nothing of hal's, compiles both files in and reads
// HAL_SIM_CONFIG by the same rules as the hal command reads its options.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/text.hpp"
#include "hal/units.hpp"

namespace hal {
namespace {

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::string quoted(std::string_view what, std::string_view text) {
  return std::string(what) + ": '" + std::string(text) + "' ";
}

std::string real_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

template <class T>
Parsed<T> refuse(std::string_view what, std::string_view text, const std::string& why) {
  return {std::nullopt, quoted(what, text) + why};
}

template <class T>
Parsed<T> out_of_range(std::string_view what, std::string_view text, const std::string& min,
                       const std::string& max) {
  return refuse<T>(what, text, "is out of range (" + min + " to " + max + ")");
}

// The leading number of `text`: its value, whether it was digits only (then `whole` is exact,
// or unset when it passes 2^64 - 1), and what follows it.
struct Leading {
  double real = 0;
  bool digits_only = false;
  std::optional<uint64_t> whole;
  std::string_view rest;
};

std::optional<Leading> leading_number(std::string_view text) {
  Leading out;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, error] = std::from_chars(first, last, out.real);
  if (end == first) return std::nullopt;  // no number at all
  const std::string_view number(first, static_cast<size_t>(end - first));
  out.rest = std::string_view(end, static_cast<size_t>(last - end));
  if (error == std::errc::result_out_of_range)  // 1e999 or 1e-999: strtod says which
    out.real = std::strtod(std::string(number).c_str(), nullptr);
  out.digits_only = all_digits(number);
  if (out.digits_only) {
    uint64_t whole = 0;
    if (std::from_chars(number.data(), number.data() + number.size(), whole).ec == std::errc())
      out.whole = whole;
  }
  return out;
}

// "K", "KiB", "kb", "G" ... -> the power of 1024; "" and "B" -> 1; nullopt for anything else.
std::optional<double> size_unit(std::string_view suffix) {
  suffix = detail::trim(suffix);
  if (suffix.empty()) return 1.0;
  static constexpr std::string_view kPrefixes = "KMGTP";
  const char prefix = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
  if (prefix == 'B') return suffix.size() == 1 ? std::optional<double>(1.0) : std::nullopt;
  const size_t power = kPrefixes.find(prefix);
  if (power == std::string_view::npos) return std::nullopt;
  const std::string rest = detail::to_lower(suffix.substr(1));
  if (!rest.empty() && rest != "b" && rest != "ib") return std::nullopt;
  return std::ldexp(1.0, 10 * static_cast<int>(power + 1));
}

}  // namespace

Parsed<uint64_t> parse_count(std::string_view what, std::string_view text, uint64_t min,
                             uint64_t max) {
  const std::string_view trimmed = detail::trim(text);
  const std::string range_min = std::to_string(min), range_max = std::to_string(max);
  const bool negative = !trimmed.empty() && trimmed.front() == '-';
  if (negative && all_digits(trimmed.substr(1)))
    return out_of_range<uint64_t>(what, text, range_min, range_max);
  if (!all_digits(trimmed)) return refuse<uint64_t>(what, text, "is not a whole number");
  const std::optional<Leading> number = leading_number(trimmed);
  if (!number || !number->whole || *number->whole < min || *number->whole > max)
    return out_of_range<uint64_t>(what, text, range_min, range_max);
  return {number->whole, {}};
}

Parsed<double> parse_real(std::string_view what, std::string_view text, double min, double max) {
  const std::string_view trimmed = detail::trim(text);
  const std::optional<Leading> number = leading_number(trimmed);
  if (!number || !number->rest.empty()) return refuse<double>(what, text, "is not a number");
  if (!std::isfinite(number->real)) return refuse<double>(what, text, "is not a finite number");
  if (number->real < min || number->real > max)
    return out_of_range<double>(what, text, real_text(min), real_text(max));
  return {number->real, {}};
}

Parsed<uint64_t> parse_size(std::string_view what, std::string_view text, uint64_t min,
                            uint64_t max) {
  const std::string_view trimmed = detail::trim(text);
  const std::optional<Leading> number = leading_number(trimmed);
  const std::optional<double> scale = number ? size_unit(number->rest) : std::nullopt;
  if (!scale) return refuse<uint64_t>(what, text, "is not a size (say 512M or 8G)");
  if (!std::isfinite(number->real)) return refuse<uint64_t>(what, text, "is not a finite size");
  const std::string range_min = format_bytes(min), range_max = format_bytes(max);
  if (number->real < 0) return out_of_range<uint64_t>(what, text, range_min, range_max);
  std::optional<uint64_t> bytes;
  const auto factor = static_cast<uint64_t>(*scale);
  if (number->digits_only) {  // exact: 10000000000000000000 stays itself, 2^64 is refused
    if (number->whole && *number->whole <= UINT64_MAX / factor) bytes = *number->whole * factor;
  } else if (const double real = std::round(number->real * *scale); real < 0x1p64) {
    bytes = static_cast<uint64_t>(real);
  }
  if (!bytes || *bytes < min || *bytes > max)
    return out_of_range<uint64_t>(what, text, range_min, range_max);
  return {bytes, {}};
}

std::optional<uint64_t> parse_bytes(std::string_view text) noexcept {
  try {
    return parse_size("size", text, 0, UINT64_MAX).value;
  } catch (...) {  // only a failed allocation of the message could throw
    return std::nullopt;
  }
}

}  // namespace hal
