// `hal compare`: a planted 10 % slowdown on paced simulated devices is found with an interval
// that covers it, directly and with side B in a child process (--b-env), A/A runs on one device
// find no difference, energy per run compares where a (stand-in) counter is, and bad input is
// refused by code and message.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "../../tools/hal/agreement.hpp"  // header-only: the check hal compare runs on outputs
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using Result = hal::test::ShellResult;

// sim:1 does the same matmul 10 % slower than sim:0 (modelled 95.3 ms and 104.9 ms for 64^3).
constexpr const char* kPacedPair =
    "HAL_SIM_CONFIG=devices=2,pace=1,gflops=0.0055:0.005,bandwidth_gbps=1000,launch_us=0 ";

// stdout alone (stderr dropped): the JSON.
Result run(const std::string& environment, const std::string& arguments) {
  return hal::test::run_shell("(" + hal::test::child_sanitizer_options() + environment +
                              HAL_CLI_PATH " compare " + arguments + " 2>/dev/null)");
}

nlohmann::json report_of(const Result& result) {
  EXPECT_EQ(result.status, 0) << result.output;
  return nlohmann::json::parse(result.output);
}

// A run's wall-clock time is the device's modelled time plus the host's fixed cost of a run
// (enqueue, the paced worker's wake-up, synchronize: about 0.2 ms here), which dilutes a 10 %
// device slowdown by 0.1 x that cost / 95 ms. The interval must cover 1.10 to within that:
// 0.2 % allows 1.9 ms of fixed cost per run, ten times what a loaded host takes.
void expect_planted_slowdown(const nlohmann::json& report) {
  EXPECT_EQ(report["schema"], "hal.compare/1");
  EXPECT_EQ(report["decision"], "differ") << report["verdict"];
  EXPECT_EQ(report["verdict"].get<std::string>().rfind("B slower by", 0), 0u) << report["verdict"];
  const double ratio = report["ratio"], low = report["ci"][0], high = report["ci"][1];
  EXPECT_LE(low, ratio);
  EXPECT_GE(high, ratio);
  EXPECT_LE(low, 1.10) << report["verdict"];
  EXPECT_GE(high, 1.10 - 0.002) << report["verdict"];
  EXPECT_LT(report["p_value"].get<double>(), report["look_alpha"].get<double>());
  EXPECT_GT(report["effect_size"].get<double>(), 0);
  EXPECT_EQ(report["n_a"], report["samples_a"].size());
  EXPECT_EQ(report["n_b"], report["samples_b"].size());
  EXPECT_EQ(report["max_abs_diff"], 0.0);  // sim computes the same products on both
}

TEST(CompareCli, FindsAPlantedSlowdownOnPacedSimDevices) {
  expect_planted_slowdown(report_of(
      run(kPacedPair, "--a sim:0 --b sim:1 --workload matmul:64 --first-look 10 --seed 3 --json")));
}

// Side B in a child process whose HAL_SIM_CONFIG makes sim:0 10 % slower: an A/B of settings.
TEST(CompareCli, ComparesSettingsWithSideBInAChildProcess) {
  const nlohmann::json report = report_of(
      run(kPacedPair,
          "--a sim:0 --b sim:0 --workload matmul:64 --first-look 10 --json --b-env "
          "HAL_SIM_CONFIG=devices=1,pace=1,gflops=0.005,bandwidth_gbps=1000,launch_us=0"));
  expect_planted_slowdown(report);
  EXPECT_EQ(report["b_env"][0].get<std::string>().rfind("HAL_SIM_CONFIG=", 0), 0u);
}

// A few real A/A runs (the statistics' 200-run A/A test is tests/evidence), each on its own
// seed: none finds a difference that counts (2 %, the default --min-effect). On paced sim:0, 20
// ms of modelled time a run. The two sides are two streams, each with its own worker thread,
// and on a loaded host one may wake up later than the other by tens of microseconds, run after
// run: a real difference that pacing measures to a hundredth of a percent, so "B slower by
// 0.2 %; smaller than the 2.0 % that counts" is a right answer here, not a false positive.
TEST(CompareCli, AaRunsOnOneDeviceFindNoDifferenceThatCounts) {
  for (int seed = 1; seed <= 4; ++seed) {
    const nlohmann::json report =
        report_of(run("HAL_SIM_CONFIG=devices=1,pace=1,gflops=0.0033,bandwidth_gbps=1000 ",
                      "--a sim:0 --b sim:0 --workload matmul:32 --max-time 1s --first-look 10 "
                      "--json --seed " +
                          std::to_string(seed)));
    const double ratio = report["ratio"];
    EXPECT_TRUE(report["decision"] != "differ" || std::fabs(std::log(ratio)) < std::log(1.02))
        << report["verdict"];
    EXPECT_EQ(report["a"], "sim:0");
    EXPECT_GE(report["n_a"].get<int>(), 10);
  }
}

