// One CUDA device as a hal device: cuda:N, driven through its primary context (the one the
// CUDA runtime uses too, so hal shares memory and modules with PyTorch and friends).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "backends/cuda/cuda_device_info.hpp"
#include "backends/cuda/cuda_staging.hpp"
#include "hal/backend.hpp"

namespace hal::cuda {

class Nvrtc;

class CudaDevice final : public DeviceImpl {
 public:
  CudaDevice(std::shared_ptr<const CuApi> api, CUdevice device, CuDeviceDescription description);
  ~CudaDevice() override;

  const DeviceInfo& info() const override { return info_; }
  MemoryFigure memory_free() const override;
  BufferPtr allocate(size_t bytes, MemoryKind kind) override;
  BufferPtr wrap_native(void* handle, size_t bytes, std::function<void()> release) override;
  bool supports(MemoryKind kind) const override;
  std::shared_ptr<StreamImpl> create_stream() override;
  std::shared_ptr<EventImpl> create_event() override;
  CompiledKernel compile(const KernelSource& source, const CompileOptions& options) override;

  const CuApi& api() const { return *api_; }
  const std::shared_ptr<const CuApi>& api_ptr() const { return api_; }
  CUdevice native() const { return device_; }
  const CuDeviceTraits& traits() const { return traits_; }
  // The primary context, retained on first use (it costs the GPU a few hundred MiB).
  CUcontext context() const;
  // Makes the primary context current on the calling thread: every driver call needs it.
  void make_current() const;
  // Where the device has memory pools, device memory comes from its default pool, allocated
  // and freed in the order of this stream of hal's own (cuMemAllocAsync/cuMemFreeAsync): a
  // free then waits for nothing else, where cuMemFree waits for the whole device. Null
  // without pools.
  CUstream allocation_stream() const;
  // Pinned memory for copies from and to pageable host memory.
  PinnedStaging& staging() const { return *staging_; }

 private:
  std::shared_ptr<const CuApi> api_;
  CUdevice device_;
  DeviceInfo info_;
  CuDeviceTraits traits_;
  mutable std::once_flag context_once_;
  mutable std::atomic<CUcontext> context_{nullptr};
  mutable std::once_flag allocation_stream_once_;
  mutable CUstream allocation_stream_ = nullptr;
  std::shared_ptr<PinnedStaging> staging_;  // shared with the blocks it lends
};

// "cuda:0 (NVIDIA H100 80GB HBM3)": how errors name a device.
inline std::string describe(const CudaDevice& device) {
  return device.info().id + " (" + device.info().name + ")";
}

}  // namespace hal::cuda
