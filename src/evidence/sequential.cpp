// The sequential design: looks at doubling sample sizes, each at its share of alpha.
#include <algorithm>
#include <cmath>
#include <string>

#include "hal/compare.hpp"
#include "hal/error.hpp"
#include "sample_checks.hpp"

namespace hal::evidence {

void check_design(const SequentialDesign& d) {
  const auto refuse = [](const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, "comparison design: " + what);
  };
  if (!(d.alpha > 0 && d.alpha < 0.5))
    refuse("alpha must lie in (0, 0.5), got " + std::to_string(d.alpha));
  if (!(d.min_effect >= 0 && d.min_effect < 10))
    refuse("min_effect must lie in [0, 10), got " + std::to_string(d.min_effect));
  if (d.first_look < 3)
    refuse("first_look must be at least 3, got " + std::to_string(d.first_look));
  if (!(d.power > 0 && d.power < 1))
    refuse("power must lie in (0, 1), got " + std::to_string(d.power));
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
  // Power against the smallest difference that counts, at the next look's level.
  const double spread = std::sqrt((variance(log_a) + variance(log_b)) / 2);
  const double target = design.min_effect > 0 ? margin : std::fabs(out.welch.difference);
  const size_t have = std::min(a.size(), b.size());
  constexpr size_t kCap = 1'000'000'000;
  const size_t need = spread == 0 ? have
                                  : samples_for_power(target / spread, look_alpha(design, look + 1),
                                                      design.power, kCap);
  out.more_samples = need > have ? need - have : 1;
  return out;
}

SequentialRun run_sequential(
    const SequentialDesign& design,
    const std::function<void(std::vector<double>& a, std::vector<double>& b)>& draw,
    const std::function<bool()>& may_continue, size_t max_samples) {
  check_design(design);
  SequentialRun run;
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
    stopped = stopped || size == max_samples;
    if (run.a.size() < 2 || run.b.size() < 2)
      throw Error(ErrorCode::InvalidArgument,
                  "comparison: time ran out after " + std::to_string(run.a.size()) + "+" +
                      std::to_string(run.b.size()) +
                      " samples; at least 2 per side are needed (allow more time)");
    run.analysis = analyze(run.a, run.b, design, look);
    if (stopped || run.analysis.decision != Decision::undecided) return run;
  }
}

}  // namespace hal::evidence
