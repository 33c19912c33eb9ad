#include "core/scalar_type_size.hpp"

#include <array>
#include <utility>
#include <vector>

namespace hal::detail {
namespace {

// One-word names: OpenCL C's short forms, the portable dialect's (the CUDA prelude typedefs
// them) and <stdint.h>'s. 0: pointer-sized, which the device decides.
constexpr std::array<std::pair<std::string_view, size_t>, 18> kOneWord{{
    {"uchar", 1},
    {"ushort", 2},
    {"uint", 4},
    {"ulong", 8},
    {"half", 2},
    {"bool", 1},
    {"int8_t", 1},
    {"uint8_t", 1},
    {"int16_t", 2},
    {"uint16_t", 2},
    {"int32_t", 4},
    {"uint32_t", 4},
    {"int64_t", 8},
    {"uint64_t", 8},
    {"size_t", 0},
    {"ptrdiff_t", 0},
    {"intptr_t", 0},
    {"uintptr_t", 0},
}};

}  // namespace

std::optional<size_t> builtin_scalar_bytes(std::span<const std::string_view> words) {
  if (words.size() == 1)
    for (const auto& [name, bytes] : kOneWord)
      if (words[0] == name) return bytes;
  // C's multi-word integer and floating types: at most one sign, then char, short, int,
  // long or long long (with an optional int), or float or double alone.
  int sign = 0, chars = 0, shorts = 0, ints = 0, longs = 0, floats = 0, doubles = 0;
  for (std::string_view word : words) {
    if (word == "signed" || word == "unsigned")
      ++sign;
    else if (word == "char")
      ++chars;
    else if (word == "short")
      ++shorts;
    else if (word == "int")
      ++ints;
    else if (word == "long")
      ++longs;
    else if (word == "float")
      ++floats;
    else if (word == "double")
      ++doubles;
    else
      return std::nullopt;
  }
  if (words.empty() || sign > 1 || ints > 1 || longs > 2) return std::nullopt;
  if (floats + doubles > 0)
    return words.size() == 1 ? std::optional<size_t>(floats ? 4 : 8) : std::nullopt;
  if (chars + shorts + (longs > 0) > 1 || (chars && ints)) return std::nullopt;
  if (chars) return 1;
  if (shorts) return 2;
  if (longs) return 8;
  return 4;  // int, signed, unsigned
}

std::optional<size_t> builtin_scalar_bytes(std::string_view type) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < type.size()) {
    const size_t end = std::min(type.find(' ', at), type.size());
    if (end > at) words.push_back(type.substr(at, end - at));
    at = end + 1;
  }
  return builtin_scalar_bytes(words);
}

}  // namespace hal::detail
