// Events of an OpenCL device: each record is a marker command whose cl_event is the fence.
#pragma once

#include <memory>
#include <mutex>

#include "backends/opencl/opencl_device.hpp"
#include "core/event_record.hpp"

namespace hal::opencl {

class ClFence final : public HostFence, public detail::RecordFence {
 public:
  // Takes over one reference to `event`, the marker of a record on the stream `stream` (its
  // serial), whose host callbacks before it `callbacks` covers.
  ClFence(std::shared_ptr<OpenClDevice> device, cl_event event, uint64_t stream,
          detail::StreamFailures::Mark callbacks)
      : RecordFence(stream),
        device_(std::move(device)),
        event_(event),
        callbacks_(std::move(callbacks)) {}
  ~ClFence() override { device_->api().clReleaseEvent(event_); }

  bool ready() const override;
  void wait() const override;
  // A host callback's failure before the record, else the marker's own error status (work
  // before it that failed on the device, where the driver passes that on).
  std::exception_ptr failure() const override;
  cl_event native() const { return event_; }
  const OpenClDevice& device() const { return *device_; }
  // Nanoseconds on the device's clock when the marker ran (profiling).
  cl_ulong timestamp_ns() const;

 private:
  std::shared_ptr<OpenClDevice> device_;
  cl_event event_;
  detail::StreamFailures::Mark callbacks_;
};

class OpenClEvent final : public EventImpl {
 public:
  explicit OpenClEvent(std::shared_ptr<OpenClDevice> device) : device_(std::move(device)) {}

  DeviceImpl& device() const override { return *device_; }
  std::shared_ptr<HostFence> fence() const override;
  double elapsed_ms_since(const EventImpl& start) const override;
  void set_fence(std::shared_ptr<ClFence> fence);
  std::shared_ptr<ClFence> cl_fence() const;

 private:
  std::shared_ptr<OpenClDevice> device_;
  mutable std::mutex mutex_;
  std::shared_ptr<ClFence> fence_;
};

}  // namespace hal::opencl
