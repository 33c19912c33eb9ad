// How far two results' elements are apart, for the checks that call a run "ok": std::max over
// fabs(a - b) skips a NaN (max(x, NaN) is x), which called an all-NaN result agreeing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>

namespace hal::tool {

// 0 for equal values (infinities of one sign, NaN against NaN: both sides computed the same
// thing), infinity where one side alone is NaN or infinite, else |a - b|.
inline double element_difference(double a, double b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return 0;
  if (std::isnan(a) || std::isnan(b)) return INFINITY;
  return std::fabs(a - b);
}

// A result held against a reference of the same size, element by element.
struct Agreement {
  double max_difference = 0;  // the largest element_difference
  double sum = 0;             // of the element_differences (infinite when one is)
  size_t nonfinite = 0;       // elements whose difference is infinite
  // relative x max(1, largest finite |reference value|): an infinite reference value is left
  // out of the scale, as it made the tolerance infinite and any answer agree with it.
  double tolerance = 0;
  // Every difference finite (one side alone NaN or infinite, or infinities of opposite signs, is
  // a disagreement) and within the tolerance.
  bool agree() const { return nonfinite == 0 && max_difference <= tolerance; }
};

inline Agreement agreement(std::span<const float> result, std::span<const float> reference,
                           double relative = 1e-3) {
  Agreement out;
  double largest = 0;
  const size_t n = std::min(result.size(), reference.size());
  for (size_t i = 0; i < n; ++i) {
    const double d = element_difference(result[i], reference[i]);
    out.nonfinite += std::isfinite(d) ? 0 : 1;
    out.max_difference = std::max(out.max_difference, d);
    out.sum += d;
    if (std::isfinite(reference[i]))
      largest = std::max(largest, std::fabs(static_cast<double>(reference[i])));
  }
  out.tolerance = relative * std::max(1.0, largest);
  return out;
}

// The index of a row's largest value as NumPy's and PyTorch's argmax give it: a NaN is the
// largest, the first one winning (std::max_element passes over a NaN that is not first, which
// counted a row with a NaN as having its label). 0 for an empty row.
inline size_t row_argmax(std::span<const float> row) {
  size_t best = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    if (std::isnan(row[i])) return i;
    if (row[i] > row[best]) best = i;
  }
  return best;
}

}  // namespace hal::tool
