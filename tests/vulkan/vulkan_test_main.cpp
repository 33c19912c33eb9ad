// The Vulkan tests run with the validation layer on, and any message it gives fails the test
// that was running.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/vulkan/vulkan_instance.hpp"
#include "test_main.hpp"

namespace {

class ValidationListener : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override {
    before_ = hal::vulkan::validation_message_count();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    const uint64_t messages = hal::vulkan::validation_message_count() - before_;
    EXPECT_EQ(messages, 0u) << "the Vulkan validation layer reported: "
                            << hal::vulkan::last_validation_message();
  }
  uint64_t before_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  setenv("HAL_VULKAN_VALIDATION", "1", /*overwrite=*/0);  // before hal creates the instance
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new ValidationListener);
  return hal::test::run_all_tests();
}
