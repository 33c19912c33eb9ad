// The sequential design on synthetic samples: A/A runs reject no more often than alpha (with
// optional stopping), a planted 10 % difference is found with an interval that covers it, equal
// sides are called equivalent, and the verdict reads as documented.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

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

// A run of 1 ms against 1.01 ms timings (5 % noise) whose time runs out after `pairs` pairs.
ev::SequentialRun run_for_pairs(const ev::SequentialDesign& design, uint64_t seed, int pairs) {
  Timer timer(seed, 0.05);
  int drawn = 0;
  return ev::run_sequential(
      design,
      [&](std::vector<double>& a, std::vector<double>& b) {
        a.push_back(timer.draw(1e-3));
        b.push_back(timer.draw(1.01e-3));
        ++drawn;
      },
      [&] { return drawn < pairs; }, 1000);
}

TEST(Sequential, StopsWhenTimeRunsOutAndSaysWhatIsMissing) {
  const ev::SequentialDesign design = quick_design();
  const ev::SequentialRun run = run_for_pairs(design, 77, 15);
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

// Time running out just after a look (no sample since) leaves that look's analysis: the samples
// were analysed once, at their own level. It analysed them again at the next look's level.
TEST(Sequential, TimeOutRightAfterALookKeepsThatLook) {
  const ev::SequentialDesign design = quick_design();  // looks at 10, 20, 40, ... per side
  const ev::SequentialRun run = run_for_pairs(design, 78, 20);
  ASSERT_EQ(run.analysis.decision, ev::Decision::undecided);
  EXPECT_EQ(run.analysis.look, 2);
  EXPECT_EQ(run.analysis.n_a, 20u);
  EXPECT_DOUBLE_EQ(run.analysis.look_alpha, ev::look_alpha(design, 2));
}

// --max-time is asked before each draw, so it is overrun by one draw and one analysis: with
// instant samples, the analysis. The bootstrap resampled n values per side 2 000 times (half a
// minute at n = 327 680, so a 60 s limit took 169 s); a resample's median now costs the same at
// any n.
TEST(Sequential, ATimeLimitIsOverrunByOneQuickAnalysis) {
  std::vector<double> a(500'000), b(500'000);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = 1e-3 * (1 + 1e-6 * static_cast<double>(i % 997));
    b[i] = 1e-3 * (1 + 1e-6 * static_cast<double>(i % 991));
  }
  const auto started = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  const ev::RatioInterval r = ev::bootstrap_median_ratio(a, b, 0.95, 2000, 1);
  EXPECT_LT(seconds(), 5.0) << "2 000 resamples of 500 000 values a side";
  EXPECT_LE(r.low, r.ratio);
  EXPECT_GE(r.high, r.ratio);

  // A/A samples drawn at once from a pool, with no min_effect (never equivalent): the time
  // limit ends the run.
  ev::SequentialDesign design;
  design.min_effect = 0;
  Timer timer(79, 0.05);
  std::vector<double> pool(65536);
  for (double& v : pool) v = timer.draw(1e-3);
  size_t i = 0;
  const auto limit_from = std::chrono::steady_clock::now();
  const ev::SequentialRun run = ev::run_sequential(
      design,
      [&](std::vector<double>& sa, std::vector<double>& sb) {
        sa.push_back(pool[i % pool.size()]);
        sb.push_back(pool[(i * 7 + 3) % pool.size()]);
        ++i;
      },
      [&] {
        return std::chrono::steady_clock::now() - limit_from < std::chrono::milliseconds(200);
      },
      1'000'000);  // hal compare's cap
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - limit_from).count(),
            5.0);
  ASSERT_EQ(run.analysis.decision, ev::Decision::undecided) << run.analysis.n_a;
  // The last analysis is of samples no earlier look had.
  EXPECT_GT(run.analysis.n_a, ev::look_size(design, run.analysis.look - 1));
}

