// `hal tune` and `hal cache` run as a person or a script would: a second process reuses the
// first one's tuning without searching, `hal cache` lists the table and the compiled kernels,
// --clear empties it, and bad input is refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
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
    return hal::test::run_shell(hal::test::child_sanitizer_options() +
                                "HAL_CACHE_DIR=" + cache_.string() + " " HAL_CLI_PATH " " +
                                arguments + " 2>/dev/null");
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
  // 0 and below were taken as "all" (the default without the option).
  for (const char* count : {"0", "-1"}) {
    result = run("tune --device cpu:0 --max-candidates " + std::string(count) + " 2>&1");
    EXPECT_NE(result.status, 0);
    EXPECT_NE(result.output.find("--max-candidates " + std::string(count) + " must be at least 1"),
              std::string::npos)
        << result.output;
  }
}

}  // namespace
