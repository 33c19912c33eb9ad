// CUDA memory: device memory (from the device's memory pool, or cuMemAlloc), pinned host memory
// mapped into the device's address space (cuMemHostAlloc), or managed memory (cuMemAllocManaged).
// With unified addressing, one CUdeviceptr names each of them on the device. Memory another
// library owns (wrap_native_memory) is handed back through its release function, never freed.
#pragma once

#include <functional>

#include "backends/cuda/cuda_device.hpp"

namespace hal::cuda {

class CudaBuffer final : public BufferImpl {
 public:
  CudaBuffer(std::shared_ptr<CudaDevice> device, size_t size, MemoryKind kind, CUdeviceptr address,
             void* host)
      : BufferImpl(device, size, kind),
        device_(std::move(device)),
        address_(address),
        host_(host) {}
  // Adopted device memory.
  CudaBuffer(std::shared_ptr<CudaDevice> device, size_t size, CUdeviceptr address,
             std::function<void()> release)
      : BufferImpl(device, size, MemoryKind::device),
        device_(std::move(device)),
        address_(address),
        host_(nullptr),
        adopted_(true),
        release_(std::move(release)) {}
  ~CudaBuffer() override;

  void* host_pointer() const noexcept override { return host_; }
  void* native_handle() const noexcept override { return reinterpret_cast<void*>(address_); }
  CUdeviceptr address() const { return address_; }

 private:
  std::shared_ptr<CudaDevice> device_;
  CUdeviceptr address_;
  void* host_;
  bool adopted_ = false;
  std::function<void()> release_;
};

// The device address of byte `offset` of any buffer of a CUDA device (a caching-allocator
// block is a piece of a CudaBuffer).
inline CUdeviceptr address_of(const BufferImpl& buffer, size_t offset = 0) {
  const auto& storage = static_cast<const CudaBuffer&>(buffer.storage());
  return storage.address() + buffer.storage_offset() + offset;
}

}  // namespace hal::cuda
