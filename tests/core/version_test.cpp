#include "hal/version.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace hal {
namespace {

TEST(Version, LibraryMatchesHeader) {
  EXPECT_EQ(version(), kVersion);
  EXPECT_EQ(std::string(kVersion), std::to_string(kVersionMajor) + "." +
                                       std::to_string(kVersionMinor) + "." +
                                       std::to_string(kVersionPatch));
}

TEST(Version, CpuIsAlwaysCompiledIn) {
  const auto backends = compiled_backends();
  EXPECT_NE(std::find(backends.begin(), backends.end(), "cpu"), backends.end());
}

}  // namespace
}  // namespace hal
