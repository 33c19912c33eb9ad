#include "backends/opencl/opencl_event.hpp"

#include "core/error_context.hpp"

namespace hal::opencl {

bool ClFence::ready() const {
  cl_int status = CL_QUEUED;
  device_->api().clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                nullptr);
  return status <= CL_COMPLETE;  // complete, or terminated by an error
}

void ClFence::wait() const {
  // An event that ended in an error is reported by failure(), and by the stream's synchronize.
  device_->api().clWaitForEvents(1, &event_);
}

std::exception_ptr ClFence::failure() const {
  if (std::exception_ptr failed = callbacks_.failure()) return failed;
  cl_int status = CL_COMPLETE;
  device_->api().clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                nullptr);
  if (status >= CL_COMPLETE) return nullptr;
  const detail::ErrorReportsMuted reported_by_the_caller;  // which rethrows it as its own
  return std::make_exception_ptr(Error(ErrorCode::AsyncFailure,
                                       "the driver ended the record's marker with " +
                                           status_name(status) + " (" + std::to_string(status) +
                                           ")",
                                       status));
}

cl_ulong ClFence::timestamp_ns() const {
  cl_ulong ns = 0;
  check(device_->api().clGetEventProfilingInfo(event_, CL_PROFILING_COMMAND_END, sizeof ns, &ns,
                                               nullptr),
        describe(*device_), "clGetEventProfilingInfo (event timing)");
  return ns;
}

std::shared_ptr<HostFence> OpenClEvent::fence() const { return cl_fence(); }

std::shared_ptr<ClFence> OpenClEvent::cl_fence() const {
  std::lock_guard lock(mutex_);
  return fence_;
}

void OpenClEvent::set_fence(std::shared_ptr<ClFence> fence) {
  std::lock_guard lock(mutex_);
  fence_ = std::move(fence);
}

double OpenClEvent::elapsed_ms_since(const EventImpl& start) const {
  auto begin = static_cast<const OpenClEvent&>(start).cl_fence();
  auto end = cl_fence();
  // Event::elapsed_ms found both complete, but either may have been recorded again since: its
  // new command has no times yet.
  if (!begin->ready() || !end->ready())
    throw Error(ErrorCode::InvalidState,
                "elapsed_ms on an event of " + device().info().id +
                    " recorded again while its time was read, whose new work has not completed; "
                    "synchronize it first");
  return (static_cast<double>(end->timestamp_ns()) - static_cast<double>(begin->timestamp_ns())) /
         1e6;
}

}  // namespace hal::opencl
