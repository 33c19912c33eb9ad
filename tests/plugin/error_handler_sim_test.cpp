// The error handler with sim's injected faults: a failed op and a lost device are reported
// with the device and op; a CPU fallback that succeeds is not an error.
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "hal/hal.hpp"
#include "hal/ops.hpp"
#include "test_util.hpp"

namespace hal {
namespace {

void record_into(std::vector<std::string>& lines, std::mutex& mutex) {
  set_error_handler([&](const ErrorReport& report) {
    std::lock_guard lock(mutex);
    lines.push_back(std::string(to_string(report.code)) + " " + std::string(report.device) + " " +
                    std::string(report.op));
  });
}

TEST(SimErrorHandler, AFailedOpIsReportedWithItsDeviceAndOp) {
  // HAL_SIM_CONFIG=devices=1,fail_op_at=1
  Device sim = device("sim:0");
  Stream s = sim.create_stream();
  const Tensor x = from_vector(std::vector<float>{1, -2}, {2}, s);
  std::vector<std::string> lines;
  std::mutex mutex;
  record_into(lines, mutex);
  EXPECT_THROW(relu(x, s), Error);
  {
    // sim has no `where`: on cpu:0 instead, which succeeds, so nothing is reported.
    CpuFallback allow;
    const Tensor cond = from_vector(std::vector<float>{1, 0}, {2}, s);
    EXPECT_EQ(where(gt(cond, zeros({}, DType::f32, s), s), x, x, s).to_vector<float>(s),
              (std::vector<float>{1, -2}));
  }
  set_error_handler(nullptr);
  ASSERT_EQ(lines.size(), 1u) << (lines.empty() ? "" : lines.back());
  EXPECT_EQ(lines[0], "Internal sim:0 relu");
}

TEST(SimErrorHandler, ALostDeviceIsReported) {
  // HAL_SIM_CONFIG=devices=2,lose_device_at=12,fault_device=0
  Device lost = device("sim:0");
  std::vector<std::string> lines;
  std::mutex mutex;
  record_into(lines, mutex);
  const ErrorCode first = test::work_until_a_failure(lost);
  set_error_handler(nullptr);
  ASSERT_EQ(first, ErrorCode::DeviceLost) << "the injected loss never came";
  bool reported = false;
  for (const std::string& line : lines) reported |= line.rfind("DeviceLost sim:0", 0) == 0;
  EXPECT_TRUE(reported) << "reports: " << (lines.empty() ? "" : lines.front());
}

}  // namespace
}  // namespace hal