TEST(CompareCli, PrintsTheVerdict) {
  const Result result = hal::test::run_shell(
      std::string(kPacedPair) + HAL_CLI_PATH +
      " compare --a sim:0 --b sim:1 --workload matmul:64 --first-look 10 --metric throughput");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("throughput (higher is better)"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("GFLOP/s"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("outputs agree"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("\nB slower by "), std::string::npos) << result.output;
}

// A model from PyTorch with its stored input, and with inputs hal makes (same on both sides).
TEST(CompareCli, RunsAModel) {
  const std::string model = HAL_MODELS_DIR "/transformer_encoder.onnx";
  for (const std::string& workload :
       {"model:" + model + ":input=" HAL_MODELS_DIR "/transformer_encoder.input.npy",
        "model:" + model}) {
    // 3 s: a loaded 2-core host got only one sample per side within 0.5 s.
    const nlohmann::json report = report_of(run(
        "", "--a cpu:0 --b cpu:0 --workload " + workload + " --max-time 3s --first-look 5 --json"));
    EXPECT_EQ(report["workload"], workload);
    EXPECT_EQ(report["max_abs_diff"], 0.0);
    EXPECT_GE(report["n_a"].get<int>(), 2);
  }
}

// --trace FILE (on every command) and HAL_TRACE=FILE write a trace with a track per side's
// stream and the workload's ops on it (tests/core/trace_test.cpp checks traces in depth).
TEST(CompareCli, WritesATrace) {
  const std::string file = std::filesystem::temp_directory_path() /
                           ("hal_compare_trace_" + std::to_string(getpid()) + ".json");
  for (const std::string& how : {std::string(" --trace ") + file, std::string()}) {
    std::filesystem::remove(file);
    const std::string environment = how.empty() ? "HAL_TRACE=" + file + " " : "";
    const Result result = run(environment,
                              "--a cpu:0 --b cpu:0 --workload softmax:8x8 "
                              "--max-time 0.2s --first-look 3" +
                                  how);
    ASSERT_EQ(result.status, 0) << result.output;
    std::ifstream in(file);
    ASSERT_TRUE(in) << "no trace in " << file << " (" << (how.empty() ? "HAL_TRACE" : how) << ")";
    const nlohmann::json trace = nlohmann::json::parse(in);
    std::set<std::string> tracks, ops;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] == "M" && e["name"] == "thread_name") tracks.insert(e["args"]["name"]);
      if (e["ph"] == "X" && e["cat"] == "op") ops.insert(e["name"]);
    }
    EXPECT_TRUE(tracks.count("cpu:0 stream 0") && tracks.count("cpu:0 stream 1"));
    EXPECT_TRUE(ops.count("softmax"));
  }
  std::filesystem::remove(file);
}

