#include "hal/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace hal {
namespace {

LogLevel level_from_environment() {
  const char* text = std::getenv("HAL_LOG_LEVEL");
  if (!text || !*text) return LogLevel::error;
  if (auto level = parse_log_level(text)) return *level;
  std::fprintf(stderr,
               "[hal:warn] HAL_LOG_LEVEL='%s' is not one of silent, error, warn, info, "
               "debug, trace; using error\n",
               text);
  return LogLevel::error;
}

std::atomic<LogLevel>& current_level() {
  static std::atomic<LogLevel> level{level_from_environment()};
  return level;
}

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}

LogSink& sink() {
  static LogSink sink;
  return sink;
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::silent:
      return "silent";
    case LogLevel::error:
      return "error";
    case LogLevel::warn:
      return "warn";
    case LogLevel::info:
      return "info";
    case LogLevel::debug:
      return "debug";
    case LogLevel::trace:
      return "trace";
  }
  return "?";
}

std::optional<LogLevel> parse_log_level(std::string_view name) noexcept {
  for (auto level : {LogLevel::silent, LogLevel::error, LogLevel::warn, LogLevel::info,
                     LogLevel::debug, LogLevel::trace})
    if (to_string(level) == name) return level;
  return std::nullopt;
}

LogLevel log_level() noexcept { return current_level().load(std::memory_order_relaxed); }
void set_log_level(LogLevel level) noexcept { current_level().store(level); }
bool log_enabled(LogLevel level) noexcept {
  return level != LogLevel::silent && level <= log_level();
}

void set_log_sink(LogSink new_sink) {
  std::lock_guard lock(sink_mutex());
  sink() = std::move(new_sink);
}

void log(LogLevel level, std::string_view message) {
  if (!log_enabled(level)) return;
  std::lock_guard lock(sink_mutex());
  if (sink()) {
    sink()(level, message);
    return;
  }
  std::string line = "[hal:" + std::string(to_string(level)) + "] " + std::string(message) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace hal
