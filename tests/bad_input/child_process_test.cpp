// The child-process runner the bad-input tests rely on tells exits, signals and hangs apart.
#include "child_process.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace hal::test {
namespace {

ChildResult shell(const std::string& script,
                  std::chrono::seconds limit = std::chrono::seconds{30}) {
  return run_child("/bin/sh", {"sh", "-c", script}, {"BAD_INPUT_TEST_VALUE=42"}, limit);
}

TEST(ChildProcess, ReportsTheExitStatusAndEverythingPrinted) {
  const ChildResult result = shell("echo out; echo err >&2; echo $BAD_INPUT_TEST_VALUE; exit 3");
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, 0);
  EXPECT_EQ(result.exit_status, 3);
  EXPECT_EQ(result.output, "out\nerr\n42\n");
}

TEST(ChildProcess, ReportsTheSignalThatEndedIt) {
  const ChildResult result = shell("kill -SEGV $$");
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, SIGSEGV);
  EXPECT_NE(describe(result, std::chrono::seconds{30}).find("signal 11"), std::string::npos);
}

TEST(ChildProcess, KillsAHangAtTheLimitWithWhatItStarted) {
  // The shell's child (sleep) holds the output pipe too: the whole group goes.
  const ChildResult result = shell("echo started; sleep 600", std::chrono::seconds{1});
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.signal, SIGKILL);
  EXPECT_EQ(result.output, "started\n");
}

TEST(ChildProcess, AProgramThatCannotStartIsAnError) {
  EXPECT_THROW(run_child("/nonexistent/program", {"program"}, {}, std::chrono::seconds{1}),
               std::runtime_error);
}

}  // namespace
}  // namespace hal::test