// Side B in a child process (--b-env) records its trace into a file of its own, merged into this
// one's after the run: B's process with its stream's ops beside A's, on A's clock (B's span of
// serving starts within A's span of starting it), and no file of B's left behind. Both ways of
// asking for a trace: the child inherited HAL_TRACE and overwrote A's trace with its own, and
// got none at all with --trace.
TEST(CompareCli, MergesTheTraceOfSideBsChildProcess) {
  const std::string stem =
      (fs::temp_directory_path() / ("hal_compare_b_trace_" + std::to_string(getpid()))).string();
  const std::string file = stem + ".json", side_b = stem + ".side-b.json";
  for (const bool environment : {false, true}) {
    fs::remove(file);
    const Result result = run(environment ? "HAL_TRACE=" + file + " " : "",
                              "--a cpu:0 --b cpu:0 --b-env HAL_CPU_ISA=scalar --workload "
                              "softmax:8x8 --max-time 0.2s --first-look 3" +
                                  (environment ? std::string() : " --trace " + file));
    ASSERT_EQ(result.status, 0) << result.output;
    EXPECT_FALSE(fs::exists(side_b)) << "side B's own file is left";
    std::ifstream in(file);
    ASSERT_TRUE(in) << "no trace in " << file;
    const nlohmann::json trace = nlohmann::json::parse(in);
    std::map<int, std::string> processes;  // pid: process_name
    std::set<int> softmax_processes;
    double starting = -1, started = -1, serving = -1;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] == "M" && e["name"] == "process_name")
        processes[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
      if (e["ph"] != "X") continue;
      if (e["cat"] == "op" && e["name"] == "softmax") softmax_processes.insert(e["pid"].get<int>());
      if (e["name"] == "hal compare: start side B") {
        starting = e["ts"].get<double>();
        started = starting + e["dur"].get<double>();
      }
      if (e["name"] == "hal compare-worker: side B") serving = e["ts"].get<double>();
    }
    ASSERT_EQ(processes.size(), 2u) << (environment ? "HAL_TRACE" : "--trace");
    EXPECT_TRUE(processes.begin()->second == "hal compare-worker (side B)" ||
                processes.rbegin()->second == "hal compare-worker (side B)");
    EXPECT_EQ(softmax_processes.size(), 2u) << "each side's softmax ops";
    ASSERT_GE(starting, 0) << "no span of starting side B";
    ASSERT_GE(serving, 0) << "no span of side B serving";
    EXPECT_GE(serving, starting - 50) << "B's span, in microseconds, before A started B";
    EXPECT_LE(serving, started + 50) << "B's span, in microseconds, after B answered";
  }
  fs::remove(file);
}

// Side B's matmul made fast and wrong (a preloaded cblas_sgemm that writes zeros): no verdict,
// an error that says the outputs differ.
TEST(CompareCli, RefusesToRankAWrongAnswer) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a preloaded library must come after the sanitizer's runtime";
#endif
  const Result result = run(
      "", "--a cpu:0 --b cpu:0 --workload matmul:16 --json --b-env LD_PRELOAD=" HAL_WRONG_SGEMM);
  EXPECT_EQ(result.status, 1) << result.output;
  const nlohmann::json error = nlohmann::json::parse(result.output);
  EXPECT_EQ(error["code"], "InvalidState");
  const std::string message = error["message"];
  EXPECT_NE(message.find("outputs differ: max|A - B| = "), std::string::npos) << message;
  EXPECT_NE(message.find("a faster wrong answer is no winner"), std::string::npos) << message;
}

// A's output holding an infinity (a division by 0) made the tolerance 1e-3 x inf, so that any B
// agreed: NaN or a number where A had the infinity, numbers far off elsewhere. The tolerance
// scales with A's finite values, and only the same infinity (or NaN against NaN) matches one.
TEST(CompareCli, AnInfinityInAsOutputAgreesOnlyWithTheSameInfinity) {
  using hal::tool::agreement;
  const std::vector<float> a{INFINITY, 2.0f, -3.0f, NAN};
  const hal::tool::Agreement same = agreement(a, a);
  EXPECT_TRUE(same.agree());
  EXPECT_EQ(same.max_difference, 0);
  EXPECT_DOUBLE_EQ(same.tolerance, 3e-3);  // 1e-3 x |-3|, the largest finite value
  for (const float at_infinity : {NAN, 1e30f, -INFINITY, 0.0f}) {
    std::vector<float> b = a;
    b[0] = at_infinity;
    const hal::tool::Agreement r = agreement(b, a);
    EXPECT_FALSE(r.agree()) << at_infinity;
    EXPECT_EQ(r.max_difference, INFINITY) << at_infinity;
    EXPECT_EQ(r.nonfinite, 1u) << at_infinity;
  }
  std::vector<float> far = a;
  far[1] = 50.0f;
  const hal::tool::Agreement off = agreement(far, a);
  EXPECT_FALSE(off.agree());
  EXPECT_DOUBLE_EQ(off.max_difference, 48);
  EXPECT_DOUBLE_EQ(off.tolerance, 3e-3);
  std::vector<float> near = a;
  near[1] = 2.002f;
  EXPECT_TRUE(agreement(near, a).agree());
}

