// Checks shared by the statistics: enough samples, finite (and positive) values.
#pragma once

#include <span>
#include <string>

namespace hal::evidence {

// A value as an error quotes it, by %g: std::to_string's six decimals made -1e-9 "-0.000000".
std::string value_text(double value);

// At least `min` finite values, or InvalidArgument naming `side`.
void check_samples(std::span<const double> values, const char* side, size_t min = 2);
// As check_samples, and every value above 0 (a ratio or a log of them needs it), or
// InvalidArgument naming `side`, the sample and its value.
void check_positive_samples(std::span<const double> values, const char* side, size_t min = 2);

double mean(std::span<const double> values);
// The unbiased sample variance (n - 1 in the denominator).
double variance(std::span<const double> values);

}  // namespace hal::evidence