// Welch's test rejects at the look's level and Mann-Whitney's does not (5 % of B's runs three
// times as long, the rest 0.7 % faster: the mean of the logs moves, the ranks barely), with
// enough samples for the power asked: the verdict names the test that held out and says what
// the next look takes. It said "need ≈ 1 more samples per side".
TEST(Sequential, OneTestAloneRejectingIsNamedWithTheNextLooksSamples) {
  std::mt19937_64 random(11);
  std::normal_distribution<double> noise(0, 0.05);
  std::vector<double> a, b;
  for (int i = 0; i < 1280; ++i) a.push_back(1e-3 * std::exp(noise(random)));
  for (int i = 0; i < 1280; ++i)
    b.push_back(1e-3 * std::exp(noise(random)) * (i % 20 == 0 ? 3 : 0.993));
  ev::SequentialDesign d;
  d.min_effect = 0.05;
  const ev::Analysis r = ev::analyze(a, b, d, 7);  // look 7: 1280 a side, level 0.05 / 128
  ASSERT_EQ(r.decision, ev::Decision::undecided);
  ASSERT_LT(r.welch.p_value, r.look_alpha);
  ASSERT_GT(r.mann_whitney.p_value, 0.01);
  EXPECT_TRUE(r.power_met);
  EXPECT_EQ(r.more_samples, ev::look_size(d, 8) - 1280);
  const std::string text = ev::verdict(r, d, ev::Metric::latency);
  EXPECT_EQ(text.rfind("inconclusive: Mann-Whitney's test does not reject no difference at this "
                       "look's level 0.00039 (p = ",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find(") while Welch's t-test does; the next look takes 1280 more samples per "
                      "side (B/A "),
            std::string::npos)
      << text;

  // The other way round, short of the power asked.
  ev::Analysis other;
  other.n_a = other.n_b = 40;
  other.look = 1;
  other.look_alpha = 0.025;
  other.welch.p_value = 0.2;
  other.mann_whitney.p_value = 1e-9;
  other.more_samples = 7;
  EXPECT_EQ(ev::verdict(other, d, ev::Metric::latency),
            "inconclusive: Welch's t-test does not reject no difference at this look's level "
            "0.025 (p = 0.2) while Mann-Whitney's test does; need ≈ 7 more samples per side (B/A "
            "1.000, 95 % CI 1.000–1.000, p = 0.2, n = 40+40)");
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
  // Look 13 tests at 0.05 / 8192: its 99.9988 % interval read "100 % CI" at 4 digits.
  same.look = 13;
  same.look_alpha = ev::look_alpha(d, 13);
  EXPECT_EQ(ev::verdict(same, d, ev::Metric::latency),
            "no difference larger than 2.0 % (B/A 1.001, 99.999 % CI 0.995–1.006, p = 0.7, n = "
            "40+40)");
  // At the smallest alpha, up to look 20 (hal compare's million samples a side at the least
  // first look, 3, are taken by look 20), the level shown is below 100.
  ev::SequentialDesign tight;
  tight.alpha = 1e-9;
  for (int look = 1; look <= 20; ++look) {
    same.look = look;
    same.look_alpha = ev::look_alpha(tight, look);
    const std::string text = ev::verdict(same, tight, ev::Metric::latency);
    const size_t ci = text.find(" % CI");
    ASSERT_NE(ci, std::string::npos) << text;
    const size_t start = text.rfind(' ', ci - 1) + 1;
    EXPECT_LT(std::stod(text.substr(start, ci - start)), 100) << text;
  }
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
                          {"alpha must lie in [1e-09, 0.5)", "0.7"});
  // Below the floor a look's 1 - 2 alpha_k rounds to 1: Boost threw overflow_error from
  // analyze, past check_design, instead of this refusal.
  d.alpha = 1e-16;
  hal::test::expect_error([&] { ev::check_design(d); }, hal::ErrorCode::InvalidArgument,
                          {"alpha must lie in [1e-09, 0.5)", "1e-16"});
  d = {};
  d.first_look = 1;
  hal::test::expect_error([&] { ev::check_design(d); }, hal::ErrorCode::InvalidArgument,
                          {"first_look must be at least 3"});
}

}  // namespace