void expect_refused(const std::string& arguments, const std::string& code,
                    const std::string& message, const std::string& environment = "") {
  const Result result = run(environment, arguments + " --json");
  EXPECT_EQ(result.status, 1) << arguments << ": " << result.output;
  const nlohmann::json error = nlohmann::json::parse(result.output);
  EXPECT_EQ(error["schema"], "hal.error/1");
  EXPECT_EQ(error["code"], code) << arguments;
  EXPECT_NE(error["message"].get<std::string>().find(message), std::string::npos)
      << arguments << ": " << error["message"];
}

// A stand-in package of the host's CPU that draws 1 W: its counter (microjoules), rewritten every
// `period` (half a millisecond, as RAPL's move), holds the microseconds since it started. At 1 W
// a run's joules are its seconds, so a slower side uses more energy.
class SteadyPackage {
 public:
  explicit SteadyPackage(std::chrono::microseconds period = std::chrono::microseconds(500))
      : root_(fs::temp_directory_path() / ("hal_powercap_" + std::to_string(getpid()))) {
    fs::create_directories(root_ / "intel-rapl:0");
    std::ofstream(root_ / "intel-rapl:0" / "name") << "package-0\n";
    write(0);
    writer_ = std::jthread([this, period](std::stop_token stop) {
      const auto start = std::chrono::steady_clock::now();
      while (!stop.stop_requested()) {
        std::this_thread::sleep_for(period);
        write(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count()));
      }
    });
  }
  ~SteadyPackage() {
    writer_.request_stop();
    writer_.join();
    fs::remove_all(root_);
  }
  std::string environment() const { return "HAL_POWERCAP_ROOT=" + root_.string() + " "; }

 private:
  void write(uint64_t microjoules) {  // whole, by rename: a reader never sees half a number
    const fs::path next = root_ / "intel-rapl:0" / "energy_uj.next";
    std::ofstream(next) << microjoules << "\n";
    fs::rename(next, root_ / "intel-rapl:0" / "energy_uj");
  }
  fs::path root_;
  std::jthread writer_;
};

// A counter that moves only every 120 ms (NVML's move seldom too): each sample lasts until it
// has moved ten times, so none is empty. Samples of a 50 ms window alone would see no move 58 %
// of the time, and the first such sample ends the command ("did not move").
TEST(CompareCli, ASlowCounterIsSampledOverTenOfItsMoves) {
  const SteadyPackage package(std::chrono::milliseconds(120));
  const nlohmann::json report =
      report_of(run(package.environment(),
                    "--a cpu:0 --b cpu:0 --workload matmul:64 --metric energy --max-time 8s "
                    "--first-look 3 --warmup 1 --json"));
  EXPECT_EQ(report["metric"], "energy");
  for (const char* side : {"samples_a", "samples_b"}) {
    ASSERT_GE(report[side].size(), 3u) << side;
    for (const auto& joules : report[side]) {
      EXPECT_GT(joules.get<double>(), 0.0) << side;
      EXPECT_LT(joules.get<double>(), 0.1) << side;  // a 64^3 product takes well under 0.1 s
    }
  }
}

// Side B runs the same softmax with its vector kernels in plain C++ (HAL_CPU_ISA=scalar), in a
// child process: slower at the same power, so more joules a run.
TEST(CompareCli, ComparesEnergyPerRunWhereTheDevicesHaveACounter) {
  const SteadyPackage package;
  const nlohmann::json report =
      report_of(run(package.environment(),
                    "--a cpu:0 --b cpu:0 --b-env HAL_CPU_ISA=scalar --workload softmax:256x4096 "
                    "--metric energy --max-time 20s --seed 2 --json"));
  EXPECT_EQ(report["metric"], "energy");
  EXPECT_EQ(report["unit"], "J");
  EXPECT_EQ(report["energy_sources"]["a"], "powercap intel-rapl:0 (package-0)");
  EXPECT_EQ(report["decision"], "differ") << report["verdict"];
  EXPECT_EQ(report["verdict"].get<std::string>().rfind("B uses more energy by", 0), 0u)
      << report["verdict"];
  EXPECT_GT(report["ratio"].get<double>(), 1.0);
  for (const char* side : {"samples_a", "samples_b"})
    for (const auto& joules : report[side]) {
      EXPECT_GT(joules.get<double>(), 0.0) << side;
      EXPECT_LT(joules.get<double>(), 1.0) << side;  // a softmax of 1 Mi floats takes no second
    }
}

