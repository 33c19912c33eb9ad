// The conformance suite (cts/) as GoogleTest runs it: every case on every visible device (cpu,
// each OpenCL device, each CUDA GPU, sim's devices, the test backend), one test per group of
// cases, each failing case named with its reason. `hal cts --device ID` runs the same cases.
#include <gtest/gtest.h>

#include "cts.hpp"
#include "device_suite.hpp"
#include "hal/registry.hpp"

namespace hal::test {
namespace {

class Conformance : public DeviceTest {
 protected:
  // Runs the cases named `<group>.*`; a failure is the test's, with the case and its reason.
  void run_group(const std::string& group) {
    const cts::Report report = cts::run(device(), group + ".");
    ASSERT_FALSE(report.cases.empty()) << "no case in group " << group;
    for (const cts::CaseResult& result : report.cases) {
      if (result.status == cts::Status::failed)
        ADD_FAILURE() << result.name << " on " << id() << ": " << result.reason;
      if (result.status == cts::Status::not_supported) {
        EXPECT_FALSE(result.reason.empty()) << result.name << " is not supported, with no reason";
      }
    }
  }
};

TEST_P(Conformance, Device) { run_group("device"); }
TEST_P(Conformance, Memory) { run_group("memory"); }
TEST_P(Conformance, Stream) { run_group("stream"); }
TEST_P(Conformance, Event) { run_group("event"); }
TEST_P(Conformance, Copy) { run_group("copy"); }
TEST_P(Conformance, Kernel) { run_group("kernel"); }
TEST_P(Conformance, Tensor) { run_group("tensor"); }
TEST_P(Conformance, Op) { run_group("op"); }
TEST_P(Conformance, Threads) { run_group("threads"); }

HAL_DEVICE_SUITE(Conformance);

// Every case belongs to one of the groups above, so none is left out of the runs.
TEST(ConformanceCases, EachBelongsToARunGroup) {
  const std::vector<std::string> groups{"device.", "memory.", "stream.", "event.",  "copy.",
                                        "kernel.", "tensor.", "op.",     "threads."};
  const std::vector<std::string> names = cts::case_names();
  EXPECT_GE(names.size(), 300u);
  for (const std::string& name : names) {
    bool grouped = false;
    for (const std::string& group : groups) grouped |= name.rfind(group, 0) == 0;
    EXPECT_TRUE(grouped) << name;
  }
}

// Each result reaches the callback as its case ends, in the report's order, so a command can
// print progress and a run stopped by a hang still names the cases that ended.
TEST(ConformanceCases, ReportsEachCaseAsItEnds) {
  std::vector<cts::CaseResult> seen;
  const cts::Report report = cts::run(
      device("cpu:0"), "memory.", [&](const cts::CaseResult& result) { seen.push_back(result); });
  ASSERT_FALSE(report.cases.empty());
  ASSERT_EQ(seen.size(), report.cases.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].name, report.cases[i].name);
    EXPECT_EQ(seen[i].status, report.cases[i].status) << seen[i].name;
    EXPECT_EQ(seen[i].reason, report.cases[i].reason) << seen[i].name;
  }
}

// The CUDA instantiation exists wherever a GPU is; here it says why it is absent.
TEST(ConformanceOnCuda, RunsWhereACudaDeviceIs) {
  for (const BackendStatus& backend : Registry::instance().backends())
    if (backend.name == "cuda") {
      if (backend.device_count == 0)
        GTEST_SKIP() << "no CUDA device here ("
                     << (backend.reason.empty() ? "none found" : backend.reason)
                     << "); the suite runs on each one found";
      return;  // its devices are among the instantiations above
    }
  GTEST_SKIP() << "the CUDA backend is not built here";
}

}  // namespace
}  // namespace hal::test
