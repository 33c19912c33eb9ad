// Traces written by other processes (hal compare's side B, hal bench's suites), read back to be
// merged into this process's: Chrome trace-event JSON as hal::trace writes it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "hal/error.hpp"

namespace hal::tool {

// The trace in `file`; InvalidArgument naming it when it cannot be read or is no hal trace.
inline nlohmann::ordered_json read_trace(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(ErrorCode::InvalidArgument, "trace: cannot read " + file.string());
  try {
    nlohmann::ordered_json trace = nlohmann::ordered_json::parse(in);
    if (trace.contains("traceEvents") && trace["traceEvents"].is_array()) return trace;
  } catch (const nlohmann::json::exception&) {
  }
  throw Error(ErrorCode::InvalidArgument, "trace: " + file.string() + " is not a hal trace");
}

// The events a trace counted but did not keep (otherData.dropped_events; 0 when absent).
inline uint64_t dropped_events(const nlohmann::ordered_json& trace) {
  const auto other = trace.find("otherData");
  if (other == trace.end() || !other->is_object()) return 0;
  const auto dropped = other->find("dropped_events");
  return dropped != other->end() && dropped->is_number_unsigned() ? dropped->get<uint64_t>() : 0;
}

}  // namespace hal::tool
