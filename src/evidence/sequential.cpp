// The sequential design: looks at doubling sample sizes, each at its share of alpha.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hal/compare.hpp"
#include "hal/error.hpp"
#include "sample_checks.hpp"

namespace hal::evidence {
namespace {

bool constant(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; });
}

// Constant sides that differ: Welch's p is 0 already, and Mann-Whitney's falls as n grows for as
// long as the samples stay as they are. The least n per side above `have` at which it passes
// `level`, or `cap`.
size_t apart_samples_needed(double value_a, double value_b, double level, size_t have, size_t cap) {
  const auto passes = [&](size_t n) {
    const std::vector<double> a(n, value_a), b(n, value_b);
    return mann_whitney_u(a, b).p_value < level;
  };
  // Double to bracket the answer, then bisect: `low` fails, `high` passes.
  size_t low = have, high = have + 1;
  while (!passes(high)) {
    if (high >= cap) return cap;
    low = high;
    high = std::min(cap, 2 * high);
  }
  while (high - low > 1) {
    const size_t middle = low + (high - low) / 2;
    if (passes(middle))
      high = middle;
    else
      low = middle;
  }
  return high;
}

}  // namespace

void check_design(const SequentialDesign& d) {
  const auto refuse = [](const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "comparison design: " + what);
  };
  // The floor keeps every look's 1 - 2 alpha_k a double below 1 (at 1e-16 it rounded to 1 and
  // Boost's quantile threw overflow_error out of analyze).
  if (!(d.alpha >= 1e-9 && d.alpha < 0.5))
    refuse("alpha must lie in [1e-09, 0.5), got " + value_text(d.alpha));
  if (!(d.min_effect >= 0 && d.min_effect < 10))
    refuse("min_effect must lie in [0, 10), got " + value_text(d.min_effect));
  if (d.first_look < 3)
    refuse("first_look must be at least 3, got " + std::to_string(d.first_look));
  if (!(d.power > 0 && d.power < 1)) refuse("power must lie in (0, 1), got " + value_text(d.power));
  if (d.resamples < 100)
    refuse("resamples must be at least 100, got " + std::to_string(d.resamples));
}

double look_alpha(const SequentialDesign& design, int look) {
  return std::ldexp(design.alpha, -std::max(1, look));
}

size_t look_size(const SequentialDesign& design, int look) {
  return design.first_look << std::min(40, std::max(0, look - 1));
}

Analysis analyze(std::span<const double> a, std::span<const double> b,
                 const SequentialDesign& design, int look) {
  check_design(design);
  const std::vector<double> log_a = logs(a, "sample a"), log_b = logs(b, "sample b");
  Analysis out;
  out.look = look;
  out.look_alpha = look_alpha(design, look);
  out.n_a = a.size();
  out.n_b = b.size();
  out.ratio = bootstrap_median_ratio(a, b, 1 - design.alpha, design.resamples, design.seed);
  out.welch = welch_t_test(log_a, log_b, 1 - 2 * out.look_alpha);
  out.mann_whitney = mann_whitney_u(a, b);
  out.effect_size = hedges_g(log_a, log_b);
  const double margin = std::log1p(design.min_effect);
  if (out.welch.p_value < out.look_alpha && out.mann_whitney.p_value < out.look_alpha)
    out.decision = Decision::differ;
  else if (design.min_effect > 0 && out.welch.ci_low > -margin && out.welch.ci_high < margin)
    out.decision = Decision::equivalent;
  if (out.decision != Decision::undecided) return out;
  const size_t have = std::min(a.size(), b.size());
  if (constant(a) && constant(b)) {
    // Identical sides, reached with min_effect 0 alone (Welch's interval is then a point at 0,
    // inside any other margin): no number of samples tells them apart, so there is no estimate,
    // which more_samples 0 says (verdict). Sides apart: what Mann-Whitney needs at the next
    // look's level (a million per side at most: its vectors are made).
    if (a[0] != b[0]) {
      const size_t cap = std::max(have + 1, size_t{1'000'000});
      out.more_samples =
          apart_samples_needed(a[0], b[0], look_alpha(design, look + 1), have, cap) - have;
    }
    return out;
  }
  // Power against the smallest difference that counts, at the next look's level.
  const double spread = std::sqrt((variance(log_a) + variance(log_b)) / 2);
  const double target = design.min_effect > 0 ? margin : std::fabs(out.welch.difference);
  constexpr size_t kCap = 1'000'000'000;
  const size_t need = spread == 0 ? have
                                  : samples_for_power(target / spread, look_alpha(design, look + 1),
                                                      design.power, kCap);
  if (need > have) {
    out.more_samples = need - have;
    return out;
  }
  // The samples taken have that power already (one test rejects and the other does not, or
  // neither, by chance): what the next look would take. "Need 1 more" promised a decision that
  // one more sample would not bring.
  out.power_met = true;
  const size_t next = look_size(design, look + 1);
  out.more_samples = next > have ? next - have : have;
  return out;
}

SequentialRun run_sequential(
    const SequentialDesign& design,
    const std::function<void(std::vector<double>& a, std::vector<double>& b)>& draw,
    const std::function<bool()>& may_continue, size_t max_samples) {
  check_design(design);
  SequentialRun run;
  size_t analysed_a = 0, analysed_b = 0;  // the samples of the last look
  for (int look = 1;; ++look) {
    const size_t size = std::min(look_size(design, look), max_samples);
    bool stopped = false;
    while (run.a.size() < size && run.b.size() < size) {
      if (!may_continue()) {
        stopped = true;
        break;
      }
      draw(run.a, run.b);
    }
    // Stopped with no sample since the last look: that look's analysis stands. Analysing the same
    // samples again (at the next look's level) decided nothing new and, at a large n, took as
    // long as the look itself past the time limit.
    if (stopped && run.a.size() == analysed_a && run.b.size() == analysed_b && look > 1) return run;
    stopped = stopped || size == max_samples;
    if (run.a.size() < 2 || run.b.size() < 2)
      throw Error(ErrorCode::InvalidArgument,
                  "comparison: time ran out after " + std::to_string(run.a.size()) + "+" +
                      std::to_string(run.b.size()) +
                      " samples; at least 2 per side are needed (allow more time)");
    run.analysis = analyze(run.a, run.b, design, look);
    analysed_a = run.a.size();
    analysed_b = run.b.size();
    if (stopped || run.analysis.decision != Decision::undecided) return run;
  }
}

}  // namespace hal::evidence
