#include "hal/log.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hal {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = log_level();
    set_log_sink([this](LogLevel level, std::string_view message) {
      lines_.push_back(std::string(to_string(level)) + ":" + std::string(message));
    });
  }
  void TearDown() override {
    set_log_sink(nullptr);
    set_log_level(saved_);
  }
  LogLevel saved_ = LogLevel::error;
  std::vector<std::string> lines_;
};

TEST_F(LogTest, DefaultsToErrorsOnly) {
  // The test runs without HAL_LOG_LEVEL, as users do by default.
  if (std::getenv("HAL_LOG_LEVEL")) GTEST_SKIP() << "HAL_LOG_LEVEL is set in this environment";
  EXPECT_EQ(saved_, LogLevel::error);
}

TEST_F(LogTest, FiltersByLevel) {
  set_log_level(LogLevel::warn);
  log(LogLevel::error, "e");
  log(LogLevel::warn, "w");
  log(LogLevel::info, "i");
  log(LogLevel::debug, "d");
  EXPECT_EQ(lines_, (std::vector<std::string>{"error:e", "warn:w"}));
}

TEST_F(LogTest, SilentDropsEverything) {
  set_log_level(LogLevel::silent);
  log(LogLevel::error, "e");
  log(LogLevel::silent, "s");
  EXPECT_TRUE(lines_.empty());
}

TEST_F(LogTest, ParsesLevelNames) {
  EXPECT_EQ(parse_log_level("trace"), LogLevel::trace);
  EXPECT_EQ(parse_log_level("silent"), LogLevel::silent);
  EXPECT_EQ(parse_log_level("verbose"), std::nullopt);
}

}  // namespace
}  // namespace hal
