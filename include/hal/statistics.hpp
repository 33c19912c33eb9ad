// The statistics behind `hal compare` (docs/evidence.md): two-sample tests, a bootstrap
// interval, an effect size and a power estimate, on Boost.Math's distributions and quantiles.
// Times are compared on a log scale: a device's run times are skewed and multiplicative
// effects (B takes 10 % longer) become shifts.
//
// Errors: fewer than 2 samples on a side, or a value that is not finite (or not positive where a
// log is taken), is InvalidArgument naming the side and the value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hal::evidence {

// Welch's unequal-variance t-test of mean(b) - mean(a), two-sided.
struct WelchTest {
  double t = 0, df = 0, p_value = 1;
  double difference = 0;           // mean(b) - mean(a)
  double ci_low = 0, ci_high = 0;  // its interval at the `confidence` asked for
};
WelchTest welch_t_test(std::span<const double> a, std::span<const double> b,
                       double confidence = 0.95);

// The natural logs of positive, finite values (`side` names them in errors).
std::vector<double> logs(std::span<const double> values, const char* side);

// Mann-Whitney U, two-sided, by the normal approximation with the tie-corrected variance and a
// continuity correction (SciPy's method="asymptotic"). `u` is a's U: the pairs (a_i, b_j) with
// a_i > b_j, ties counted a half.
struct MannWhitneyTest {
  double u = 0, z = 0, p_value = 1;
};
MannWhitneyTest mann_whitney_u(std::span<const double> a, std::span<const double> b);

double median(std::span<const double> values);

// median(b) / median(a), with the percentile bootstrap interval at `confidence` (each side
// resampled with replacement, `resamples` times; the same seed gives the same interval). A
// resample's median is drawn from its exact distribution over the sorted sample, so the cost is
// a sort and O(resamples), whatever the sample size.
struct RatioInterval {
  double ratio = 1, low = 1, high = 1;
};
RatioInterval bootstrap_median_ratio(std::span<const double> a, std::span<const double> b,
                                     double confidence, size_t resamples, uint64_t seed);

// Hedges' g: (mean(b) - mean(a)) / pooled SD, times 1 - 3 / (4 (na + nb) - 9).
double hedges_g(std::span<const double> a, std::span<const double> b);

// The power of a two-sided two-sample t-test at `alpha` with n per side against the
// standardised effect d (noncentral t, df 2n - 2, noncentrality d sqrt(n / 2)).
double t_test_power(double d, size_t n, double alpha);
// The least n per side with at least `power` (capped at `max_n`, returned when not reached).
size_t samples_for_power(double d, double alpha, double power, size_t max_n = 100'000'000);

}  // namespace hal::evidence
