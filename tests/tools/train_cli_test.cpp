// `hal train`: the digits MLP reaches 97 % test accuracy on cpu:0, opencl:0 and sim:0 in a few
// epochs, prints hal.train/1 with --json, writes its loss curve, and refuses what it cannot do.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace {

using Result = hal::test::ShellResult;

constexpr int kEpochs = 8;

Result run(const std::string& arguments) {
  return hal::test::run_shell_stdout(hal::test::child_sanitizer_options() +
                                     "HAL_SIM_CONFIG=devices=1 " HAL_CLI_PATH " " + arguments);
}

std::filesystem::path temporary(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("hal_train_cli_" + std::to_string(getpid()) + "_" + name);
}

// `ids`: one device, or several (comma-separated) for data-parallel training.
void reaches_the_goal(const std::string& ids, const std::string& precision = "f32") {
  std::vector<std::string> devices;
  for (size_t at = 0; at <= ids.size();) {
    const size_t comma = std::min(ids.find(',', at), ids.size());
    devices.push_back(ids.substr(at, comma - at));
    at = comma + 1;
  }
  const std::string listed =
      hal::test::run_shell("HAL_SIM_CONFIG=devices=1 " HAL_CLI_PATH " devices").output;
  for (const std::string& id : devices)
    if (listed.find("[" + id + "]") == std::string::npos) GTEST_SKIP() << "no " << id << " here";
  const std::filesystem::path curve = temporary(ids.substr(0, ids.find(':')) + ".svg");
  const Result result = run("train --devices " + ids + " --epochs " + std::to_string(kEpochs) +
                            " --precision " + precision + " --json --curve " + curve.string());
  ASSERT_EQ(result.status, 0) << result.output;
  const auto report = nlohmann::json::parse(result.output);
  EXPECT_EQ(report["schema"], "hal.train/1");
  ASSERT_EQ(report["devices"].size(), devices.size());
  double shares = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(report["devices"][i]["id"], devices[i]);
    EXPECT_GT(report["devices"][i]["share"].get<double>(), 0);
    EXPECT_GT(report["devices"][i]["samples_per_s"].get<double>(), 0);
    shares += report["devices"][i]["share"].get<double>();
  }
  EXPECT_NEAR(shares, 1.0, 1e-9);
  ASSERT_EQ(report["epochs"].size(), static_cast<size_t>(kEpochs));
  const auto& first = report["epochs"].front();
  const auto& last = report["epochs"].back();
  EXPECT_EQ(last["epoch"], kEpochs);
  EXPECT_LT(last["loss"].get<double>(), first["loss"].get<double>());
  EXPECT_GE(last["test_accuracy"].get<double>(), 0.97) << result.output;
  std::ifstream svg(curve);
  std::string text{std::istreambuf_iterator<char>(svg), {}};
  EXPECT_EQ(text.rfind("<svg", 0), 0u);
  EXPECT_NE(text.find("<path d=\"M"), std::string::npos);
  std::filesystem::remove(curve);
}

TEST(TrainCli, ReachesTheGoalOnCpu) { reaches_the_goal("cpu:0"); }
TEST(TrainCli, ReachesTheGoalOnOpenCl) { reaches_the_goal("opencl:0"); }
TEST(TrainCli, ReachesTheGoalOnSim) { reaches_the_goal("sim:0"); }
TEST(TrainCli, ReachesTheGoalDataParallelOnAMixedSet) { reaches_the_goal("cpu:0,opencl:0,sim:0"); }
TEST(TrainCli, ReachesTheGoalInMixedPrecision) {
  reaches_the_goal("cpu:0", "bf16");
  reaches_the_goal("cpu:0", "f16");
}

// 1 438 training digits in batches of 479 leave 1 sample, too few for two devices: it joins the
// batch before, and the epoch completes (before: "a batch of 1 samples cannot give 2 ranks one
// sample each" three quarters of the way through).
TEST(TrainCli, ALastBatchTooSmallForTheDevicesJoinsTheOneBefore) {
  const Result result = run("train --devices cpu:0,sim:0 --batch 479 --epochs 1 --json --curve ''");
  ASSERT_EQ(result.status, 0) << result.output;
  const auto report = nlohmann::json::parse(result.output);
  ASSERT_EQ(report["epochs"].size(), 1u);
  EXPECT_TRUE(std::isfinite(report["epochs"][0]["loss"].get<double>())) << result.output;
}

TEST(TrainCli, ShowsProgressAndTheResult) {
  const std::filesystem::path curve = temporary("plain.svg");
  const Result result =
      hal::test::run_shell(hal::test::child_sanitizer_options() +
                           HAL_CLI_PATH " train --epochs 1 --curve " + curve.string() + " 2>&1");
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("epoch   1/1 ["), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("samples/s"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("test accuracy"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("loss curve in " + curve.string()), std::string::npos);
  std::filesystem::remove(curve);
}

TEST(TrainCli, RefusesWhatItCannotDo) {
  Result result =
      hal::test::run_shell(HAL_CLI_PATH " train --devices cpu:0,nosuch:3 --epochs 1 2>&1");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("nosuch:3"), std::string::npos) << result.output;
  result = hal::test::run_shell(HAL_CLI_PATH " train --epochs 0 2>&1");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("--epochs"), std::string::npos) << result.output;
  result = hal::test::run_shell(HAL_CLI_PATH " train --precision i8 2>&1");
  EXPECT_NE(result.output.find("--precision: 'i8' is not f32, bf16 or f16"), std::string::npos)
      << result.output;
  result = hal::test::run_shell(HAL_CLI_PATH " train --data /nonexistent --epochs 1 2>&1");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("/nonexistent/train_x.npy"), std::string::npos) << result.output;
  // A data set of no rows is refused naming the file (it trained, and reported a NaN loss).
  const std::filesystem::path empty = temporary("empty_digits");
  std::filesystem::create_directories(empty);
  const Result made =
      hal::test::run_shell("cd " + empty.string() +
                           " && /usr/bin/python3 -c \"import numpy as np\n"
                           "for s in ('train', 'test'):\n"
                           "  np.save(s + '_x.npy', np.zeros((0, 64), np.float32)); "
                           "np.save(s + '_y.npy', np.zeros((0,), np.int64))\" 2>&1");
  if (made.status != 0) GTEST_SKIP() << "no NumPy for /usr/bin/python3: " << made.output;
  result =
      hal::test::run_shell(HAL_CLI_PATH " train --data " + empty.string() + " --epochs 1 2>&1");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("train_x.npy has no rows"), std::string::npos) << result.output;
  std::filesystem::remove_all(empty);
}

}  // namespace
