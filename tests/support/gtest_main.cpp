// main() of the test binaries that bring none (GoogleTest's gtest_main, with hal's exit status
// for a run that skipped everything).
#include <gtest/gtest.h>

#include "test_main.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return hal::test::run_all_tests();
}
