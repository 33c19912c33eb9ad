// How the tool writes JSON: names, paths and messages may hold bytes that are not UTF-8 (a
// Latin-1 file name, a name read from a model), on which nlohmann's default dump throws. They
// are written as U+FFFD instead, so a report (or an error report) is never lost to them.
#pragma once

#include <nlohmann/json.hpp>

namespace hal::tool {

inline constexpr auto kReplaceBadUtf8 = nlohmann::json::error_handler_t::replace;

}  // namespace hal::tool
