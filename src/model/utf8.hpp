// UTF-8 text and Unicode code points: for the ops that change case and the .npy files of NumPy's
// fixed-width UTF-32 strings.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hal::model {

// The code points of `text`, or nullopt where it is not UTF-8 (a truncated or overlong sequence,
// a surrogate, a value past U+10FFFF).
std::optional<std::u32string> utf8_decode(std::string_view text);

// Whether `c` is a Unicode scalar value: at most U+10FFFF and not a surrogate.
bool is_scalar_value(char32_t c);

// `code_points` (scalar values; anything else becomes U+FFFD) as UTF-8.
std::string utf8_encode(std::u32string_view code_points);

}  // namespace hal::model
