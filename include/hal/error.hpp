// hal::Error and ErrorCode: the one exception type hal throws.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hal {

// The numeric values are part of the plugin C ABI (plugin.h mirrors them): never renumber,
// only append.
enum class ErrorCode : int32_t {
  Ok = 0,
  InvalidArgument = 1,     // a caller passed a bad value: id, size, offset, selector, ...
  OutOfMemory = 2,         // an allocation could not be satisfied
  Unsupported = 3,         // the device or backend cannot do what was asked
  CompileFailed = 4,       // a kernel did not compile; the message holds the build log
  DeviceLost = 5,          // the device stopped working; every later call on it fails too
  BackendUnavailable = 6,  // the backend's driver or library is absent
  PluginAbiMismatch = 7,   // a plugin speaks another major version of plugin.h
  NotFound = 8,            // no such device, backend or kernel
  InvalidState = 9,        // the object is not in a state that allows the call
  OutOfRange = 10,         // an offset or size runs past the end of a buffer
  Timeout = 11,
  Internal = 12,      // a bug in hal: please report it
  AsyncFailure = 13,  // work enqueued earlier on a stream failed
};

// "InvalidArgument", "OutOfMemory", ...
std::string_view to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  // `native_code` is the backend's own status (a CUresult, a cl_int), 0 where there is none.
  // Constructing one reports it to the error handler (set_error_handler).
  Error(ErrorCode code, std::string message, int64_t native_code = 0);

  ErrorCode code() const noexcept { return code_; }
  int64_t native_code() const noexcept { return native_code_; }
  // The message without the "hal: <Code>: " prefix that what() carries.
  const std::string& message() const noexcept { return message_; }
  // Where it arose, where hal knew: the device's id and the op or call ("add", "allocate",
  // "synchronize"); empty otherwise.
  const std::string& device() const noexcept { return device_; }
  const std::string& op() const noexcept { return op_; }

 private:
  ErrorCode code_;
  int64_t native_code_;
  std::string message_;
  std::string device_;
  std::string op_;
};

// One error, as the error handler sees it; the views live as long as the call.
struct ErrorReport {
  ErrorCode code;
  std::string_view message;
  std::string_view device;  // "" where hal knew none
  std::string_view op;      // "" where hal knew none
};
using ErrorHandler = std::function<void(const ErrorReport&)>;

// Installs `handler`, which hal calls for every error it raises or observes: an op or call
// refused, an allocation that failed, work that failed on a stream's worker and again (as
// AsyncFailure) where synchronize finds it, a device found lost. Errors hal handles itself are
// not reported (a retry after emptying the cache, a CPU fallback that succeeds, a backend
// absent at discovery). It runs on the thread that meets the error, from any thread at once,
// possibly while hal holds internal locks: it must not call into hal, but record, count or hand
// the report to the application's own code (to mark a device unhealthy, say). What it throws
// is swallowed. Returns the previous handler; an empty one removes it.
ErrorHandler set_error_handler(ErrorHandler handler);

}  // namespace hal
