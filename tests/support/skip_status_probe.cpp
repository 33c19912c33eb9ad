// A test binary for test_main.hpp's exit status: tests that pass, skip, or skip and then crash
// at exit, run by skip_status_test.sh with one filter at a time.
#include <gtest/gtest.h>

#include <cstdlib>

namespace {

TEST(Probe, Passes) { EXPECT_EQ(1 + 1, 2); }

TEST(Probe, Skips) { GTEST_SKIP() << "no such device here"; }

TEST(ProbeAtExit, SkipsThenCrashesAtExit) {
  std::atexit([] { std::abort(); });  // as a static destructor that crashes would
  GTEST_SKIP() << "no such device here";
}

}  // namespace
