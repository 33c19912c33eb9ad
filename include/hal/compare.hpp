// A/B comparison with a sequential design (docs/evidence.md): samples of A and B are analysed at
// looks spaced by doubling (n per side = first_look, 2 first_look, 4 first_look, ...); look k may
// spend alpha / 2^k of the false-positive rate, so however many looks are taken and whenever
// the run stops (a decision, a time limit) the rate stays below alpha (Bonferroni over the
// looks: the union bound of their levels). `hal compare` runs it on devices; tests run it on
// synthetic samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "hal/statistics.hpp"

namespace hal::evidence {

// Latency: lower is better (seconds per run). Throughput: higher is better (work per second).
// Energy: lower is better (joules per run).
enum class Metric { latency, throughput, energy };

struct SequentialDesign {
  double alpha = 0.05;       // the false-positive rate over the whole run
  double min_effect = 0.02;  // relative: a ratio within [1/(1+e), 1+e] counts as no difference
  size_t first_look = 20;    // samples per side at look 1; look k at first_look 2^(k-1)
  double power = 0.8;        // for the estimate of the samples still needed
  size_t resamples = 2000;   // bootstrap resamples
  uint64_t seed = 1;         // of the bootstrap
};

// Refuses a design it cannot honour (alpha outside (0, 0.5), ...), naming the field.
void check_design(const SequentialDesign& design);
// The level look k (from 1) tests at: alpha / 2^k.
double look_alpha(const SequentialDesign& design, int look);
// Samples per side at look k.
size_t look_size(const SequentialDesign& design, int look);

enum class Decision {
  differ,      // both tests reject "no difference" at the look's level
  equivalent,  // the look's (1 - 2 alpha_k) interval of the log ratio lies within +-min_effect
  undecided,
};

struct Analysis {
  int look = 0;
  double look_alpha = 0;
  size_t n_a = 0, n_b = 0;
  RatioInterval ratio;  // median(b) / median(a), bootstrap interval at 1 - alpha
  WelchTest welch;      // on the logs; its interval at 1 - 2 look_alpha (equivalence test)
  MannWhitneyTest mann_whitney;
  double effect_size = 0;  // Hedges' g of the logs, b - a
  Decision decision = Decision::undecided;
  // Undecided: more samples per side for `power` against min_effect (the observed difference
  // when min_effect is 0) at the next look's level. Where the samples taken have that power
  // already (power_met: one test rejects and the other does not, or neither by chance), those
  // that the next look takes instead.
  size_t more_samples = 0;
  bool power_met = false;
};

// Analyses samples (positive values in the metric's unit) at look `look`.
Analysis analyze(std::span<const double> a, std::span<const double> b,
                 const SequentialDesign& design, int look);

// Runs the design: `draw` appends one sample to each side (the caller chooses their order),
// until a look decides, `may_continue` says no (a time limit) or `max_samples` per side are
// taken; then the last analysis: of the samples taken, or, when `may_continue` said no before
// any sample since the last look, that look's. `may_continue` is asked before each draw, so a
// time limit is overrun by one draw and one analysis (whose bootstrap costs the same at any n).
// Fewer than 2 samples per side by then is InvalidArgument.
struct SequentialRun {
  Analysis analysis;
  std::vector<double> a, b;
};
SequentialRun run_sequential(
    const SequentialDesign& design,
    const std::function<void(std::vector<double>& a, std::vector<double>& b)>& draw,
    const std::function<bool()>& may_continue, size_t max_samples);

// The ratio the tests decide on: geometric mean of B over that of A (exp of Welch's difference
// of log means), with its interval at mean_ratio_confidence = 1 - 2 look_alpha.
RatioInterval mean_ratio(const Analysis& analysis);
double mean_ratio_confidence(const Analysis& analysis);

// "B faster by 23 % (95 % CI 19–27 %, p < 1e-6, n = 20+20)" (energy: "B uses less energy by
// 23 % ..."), "no difference larger than 2 % (...)": from mean_ratio, so the claim and its
// interval are those of the decision; the level to 4 significant digits, or as many more as keep
// it below 100. "inconclusive: need ≈ 120 more samples per side (...)", or with power_met "the
// next look takes 640 more samples per side (...)", led by the test that did not reject where
// the other did ("Mann-Whitney's test does not reject no difference at this look's level ...
// while Welch's t-test does; "): the median ratio and its bootstrap interval.
std::string verdict(const Analysis& analysis, const SequentialDesign& design, Metric metric);

}  // namespace hal::evidence
