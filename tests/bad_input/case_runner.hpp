// The two halves of running one bad-input case: the child runs it and prints what happened as
// "bad-input:" lines; the parent reads them back and judges the outcome.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bad_input_case.hpp"

namespace hal::test::bad_input {

// Child side: runs `c` on `device`, checks that the stream still synchronizes and that every
// allocator of every visible device is back where it was, and prints the report. Returns the
// process's exit status (0 once the report is complete, whatever the case did).
int run_case_in_this_process(const Case& c, const Device& device);

// What a child reported.
struct Report {
  bool complete = false;           // the child got to the end of its report
  std::string outcome;             // "Ok", an ErrorCode's name, or "exception"
  std::string message;             // the error's message, or the exception's type and what()
  std::string stream_error;        // set when the stream failed to synchronize after the case
  std::vector<std::string> leaks;  // one line per allocator not back where it was
};
Report parse_report(const std::string& output);

// Parent side: "" when `report` is what `c` expects, else why not.
std::string judge(const Case& c, const Report& report);

}  // namespace hal::test::bad_input
