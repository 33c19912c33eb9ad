// What hal's instrumented calls record into a trace (hal/trace.hpp). Call these only when
// trace::enabled(): each takes a lock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hal/trace.hpp"

namespace hal {
class StreamImpl;
class EventImpl;
}  // namespace hal

namespace hal::trace::detail {

// A track: a stream's, or a host thread's.
struct Track {
  uint64_t id = 0;
};
Track stream_track(const StreamImpl& stream);
Track thread_track();

// Microseconds on the trace's clock (steady, from the trace's start).
double now_us();

// A complete span; `category` is a literal (kept by reference), `args` a JSON object's text
// ("{}" when empty).
void span(Track track, std::string_view category, std::string_view name, double start_us,
          double end_us, std::string args = "{}");

// A record of `event` on `track` starts a flow; a wait for it on another track ends it.
void flow_from_record(Track track, const EventImpl& event, double at_us);
void flow_to_wait(Track track, const EventImpl& event, double at_us);

// Whether the latest allocation on this thread came from the allocator's cache.
void note_allocation(bool cache_hit);
bool last_allocation_hit();

// A span recorded when it ends; constructed only while tracing (std::optional at call sites).
class Span {
 public:
  Span(Track track, std::string_view category, std::string name, std::string args = "{}")
      : track_(track),
        category_(category),
        name_(std::move(name)),
        args_(std::move(args)),
        start_(now_us()) {}
  ~Span() { span(track_, category_, name_, start_, now_us(), std::move(args_)); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  void set_args(std::string args) { args_ = std::move(args); }

 private:
  Track track_;
  std::string_view category_;
  std::string name_, args_;
  double start_;
};

}  // namespace hal::trace::detail
