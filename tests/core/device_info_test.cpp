#include "hal/device_info.hpp"

#include <gtest/gtest.h>

namespace hal {
namespace {

DeviceInfo with_features(std::vector<std::string> features) {
  DeviceInfo info;
  info.id = "test:0";
  info.features = std::move(features);
  return info;
}

TEST(DeviceInfo, HasFeatureMatchesWholeNamesOnly) {
  const DeviceInfo info =
      with_features({"fp16", "host_kernels", "pinned_host_memory", "subgroups"});
  for (std::string_view name : {"fp16", "host_kernels", "pinned_host_memory", "subgroups"})
    EXPECT_TRUE(info.has_feature(name)) << name;
  // Same length, a prefix, an extension, a different case, nothing.
  for (std::string_view name : {"fp64", "host_kernel", "host_kernels2", "FP16", "", "subgroup"})
    EXPECT_FALSE(info.has_feature(name)) << name;
  EXPECT_TRUE(info.has_feature(feature::kHostKernels));
  EXPECT_FALSE(info.has_feature(feature::kPortableKernels));
}

TEST(DeviceInfo, NoFeaturesHasNone) {
  const DeviceInfo info = with_features({});
  EXPECT_FALSE(info.has_feature(feature::kHostKernels));
  EXPECT_FALSE(info.has_feature(""));
}

}  // namespace
}  // namespace hal
