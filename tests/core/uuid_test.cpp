#include "uuid.hpp"

#include <gtest/gtest.h>

#include <regex>

namespace hal {
namespace {

TEST(Uuid, IsStableAndWellFormed) {
  const std::string uuid = name_based_uuid("machine/cpu/model");
  EXPECT_EQ(uuid, name_based_uuid("machine/cpu/model"));
  EXPECT_TRUE(std::regex_match(
      uuid, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << uuid;
}

TEST(Uuid, DiffersForDifferentNames) {
  EXPECT_NE(name_based_uuid("a"), name_based_uuid("b"));
  EXPECT_NE(name_based_uuid(""), name_based_uuid("a"));
}

}  // namespace
}  // namespace hal
