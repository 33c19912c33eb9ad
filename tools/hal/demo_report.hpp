// What `hal demo` found: each reference run on each device, and each failure, as a table or as
// JSON (schema hal.demo/1).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hal::tool {

enum class RunStatus {
  ok,           // ran, and agrees with cpu:0
  mismatch,     // ran, and disagrees with cpu:0
  failed,       // threw: a fault, a lost device, a bug
  unsupported,  // the device lacks an op the workload needs: reported, not a failure
};

struct RunRecord {
  std::string device, workload;
  double seconds = NAN, gflops = NAN, gbps = NAN, speedup = NAN, predicted = NAN;
  double max_abs_diff = NAN;
  RunStatus status = RunStatus::failed;
  std::string error;  // why it failed or was not supported
};

// A device's failure outside its runs (calibration), or of the choice itself (device "").
struct StageFailure {
  std::string device, stage, message;
};

// The device of each failure, runs and stages together, in order and once each.
std::vector<std::string> failed_devices(const std::vector<RunRecord>& runs,
                                        const std::vector<StageFailure>& failures);

void print_table(const std::vector<RunRecord>& runs);

// The closing lines: how the predictions read, and whether everything agreed, or which
// devices failed and why.
void print_verdict(const std::vector<RunRecord>& runs, const std::vector<StageFailure>& failures,
                   double seconds);

nlohmann::ordered_json runs_json(const std::vector<RunRecord>& runs);
nlohmann::ordered_json failures_json(const std::vector<RunRecord>& runs,
                                     const std::vector<StageFailure>& failures);

}  // namespace hal::tool
