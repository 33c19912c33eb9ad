// Small text helpers that core's parsers share: the selector, the registry, byte counts.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace hal::detail {

inline std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

// "1a2b-3c" -> "1a2b3c": UUIDs and their prefixes compare without dashes.
inline std::string without_dashes(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '-') out += c;
  return out;
}

// Backend names: one or more letters, digits and '_' (case is the caller's concern).
inline bool is_backend_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace hal::detail
