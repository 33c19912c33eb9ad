// A trace that hal::trace wrote, read back for tests of what it shows (header-only: the tests
// that include it link nlohmann_json).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hal::test {

// Reads the trace in `file` and removes the file.
inline nlohmann::json take_trace(const std::filesystem::path& file) {
  nlohmann::json trace;
  {
    std::ifstream in(file);
    trace = nlohmann::json::parse(in);
  }
  std::filesystem::remove(file);
  return trace;
}

// The id (tid) of the track named `name`, or -1 where the trace has none.
inline int64_t track_id(const nlohmann::json& trace, const std::string& name) {
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == name)
      return e["tid"].get<int64_t>();
  return -1;
}

// What a trace shows of one stream of `device_id`: the spans of its device track in time order,
// the start of the first span it issued, and the end of its synchronize.
struct DeviceTrackRun {
  std::vector<nlohmann::json> ran;
  double first_issue = 1e300, synchronized = 0;
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : ran) out.push_back(e["name"]);
    return out;
  }
};
inline DeviceTrackRun device_track_run(const nlohmann::json& trace, const std::string& device_id,
                                       int stream = 0) {
  const std::string issue_name = device_id + " stream " + std::to_string(stream);
  const int64_t issue_track = track_id(trace, issue_name);
  const int64_t device_track = track_id(trace, issue_name + " (device)");
  DeviceTrackRun run;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["tid"] == device_track) run.ran.push_back(e);
    if (e["tid"] == issue_track) run.first_issue = std::min(run.first_issue, e["ts"].get<double>());
    if (e["tid"] == issue_track && e["name"] == "synchronize")
      run.synchronized = e["ts"].get<double>() + e["dur"].get<double>();
  }
  std::sort(run.ran.begin(), run.ran.end(),
            [](const auto& a, const auto& b) { return a["ts"] < b["ts"]; });
  return run;
}

// The end of a complete ("X") span, in microseconds.
inline double span_end(const nlohmann::json& e) {
  return e["ts"].get<double>() + e["dur"].get<double>();
}

}  // namespace hal::test