// --alpha lies in [1e-9, 0.5) as the design requires: just below 0.5 is taken (the command capped
// it at 0.499), 0.5 itself and 0 are not.
TEST(CompareCli, TakesAnAlphaUpToOneHalf) {
  const nlohmann::json report =
      report_of(run("",
                    "--a cpu:0 --b cpu:0 --workload softmax:8x8 --max-time 0.2s "
                    "--first-look 3 --alpha 0.4995 --json"));
  EXPECT_DOUBLE_EQ(report["alpha"].get<double>(), 0.4995);
  EXPECT_DOUBLE_EQ(report["confidence"].get<double>(), 1 - 0.4995);
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --alpha 0.5", "InvalidArgument",
                 "--alpha: '0.5' is out of range (at least 1e-09, below 0.5)");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --alpha 0", "InvalidArgument",
                 "--alpha: '0' is out of range (at least 1e-09, below 0.5)");
}

TEST(CompareCli, RefusesBadInput) {
  expect_refused("--a nope:3 --b cpu:0 --workload matmul:8", "NotFound", "no device 'nope:3'");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:x", "InvalidArgument",
                 "--workload matmul:N: 'x' is not a whole number");
  expect_refused("--a cpu:0 --b cpu:0 --workload softmax:8", "InvalidArgument",
                 "'softmax:8' has no RxC");
  expect_refused("--a cpu:0 --b cpu:0 --workload foo:1", "InvalidArgument",
                 "'foo:1' is of no kind hal compare runs");
  expect_refused("--a cpu:0 --b cpu:0 --workload model:", "InvalidArgument", "names no model file");
  expect_refused("--a cpu:0 --b cpu:0 --workload model:/nonexistent.onnx", "InvalidArgument",
                 "/nonexistent.onnx");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --alpha 0.7", "InvalidArgument",
                 "--alpha: '0.7' is out of range");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --alpha x", "InvalidArgument",
                 "--alpha: 'x'");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --min-effect 2x", "InvalidArgument",
                 "--min-effect");
  // The text as given and limits in its unit: it said "'-5' is out of range (0 to 999)".
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --min-effect -5%", "InvalidArgument",
                 "--min-effect: '-5%' is out of range (0% to 999%)");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --min-effect 10", "InvalidArgument",
                 "--min-effect: '10' is out of range (0 to 9.99)");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --max-time 0s", "InvalidArgument",
                 "--max-time: '0s' is out of range (1ms to 86400s)");
  // The limits in units the option takes: it said "'0.5' is out of range (1 to 8.64e+07)".
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --max-time 0.5ms", "InvalidArgument",
                 "--max-time: '0.5ms' is out of range (1ms to 86400s)");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --max-time 1441m", "InvalidArgument",
                 "--max-time: '1441m' is out of range (1ms to 86400s)");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --metric speed", "InvalidArgument",
                 "--metric: 'speed' is not latency, throughput or energy");
  // Energy where there is no counter: a powercap tree without packages, and a simulated device.
  const std::string empty_powercap =
      "HAL_POWERCAP_ROOT=" + fs::temp_directory_path().string() + " ";
  expect_refused(
      "--a cpu:0 --b cpu:0 --workload matmul:8 --metric energy", "Unsupported",
      "energy: no RAPL package domain under " + fs::temp_directory_path().string() + " for cpu:0",
      empty_powercap);
  expect_refused("--a sim:0 --b cpu:0 --workload matmul:8 --metric energy", "Unsupported",
                 "energy: sim:0 (accelerator) has no energy counter", "HAL_SIM_CONFIG=devices=1 ");
  expect_refused("--a cpu:0 --b cpu:0 --workload matmul:8 --b-env FOO", "InvalidArgument",
                 "--b-env: 'FOO' is not VAR=VALUE");
  expect_refused("--a cpu:0 --b nope:0 --workload matmul:8 --b-env X=1", "NotFound",
                 "side B (nope:0 in a child process with X=1): no device 'nope:0'");
}

}  // namespace
