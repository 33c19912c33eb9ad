// Helpers shared by hal's tests.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "hal/hal.hpp"

namespace hal {
// Failure messages show the code's name.
inline void PrintTo(ErrorCode code, std::ostream* out) { *out << to_string(code); }
}  // namespace hal

namespace hal::test {

// Expects `fn` to throw hal::Error with `code` and a message containing every one of `parts`.
// Allocates, fills and synchronizes on `device` up to 50 times, until a call fails (sim's
// injected loss, lose_device_at=N); the first failure's code, or Ok when none came.
ErrorCode work_until_a_failure(const Device& device);

void expect_error(const std::function<void()>& fn, ErrorCode code,
                  const std::vector<std::string>& parts);

// Sets the registry's selector for one scope, then goes back to the environment's.
class ScopedSelector {
 public:
  explicit ScopedSelector(std::optional<std::string> selector) {
    Registry::instance().set_selector(std::move(selector));
  }
  ~ScopedSelector() { Registry::instance().set_selector(std::nullopt); }
  ScopedSelector(const ScopedSelector&) = delete;
  ScopedSelector& operator=(const ScopedSelector&) = delete;
};

// Holds a stream's work back until open(): stream.host_callback(gate.hold()). It opens when
// destroyed, so a failed assertion never leaves a stream blocked: declare it after the streams
// it holds, so that it goes first.
class Gate {
 public:
  Gate() : opened_(promise_.get_future().share()) {}
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  std::function<void()> hold() const {
    return [opened = opened_] { opened.wait(); };
  }
  void open() {
    std::call_once(once_, [this] { promise_.set_value(); });
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_;
  std::once_flag once_;
};

// Collects the log's lines at `level` and more severe while alive (and logs at `level`).
class LogCapture {
 public:
  explicit LogCapture(LogLevel level = LogLevel::warn) : level_(log_level()) {
    set_log_level(level);
    set_log_sink([this, level](LogLevel line_level, std::string_view line) {
      if (line_level > level) return;
      std::lock_guard lock(mutex_);
      lines_ += '\n';
      lines_ += line;
    });
  }
  ~LogCapture() {
    set_log_sink(nullptr);
    set_log_level(level_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  LogLevel level_;
  std::mutex mutex_;
  std::string lines_;
};

// A shell command's exit status and its stdout and stderr together (-1 when it did not exit).
struct ShellResult {
  int status;
  std::string output;
};
ShellResult run_shell(const std::string& command);
// The same with stdout alone, stderr dropped: what a script parsing the command's output reads
// (a redirection inside `command` would not do: run_shell sends stderr to the pipe after it).
ShellResult run_shell_stdout(const std::string& command);
// What goes before a hal process a test starts: under ASan, leak checking stays on for it, with
// GCC 12's dynamic-TLS interception off (google/sanitizers#1409; tests/tools/cli_test.cpp).
const std::string& child_sanitizer_options();

// "cpu:0" -> "cpu_0", for parameterised test names.
std::string test_name(const std::string& device_id);

// Host-side bytes that follow a recognisable pattern seeded by `seed`.
std::vector<unsigned char> pattern_bytes(size_t size, unsigned seed);

// The visible devices of one backend ("opencl", "cuda"), in id order.
std::vector<Device> backend_devices(std::string_view backend);
// Why `backend` is unavailable (its reason as the registry gives it), for skip messages.
std::string backend_reason(std::string_view backend);

// A folder of the system's temporary one that no other test (of this process or another) uses,
// `prefix`-pid-random, made now or left for the code under test to make (Made::no), and removed
// with everything in it at the end of the scope.
class ScratchDir {
 public:
  enum class Made { yes, no };
  explicit ScratchDir(const std::string& prefix, Made made = Made::yes)
      : path_(std::filesystem::temp_directory_path() /
              (prefix + "-" + std::to_string(::getpid()) + "-" +
               std::to_string(std::random_device{}()))) {
    if (made == Made::yes) std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// HAL_CACHE_DIR pointing at a fresh directory for one test; entries() lists what `backend`
// ("opencl", "cuda") stored there.
class ScopedCacheDir {
 public:
  explicit ScopedCacheDir(std::string backend)
      : backend_(std::move(backend)), scratch_("hal-cache-test"), path_(scratch_.path()) {
    const char* old = std::getenv("HAL_CACHE_DIR");
    if (old) old_ = old;
    ::setenv("HAL_CACHE_DIR", path_.c_str(), 1);
  }
  ~ScopedCacheDir() {
    if (old_)
      ::setenv("HAL_CACHE_DIR", old_->c_str(), 1);
    else
      ::unsetenv("HAL_CACHE_DIR");
  }
  // The cache's entry files.
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> found;
    if (std::filesystem::exists(path_ / "kernels" / backend_))
      for (const auto& entry : std::filesystem::directory_iterator(path_ / "kernels" / backend_))
        if (entry.path().extension() == ".bin") found.push_back(entry.path());
    return found;
  }

 private:
  std::string backend_;
  ScratchDir scratch_;
  const std::filesystem::path& path_;
  std::optional<std::string> old_;
};

}  // namespace hal::test
