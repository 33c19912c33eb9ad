// What hal's instrumented calls record into a trace (hal/trace.hpp). Call these only when
// trace::enabled(): each takes a lock.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/nvtx.hpp"
#include "hal/trace.hpp"

namespace hal {
class StreamImpl;
class EventImpl;
struct LaunchConfig;
}  // namespace hal

namespace hal::trace::detail {

// A track: a stream's, or a host thread's.
struct Track {
  uint64_t id = 0;
  bool nvtx = false;  // spans on it are NVTX ranges too (a CUDA stream's, core/nvtx.hpp)
};
Track stream_track(const StreamImpl& stream);
// Beside a stream's track, "<its name> (device)": when its work ran, for backends whose streams
// know it (the CPU's, whose worker thread runs each task), where the stream's own track holds
// the host's issue of that work.
Track execution_track(const StreamImpl& stream);
Track thread_track();

// A span's arguments, kept as numbers until the trace is written (formatting them as text for
// every span would cost more than the rest of the recording).
struct SpanArgs {
  enum class Kind : uint8_t { none, bytes, launch, allocation, nodes, transfer } kind = Kind::none;
  // bytes, nodes, transfer: n[0] (a transfer's GB/s follows from its span's duration, so only
  // spans of the work itself, on an execution track, are transfers). launch: global x y z,
  // local x y z, shared bytes. allocation: bytes, MemoryKind, cache hit (0 or 1).
  std::array<uint64_t, 7> n{};
};
inline SpanArgs bytes_args(size_t bytes) { return {SpanArgs::Kind::bytes, {bytes}}; }
inline SpanArgs transfer_args(size_t bytes) { return {SpanArgs::Kind::transfer, {bytes}}; }
SpanArgs launch_args(const LaunchConfig& config);

// The trace's clock: the CPU's time-stamp counter where it runs at a constant rate (x86-64 with
// constant_tsc: a few nanoseconds to read, where steady_clock takes tens in a VM), else
// steady_clock's nanoseconds; converted to microseconds when the trace is written.
uint64_t now();

// A complete span; `category` is a literal (kept by reference), `name` is copied.
void span(Track track, std::string_view category, std::string_view name, uint64_t start,
          uint64_t end, const SpanArgs& args = {});

// What a backend's device command is, for its span on the stream's device track: a literal
// category ("copy", "kernel") and a name. An empty name: no span.
struct CommandSpan {
  std::string_view category;
  std::string_view name;
  SpanArgs args;
};

// A span timed by a device rather than by the host: its start and end are steady_clock's
// nanoseconds (steady_now_ns), to which the backend has mapped the device's own timestamps.
uint64_t steady_now_ns();
void steady_span(Track track, std::string_view category, std::string_view name, uint64_t start_ns,
                 uint64_t end_ns, const SpanArgs& args = {});

// A record of `event` on `track` starts a flow; a wait for it on another track ends it.
void flow_from_record(Track track, const EventImpl& event, uint64_t at);
void flow_to_wait(Track track, const EventImpl& event, uint64_t at);

// Whether the latest allocation on this thread came from the allocator's cache.
void note_allocation(bool cache_hit);
bool last_allocation_hit();

// A span recorded when it ends; constructed only while tracing (std::optional at call sites). A
// literal name is kept by reference, any other is copied.
class Span {
 public:
  Span(Track track, std::string_view category, std::string name, const SpanArgs& args = {})
      : track_(track), category_(category), owned_(std::move(name)), args_(args) {
    name_ = owned_;
    begin();
  }
  template <size_t N>
  Span(Track track, std::string_view category, const char (&literal)[N], const SpanArgs& args = {})
      : track_(track), category_(category), name_(literal, N - 1), args_(args) {
    begin();
  }
  ~Span() {
    span(track_, category_, name_, start_, now(), args_);
    if (track_.nvtx) [[unlikely]]
      nvtx_pop();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  void set_args(const SpanArgs& args) { args_ = args; }

 private:
  void begin() {
    if (track_.nvtx) [[unlikely]]
      nvtx_push(name_);
    start_ = now();
  }
  Track track_;
  std::string_view category_, name_;
  std::string owned_;
  SpanArgs args_;
  uint64_t start_ = 0;
};

}  // namespace hal::trace::detail
