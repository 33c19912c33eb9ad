#include "core/uuid.hpp"

#include <gtest/gtest.h>

#include <cctype>

namespace hal {
namespace {

// 8-4-4-4-12 lower-case hex, version 8, RFC variant.
bool well_formed(const std::string& uuid) {
  if (uuid.size() != 36) return false;
  for (size_t i = 0; i < uuid.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const char c = uuid[i];
    if (dash ? c != '-' : !(std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f')))
      return false;
  }
  return uuid[14] == '8' && std::string_view("89ab").find(uuid[19]) != std::string_view::npos;
}

TEST(Uuid, IsStableAndWellFormed) {
  const std::string uuid = name_based_uuid("machine/cpu/model");
  EXPECT_EQ(uuid, name_based_uuid("machine/cpu/model"));
  EXPECT_TRUE(well_formed(uuid)) << uuid;
  EXPECT_FALSE(well_formed("not-a-uuid"));
}

TEST(Uuid, DiffersForDifferentNames) {
  EXPECT_NE(name_based_uuid("a"), name_based_uuid("b"));
  EXPECT_NE(name_based_uuid(""), name_based_uuid("a"));
}

}  // namespace
}  // namespace hal
