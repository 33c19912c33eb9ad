// While a trace records, an OpenCL command's own profiling times (hal's queues are made with
// CL_QUEUE_PROFILING_ENABLE) become a span on its stream's device track once it completes: the
// device's timestamps mapped onto the host's clock through the command's QUEUED time, which the
// driver takes during the enqueue call that the host brackets with two readings of its clock.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "backends/opencl/cl_api.hpp"
#include "core/trace_record.hpp"
#include "hal/backend.hpp"

namespace hal::opencl {

// The spans of a stream's commands that have yet to be recorded: the driver calls back after a
// command completes, so a synchronize that returns at completion waits for these too (the
// trace would miss them otherwise). Shared with the callbacks, which may outlive the stream.
using PendingSpans = std::shared_ptr<std::atomic<int>>;

// One command's span on its way. Made right before the enqueue, which then asks for event();
// enqueued() right after a successful one. Nothing at all (no event, no callback) while no trace
// records.
class DeviceSpan {
 public:
  DeviceSpan(const StreamImpl& stream, const PendingSpans& pending, std::string_view category,
             std::string_view name, const trace::detail::SpanArgs& args) {
    if (trace::enabled()) [[unlikely]]
      begin(stream, pending, category, name, args);
  }
  ~DeviceSpan();  // drops the span of an enqueue that failed (it made no event)
  DeviceSpan(const DeviceSpan&) = delete;
  DeviceSpan& operator=(const DeviceSpan&) = delete;

  // Where the enqueue puts its event: null while not tracing, so that it makes none.
  cl_event* event() { return pending_ ? &event_ : nullptr; }
  // The span is recorded when the command completes (on the driver's thread); the event is
  // released then.
  void enqueued(const ClApi& api) {
    if (pending_) [[unlikely]]
      hand_over(api);
  }

  struct Pending;

 private:
  void begin(const StreamImpl& stream, const PendingSpans& pending, std::string_view category,
             std::string_view name, const trace::detail::SpanArgs& args);
  void hand_over(const ClApi& api);

  Pending* pending_ = nullptr;
  cl_event event_ = nullptr;
};

// Waits (a few microseconds, at most a second) until the driver has called back for every
// command of the stream that has completed.
void wait_for_spans(const PendingSpans& pending);

}  // namespace hal::opencl
