// A trace that hal::trace wrote, read back for tests of what it shows (header-only: the tests
// that include it link nlohmann_json).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace hal::test
