// Checks shared by the statistics: enough samples, finite values.
#pragma once

#include <span>

namespace hal::evidence {

// At least `min` finite values, or InvalidArgument naming `side`.
void check_samples(std::span<const double> values, const char* side, size_t min = 2);

double mean(std::span<const double> values);
// The unbiased sample variance (n - 1 in the denominator).
double variance(std::span<const double> values);

}  // namespace hal::evidence
