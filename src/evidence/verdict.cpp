// The verdict in words, from an analysis.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hal/compare.hpp"

namespace hal::evidence {
namespace {

std::string percent(double fraction) {
  char text[32];
  const double p = 100 * fraction;
  std::snprintf(text, sizeof text, std::fabs(p) >= 9.95 ? "%.0f" : "%.1f", p);
  return text;
}

std::string p_text(double p) {
  if (p < 1e-6) return "p < 1e-6";
  char text[32];
  std::snprintf(text, sizeof text, "p = %.2g", p);
  return text;
}

std::string sizes(const Analysis& a) {
  return "n = " + std::to_string(a.n_a) + "+" + std::to_string(a.n_b);
}

// 95, 97.5, 98.75: a later look's level in full, to 4 significant digits or as many more as keep
// a level below 1 from reading 100 (look 13's 99.9988 % was "100 % CI").
std::string confidence(double level) {
  char text[48];
  for (int digits = 4; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, 100 * level);
    if (std::strtod(text, nullptr) < 100) break;
  }
  return std::string(text) + " % CI ";
}

std::string ratio_text(const RatioInterval& r, double level) {
  char text[96];
  std::snprintf(text, sizeof text, "B/A %.3f, %s%.3f–%.3f", r.ratio, confidence(level).c_str(),
                r.low, r.high);
  return text;
}

// Where one test rejects "no difference" at the look's level and the other does not, which did
// not: the sides then differ in a way one test sees (a slow path in a minority of runs moves
// the mean of the logs, not the ranks), and a "differ" needs both.
std::string split_tests(const Analysis& a) {
  const bool welch = a.welch.p_value < a.look_alpha,
             mann_whitney = a.mann_whitney.p_value < a.look_alpha;
  if (welch == mann_whitney) return "";
  char level[32];
  std::snprintf(level, sizeof level, "%.2g", a.look_alpha);
  const std::string which = welch ? "Mann-Whitney's test" : "Welch's t-test";
  const double p = welch ? a.mann_whitney.p_value : a.welch.p_value;
  return which + " does not reject no difference at this look's level " + level + " (" + p_text(p) +
         ") while " + (welch ? "Welch's t-test" : "Mann-Whitney's test") + " does; ";
}

}  // namespace

RatioInterval mean_ratio(const Analysis& a) {
  return {std::exp(a.welch.difference), std::exp(a.welch.ci_low), std::exp(a.welch.ci_high)};
}

double mean_ratio_confidence(const Analysis& a) { return 1 - 2 * a.look_alpha; }

std::string verdict(const Analysis& a, const SequentialDesign& d, Metric metric) {
  const std::string tail = p_text(a.welch.p_value) + ", " + sizes(a) + ")";
  // analyze() leaves no estimate for sides identical in every sample: more of them would not
  // decide, so "need ≈ N more" would mislead.
  if (a.decision == Decision::undecided && a.more_samples == 0)
    return std::string(
               "inconclusive: every sample of A and B is the same value, so more samples "
               "cannot tell them apart") +
           (d.min_effect > 0 ? "" : ", and a min_effect of 0 never calls sides equivalent") + " (" +
           ratio_text(a.ratio, 1 - d.alpha) + ", " + tail;
  if (a.decision == Decision::undecided)
    return "inconclusive: " + split_tests(a) + (a.power_met ? "the next look takes " : "need ≈ ") +
           std::to_string(a.more_samples) + " more samples per side (" +
           ratio_text(a.ratio, 1 - d.alpha) + ", " + tail;
  // A claim states the figure the tests decided on: Welch's difference of log means, as a ratio
  // of geometric means with its interval. The median ratio may point the other way (a slow
  // path in a minority of B's runs moves the mean of the logs, not the median).
  const RatioInterval r = mean_ratio(a);
  const double level = mean_ratio_confidence(a);
  if (a.decision == Decision::equivalent)
    return "no difference larger than " + percent(d.min_effect) + " % (" + ratio_text(r, level) +
           ", " + tail;
  // A ratio of latencies (or energies) below 1, or of throughputs above 1, means B is better.
  const bool higher_is_better = metric == Metric::throughput;
  const bool b_faster = higher_is_better ? r.ratio > 1 : r.ratio < 1;
  const double sign = b_faster == higher_is_better ? 1 : -1;
  double by = sign * (r.ratio - 1), low = sign * (r.low - 1), high = sign * (r.high - 1);
  if (low > high) std::swap(low, high);
  const char* better = metric == Metric::energy ? "uses less energy" : "faster";
  const char* worse = metric == Metric::energy ? "uses more energy" : "slower";
  std::string text = std::string("B ") + (b_faster ? better : worse) + " by " + percent(by) +
                     " % (" + confidence(level) + percent(low) + "–" + percent(high) + " %, " +
                     tail;
  if (d.min_effect > 0 && std::fabs(a.welch.difference) < std::log1p(d.min_effect))
    text += "; smaller than the " + percent(d.min_effect) + " % that counts";
  return text;
}

}  // namespace hal::evidence
