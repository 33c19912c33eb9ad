// "{256, 1, 1}": how launch errors show a 3-d size.
#pragma once

#include <string>

namespace hal::detail {

std::string format_sizes(const auto& values) {
  // Appended piecewise: g++ 12 -O3 warns falsely (-Wrestrict) on "{" + std::to_string(...).
  std::string text = "{";
  for (int d = 0; d < 3; ++d) {
    if (d) text += ", ";
    text += std::to_string(values[d]);
  }
  return text + "}";
}

}  // namespace hal::detail
