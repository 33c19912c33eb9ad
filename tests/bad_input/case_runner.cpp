#include "case_runner.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <sstream>
#include <typeinfo>

#include "core/host_cpu.hpp"

namespace hal::test::bad_input {
namespace {

constexpr std::string_view kPrefix = "bad-input: ";

// One report line each: newlines in messages (compiler logs) would split it.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

void report(std::string_view key, const std::string& value) {
  std::cout << kPrefix << key << ' ' << one_line(value) << '\n' << std::flush;
}

struct AllocatorFigures {
  std::string where;  // "sim:0 device memory"
  uint64_t allocated = 0;
  uint64_t reserved = 0;
};

// Every allocator of every visible device and of the host's cpu:0 (where ops fall back, hidden
// or not), after returning their caches: what is still reserved then is held by a buffer.
std::vector<AllocatorFigures> allocator_figures() {
  std::vector<AllocatorFigures> figures;
  std::vector<Device> checked = devices();
  const Device host = hal::detail::host_cpu();
  if (std::find(checked.begin(), checked.end(), host) == checked.end()) checked.push_back(host);
  for (const Device& device : checked) {
    device.empty_cache();
    for (MemoryKind kind : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unified}) {
      Allocator* allocator = nullptr;
      try {
        allocator = &device.allocator(kind);
      } catch (const Error&) {
        continue;  // the device has no memory of this kind
      }
      const MemoryStats stats = allocator->stats();
      figures.push_back({device.id() + " " + std::string(to_string(kind)) + " memory",
                         stats.allocated_bytes.current, stats.reserved_bytes.current});
    }
  }
  return figures;
}

}  // namespace

int run_case_in_this_process(const Case& c, const Device& device) {
  Stream stream = device.create_stream();
  const std::vector<AllocatorFigures> before = allocator_figures();
  try {
    c.run(device, stream);
    report("outcome", "Ok");
  } catch (const Error& error) {
    report("outcome", std::string(to_string(error.code())) + " " + error.message());
  } catch (const std::exception& error) {
    report("outcome", std::string("exception ") + typeid(error).name() + ": " + error.what());
  } catch (...) {
    report("outcome", "exception of a type that is not std::exception");
  }
  try {
    stream.synchronize();
  } catch (const Error& error) {
    report("stream", std::string(to_string(error.code())) + " " + error.message());
  }
  const std::vector<AllocatorFigures> after = allocator_figures();
  for (size_t i = 0; i < before.size() && i < after.size(); ++i)
    if (after[i].allocated != before[i].allocated || after[i].reserved != before[i].reserved)
      report("leak", after[i].where + ": allocated " + std::to_string(before[i].allocated) +
                         " -> " + std::to_string(after[i].allocated) + " bytes, reserved " +
                         std::to_string(before[i].reserved) + " -> " +
                         std::to_string(after[i].reserved) + " bytes");
  report("done", "");
  return 0;
}

Report parse_report(const std::string& output) {
  Report parsed;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kPrefix, 0) != 0) continue;
    const std::string rest = line.substr(kPrefix.size());
    const std::string key = rest.substr(0, rest.find(' '));
    const std::string value = rest.size() > key.size() ? rest.substr(key.size() + 1) : "";
    if (key == "outcome") {
      parsed.outcome = value.substr(0, value.find(' '));
      parsed.message =
          value.size() > parsed.outcome.size() ? value.substr(parsed.outcome.size() + 1) : "";
    } else if (key == "stream") {
      parsed.stream_error = value;
    } else if (key == "leak") {
      parsed.leaks.push_back(value);
    } else if (key == "done") {
      parsed.complete = true;
    }
  }
  return parsed;
}

std::string judge(const Case& c, const Report& report) {
  if (!report.complete) return "the child's report is incomplete";
  std::string problems;
  const std::string expected(to_string(c.code));
  if (report.outcome == "exception")
    problems += "threw an exception that is not hal::Error: " + report.message + "; ";
  else if (report.outcome != expected)
    problems += "expected " + expected + ", got " + report.outcome +
                (report.message.empty() ? "" : ": " + report.message) + "; ";
  else if (report.message.find(c.word) == std::string::npos)
    problems += "the message lacks '" + c.word + "': " + report.message + "; ";
  if (!report.stream_error.empty())
    problems += "the stream failed to synchronize afterwards: " + report.stream_error + "; ";
  for (const std::string& leak : report.leaks) problems += "leaked: " + leak + "; ";
  return problems;
}

}  // namespace hal::test::bad_input
