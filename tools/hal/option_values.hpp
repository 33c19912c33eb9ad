// Option values read with hal's strict parser (hal/units.hpp): a value the command cannot
// honour is an Error(InvalidArgument) that names the option and quotes the text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hal::tool {

uint64_t count_option(std::string_view option, std::string_view text, uint64_t min, uint64_t max);
double real_option(std::string_view option, std::string_view text, double min, double max);
uint64_t size_option(std::string_view option, std::string_view text, uint64_t min, uint64_t max);

// A list option's names, each value split at commas ("--vendor amd,intel --vendor arm"); an
// empty name ("", "amd,,intel") is refused.
std::vector<std::string> names_option(std::string_view option,
                                      const std::vector<std::string>& values);

}  // namespace hal::tool
