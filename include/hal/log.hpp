// Logging, controlled by HAL_LOG_LEVEL (silent, error, warn, info, debug, trace; default error).
#pragma once

#include <functional>
#include <optional>
#include <string_view>

namespace hal {

enum class LogLevel : uint8_t { silent, error, warn, info, debug, trace };

std::string_view to_string(LogLevel level) noexcept;
std::optional<LogLevel> parse_log_level(std::string_view name) noexcept;

LogLevel log_level() noexcept;
void set_log_level(LogLevel level) noexcept;
bool log_enabled(LogLevel level) noexcept;

// Lines go to stderr as "[hal:warn] message" unless a sink is set; nullptr restores stderr.
using LogSink = std::function<void(LogLevel, std::string_view)>;
void set_log_sink(LogSink sink);

void log(LogLevel level, std::string_view message);

}  // namespace hal
