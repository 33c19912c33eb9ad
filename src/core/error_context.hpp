// What hal's errors carry besides their message, and which of them reach the error handler:
// the device and op a thread is working on (set by the API's entry points), and scopes whose
// errors hal handles itself (retries, fallbacks, discovery) and so does not report.
#pragma once

#include <string>
#include <string_view>

#include "hal/error.hpp"

namespace hal::detail {

// While alive, errors raised on this thread name `device` and `op`, unless an outer context
// named them first (the API call the user made wins over the calls inside it). Nests.
class ErrorContext {
 public:
  ErrorContext(std::string_view device, std::string_view op);
  ~ErrorContext();
  ErrorContext(const ErrorContext&) = delete;
  ErrorContext& operator=(const ErrorContext&) = delete;

  static std::string_view device();
  static std::string_view op();

 private:
  std::string_view previous_device_, previous_op_;
};

// While alive, errors raised on this thread are not reported: the code around handles them.
// The one that escapes, if any, is reported by whoever rethrows it as a new Error; a plain
// `throw;` out of the scope reports it through ReportEscaping below.
class ErrorReportsMuted {
 public:
  ErrorReportsMuted();
  ~ErrorReportsMuted();
  ErrorReportsMuted(const ErrorReportsMuted&) = delete;
  ErrorReportsMuted& operator=(const ErrorReportsMuted&) = delete;
};

// Reports an error that a muted scope let escape unreported.
void report(const Error& error);

}  // namespace hal::detail
