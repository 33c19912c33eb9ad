#include "core/uuid.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace hal {

__extension__ using uint128 = unsigned __int128;  // GCC and Clang both have it

std::string name_based_uuid(std::string_view name) {
  // FNV-1a, 128-bit: offset basis and prime from the FNV specification.
  uint128 hash = (static_cast<uint128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
  const uint128 prime = (static_cast<uint128>(1) << 88) | 0x13b;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= prime;
  }
  unsigned char bytes[16];
  for (int i = 15; i >= 0; --i) {
    bytes[i] = static_cast<unsigned char>(hash & 0xff);
    hash >>= 8;
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x80);  // version 8
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC variant
  return format_uuid(bytes);
}

bool is_nil_uuid(const unsigned char (&bytes)[16]) {
  return std::all_of(std::begin(bytes), std::end(bytes), [](unsigned char b) { return b == 0; });
}

std::string format_uuid(const unsigned char (&bytes)[16]) {
  char text[37];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

}  // namespace hal
