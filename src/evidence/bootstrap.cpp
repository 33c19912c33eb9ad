// The percentile bootstrap of the ratio of medians.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "hal/error.hpp"
#include "hal/statistics.hpp"
#include "sample_checks.hpp"

namespace hal::evidence {
namespace {

// The median of `values` drawn with replacement (into `scratch`).
double resampled_median(std::span<const double> values, std::vector<double>& scratch,
                        std::mt19937_64& random) {
  std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
  scratch.resize(values.size());
  for (double& v : scratch) v = values[pick(random)];
  return median(scratch);
}

// NumPy's default percentile: linear between the order statistics around q (n - 1).
double percentile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(at));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (at - static_cast<double>(below));
}

}  // namespace

RatioInterval bootstrap_median_ratio(std::span<const double> a, std::span<const double> b,
                                     double confidence, size_t resamples, uint64_t seed) {
  // Every value, not only the medians, must be positive: a resample's median of 0 would make
  // its ratio infinite, a negative one flip its sign. (analyze() refuses such samples before.)
  check_positive_samples(a, "bootstrap: sample a", 1);
  check_positive_samples(b, "bootstrap: sample b", 1);
  if (!(confidence > 0 && confidence < 1) || resamples < 10)
    throw Error(ErrorCode::InvalidArgument,
                "bootstrap: confidence must lie in (0, 1) and resamples be at least 10 (got " +
                    std::to_string(confidence) + " and " + std::to_string(resamples) + ")");
  const double median_a = median(a);
  std::mt19937_64 random(seed);
  std::vector<double> ratios, scratch;
  ratios.reserve(resamples);
  for (size_t r = 0; r < resamples; ++r) {
    const double ma = resampled_median(a, scratch, random);
    const double mb = resampled_median(b, scratch, random);
    ratios.push_back(mb / ma);
  }
  std::sort(ratios.begin(), ratios.end());
  return {median(b) / median_a, percentile(ratios, (1 - confidence) / 2),
          percentile(ratios, (1 + confidence) / 2)};
}

}  // namespace hal::evidence
