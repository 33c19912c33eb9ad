// How far two results' elements are apart, for the checks that call a run "ok": std::max over
// fabs(a - b) skips a NaN (max(x, NaN) is x), which called an all-NaN result agreeing.
#pragma once

#include <cmath>

namespace hal::tool {

// 0 for equal values (infinities of one sign, NaN against NaN: both sides computed the same
// thing), infinity where one side alone is NaN or infinite, else |a - b|.
inline double element_difference(double a, double b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return 0;
  if (std::isnan(a) || std::isnan(b)) return INFINITY;
  return std::fabs(a - b);
}

}  // namespace hal::tool
