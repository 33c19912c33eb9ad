// Events of a CUDA device: each record makes a CUevent with timing, which is that record's fence.
#pragma once

#include <memory>
#include <mutex>

#include "backends/cuda/cuda_device.hpp"
#include "core/event_record.hpp"

namespace hal::cuda {

class CudaFence final : public HostFence, public detail::RecordFence {
 public:
  // Creates the CUevent; CudaStream::record records it on the stream `stream` (its serial).
  CudaFence(std::shared_ptr<CudaDevice> device, bool timing, uint64_t stream);
  ~CudaFence() override;

  bool ready() const override;
  void wait() const override;
  // A host callback's failure before the record, else the driver's error for the event (a
  // kernel that faulted: CUDA keeps such errors).
  std::exception_ptr failure() const override;
  // Set by CudaStream::record before the fence is shared.
  void cover_callbacks(detail::StreamFailures::Mark callbacks) {
    callbacks_ = std::move(callbacks);
  }
  CUevent native() const { return event_; }
  const CudaDevice& device() const { return *device_; }

 private:
  std::shared_ptr<CudaDevice> device_;
  CUevent event_ = nullptr;
  detail::StreamFailures::Mark callbacks_;
};

class CudaEvent final : public EventImpl {
 public:
  explicit CudaEvent(std::shared_ptr<CudaDevice> device) : device_(std::move(device)) {}

  DeviceImpl& device() const override { return *device_; }
  std::shared_ptr<HostFence> fence() const override { return cuda_fence(); }
  double elapsed_ms_since(const EventImpl& start) const override;
  void set_fence(std::shared_ptr<CudaFence> fence);
  std::shared_ptr<CudaFence> cuda_fence() const;

 private:
  std::shared_ptr<CudaDevice> device_;
  mutable std::mutex mutex_;
  std::shared_ptr<CudaFence> fence_;
};

}  // namespace hal::cuda
