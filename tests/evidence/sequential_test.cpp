// The sequential design on synthetic samples: A/A runs reject no more often than alpha (with
// optional stopping), a planted 10 % difference is found with an interval that covers it, equal
// sides are called equivalent, and the verdict reads as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "hal/compare.hpp"
#include "test_util.hpp"

namespace {

namespace ev = hal::evidence;

// Run times: lognormal around `median` with spread `sigma`, and now and then a slow outlier (a
// preempted run), as a loaded host gives.
class Timer {
 public:
  Timer(uint64_t seed, double sigma) : random_(seed), noise_(0, sigma) {}
  double draw(double median) {
    const double t = median * std::exp(noise_(random_));
    return outlier_(random_) < 0.02 ? 3 * t : t;
  }

 private:
  std::mt19937_64 random_;
  std::normal_distribution<double> noise_;
  std::uniform_real_distribution<double> outlier_{0, 1};
};

ev::SequentialDesign quick_design() {
  ev::SequentialDesign d;
  d.first_look = 10;
  d.resamples = 200;  // the interval is reported, not decided on: few resamples keep this fast
  return d;
}

ev::SequentialRun simulate(const ev::SequentialDesign& design, uint64_t seed, double ratio,
                           size_t max_samples) {
  Timer timer(seed, 0.05);
  return ev::run_sequential(
      design,
      [&](std::vector<double>& a, std::vector<double>& b) {
        a.push_back(timer.draw(1e-3));
        b.push_back(timer.draw(1e-3 * ratio));
      },
      [] { return true; }, max_samples);
}

constexpr int kRepetitions = 200;

TEST(Sequential, LooksDoubleAndSpendHalfOfWhatIsLeft) {
  const ev::SequentialDesign d = quick_design();
  EXPECT_EQ(ev::look_size(d, 1), 10u);
  EXPECT_EQ(ev::look_size(d, 4), 80u);
  EXPECT_DOUBLE_EQ(ev::look_alpha(d, 1), 0.025);
  EXPECT_DOUBLE_EQ(ev::look_alpha(d, 3), 0.05 / 8);
  double spent = 0;
  for (int look = 1; look <= 40; ++look) spent += ev::look_alpha(d, look);
  EXPECT_LT(spent, d.alpha);
}

// 200 A/A runs of up to 5 looks (10 to 160 samples per side), fixed seeds: the design rejects at
// most alpha plus two binomial standard deviations of the time, while testing at alpha at every
// look (optional stopping done wrong) rejects more often.
TEST(Sequential, AaRunsRejectAtMostAlpha) {
  const ev::SequentialDesign design = quick_design();
  int rejected = 0, naive_rejected = 0, fixed_rejected = 0;
  for (int r = 0; r < kRepetitions; ++r) {
    const ev::SequentialRun run = simulate(design, 1000 + r, 1.0, 160);
    rejected += run.analysis.decision == ev::Decision::differ;
    // One test of 160 + 160 fresh samples at alpha: the samples are A/A, the test calibrated.
    Timer timer(3000 + r, 0.05);
    std::vector<double> fresh_a, fresh_b;
    for (int i = 0; i < 160; ++i)
      fresh_a.push_back(timer.draw(1e-3)), fresh_b.push_back(timer.draw(1e-3));
    fixed_rejected +=
        ev::welch_t_test(ev::logs(fresh_a, "a"), ev::logs(fresh_b, "b")).p_value < design.alpha;
    // The same samples, tested at the full alpha at each look.
    for (int look = 1; look <= 5; ++look) {
      const size_t n = std::min(ev::look_size(design, look), run.a.size());
      const std::span<const double> a(run.a.data(), n), b(run.b.data(), n);
      const auto welch = ev::welch_t_test(ev::logs(a, "a"), ev::logs(b, "b"));
      if (welch.p_value < design.alpha && ev::mann_whitney_u(a, b).p_value < design.alpha) {
        ++naive_rejected;
        break;
      }
      if (n == run.a.size()) break;
    }
  }
  const double rate = double(rejected) / kRepetitions;
  const double tolerance = 2 * std::sqrt(design.alpha * (1 - design.alpha) / kRepetitions);
  std::printf(
      "A/A: the design rejected %d of %d runs, testing at alpha at every look %d, one "
      "Welch test at n = 160 %d\n",
      rejected, kRepetitions, naive_rejected, fixed_rejected);
  EXPECT_LE(rate, design.alpha + tolerance) << rejected << " of " << kRepetitions;
  EXPECT_GT(naive_rejected, rejected) << "the naive rule should reject more";
  EXPECT_GE(fixed_rejected, 2) << "a calibrated test rejects A/A now and then";
  EXPECT_LE(double(fixed_rejected) / kRepetitions, design.alpha + tolerance);
}

TEST(Sequential, PlantedTenPercentIsFoundAndCovered) {
  const ev::SequentialDesign design = quick_design();
  int found = 0, covered = 0;
  constexpr int kRuns = 50;
  for (int r = 0; r < kRuns; ++r) {
    const ev::SequentialRun run = simulate(design, 5000 + r, 1.10, 160);
    found += run.analysis.decision == ev::Decision::differ && run.analysis.ratio.ratio > 1;
    covered += run.analysis.ratio.low <= 1.10 && 1.10 <= run.analysis.ratio.high;
  }
  EXPECT_EQ(found, kRuns);
  EXPECT_GE(covered, kRuns * 85 / 100) << covered << " of " << kRuns;
}

TEST(Sequential, EqualSidesAreCalledEquivalent) {
  ev::SequentialDesign design = quick_design();
  design.min_effect = 0.05;
  int equivalent = 0;
  for (int r = 0; r < 20; ++r)
    equivalent +=
        simulate(design, 9000 + r, 1.0, 640).analysis.decision == ev::Decision::equivalent;
  EXPECT_GE(equivalent, 18);
}

TEST(Sequential, StopsWhenTimeRunsOutAndSaysWhatIsMissing) {
  const ev::SequentialDesign design = quick_design();
  Timer timer(77, 0.05);
  int pairs = 0;
  const ev::SequentialRun run = ev::run_sequential(
      design,
      [&](std::vector<double>& a, std::vector<double>& b) {
        a.push_back(timer.draw(1e-3));
        b.push_back(timer.draw(1.01e-3));
        ++pairs;
      },
      [&] { return pairs < 15; }, 1000);
  EXPECT_EQ(run.a.size(), 15u);
  EXPECT_EQ(run.analysis.look, 2);
  ASSERT_EQ(run.analysis.decision, ev::Decision::undecided);
  EXPECT_GT(run.analysis.more_samples, 0u);
  EXPECT_NE(ev::verdict(run.analysis, design, ev::Metric::latency)
                .find("inconclusive: need ≈ " + std::to_string(run.analysis.more_samples) +
                      " more samples per side"),
            std::string::npos);
  hal::test::expect_error(
      [&] {
        ev::run_sequential(
            design,
            [](std::vector<double>& a, std::vector<double>& b) { a.push_back(1), b.push_back(1); },
            [] { return false; }, 100);
      },
      hal::ErrorCode::InvalidArgument, {"time ran out after 0+0 samples", "allow more time"});
}

// A decided analysis at the first look (its Welch interval at 95 %), the ratio of geometric
// means `ratio` in [low, high]; the median ratio is set apart (1.5) to show which one is stated.
ev::Analysis decided(double ratio, double low, double high, double p) {
  ev::Analysis a;
  a.n_a = a.n_b = 40;
  a.look = 1;
  a.look_alpha = 0.025;
  a.ratio = {1.5, 1.4, 1.6};
  a.welch.difference = std::log(ratio);
  a.welch.ci_low = std::log(low);
  a.welch.ci_high = std::log(high);
  a.welch.p_value = p;
  a.decision = ev::Decision::differ;
  return a;
}

TEST(Sequential, VerdictsReadAsDocumented) {
  const ev::SequentialDesign d;
  EXPECT_EQ(ev::verdict(decided(0.77, 0.73, 0.81, 1e-9), d, ev::Metric::latency),
            "B faster by 23 % (95 % CI 19–27 %, p < 1e-6, n = 40+40)");
  EXPECT_EQ(ev::verdict(decided(1.10, 1.08, 1.12, 0.0031), d, ev::Metric::latency),
            "B slower by 10 % (95 % CI 8.0–12 %, p = 0.0031, n = 40+40)");
  EXPECT_EQ(ev::verdict(decided(1.10, 1.08, 1.12, 0.0031), d, ev::Metric::throughput),
            "B faster by 10 % (95 % CI 8.0–12 %, p = 0.0031, n = 40+40)");
  // Energy, like latency, is better lower.
  EXPECT_EQ(ev::verdict(decided(0.77, 0.73, 0.81, 1e-9), d, ev::Metric::energy),
            "B uses less energy by 23 % (95 % CI 19–27 %, p < 1e-6, n = 40+40)");
  EXPECT_EQ(ev::verdict(decided(1.10, 1.08, 1.12, 0.0031), d, ev::Metric::energy),
            "B uses more energy by 10 % (95 % CI 8.0–12 %, p = 0.0031, n = 40+40)");
  ev::Analysis same = decided(1.001, 0.995, 1.006, 0.7);
  same.decision = ev::Decision::equivalent;
  EXPECT_EQ(ev::verdict(same, d, ev::Metric::latency),
            "no difference larger than 2.0 % (B/A 1.001, 95 % CI 0.995–1.006, p = 0.7, n = "
            "40+40)");
  // A later look states its own level: look 2 tests at 0.0125, its interval is 97.5 %.
  same.look = 2;
  same.look_alpha = 0.0125;
  EXPECT_EQ(ev::verdict(same, d, ev::Metric::latency),
            "no difference larger than 2.0 % (B/A 1.001, 97.5 % CI 0.995–1.006, p = 0.7, n = "
            "40+40)");
}

// The audit's case: B's median is a little faster, but 40 % of its runs take a slow path twice
// as long; both tests find B slower. The verdict says so, with the tested figure's interval.
TEST(Sequential, TheVerdictFollowsTheTestsNotTheMedian) {
  std::vector<double> a, b;
  for (int i = 0; i < 160; ++i) a.push_back(1e-3 * (1 + 2.0 * i / 159));  // 1-3 ms, even
  for (int i = 0; i < 160; ++i) b.push_back((i % 5 < 3 ? 1.96e-3 : 4e-3) * (1 + 1e-5 * i));
  ev::SequentialDesign d;
  const ev::Analysis r = ev::analyze(a, b, d, 1);
  ASSERT_EQ(r.decision, ev::Decision::differ);
  EXPECT_LT(r.ratio.ratio, 1) << "the median ratio says B is faster";
  const ev::RatioInterval m = ev::mean_ratio(r);
  EXPECT_GT(m.low, 1) << "the geometric means say B is slower";
  const std::string text = ev::verdict(r, d, ev::Metric::latency);
  EXPECT_EQ(text.rfind("B slower by ", 0), 0u) << text;
}

// Three samples a side, 5 % apart with a 0.3 % spread: too few for a verdict, and the power
// estimate must not ask Boost for a noncentrality of tens of thousands (it threw "itrunc").
TEST(Sequential, ATightSmallSampleGivesAnEstimateNotAnError) {
  const std::vector<double> a{1.000, 1.003, 0.997}, b{1.050, 1.053, 1.047};
  ev::SequentialDesign d;
  d.first_look = 3;
  const ev::Analysis r = ev::analyze(a, b, d, 1);
  EXPECT_EQ(r.decision, ev::Decision::undecided);
  EXPECT_GE(r.more_samples, 1u);
  EXPECT_LT(r.more_samples, 100u);
  EXPECT_DOUBLE_EQ(ev::t_test_power(3.0, 1'000'000'000, 0.05), 1.0);
}

// Constant sides (a coarse timer, a counter that moves in steps). Identical ones are equivalent
// with a min_effect; with none, more samples cannot decide and the verdict says so rather than
// "need ≈ 1 more". Constant sides apart have Welch's p at 0 and wait for Mann-Whitney's, which
// passes look 2's level (0.0125) at 5 per side (p 0.0040; 0.013 at 4).
TEST(Sequential, ConstantSidesGetAnHonestVerdict) {
  const std::vector<double> same(20, 1e-3);
  ev::SequentialDesign d;
  EXPECT_EQ(ev::analyze(same, same, d, 1).decision, ev::Decision::equivalent);
  d.min_effect = 0;
  const ev::Analysis identical = ev::analyze(same, same, d, 1);
  EXPECT_EQ(identical.decision, ev::Decision::undecided);
  EXPECT_EQ(identical.more_samples, 0u);
  const std::string text = ev::verdict(identical, d, ev::Metric::latency);
  EXPECT_EQ(text.rfind("inconclusive: every sample of A and B is the same value, so more samples "
                       "cannot tell them apart, and a min_effect of 0 never calls sides "
                       "equivalent (B/A 1.000, ",
                       0),
            0u)
      << text;
  const std::vector<double> ones(3, 1.0), twos(3, 2.0);
  d.first_look = 3;
  const ev::Analysis apart = ev::analyze(ones, twos, d, 1);
  EXPECT_EQ(apart.decision, ev::Decision::undecided);
  EXPECT_EQ(apart.welch.p_value, 0);
  EXPECT_EQ(apart.more_samples, 2u);
}

TEST(Sequential, RefusesADesignItCannotHonour) {
  ev::SequentialDesign d;
  d.alpha = 0.7;
  hal::test::expect_error([&] { ev::check_design(d); }, hal::ErrorCode::InvalidArgument,
                          {"alpha must lie in (0, 0.5)", "0.7"});
  d = {};
  d.first_look = 1;
  hal::test::expect_error([&] { ev::check_design(d); }, hal::ErrorCode::InvalidArgument,
                          {"first_look must be at least 3"});
}

}  // namespace
