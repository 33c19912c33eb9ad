#include "option_values.hpp"

#include "hal/error.hpp"
#include "hal/units.hpp"

namespace hal::tool {
namespace {

template <class T>
T value_of(const Parsed<T>& parsed) {
  if (!parsed.value) throw Error(ErrorCode::InvalidArgument, parsed.error);
  return *parsed.value;
}

}  // namespace

uint64_t count_option(std::string_view option, std::string_view text, uint64_t min, uint64_t max) {
  return value_of(parse_count(option, text, min, max));
}

double real_option(std::string_view option, std::string_view text, double min, double max) {
  return value_of(parse_real(option, text, min, max));
}

uint64_t size_option(std::string_view option, std::string_view text, uint64_t min, uint64_t max) {
  return value_of(parse_size(option, text, min, max));
}

std::vector<std::string> names_option(std::string_view option,
                                      const std::vector<std::string>& values) {
  std::vector<std::string> names;
  for (const std::string& value : values)
    for (size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
      comma = value.find(',', start);
      const std::string name = value.substr(start, comma - start);
      if (name.find_first_not_of(" \t") == std::string::npos)
        throw Error(ErrorCode::InvalidArgument, std::string(option) + ": an empty name in '" +
                                                    value + "'; give names separated by commas");
      names.push_back(name);
    }
  return names;
}

}  // namespace hal::tool
