// Effect size and the power of a two-sample t-test (Boost.Math's noncentral t).
#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <exception>
#include <string>

#include "hal/error.hpp"
#include "hal/statistics.hpp"
#include "sample_checks.hpp"

namespace hal::evidence {

double hedges_g(std::span<const double> a, std::span<const double> b) {
  check_samples(a, "sample a");
  check_samples(b, "sample b");
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double pooled =
      std::sqrt(((na - 1) * variance(a) + (nb - 1) * variance(b)) / (na + nb - 2));
  const double difference = mean(b) - mean(a);
  if (pooled == 0) return difference == 0 ? 0 : std::copysign(INFINITY, difference);
  return difference / pooled * (1 - 3 / (4 * (na + nb) - 9));
}

double t_test_power(double d, size_t n, double alpha) {
  if (n < 2 || !(alpha > 0 && alpha < 1) || !std::isfinite(d))
    throw Error(ErrorCode::InvalidArgument,
                "t_test_power: needs n >= 2, alpha in (0, 1) and a finite effect (got n " +
                    std::to_string(n) + ", alpha " + value_text(alpha) + ", d " + value_text(d) +
                    ")");
  const double df = 2 * static_cast<double>(n) - 2;
  const double delta = std::fabs(d) * std::sqrt(static_cast<double>(n) / 2);
  try {
    const double critical = quantile(complement(boost::math::students_t(df), alpha / 2));
    const boost::math::non_central_t shifted(df, delta);
    return cdf(complement(shifted, critical)) + cdf(shifted, -critical);
  } catch (const std::exception&) {
    // Boost's series cannot take a noncentrality of tens of thousands (it counts terms in an
    // int); there the t-test is as good as the z-test and the normal approximation is exact to
    // double precision.
    const boost::math::normal z;
    const double critical = quantile(complement(z, alpha / 2));
    return cdf(complement(z, critical - delta)) + cdf(z, -critical - delta);
  }
}

size_t samples_for_power(double d, double alpha, double power, size_t max_n) {
  if (!(power > 0 && power < 1))
    throw Error(ErrorCode::InvalidArgument,
                "samples_for_power: power must lie in (0, 1), got " + value_text(power));
  (void)t_test_power(d, 2, alpha);  // refuses a NaN effect or an alpha outside (0, 1)
  if (d == 0 || max_n <= 2) return max_n;
  // Power grows with n: double to bracket the answer (from below: a large effect is settled at a
  // small n, and the cap's huge noncentrality is never evaluated unless needed), then bisect.
  size_t low = 2, high = 2;
  while (t_test_power(d, high, alpha) < power) {
    if (high == max_n) return max_n;
    low = high;
    high = high > max_n / 2 ? max_n : high * 2;
  }
  while (low < high) {
    const size_t middle = low + (high - low) / 2;
    if (t_test_power(d, middle, alpha) >= power)
      high = middle;
    else
      low = middle + 1;
  }
  return high;
}

}  // namespace hal::evidence
