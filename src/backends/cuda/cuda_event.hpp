// Events of a CUDA device: each record makes a CUevent with timing, which is that record's fence.
#pragma once

#include <memory>
#include <mutex>

#include "backends/cuda/cuda_device.hpp"

namespace hal::cuda {

class CudaFence final : public HostFence {
 public:
  // Creates the CUevent; CudaStream::record records it.
  CudaFence(std::shared_ptr<CudaDevice> device, bool timing);
  ~CudaFence() override;

  bool ready() const override;
  void wait() const override;
  CUevent native() const { return event_; }
  const CudaDevice& device() const { return *device_; }

 private:
  std::shared_ptr<CudaDevice> device_;
  CUevent event_ = nullptr;
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
