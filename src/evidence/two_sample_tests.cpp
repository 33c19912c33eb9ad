// Welch's t-test and Mann-Whitney U, with Boost.Math's Student's t and normal distributions.
#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <numeric>

#include "hal/statistics.hpp"
#include "sample_checks.hpp"

namespace hal::evidence {

WelchTest welch_t_test(std::span<const double> a, std::span<const double> b, double confidence) {
  check_samples(a, "sample a");
  check_samples(b, "sample b");
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double va = variance(a) / na, vb = variance(b) / nb;
  const double se = std::sqrt(va + vb);
  WelchTest out;
  out.difference = mean(b) - mean(a);
  if (se == 0) {  // both sides constant: the difference is known exactly
    out.t = out.difference == 0 ? 0 : std::copysign(INFINITY, out.difference);
    out.df = na + nb - 2;
    out.p_value = out.difference == 0 ? 1 : 0;
    out.ci_low = out.ci_high = out.difference;
    return out;
  }
  out.t = out.difference / se;
  out.df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  const boost::math::students_t t(out.df);
  out.p_value = std::min(1.0, 2 * cdf(complement(t, std::fabs(out.t))));
  const double q = quantile(complement(t, (1 - confidence) / 2));
  out.ci_low = out.difference - q * se;
  out.ci_high = out.difference + q * se;
  return out;
}

MannWhitneyTest mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  check_samples(a, "sample a", 1);
  check_samples(b, "sample b", 1);
  const size_t na = a.size(), nb = b.size(), n = na + nb;
  std::vector<std::pair<double, bool>> pooled;  // value, from a
  pooled.reserve(n);
  for (double v : a) pooled.emplace_back(v, true);
  for (double v : b) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  // Average ranks over runs of ties; the runs' sizes correct the variance.
  double rank_sum_a = 0, tie_term = 0;
  for (size_t start = 0; start < n;) {
    size_t end = start;
    while (end < n && pooled[end].first == pooled[start].first) ++end;
    const double rank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2;
    for (size_t i = start; i < end; ++i)
      if (pooled[i].second) rank_sum_a += rank;
    const double t = static_cast<double>(end - start);
    tie_term += t * t * t - t;
    start = end;
  }
  const double n1 = static_cast<double>(na), n2 = static_cast<double>(nb),
               total = static_cast<double>(n);
  MannWhitneyTest out;
  out.u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double larger = std::max(out.u, n1 * n2 - out.u);
  const double mu = n1 * n2 / 2;
  const double sigma = std::sqrt(n1 * n2 / 12 * ((total + 1) - tie_term / (total * (total - 1))));
  if (!(sigma > 0)) return out;  // every value tied: no evidence either way
  out.z = (larger - mu - 0.5) / sigma;
  out.p_value = std::min(1.0, 2 * cdf(complement(boost::math::normal(), out.z)));
  return out;
}

double median(std::span<const double> values) {
  check_samples(values, "median", 1);
  std::vector<double> sorted(values.begin(), values.end());
  const size_t half = sorted.size() / 2;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(half),
                   sorted.end());
  const double upper = sorted[half];
  if (sorted.size() % 2) return upper;
  return (upper +
          *std::max_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(half))) /
         2;
}

}  // namespace hal::evidence
