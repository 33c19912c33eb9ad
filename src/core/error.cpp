#include "hal/error.hpp"

#include <memory>
#include <mutex>
#include <utility>

#include "core/error_context.hpp"

namespace hal {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::Ok:
      return "Ok";
    case ErrorCode::InvalidArgument:
      return "InvalidArgument";
    case ErrorCode::OutOfMemory:
      return "OutOfMemory";
    case ErrorCode::Unsupported:
      return "Unsupported";
    case ErrorCode::CompileFailed:
      return "CompileFailed";
    case ErrorCode::DeviceLost:
      return "DeviceLost";
    case ErrorCode::BackendUnavailable:
      return "BackendUnavailable";
    case ErrorCode::PluginAbiMismatch:
      return "PluginAbiMismatch";
    case ErrorCode::NotFound:
      return "NotFound";
    case ErrorCode::InvalidState:
      return "InvalidState";
    case ErrorCode::OutOfRange:
      return "OutOfRange";
    case ErrorCode::Timeout:
      return "Timeout";
    case ErrorCode::Internal:
      return "Internal";
    case ErrorCode::AsyncFailure:
      return "AsyncFailure";
  }
  return "Unknown";
}

namespace {

thread_local std::string_view context_device, context_op;  // set by every op
thread_local int muted = 0;
thread_local bool in_handler = false;  // errors the handler itself meets are not reported

std::mutex handler_mutex;
std::shared_ptr<const ErrorHandler> installed_handler;

void deliver(const Error& error) {
  if (muted > 0 || in_handler) return;
  std::shared_ptr<const ErrorHandler> handler;
  {
    std::lock_guard lock(handler_mutex);
    handler = installed_handler;
  }
  if (!handler) return;
  in_handler = true;
  try {
    (*handler)({error.code(), error.message(), error.device(), error.op()});
  } catch (...) {  // the handler's own failure must not replace the error being raised
  }
  in_handler = false;
}

}  // namespace

Error::Error(ErrorCode code, std::string message, int64_t native_code)
    : std::runtime_error("hal: " + std::string(to_string(code)) + ": " + message),
      code_(code),
      native_code_(native_code),
      message_(std::move(message)),
      device_(context_device),
      op_(context_op) {
  deliver(*this);
}

ErrorHandler set_error_handler(ErrorHandler handler) {
  auto next = handler ? std::make_shared<const ErrorHandler>(std::move(handler)) : nullptr;
  std::lock_guard lock(handler_mutex);
  std::shared_ptr<const ErrorHandler> previous = std::exchange(installed_handler, next);
  return previous ? *previous : ErrorHandler();
}

namespace detail {

ErrorContext::ErrorContext(std::string_view device, std::string_view op)
    : previous_device_(context_device), previous_op_(context_op) {
  // The outermost call names the error: the op the user called, not the launch inside it.
  if (context_device.empty()) context_device = device;
  if (context_op.empty()) context_op = op;
}

ErrorContext::~ErrorContext() {
  context_device = previous_device_;
  context_op = previous_op_;
}

std::string_view ErrorContext::device() { return context_device; }
std::string_view ErrorContext::op() { return context_op; }

ErrorReportsMuted::ErrorReportsMuted() { ++muted; }
ErrorReportsMuted::~ErrorReportsMuted() { --muted; }

void report(const Error& error) { deliver(error); }

}  // namespace detail

}  // namespace hal
