#include "demo_report.hpp"

#include <algorithm>
#include <cstdio>

#include "choice_json.hpp"
#include "hal/units.hpp"

namespace hal::tool {
namespace {

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::ok:
      return "ok";
    case RunStatus::mismatch:
      return "mismatch";
    case RunStatus::failed:
      return "failed";
    case RunStatus::unsupported:
      return "unsupported";
  }
  return "failed";
}

std::string percent(double error) {
  if (std::isnan(error)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%+.0f%%", error * 100);
  return text;
}

// Every failure as (device, what failed, message): stages first, then runs.
std::vector<StageFailure> all_failures(const std::vector<RunRecord>& runs,
                                       const std::vector<StageFailure>& failures) {
  std::vector<StageFailure> all = failures;
  for (const RunRecord& r : runs)
    if (r.status == RunStatus::failed) all.push_back({r.device, r.workload, r.error});
  return all;
}

}  // namespace

std::vector<std::string> failed_devices(const std::vector<RunRecord>& runs,
                                        const std::vector<StageFailure>& failures) {
  std::vector<std::string> devices;
  for (const StageFailure& failure : all_failures(runs, failures)) {
    const std::string device = failure.device.empty() ? "(choice)" : failure.device;
    if (std::find(devices.begin(), devices.end(), device) == devices.end())
      devices.push_back(device);
  }
  return devices;
}

void print_table(const std::vector<RunRecord>& runs) {
  std::printf("\n%-10s %-22s %10s %9s %8s %8s %11s %7s %10s %s\n", "device", "workload", "time",
              "GFLOP/s", "GB/s", "vs cpu", "predicted", "error", "max|diff|", "");
  for (const RunRecord& r : runs) {
    if (r.status == RunStatus::failed || r.status == RunStatus::unsupported) {
      std::printf("%-10s %-22s %s: %s\n", r.device.c_str(), r.workload.c_str(),
                  r.status == RunStatus::failed ? "FAILED" : "not supported", r.error.c_str());
      continue;
    }
    std::printf("%-10s %-22s %10s %9.1f %8.2f %7.2fx %11s %7s %10.2e %s\n", r.device.c_str(),
                r.workload.c_str(), format_seconds(r.seconds).c_str(), r.gflops, r.gbps, r.speedup,
                format_seconds(r.predicted).c_str(),
                percent((r.predicted - r.seconds) / r.seconds).c_str(), r.max_abs_diff,
                r.status == RunStatus::ok ? "ok" : "MISMATCH");
  }
}

void print_verdict(const std::vector<RunRecord>& runs, const std::vector<StageFailure>& failures,
                   double seconds) {
  std::printf(
      "\npredicted: the roofline cost model from each device's calibration; error = "
      "(predicted - measured) / measured.\nmax|diff|: largest difference from cpu:0's "
      "result.\n");
  const bool mismatch = std::any_of(
      runs.begin(), runs.end(), [](const RunRecord& r) { return r.status == RunStatus::mismatch; });
  const std::vector<StageFailure> all = all_failures(runs, failures);
  if (!all.empty()) {
    std::string devices;
    for (const std::string& device : failed_devices(runs, failures))
      devices += (devices.empty() ? "" : ", ") + device;
    std::printf("FAILED on %s:\n", devices.c_str());
    for (const StageFailure& f : all)
      std::printf("  %s %s: %s\n", f.device.empty() ? "(choice)" : f.device.c_str(),
                  f.stage.c_str(), f.message.c_str());
  }
  std::printf("%s in %.1f s.\n",
              !all.empty() ? "SOME RUNS FAILED"
              : mismatch   ? "SOME RESULTS DISAGREE"
                           : "All results agree",
              seconds);
}

nlohmann::ordered_json runs_json(const std::vector<RunRecord>& runs) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const RunRecord& r : runs) {
    nlohmann::ordered_json out{
        {"device", r.device},
        {"workload", r.workload},
        {"time_s", number_or_null(r.seconds)},
        {"gflops", number_or_null(r.gflops)},
        {"gbps", number_or_null(r.gbps)},
        {"speedup_vs_cpu", number_or_null(r.speedup)},
        {"predicted_s", number_or_null(r.predicted)},
        {"prediction_error", number_or_null((r.predicted - r.seconds) / r.seconds)},
        {"max_abs_diff", number_or_null(r.max_abs_diff)},
        {"ok", r.status == RunStatus::ok},
        {"status", to_string(r.status)}};
    if (!r.error.empty()) out["error"] = r.error;
    list.push_back(std::move(out));
  }
  return list;
}

nlohmann::ordered_json failures_json(const std::vector<RunRecord>& runs,
                                     const std::vector<StageFailure>& failures) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const StageFailure& f : all_failures(runs, failures))
    list.push_back({{"device", f.device.empty() ? nlohmann::ordered_json(nullptr)
                                                : nlohmann::ordered_json(f.device)},
                    {"stage", f.stage},
                    {"message", f.message}});
  return list;
}

}  // namespace hal::tool
