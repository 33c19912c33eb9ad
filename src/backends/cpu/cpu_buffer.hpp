// CPU memory of every kind is ordinary, aligned host memory: hal's own, or memory another
// library owns that hal adopted (wrap_native_memory), which it hands back instead of freeing.
#pragma once

#include <cstdlib>
#include <functional>

#include "hal/backend.hpp"

namespace hal::cpu {

class CpuBuffer final : public BufferImpl {
 public:
  // 64 bytes: a cache line, and the widest vector load (AVX-512).
  static constexpr size_t kAlignment = 256;  // what CUDA promises, so code may assume it anywhere

  CpuBuffer(std::shared_ptr<DeviceImpl> device, size_t size, MemoryKind kind, void* data)
      : BufferImpl(std::move(device), size, kind), data_(data) {}
  // Adopted memory: `release` runs instead of the free.
  CpuBuffer(std::shared_ptr<DeviceImpl> device, size_t size, void* data,
            std::function<void()> release)
      : BufferImpl(std::move(device), size, MemoryKind::device),
        data_(data),
        adopted_(true),
        release_(std::move(release)) {}
  ~CpuBuffer() override {
    if (!adopted_)
      std::free(data_);
    else if (release_)
      release_();
  }

  void* host_pointer() const noexcept override { return data_; }
  void* native_handle() const noexcept override { return data_; }

 private:
  void* data_;
  bool adopted_ = false;
  std::function<void()> release_;
};

}  // namespace hal::cpu
