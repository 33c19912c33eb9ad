// A copy between devices that cannot reach each other goes through host memory in parts (a copy
// into the staging memory, a host callback, a copy out of it). When a later part fails to
// enqueue, the staging memory is let go of only once the parts already enqueued have run: they
// read or write it. The far backend's streams refuse host callbacks and slow their copies on
// request (far_faults()).
#include <gtest/gtest.h>

#include "far_backend.hpp"
#include "hal/hal.hpp"
#include "test_util.hpp"

namespace hal::test {
namespace {

class StagedCopyFailure : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { register_far_backend(); }
  void SetUp() override { far_faults().copy_delay_ms = 50; }  // still running when enqueued
  void TearDown() override {
    far_faults().callbacks_allowed = -1;
    far_faults().copy_delay_ms = 0;
  }
  static constexpr size_t kBytes = 64 << 10;
  Device here = device("far:0");
  Device there = device("far:1");
  Stream stream = here.create_stream();
};

TEST_F(StagedCopyFailure, OutOfADeviceTheCopyIntoStagingHasRunWhenTheCallbackIsRefused) {
  const Buffer src = here.allocate(kBytes), dst = there.allocate(kBytes);
  stream.fill(src, uint8_t{7}, kBytes);
  stream.synchronize();
  far_faults().callbacks_allowed = 0;  // the callback that would write the staging memory out
  expect_error([&] { stream.copy(dst, src, kBytes); }, ErrorCode::OutOfMemory,
               {"no room for another host callback"});
  // The staging memory went with the error: the copy into it must have run by then.
  EXPECT_EQ(far_faults().copies_pending.load(), 0);
  far_faults().callbacks_allowed = -1;
  stream.synchronize();
}

TEST_F(StagedCopyFailure, IntoADeviceTheCopyOutOfStagingHasRunWhenItsKeepIsRefused) {
  const Buffer src = there.allocate(kBytes), dst = here.allocate(kBytes);
  far_faults().callbacks_allowed = 1;  // the read from far:1 is taken; keep_until_done's is not
  expect_error([&] { stream.copy(dst, src, kBytes); }, ErrorCode::OutOfMemory,
               {"no room for another host callback"});
  EXPECT_EQ(far_faults().copies_pending.load(), 0);
  far_faults().callbacks_allowed = -1;
  stream.synchronize();
}

}  // namespace
}  // namespace hal::test
