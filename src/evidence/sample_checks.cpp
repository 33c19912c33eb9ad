#include "sample_checks.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "hal/error.hpp"
#include "hal/statistics.hpp"

namespace hal::evidence {
std::string value_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

void check_samples(std::span<const double> values, const char* side, size_t min) {
  if (values.size() < min)
    throw Error(ErrorCode::InvalidArgument,
                std::string(side) + ": " + std::to_string(values.size()) + " samples; at least " +
                    std::to_string(min) + " are needed");
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw Error(ErrorCode::InvalidArgument, std::string(side) + ": sample " + std::to_string(i) +
                                                  " is not finite (" + value_text(values[i]) + ")");
}

void check_positive_samples(std::span<const double> values, const char* side, size_t min) {
  check_samples(values, side, min);
  for (size_t i = 0; i < values.size(); ++i)
    if (!(values[i] > 0))
      throw Error(ErrorCode::InvalidArgument, std::string(side) + ": sample " + std::to_string(i) +
                                                  " (" + value_text(values[i]) +
                                                  ") is not positive");
}

// Around the first value: samples all equal have exactly that mean (a plain sum / n of 18
// copies of c is not c, and Welch's test then found two constant sides of different sizes
// apart, t = -4, p < 1e-6).
double mean(std::span<const double> values) {
  if (values.empty()) return NAN;
  const double first = values[0];
  double sum = 0;
  for (double v : values) sum += v - first;
  return first + sum / static_cast<double>(values.size());
}

double variance(std::span<const double> values) {
  const double m = mean(values);
  double sum = 0;
  for (double v : values) sum += (v - m) * (v - m);
  return sum / static_cast<double>(values.size() - 1);
}

std::vector<double> logs(std::span<const double> values, const char* side) {
  std::vector<double> out;
  out.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] > 0) || !std::isfinite(values[i]))
      throw Error(ErrorCode::InvalidArgument, std::string(side) + ": sample " + std::to_string(i) +
                                                  " (" + value_text(values[i]) +
                                                  ") is not a positive finite number");
    out.push_back(std::log(values[i]));
  }
  return out;
}

}  // namespace hal::evidence
