#include "backends/opencl/opencl_device_span.hpp"

#include <chrono>
#include <memory>
#include <thread>

#include "backends/opencl/opencl_device.hpp"

namespace hal::opencl {

struct DeviceSpan::Pending {
  const ClApi* api = nullptr;
  PendingSpans outstanding;
  trace::detail::Track track;
  std::string_view category;  // a literal
  std::string name;
  trace::detail::SpanArgs args;
  std::optional<int64_t> offset_ns;      // the device's clock to the host's (opencl_clock.hpp)
  uint64_t before_ns = 0, after_ns = 0;  // else: the host's clock around the enqueue call
};

namespace {

bool profiling_time(const ClApi& api, cl_event event, cl_profiling_info what, cl_ulong& ns) {
  return api.clGetEventProfilingInfo(event, what, sizeof ns, &ns, nullptr) == CL_SUCCESS;
}

// On the driver's thread: only profiling queries and a release, which OpenCL allows there.
void CL_CALLBACK on_complete(cl_event event, cl_int status, void* user) {
  std::unique_ptr<DeviceSpan::Pending> p(static_cast<DeviceSpan::Pending*>(user));
  cl_ulong queued = 0, start = 0, end = 0;
  // A command that failed, or a driver that does not stamp QUEUED, gives no span rather than
  // one in the wrong place.
  if (status == CL_COMPLETE &&
      profiling_time(*p->api, event, CL_PROFILING_COMMAND_QUEUED, queued) &&
      profiling_time(*p->api, event, CL_PROFILING_COMMAND_START, start) &&
      profiling_time(*p->api, event, CL_PROFILING_COMMAND_END, end) && queued > 0 &&
      start >= queued && end >= start) {
    // Through the device's measured offset where there is one, else through this command's
    // own QUEUED time, as placed as its enqueue call's bracket allows.
    const uint64_t queued_on_host =
        p->offset_ns ? queued + *p->offset_ns : p->before_ns + (p->after_ns - p->before_ns) / 2;
    trace::detail::steady_span(p->track, p->category, p->name, queued_on_host + (start - queued),
                               queued_on_host + (end - queued), p->args);
  }
  p->api->clReleaseEvent(event);
  p->outstanding->fetch_sub(1, std::memory_order_release);
}

}  // namespace

void DeviceSpan::begin(const StreamImpl& stream, const PendingSpans& pending,
                       std::string_view category, std::string_view name,
                       const trace::detail::SpanArgs& args) {
  const auto& device = static_cast<const OpenClDevice&>(stream.device());
  pending_ = new Pending{nullptr,
                         pending,
                         trace::detail::execution_track(stream),
                         category,
                         std::string(name),
                         args,
                         device.clock_offset_ns(),
                         0,
                         0};
  pending_->before_ns = trace::detail::steady_now_ns();
}

void DeviceSpan::hand_over(const ClApi& api) {
  pending_->after_ns = trace::detail::steady_now_ns();
  pending_->api = &api;
  pending_->outstanding->fetch_add(1, std::memory_order_relaxed);
  if (api.clSetEventCallback(event_, CL_COMPLETE, &on_complete, pending_) == CL_SUCCESS) {
    pending_ = nullptr;  // the callback owns it, and the event
    event_ = nullptr;
    return;
  }
  pending_->outstanding->fetch_sub(1, std::memory_order_relaxed);
  api.clReleaseEvent(event_);  // no callback: no span for this command
  event_ = nullptr;
}

void wait_for_spans(const PendingSpans& pending) {
  if (pending->load(std::memory_order_acquire) == 0) [[likely]]
    return;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (pending->load(std::memory_order_acquire) > 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::yield();
}

DeviceSpan::~DeviceSpan() { delete pending_; }

}  // namespace hal::opencl
