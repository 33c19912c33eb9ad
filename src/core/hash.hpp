// FNV-1a, 64-bit: a fast non-cryptographic hash for cache keys and integrity checks.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace hal::detail {

inline uint64_t fnv1a_64(std::span<const unsigned char> bytes,
                         uint64_t hash = 0xcbf29ce484222325ULL) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

inline uint64_t fnv1a_64(std::string_view text) {
  return fnv1a_64({reinterpret_cast<const unsigned char*>(text.data()), text.size()});
}

}  // namespace hal::detail
