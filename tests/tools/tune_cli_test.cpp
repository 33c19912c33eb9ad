// `hal tune` and `hal cache` run as a person or a script would: a second process reuses the
// first one's tuning without searching, an unwritable cache loses nothing but the file,
// `hal cache` lists the table, the compiled kernels and the calibrations, --clear empties it, and
// bad input is refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using Result = hal::test::ShellResult;

class TuneCli : public ::testing::Test {
 protected:
  // The hal command with its own cache directory; stdout only.
  Result run(const std::string& arguments) const {
    return hal::test::run_shell_stdout(hal::test::child_sanitizer_options() + "HAL_CACHE_DIR=" +
                                       cache_.string() + " " HAL_CLI_PATH " " + arguments);
  }
  bool has_opencl() const { return run("devices").output.find("[opencl:0]") != std::string::npos; }
  hal::test::ScratchDir scratch_{"hal-tune-cli", hal::test::ScratchDir::Made::no};
  fs::path cache_ = scratch_.path();
};

TEST_F(TuneCli, ASecondProcessReusesTheTuningWithoutSearching) {
  if (!has_opencl()) GTEST_SKIP() << "no opencl:0 here";
  const std::string tune =
      "tune --device opencl:0 --op matmul --shapes 24x40x32 --max-candidates 2 --json";
  const Result first = run(tune);
  ASSERT_EQ(first.status, 0) << first.output;
  const auto made = nlohmann::json::parse(first.output);
  EXPECT_EQ(made["schema"], "hal.tune/1");
  ASSERT_EQ(made["entries"].size(), 1u);
  EXPECT_EQ(made["entries"][0]["from_cache"], false);
  EXPECT_GE(made["entries"][0]["candidates_tried"].get<int>(), 1);
  EXPECT_EQ(made["entries"][0]["candidates_rejected"], 0);
  EXPECT_EQ(made["entries"][0]["shape_class"], "NN m32 n64 k32");

  const Result second = run(tune);
  ASSERT_EQ(second.status, 0) << second.output;
  const auto reused = nlohmann::json::parse(second.output);
  EXPECT_EQ(reused["entries"][0]["from_cache"], true);
  EXPECT_EQ(reused["entries"][0]["params"], made["entries"][0]["params"]);
  EXPECT_EQ(reused["entries"][0]["hal_ms"], made["entries"][0]["hal_ms"]);

  const Result listed = run("cache --json");
  ASSERT_EQ(listed.status, 0) << listed.output;
  const auto cache = nlohmann::json::parse(listed.output);
  EXPECT_EQ(cache["schema"], "hal.cache/1");
  EXPECT_EQ(cache["root"], cache_.string());
  EXPECT_GT(cache["kernel_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(cache["tuning_bytes"].get<uint64_t>(), 0u);
  bool table = false, kernel = false;
  for (const auto& entry : cache["entries"]) {
    table = table || entry["kind"] == "tuning";
    kernel = kernel || entry["kind"] == "kernels/opencl";
  }
  EXPECT_TRUE(table && kernel) << listed.output;

  const Result cleared = run("cache --clear --json");
  ASSERT_EQ(cleared.status, 0) << cleared.output;
  const auto empty = nlohmann::json::parse(cleared.output);
  EXPECT_EQ(empty["cleared"], cache["entries"].size());
  EXPECT_TRUE(empty["entries"].empty());
}

TEST_F(TuneCli, BadInputIsRefusedByName) {
  Result result = run("tune --device cpu:0 2>&1");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("compiles no portable kernels"), std::string::npos) << result.output;
  result = run("tune --device cpu:0 --shapes 8x0x8 2>&1");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("--shapes"), std::string::npos) << result.output;
  result = run("tune --device cpu:0 --shapes 8x8 2>&1");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("MxNxK"), std::string::npos) << result.output;
  result = run("tune --device cpu:0 --budget soon 2>&1");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("--budget"), std::string::npos) << result.output;
  result = run("tune --device cpu:0 --op softmax 2>&1");
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find("--op"), std::string::npos) << result.output;
  // The parser took anything over 0 and tune() refused what rounds to 0 ms as not positive.
  for (const char* budget : {"0.4ms", "0s", "0.0004s", "0m"}) {
    result = run("tune --device cpu:0 --budget " + std::string(budget) + " 2>&1");
    EXPECT_NE(result.status, 0);
    EXPECT_NE(result.output.find("--budget '" + std::string(budget) + "'"), std::string::npos)
        << result.output;
    EXPECT_NE(result.output.find("under the least budget of 1 ms"), std::string::npos)
        << result.output;
  }
  // 1 ms passes the parser: the device is what is refused then.
  result = run("tune --device cpu:0 --budget 1ms 2>&1");
  EXPECT_NE(result.status, 0);
  EXPECT_EQ(result.output.find("--budget"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("compiles no portable kernels"), std::string::npos) << result.output;
  // 0 and below were taken as "all" (the default without the option).
  for (const char* count : {"0", "-1"}) {
    result = run("tune --device cpu:0 --max-candidates " + std::string(count) + " 2>&1");
    EXPECT_NE(result.status, 0);
    EXPECT_NE(result.output.find("--max-candidates " + std::string(count) + " must be at least 1"),
              std::string::npos)
        << result.output;
  }
}

