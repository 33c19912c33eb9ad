// The verdict in words, from an analysis.
#include <cmath>
#include <cstdio>
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

std::string confidence(const SequentialDesign& d) { return percent(1 - d.alpha) + " % CI "; }

std::string ratio_text(const Analysis& a, const SequentialDesign& d) {
  char text[96];
  std::snprintf(text, sizeof text, "B/A %.3f, %s%.3f–%.3f", a.ratio.ratio, confidence(d).c_str(),
                a.ratio.low, a.ratio.high);
  return text;
}

}  // namespace

std::string verdict(const Analysis& a, const SequentialDesign& d, Metric metric) {
  const std::string tail = p_text(a.welch.p_value) + ", " + sizes(a) + ")";
  if (a.decision == Decision::equivalent)
    return "no difference larger than " + percent(d.min_effect) + " % (" + ratio_text(a, d) + ", " +
           tail;
  if (a.decision == Decision::undecided)
    return "inconclusive: need ≈ " + std::to_string(a.more_samples) + " more samples per side (" +
           ratio_text(a, d) + ", " + tail;
  // A ratio of latencies (or energies) below 1, or of throughputs above 1, means B is better.
  const bool higher_is_better = metric == Metric::throughput;
  const bool b_faster = higher_is_better ? a.ratio.ratio > 1 : a.ratio.ratio < 1;
  const double sign = b_faster == higher_is_better ? 1 : -1;
  double by = sign * (a.ratio.ratio - 1), low = sign * (a.ratio.low - 1),
         high = sign * (a.ratio.high - 1);
  if (low > high) std::swap(low, high);
  const char* better = metric == Metric::energy ? "uses less energy" : "faster";
  const char* worse = metric == Metric::energy ? "uses more energy" : "slower";
  std::string text = std::string("B ") + (b_faster ? better : worse) + " by " + percent(by) +
                     " % (" + confidence(d) + percent(low) + "–" + percent(high) + " %, " + tail;
  if (d.min_effect > 0 && std::fabs(std::log(a.ratio.ratio)) < std::log1p(d.min_effect))
    text += "; smaller than the " + percent(d.min_effect) + " % that counts";
  return text;
}

}  // namespace hal::evidence
