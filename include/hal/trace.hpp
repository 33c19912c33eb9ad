// Timeline traces in the Chrome trace-event format, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one track per stream with the host's issue of its work (ops, kernel
// launches with their configuration, copies with their bytes, fills, event records), waits
// (synchronize, on streams, events and devices), allocations (with cache hits) on the allocating
// thread's track, flows from an event's record to the streams that wait for it, and the user's
// own spans (Scope); beside each CPU and OpenCL stream's track, a device track of its kernels and
// copies as the device ran them (copies with their GB/s). docs/evidence.md shows a trace and says
// what the spans do and do not show.
//
//   HAL_TRACE=trace.json ./app            # records from start-up, written at exit
//   hal::trace::start("trace.json");      // or from the program; stop() writes the file
//   { hal::trace::Scope step("train step"); ... }
//
// Off, each instrumented call costs one relaxed load of a flag and a branch.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace hal::trace {

namespace detail {
extern std::atomic<bool> recording;
}  // namespace detail

// True while a trace is being recorded.
inline bool enabled() noexcept { return detail::recording.load(std::memory_order_relaxed); }

// Starts recording into `file` (replacing a trace being recorded: it is written first). The file
// is written by stop(), or at exit. InvalidArgument naming the file when it cannot be created.
void start(const std::filesystem::path& file);
// Writes the trace and stops recording; nothing when not recording. InvalidArgument naming the
// file when it cannot be written.
void stop();
// The file the trace being recorded goes to; empty when none is recorded.
std::filesystem::path file();

// A span of the caller's on the calling thread's track, from construction to destruction.
class Scope {
 public:
  explicit Scope(std::string_view name);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  uint64_t start_ = 0;  // 0: not recording when constructed
  std::string name_;
};

}  // namespace hal::trace