// A cache directory that cannot be made (under a regular file) lost the whole search with an
// error at the end; the tuning is now reported, and the report says nothing was kept and why.
TEST_F(TuneCli, AnUnwritableCacheIsReportedNotFatal) {
  if (!has_opencl()) GTEST_SKIP() << "no opencl:0 here";
  fs::create_directories(cache_);
  std::ofstream(cache_ / "a-file") << "not a folder";
  const std::string unwritable = (cache_ / "a-file" / "cache").string();
  const std::string tune =
      "tune --device opencl:0 --op reduce --shapes 4096 --max-candidates 1 --retune";
  const Result json = hal::test::run_shell_stdout(hal::test::child_sanitizer_options() +
                                                  "HAL_CACHE_DIR=" + unwritable +
                                                  " " HAL_CLI_PATH " " + tune + " --json");
  ASSERT_EQ(json.status, 0) << json.output;
  const auto report = nlohmann::json::parse(json.output);
  EXPECT_EQ(report["cache_file"], "");
  EXPECT_NE(report["cache_problem"].get<std::string>().find("Not a directory"), std::string::npos)
      << report;
  ASSERT_EQ(report["entries"].size(), 1u);
  EXPECT_EQ(report["entries"][0]["candidates_tried"], 1);
  const Result text =
      hal::test::run_shell_stdout(hal::test::child_sanitizer_options() +
                                  "HAL_CACHE_DIR=" + unwritable + " " HAL_CLI_PATH " " + tune);
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("cache none (nothing kept for later processes: cannot make the "
                             "tuning cache's folder " +
                             unwritable + "/tuning: Not a directory)"),
            std::string::npos)
      << text.output;
}

// Calibrations and the tuning tables' lock files live in the cache too: listed, and removed by
// --clear as the README says.
TEST_F(TuneCli, CacheListsAndClearsCalibrationsAndTuningLocks) {
  fs::create_directories(cache_ / "calibration");
  fs::create_directories(cache_ / "tuning");
  std::ofstream(cache_ / "calibration" / "uuid-1.json") << "{\"schema\": \"hal.calibration/1\"}";
  std::ofstream(cache_ / "tuning" / "uuid-1.json.lock");
  const Result listed = run("cache --json");
  ASSERT_EQ(listed.status, 0) << listed.output;
  const auto cache = nlohmann::json::parse(listed.output);
  EXPECT_GT(cache["calibration_bytes"].get<uint64_t>(), 0u);
  std::map<std::string, std::string> kinds;
  for (const auto& entry : cache["entries"])
    kinds[fs::path(entry["path"].get<std::string>()).filename().string()] = entry["kind"];
  EXPECT_EQ(kinds, (std::map<std::string, std::string>{{"uuid-1.json", "calibration"},
                                                       {"uuid-1.json.lock", "tuning lock"}}))
      << listed.output;
  const Result text = run("cache");
  EXPECT_NE(text.output.find("calibration"), std::string::npos) << text.output;

  const Result cleared = run("cache --clear --json");
  ASSERT_EQ(cleared.status, 0) << cleared.output;
  EXPECT_EQ(nlohmann::json::parse(cleared.output)["cleared"], 2);
  EXPECT_FALSE(fs::exists(cache_ / "calibration" / "uuid-1.json"));
  EXPECT_FALSE(fs::exists(cache_ / "tuning" / "uuid-1.json.lock"));
}

// HAL_KERNEL_CACHE_MAX_BYTES takes sizes as the other settings do ("1G" was ignored with a
// warning shown at no default log level); one it cannot read is reported by `hal cache`.
TEST_F(TuneCli, CacheReadsTheCapAsASizeAndReportsOneItCannotRead) {
  const auto cache_with_cap = [&](const std::string& cap, const std::string& arguments) {
    return hal::test::run_shell(
        hal::test::child_sanitizer_options() + "HAL_KERNEL_CACHE_MAX_BYTES='" + cap +
        "' HAL_CACHE_DIR=" + cache_.string() + " " HAL_CLI_PATH " cache " + arguments);
  };
  Result result = cache_with_cap("1G", "--json");
  ASSERT_EQ(result.status, 0) << result.output;
  auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["kernel_cap_bytes"], uint64_t{1} << 30);
  EXPECT_TRUE(json["warnings"].empty());
  result = cache_with_cap("512MiB", "--json");
  EXPECT_EQ(nlohmann::json::parse(result.output)["kernel_cap_bytes"], uint64_t{512} << 20);

  result = cache_with_cap("lots", "--json");
  ASSERT_EQ(result.status, 0) << result.output;
  json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["kernel_cap_bytes"], uint64_t{512} << 20);
  ASSERT_EQ(json["warnings"].size(), 1u) << json;
  EXPECT_NE(json["warnings"][0].get<std::string>().find("HAL_KERNEL_CACHE_MAX_BYTES: 'lots'"),
            std::string::npos)
      << json;
  result = cache_with_cap("lots", "");  // the text goes to stdout, the warning to stderr
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("warning: HAL_KERNEL_CACHE_MAX_BYTES: 'lots' is not a size"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("the cap stays 512 MiB"), std::string::npos) << result.output;
}

}  // namespace
