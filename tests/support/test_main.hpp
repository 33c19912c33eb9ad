// How a test binary ends: GoogleTest's run, then an exit status from which CTest can tell a
// skip from a pass and a failure.
#pragma once

namespace hal::test {

// What CTest takes for "skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt).
inline constexpr int kSkippedExitCode = 77;

// Runs the tests InitGoogleTest selected. A run in which nothing failed and nothing passed (the
// filter left no test here, or every test skipped) returns kSkippedExitCode, saying so; a failure
// returns 1. The skip is the process's status, so a crash at exit (a static destructor, the leak
// check) still fails: CTest matching "Running 0 tests" or "[  SKIPPED ]" in the output took such
// a run for a skip.
int run_all_tests();

}  // namespace hal::test
