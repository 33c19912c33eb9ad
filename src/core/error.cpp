#include "hal/error.hpp"

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

Error::Error(ErrorCode code, std::string message, int64_t native_code)
    : std::runtime_error("hal: " + std::string(to_string(code)) + ": " + message),
      code_(code),
      native_code_(native_code),
      message_(std::move(message)) {}

}  // namespace hal
