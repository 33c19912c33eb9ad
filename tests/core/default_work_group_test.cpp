// The work-group shape hal gives portable kernels launched without a local size.
#include "core/default_work_group.hpp"

#include <gtest/gtest.h>

namespace hal::detail {
namespace {

using Shape = std::array<uint32_t, 3>;

TEST(DefaultWorkGroup, OneShapePerDimensionality) {
  EXPECT_EQ(default_work_group(1, 1024), (Shape{256, 1, 1}));
  EXPECT_EQ(default_work_group(2, 1024), (Shape{16, 16, 1}));
  EXPECT_EQ(default_work_group(3, 1024), (Shape{8, 8, 4}));
}

TEST(DefaultWorkGroup, HalvesTheLastDimensionsFirstUntilTheKernelsLimitHolds) {
  EXPECT_EQ(default_work_group(1, 100), (Shape{64, 1, 1}));
  EXPECT_EQ(default_work_group(2, 128), (Shape{16, 8, 1}));
  EXPECT_EQ(default_work_group(2, 64), (Shape{8, 8, 1}));
  EXPECT_EQ(default_work_group(3, 128), (Shape{8, 8, 2}));
  EXPECT_EQ(default_work_group(3, 32), (Shape{4, 4, 2}));
  EXPECT_EQ(default_work_group(3, 1), (Shape{1, 1, 1}));
  EXPECT_EQ(default_work_group(2, 0), (Shape{1, 1, 1}));  // a driver that reports nothing
}

}  // namespace
}  // namespace hal::detail
