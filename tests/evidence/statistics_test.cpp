// hal's statistics against SciPy's answers on the same samples (statistics_fixtures.json, made
// by scripts/make_statistics_fixtures.py), and their refusals of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "hal/compare.hpp"
#include "hal/statistics.hpp"
#include "test_util.hpp"

namespace {

namespace ev = hal::evidence;

const nlohmann::json& fixtures() {
  static const nlohmann::json data = [] {
    std::ifstream file(HAL_STATISTICS_FIXTURES);
    EXPECT_TRUE(file) << "cannot read " << HAL_STATISTICS_FIXTURES;
    return nlohmann::json::parse(file);
  }();
  return data;
}

std::vector<double> values(const nlohmann::json& list) { return list.get<std::vector<double>>(); }

// Relative agreement, for figures that span many orders of magnitude (p-values).
void expect_close(double got, double want, double relative, const std::string& what) {
  EXPECT_NEAR(got, want, relative * std::max(std::fabs(want), 1e-300)) << what;
}

TEST(Statistics, FixturesCoverEveryCase) {
  EXPECT_GE(fixtures()["cases"].size(), 6u);
  EXPECT_GE(fixtures()["power"].size(), 5u);
}

TEST(Statistics, WelchOnLogsMatchesScipy) {
  for (const auto& c : fixtures()["cases"]) {
    const std::string name = c["name"];
    const auto& want = c["welch"];
    const ev::WelchTest got =
        ev::welch_t_test(ev::logs(values(c["a"]), "a"), ev::logs(values(c["b"]), "b"), 0.95);
    expect_close(got.t, want["t"], 1e-9, name + " t");
    expect_close(got.df, want["df"], 1e-9, name + " df");
    expect_close(got.p_value, want["p_value"], 1e-6, name + " p");
    expect_close(got.difference, want["difference"], 1e-9, name + " difference");
    expect_close(got.ci_low, want["ci95"][0], 1e-8, name + " ci low");
    expect_close(got.ci_high, want["ci95"][1], 1e-8, name + " ci high");
  }
}

TEST(Statistics, MannWhitneyMatchesScipyWithTies) {
  for (const auto& c : fixtures()["cases"]) {
    const std::string name = c["name"];
    const ev::MannWhitneyTest got = ev::mann_whitney_u(values(c["a"]), values(c["b"]));
    EXPECT_DOUBLE_EQ(got.u, c["mann_whitney"]["u"].get<double>()) << name;
    expect_close(got.p_value, c["mann_whitney"]["p_value"], 1e-6, name + " p");
  }
}

TEST(Statistics, HedgesGMatchesTheFormula) {
  for (const auto& c : fixtures()["cases"])
    expect_close(ev::hedges_g(ev::logs(values(c["a"]), "a"), ev::logs(values(c["b"]), "b")),
                 c["hedges_g"], 1e-9, c["name"]);
}

// Two Monte Carlo estimates of one interval (SciPy's and hal's generators differ): the ends
// agree to a small part of the interval's width, and the point estimate is exact.
TEST(Statistics, BootstrapIntervalNearScipys) {
  for (const auto& c : fixtures()["cases"]) {
    const std::string name = c["name"];
    const auto a = values(c["a"]), b = values(c["b"]);
    const ev::RatioInterval got = ev::bootstrap_median_ratio(a, b, 0.95, 20000, 7);
    const double low = c["bootstrap_ci95"][0], high = c["bootstrap_ci95"][1];
    const double slack = 0.1 * (high - low) + 1e-12;
    EXPECT_DOUBLE_EQ(got.ratio, ev::median(b) / ev::median(a)) << name;
    EXPECT_NEAR(got.low, low, slack) << name;
    EXPECT_NEAR(got.high, high, slack) << name;
    EXPECT_LE(got.low, got.ratio) << name;
    EXPECT_GE(got.high, got.ratio) << name;
  }
}

TEST(Statistics, BootstrapIsReproducibleBySeed) {
  const auto& c = fixtures()["cases"][1];
  const auto a = values(c["a"]), b = values(c["b"]);
  const ev::RatioInterval first = ev::bootstrap_median_ratio(a, b, 0.95, 500, 3);
  const ev::RatioInterval again = ev::bootstrap_median_ratio(a, b, 0.95, 500, 3);
  const ev::RatioInterval other = ev::bootstrap_median_ratio(a, b, 0.95, 500, 4);
  EXPECT_EQ(first.low, again.low);
  EXPECT_EQ(first.high, again.high);
  EXPECT_TRUE(first.low != other.low || first.high != other.high);
}

TEST(Statistics, PowerAndSampleSizeMatchScipysNoncentralT) {
  for (const auto& p : fixtures()["power"]) {
    const double d = p["d"], alpha = p["alpha"], power = p["power"];
    const size_t n = p["n"];
    expect_close(ev::t_test_power(d, n, alpha), p["power_at_n"], 1e-6, "power");
    EXPECT_EQ(ev::samples_for_power(d, alpha, power), n) << "d " << d << " alpha " << alpha;
  }
  EXPECT_EQ(ev::samples_for_power(0, 0.05, 0.8, 1000), 1000u);  // no effect: never enough
}

TEST(Statistics, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(ev::median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_EQ(ev::median(std::vector<double>{4, 1, 3, 2}), 2.5);
}

TEST(Statistics, ConstantSamplesAreExact) {
  const std::vector<double> same{1, 1, 1}, higher{2, 2, 2};
  EXPECT_EQ(ev::welch_t_test(same, same).p_value, 1);
  EXPECT_EQ(ev::welch_t_test(same, higher).p_value, 0);
  EXPECT_EQ(ev::mann_whitney_u(same, same).p_value, 1);
  // Sides of one value and different sizes: a plain sum / n made the means differ by about
  // 1e-16 and the variances not quite 0, and Welch's t came out near -4 (p < 1e-6).
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> log_time(-14, -2);
  for (int i = 0; i < 200; ++i) {
    const double c = log_time(random);
    const std::vector<double> a(18, c), b(9, c);
    const ev::WelchTest w = ev::welch_t_test(a, b);
    EXPECT_EQ(w.t, 0) << "c = " << c;
    EXPECT_EQ(w.p_value, 1) << "c = " << c;
  }
}

TEST(Statistics, RefusesTooFewOrBadSamples) {
  using hal::ErrorCode;
  const std::vector<double> one{1.0}, fine{1.0, 2.0}, with_nan{1.0, NAN}, with_zero{1.0, 0.0};
  hal::test::expect_error([&] { ev::welch_t_test(one, fine); }, ErrorCode::InvalidArgument,
                          {"sample a", "1 samples", "at least 2"});
  hal::test::expect_error([&] { ev::welch_t_test(fine, with_nan); }, ErrorCode::InvalidArgument,
                          {"sample b", "sample 1", "not finite"});
  hal::test::expect_error([&] { ev::logs(with_zero, "sample b"); }, ErrorCode::InvalidArgument,
                          {"sample b", "sample 1", "not a positive finite number"});
  hal::test::expect_error([&] { ev::bootstrap_median_ratio(fine, fine, 1.5, 100, 1); },
                          ErrorCode::InvalidArgument, {"bootstrap", "confidence"});
  hal::test::expect_error([&] { ev::t_test_power(0.5, 1, 0.05); }, ErrorCode::InvalidArgument,
                          {"t_test_power", "n >= 2"});
}

// A value is quoted with its digits: -1e-9 read "-0.000000", which looks like a 0 or a sign
// error rather than the tiny negative time it is.
TEST(Statistics, ErrorsQuoteTheValueAsItIs) {
  using hal::ErrorCode;
  const std::vector<double> tiny_negative{1e-3, 2e-3, -1e-9}, fine{1e-3, 2e-3, 3e-3};
  hal::test::expect_error([&] { ev::analyze(tiny_negative, fine, ev::SequentialDesign{}, 1); },
                          ErrorCode::InvalidArgument,
                          {"sample a: sample 2 (-1e-09) is not a positive finite number"});
  hal::test::expect_error(
      [&] {
        ev::logs(std::vector<double>{2.5e-12, 0.0}, "sample b");
      },
      ErrorCode::InvalidArgument, {"sample b: sample 1 (0) is not a positive finite number"});
  ev::SequentialDesign d;
  d.alpha = -1e-12;
  hal::test::expect_error([&] { ev::check_design(d); }, ErrorCode::InvalidArgument,
                          {"alpha must lie in [1e-09, 0.5), got -1e-12"});
}

// A 0 or a negative value beside positive ones leaves a positive median, but a resample's median
// could be 0 (an infinite ratio) or negative (a ratio of the wrong sign): refused, named.
TEST(Statistics, BootstrapRefusesValuesThatAreNotPositive) {
  using hal::ErrorCode;
  const std::vector<double> fine{1.0, 2.0, 3.0}, zero_in_a{0.0, 1.0, 2.0},
      negative_in_b{1.0, -0.5, 2.0}, infinite_in_b{1.0, INFINITY, 2.0};
  hal::test::expect_error([&] { ev::bootstrap_median_ratio(zero_in_a, fine, 0.95, 100, 1); },
                          ErrorCode::InvalidArgument,
                          {"bootstrap: sample a", "sample 0 (0)", "is not positive"});
  hal::test::expect_error([&] { ev::bootstrap_median_ratio(fine, negative_in_b, 0.95, 100, 1); },
                          ErrorCode::InvalidArgument,
                          {"bootstrap: sample b", "sample 1 (-0.5)", "is not positive"});
  hal::test::expect_error([&] { ev::bootstrap_median_ratio(fine, infinite_in_b, 0.95, 100, 1); },
                          ErrorCode::InvalidArgument,
                          {"bootstrap: sample b", "sample 1", "not finite"});
}

}  // namespace
