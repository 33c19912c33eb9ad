// hal's conformance test suite: cases that any device of any backend (in-tree or plugin) is
// certified against. Each case passes, fails, or is not supported by the device, with the
// reason. `hal cts --device ID` runs it; so do hal's own tests, on every device here.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hal/device.hpp"

namespace hal::cts {

enum class Status { passed, failed, not_supported };
std::string_view to_string(Status status);

struct CaseResult {
  std::string name;  // "memory.allocate.4096_bytes"
  Status status = Status::passed;
  std::string reason;  // why it failed or is not supported; empty when it passed
  double seconds = 0;
};

struct Report {
  std::string device;
  std::vector<CaseResult> cases;
  size_t count(Status status) const;
};

// The names of every case, in the order they run.
std::vector<std::string> case_names();
// Runs the cases whose names contain `filter` (all when empty) on `device`. A case that throws
// anything but NotSupported fails; nothing a case does stops the others. `on_case`, when set, is
// called with each result as its case ends (a command shows progress, and a case that hangs is
// the one after the last reported).
using CaseCallback = std::function<void(const CaseResult&)>;
Report run(const Device& device, const std::string& filter = "", const CaseCallback& on_case = {});

// {"schema":"hal.cts/1","device",...,"passed","failed","not_supported","cases":[...]}
std::string to_json(const Report& report);
// JUnit XML: one testsuite ("<suite>.<device>"), a testcase per case, <failure> and <skipped>
// with the reasons. Other suites of cases (hal onnx-tests) report through it too.
std::string to_junit(const Report& report, std::string_view suite = "hal.cts");
// Writes to_junit to `path`; InvalidArgument naming the path when it cannot be written (a full
// disk or a closed pipe shows only when the buffered text is flushed: checked after it).
void write_junit(const std::string& path, const Report& report, std::string_view suite = "hal.cts");

}  // namespace hal::cts
