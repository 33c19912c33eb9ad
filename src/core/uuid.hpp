// Name-based UUIDs: the same name gives the same UUID on every run and machine.
#pragma once

#include <string>
#include <string_view>

namespace hal {

// An RFC 9562 version-8 UUID from a 128-bit FNV-1a hash of `name`, as 8-4-4-4-12 hex.
std::string name_based_uuid(std::string_view name);
// Whether a driver's 16 bytes are all zero: it did not say (not a UUID to key caches by).
bool is_nil_uuid(const unsigned char (&bytes)[16]);
// 16 bytes (a driver's UUID) as 8-4-4-4-12 lower-case hex.
std::string format_uuid(const unsigned char (&bytes)[16]);

}  // namespace hal
